#!/usr/bin/env bash
# Strata vs llama.cpp, side by side on the same GGUF files and threads.
#
# Writes synthetic qwen3moe models with Qwen3-30B-A3B layer shapes (hidden
# 2048, 32 query / 4 KV heads of 128, 128 experts top-8, expert FFN 768;
# 4 layers, vocabulary 8192 so the layers dominate) at each quant, then runs
# `strata bench` and tools/oracle/bench.mjs (node-llama-cpp's prebuilt CPU
# llama.cpp) on each, alternating, and prints the ratio of the medians
# (with ROUNDS > 1, the whole comparison is repeated in turn and the
# medians over rounds are compared, which evens out a noisy host).
#
#   [ROUNDS=n] scripts/bench-vs-llamacpp.sh [QUANTS] [THREADS] [PROMPT] [GEN] [REPS]
#   e.g. ROUNDS=3 scripts/bench-vs-llamacpp.sh "Q8_0 Q4_K_M IQ2_XS" "1 2" 512 64 3
#
# Other shapes: SHAPE names the files and SYNTH holds `strata dev synth`'s
# shape flags (a llama-quantize file type given as QUANTS is written as its
# mixture; MIX=1 writes every QUANT as its llama-quantize mixture, IQ2_XS
# too, as downloaded files are). NODE=0 leaves node-llama-cpp out
# (llama-bench is the anchor the issues' bars name). Qwen3-Next-80B-A3B's per-layer shapes, 4 layers:
#   SHAPE=q3n SYNTH="--arch qwen3next --layers 4 --embd 2048 --heads 16 --heads-kv 2
#     --head-dim 256 --ssm-state 128 --ssm-groups 16 --ssm-v-heads 32 --experts 512
#     --used 10 --ff-expert 512 --ff-shared 512 --vocab 8192" MIX=1 NODE=0 LLAMA_BENCH=... \
#     ROUNDS=3 scripts/bench-vs-llamacpp.sh "Q4_K_M IQ2_XS" "1 2"
#
# node-llama-cpp busy-waits between ops (its poll setting is not exposed),
# which on a 2-core machine cuts its 2-thread figures. The fair anchor is
# llama.cpp's own llama-bench with spin-wait off: set LLAMA_BENCH to a
# llama-bench binary and it runs too (--poll 0, weights read into memory
# with --load-mode none as strata does, flash attention off, decode at the
# prompt's depth), and its ratios are printed. A llama-bench of the same
# llama.cpp as the oracle builds from node-llama-cpp's source bundle
# (cmake and a C++ compiler from Debian; GGML_OPENMP=OFF, or --poll is
# ignored and OpenMP's threads wait their own way):
# (any folder outside the repository; never commit its source or binaries)
#   src=$(mktemp -d)/llama.cpp
#   git clone tools/oracle/node_modules/node-llama-cpp/llama/gitRelease.bundle "$src"
#   cmake -S "$src" -B "$src/build" -DGGML_NATIVE=ON -DGGML_OPENMP=OFF -DLLAMA_CURL=OFF
#   cmake --build "$src/build" -j --target llama-bench
#   LLAMA_BENCH="$src/build/bin/llama-bench" scripts/bench-vs-llamacpp.sh "Q8_0 Q4_K_M IQ2_XS" "1 2"
set -euo pipefail
cd "$(dirname "$0")/.."
quants=${1:-"Q8_0 Q4_K"}
threads=${2:-"1"}
pp=${3:-512}
tg=${4:-64}
reps=${5:-3}
rounds=${ROUNDS:-1} # rounds of ours, node, llama-bench in turn; medians over rounds
dir=${BENCH_DIR:-${TMPDIR:-/tmp}/strata-bench}
mkdir -p "$dir"
go build -o "$dir/strata" .
[ -d tools/oracle/node_modules ] || (cd tools/oracle && npm ci --ignore-scripts --no-audit --no-fund)
strata() { "$dir/strata" "$@" 2> >(grep -v -e 'Fyne error' -e 'Cause:' -e 'At:' >&2); }

