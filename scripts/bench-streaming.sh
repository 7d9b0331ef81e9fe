#!/usr/bin/env bash
# Expert streaming under a memory limit, side by side with llama.cpp.
#
#   scripts/bench-streaming.sh MODEL.gguf "1500 1000" [THREADS] [GEN] [ROUNDS]
#
# For each limit (MB) a cgroup v1 memory group is made (root; the limit
# charges page cache too, as on a laptop with other apps open) and, ROUNDS
# times in turn, `strata bench` (experts streamed with the budget the engine
# measures itself) and llama.cpp (node-llama-cpp's prebuilt CPU build,
# tools/oracle/bench.mjs, mmap as its default) decode GEN tokens after a
# 16-token prompt inside it, with the page cache dropped before each run.
# It prints the median tok/s of each, their ratio, our hit rate and bytes
# read per token, and the I/O bound: the disk's O_DIRECT read bandwidth
# (measured with 8 dd readers on the model file, as the engine reads) ÷ our
# bytes read per token.
# The host drifts by ±25 % over minutes: compare the ratios, not tok/s.
#
# With LLAMA_BENCH set to a llama-bench binary (built from the oracle's
# source bundle as scripts/bench-vs-llamacpp.sh's header says), that runs
# instead of node-llama-cpp: --poll 0, mmap, no warm-up, decode after no
# prompt. On x86 llama.cpp repacks Q4_0/Q4_K/IQ4_NL weights into anonymous
# buffers (CPU_REPACK) whatever the load mode, so under a limit below the
# model's size it is OOM-killed (seen: the 48-layer Q4_K_M file at 8 and
# 4 GB, anon-rss 8.36 GB at the kill; node-llama-cpp the same). Stock
# llama-bench has no switch against it (-ot '.*=CPU' is turned back into
# CPU_REPACK by the loader), so build it with this one-line patch, which
# the script's LLAMA_BENCH_NO_REPACK=1 turns on (weights stay mapped):
#   sed -i 's/^\( *\)mparams.no_host *= no_host;/&\n\1if (getenv("LLAMA_BENCH_NO_REPACK")) { mparams.use_extra_bufts = false; }/' \
#     "$src/tools/llama-bench/llama-bench.cpp"
# A run that was killed prints as 0 tok/s.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: bench-streaming.sh MODEL.gguf "LIMITS_MB" [THREADS] [GEN] [ROUNDS]}
limits=${2:-"1500 1000"}
threads=${3:-2}
gen=${4:-32}
rounds=${5:-3}
[ "$(id -u)" -eq 0 ] || { echo "needs root (cgroup v1 memory limits, drop_caches)" >&2; exit 1; }
root=/sys/fs/cgroup/memory
[ -d "$root" ] || { echo "no cgroup v1 memory controller at $root" >&2; exit 1; }
lbench=${LLAMA_BENCH:-}
[ -n "$lbench" ] || [ -d tools/oracle/node_modules ] || (cd tools/oracle && npm ci --ignore-scripts --no-audit --no-fund)
go build -o bin/strata .

drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
drop
# The disk's O_DIRECT bandwidth as the engine reads: 8 readers at once
# (StreamOptions.Readers) of 4 MiB blocks (its largest read), 2 GiB in all
# from regions spread over the file (or its first part). One reader
# (plain dd) measured 1.1 GB/s here where 8 measured 1.8.
size=$(stat -c %s "$model")
per=$(( (size >> 22) / 8 ))
[ "$per" -ge 64 ] || { echo "model too small to measure the disk on" >&2; exit 1; }
t0=$(date +%s%N)
for j in 0 1 2 3 4 5 6 7; do
	dd if="$model" of=/dev/null bs=4M count=64 skip=$((j * per)) iflag=direct 2>/dev/null &
done
wait
bw=$(( (8 * 64 * 4194304 / 1000) / (($(date +%s%N) - t0) / 1000000) ))
echo "model $model, $threads threads, $gen tokens; O_DIRECT read (8 readers): $bw MB/s"
printf '%-7s | %8s %8s %6s | %6s %9s %9s %6s\n' "limit" "ours" "llama" "ratio" "hit %" "MB/token" "I/O bound" "of it"
for mb in $limits; do
	cg="$root/strata-bench-$$-$mb"
	mkdir "$cg"
	trap 'rmdir "$cg" 2>/dev/null || true' EXIT
	echo $((mb << 20)) >"$cg/memory.limit_in_bytes"
	log=$(mktemp)
	for _ in $(seq "$rounds"); do
		drop
		echo "ours $(sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' _ "$cg" bin/strata bench --model "$model" \
			--threads "$threads" --prompt-tokens 16 --gen "$gen" --reps 1 --json 2>/dev/null)" >>"$log"
		drop
		if [ -n "$lbench" ]; then
			echo "lb $(sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' _ "$cg" env LLAMA_BENCH_NO_REPACK=1 "$lbench" -m "$model" \
				-t "$threads" --poll 0 -lm mmap -fa 0 --no-warmup -p 0 -n "$gen" -r 1 -o json 2>/dev/null |
				python3 -c 'import json,sys
try: r=json.load(sys.stdin)[0]["avg_ts"]
except Exception: r=0
print(json.dumps({"decode_tokens_per_second": r}))')" >>"$log"
		else
			echo "node $(sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' _ "$cg" node tools/oracle/bench.mjs "$model" \
				"$threads" 16 "$gen" 1 2>/dev/null)" >>"$log"
		fi
	done
	python3 - "$mb" "$bw" "$log" <<'PY'
import json,statistics,sys
mb,bw,log=sys.argv[1],float(sys.argv[2]),sys.argv[3]
ours,node,hit,mbt=[],[],[],[]
for line in open(log):
    who,js=line.split(" ",1)
    r=json.loads(js)
    if who=="ours":
        ours.append(r["decode_tokens_per_second"])
        x=r.get("experts") or {}
        hit.append(100*x.get("hit_rate",1)); mbt.append(x.get("bytes_read",0)/1e6/max(r["gen_tokens"],1))
    else:
        node.append(r["decode_tokens_per_second"])
o,n=statistics.median(ours),statistics.median(node) or float("nan")
h,m=statistics.median(hit),statistics.median(mbt)
bound=bw/m if m>0 else float("inf")
print(f"{mb+' MB':<7} | {o:8.2f} {n:8.2f} {o/n:6.2f} | {h:6.1f} {m:9.1f} {bound:9.2f} {o/bound:6.2f}")
PY
	rm -f "$log"
	rmdir "$cg"
done
