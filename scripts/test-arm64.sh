#!/usr/bin/env bash
# Runs the arm64 tests of the CPU kernels under qemu-user (Debian's
# qemu-user-static): engine/quant with the NEON kernels on and with them
# off (-tags purego), and engine/cpu; before them, natively, the NEON
# generator's encoding checks. Installs qemu-user-static and
# binutils-aarch64-linux-gnu if missing (needs root or sudo and apt).
# Extra arguments go to every go test, e.g. scripts/test-arm64.sh -v (not
# -race: it needs cgo).
set -euo pipefail
cd "$(dirname "$0")/.."

# need installs Debian package $2 unless command $1 is there.
need() {
	if command -v "$1" >/dev/null 2>&1; then
		return
	fi
	echo "test-arm64: installing $2" >&2
	local sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		sudo=sudo
	fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq "$2" >/dev/null
}
need qemu-aarch64-static qemu-user-static
qemu=$(command -v qemu-aarch64-static)

# The NEON assembly is emitted as WORD encodings; internal/neongen's
# TestEncodings checks each against binutils' aarch64 assembler (and skips
# without it), and that the .s files are the generator's output.
need aarch64-linux-gnu-as binutils-aarch64-linux-gnu
echo "test-arm64: go test ./engine/quant/internal/neongen/ (native)" >&2
go test -count=1 "$@" ./engine/quant/internal/neongen/

export GOARCH=arm64 CGO_ENABLED=0
run() {
	echo "test-arm64: go test $*" >&2
	go test -count=1 -exec "$qemu" "$@"
}
run "$@" ./engine/quant/
run -tags purego "$@" ./engine/quant/
run "$@" ./engine/cpu/
run -tags purego "$@" ./engine/cpu/
# The llama.cpp comparisons with the arm64 kernels (the oracle itself, Node,
# runs natively): the synthetic types; the types files from llama-quantize's
# other mixtures use; the files llama-quantize made; qwen4exp and
# qwen3next. Each in a test binary of its own, under go test's 10-minute
# limit (on a loaded 2-core machine: 277 s for the new types, 205 s for
# llama-quantize's files).
run -run 'TestForwardMatchesLlamaCpp|TestGreedyMatchesLlamaCpp' "$@" ./engine/
run -run 'TestNewTypesMatchLlamaCpp' "$@" ./engine/
run -run 'TestLlamaQuantizeFilesMatchLlamaCpp' "$@" ./engine/
# qwen4exp per position (every synthetic type and the Q4_K_M mixture) and
# its 64 greedy tokens, and qwen3next's greedy tokens: 67 s, 27 s and 10 s
# under qemu on a loaded 2-core machine (the long-prompt comparisons, 50-60
# s each, run on amd64 only).
run -run 'TestQwen4ExpMatchesLlamaCpp|TestQwen4ExpGreedyMatchesLlamaCpp|TestQwen3NextGreedyMatchesLlamaCpp' "$@" ./engine/