lbench=${LLAMA_BENCH:-}
node=${NODE:-1}
shape=${SHAPE:-a3b}
synth=${SYNTH:-"--arch qwen3moe --layers 4 --embd 2048 --heads 32 --heads-kv 4 --head-dim 128 --experts 128 --used 8 --ff-expert 768 --vocab 8192"}
printf '%-8s %-3s | %8s %8s %8s %6s %6s | %8s %8s %8s %6s %6s | %6s\n' quant thr \
	"pp ours" "pp node" "pp lb" "/node" "/lb" "tg ours" "tg node" "tg lb" "/node" "/lb" "GB/s"
for q in $quants; do
	model="$dir/$shape-$q.gguf"
	if [ ! -f "$model" ]; then
		mix=${MIX:+--mix}
		# shellcheck disable=SC2086
		strata dev synth $synth --quant "$q" $mix --seed 1 --out "$model" >/dev/null
	fi
	# Bytes read per decoded token: every non-expert tensor but the token
	# embeddings (one row is read), plus the used experts of each layer.
	active=$(strata inspect --json "$model" | python3 -c '
import json,sys
r=json.load(sys.stdin)
h=r["hparams"]; a=h["general.architecture"]
emb=sum(t["bytes"] for t in r["tensors"] if t["name"]=="token_embd.weight")
print(r["tensor_bytes"]-r["expert_bytes"]-emb+r["expert_bytes"]*h[a+".expert_used_count"]//h[a+".expert_count"])')
	for t in $threads; do
		log=$(mktemp)
		for _ in $(seq "$rounds"); do
			echo "ours $(strata bench --model "$model" --threads "$t" --prompt-tokens "$pp" --gen "$tg" --reps "$reps" --json)" >>"$log"
			if [ "$node" != 0 ]; then
				echo "node $(node tools/oracle/bench.mjs "$model" "$t" "$pp" "$tg" "$reps")" >>"$log"
			fi
			if [ -n "$lbench" ]; then
				for args in "-p $pp -n 0" "-p 0 -n $tg -d $pp"; do
					# shellcheck disable=SC2086
					echo "lb $("$lbench" -m "$model" -t "$t" --poll 0 --load-mode none -fa off -r "$reps" -o json $args 2>/dev/null |
						python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))')" >>"$log"
				done
			fi
		done
		python3 - "$q" "$t" "$active" "$log" <<'PY'
import json,statistics,sys
q,t,active,log=sys.argv[1],sys.argv[2],int(sys.argv[3]),sys.argv[4]
v={k:[] for k in ("po","do","pn","dn","pb","db")}
for line in open(log):
    who,js=line.split(" ",1)
    r=json.loads(js)
    if who=="ours":
        v["po"].append(r["prefill_tokens_per_second"]); v["do"].append(r["decode_tokens_per_second"])
    elif who=="node":
        v["pn"].append(r["prefill_tokens_per_second"]); v["dn"].append(r["decode_tokens_per_second"])
    else:
        for x in r:
            v["pb" if x["n_prompt"]>0 else "db"].append(x["avg_ts"])
m={k:(statistics.median(x) if x else None) for k,x in v.items()}
f=lambda x: f"{x:8.1f}" if x else f"{'-':>8}"
r=lambda a,b: f"{a/b:6.2f}" if b else f"{'-':>6}"
po,pn,pb,do,dn,db=m["po"],m["pn"],m["pb"],m["do"],m["dn"],m["db"]
print(f"{q:<8} {t:<3} | {po:8.1f} {f(pn)} {f(pb)} {r(po,pn)} {r(po,pb)} | {do:8.1f} {f(dn)} {f(db)} {r(do,dn)} {r(do,db)} | {active*do/1e9:6.2f}")
PY
		rm -f "$log"
	done
done
