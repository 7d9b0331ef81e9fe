#!/usr/bin/env bash
# Strata vs llama.cpp, side by side on the same GGUF files and threads.
#
# Writes synthetic qwen3moe models with Qwen3-30B-A3B layer shapes (hidden
# 2048, 32 query / 4 KV heads of 128, 128 experts top-8, expert FFN 768;
# 4 layers, vocabulary 8192 so the layers dominate) at each quant, then runs
# `strata bench` and tools/oracle/bench.mjs (node-llama-cpp's prebuilt CPU
# llama.cpp) on each, alternating, and prints the ratio of the medians.
#
#   scripts/bench-vs-llamacpp.sh [QUANTS] [THREADS] [PROMPT] [GEN] [REPS]
#   e.g. scripts/bench-vs-llamacpp.sh "Q8_0 Q4_K IQ2_XS" "1 2" 512 64 3
#
# node-llama-cpp busy-waits between ops (its poll setting is not exposed),
# which on a 2-core machine cuts its 2-thread figures: compare at 1 thread.
set -euo pipefail
cd "$(dirname "$0")/.."
quants=${1:-"Q8_0 Q4_K"}
threads=${2:-"1"}
pp=${3:-512}
tg=${4:-64}
reps=${5:-3}
dir=${BENCH_DIR:-${TMPDIR:-/tmp}/strata-bench}
mkdir -p "$dir"
go build -o "$dir/strata" .
[ -d tools/oracle/node_modules ] || (cd tools/oracle && npm ci --ignore-scripts --no-audit --no-fund)
strata() { "$dir/strata" "$@" 2> >(grep -v -e 'Fyne error' -e 'Cause:' -e 'At:' >&2); }

printf '%-8s %-3s %12s %12s %7s %12s %12s %7s %9s\n' quant thr "pp ours" "pp llama" ratio "tg ours" "tg llama" ratio "GB/s"
for q in $quants; do
	model="$dir/a3b-$q.gguf"
	if [ ! -f "$model" ]; then
		strata dev synth --arch qwen3moe --quant "$q" --layers 4 --embd 2048 --heads 32 --heads-kv 4 \
			--head-dim 128 --experts 128 --used 8 --ff-expert 768 --vocab 8192 --seed 1 --out "$model" >/dev/null
	fi
	# Bytes read per decoded token: every non-expert tensor but the token
	# embeddings (one row is read), plus 8 of 128 experts in each layer.
	active=$(strata inspect --json "$model" | python3 -c '
import json,sys
r=json.load(sys.stdin)
emb=sum(t["bytes"] for t in r["tensors"] if t["name"]=="token_embd.weight")
print(r["tensor_bytes"]-r["expert_bytes"]-emb+r["expert_bytes"]*8//128)')
	for t in $threads; do
		ours=$(strata bench --model "$model" --threads "$t" --prompt-tokens "$pp" --gen "$tg" --reps "$reps" --json)
		theirs=$(node tools/oracle/bench.mjs "$model" "$t" "$pp" "$tg" "$reps")
		python3 - "$q" "$t" "$active" "$ours" "$theirs" <<'PY'
import json,sys
q,t,active=sys.argv[1],sys.argv[2],int(sys.argv[3])
o,l=json.loads(sys.argv[4]),json.loads(sys.argv[5])
po,pl=o["prefill_tokens_per_second"],l["prefill_tokens_per_second"]
do,dl=o["decode_tokens_per_second"],l["decode_tokens_per_second"]
print(f"{q:<8} {t:<3} {po:12.1f} {pl:12.1f} {po/pl:7.2f} {do:12.1f} {dl:12.1f} {do/dl:7.2f} {active*do/1e9:9.2f}")
PY
	done
done
