#!/usr/bin/env bash
# Runs the arm64 tests of the CPU kernels under qemu-user (Debian's
# qemu-user-static): engine/quant with the NEON kernels on and with them
# off (-tags purego), and engine/cpu. Installs qemu-user-static if missing
# (needs root or sudo and apt). Extra arguments go to every go test, e.g.
# scripts/test-arm64.sh -v (not -race: it needs cgo).
set -euo pipefail
cd "$(dirname "$0")/.."

qemu=qemu-aarch64-static
if ! command -v "$qemu" >/dev/null 2>&1; then
	echo "test-arm64: installing qemu-user-static" >&2
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		sudo=sudo
	fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq qemu-user-static >/dev/null
fi
qemu=$(command -v "$qemu")

export GOARCH=arm64 CGO_ENABLED=0
run() {
	echo "test-arm64: go test $*" >&2
	go test -count=1 -exec "$qemu" "$@"
}
run "$@" ./engine/quant/
run -tags purego "$@" ./engine/quant/
run "$@" ./engine/cpu/
# The llama.cpp comparisons with the arm64 kernels (the oracle itself, Node,
# runs natively).
run -run 'TestForwardMatchesLlamaCpp|TestGreedyMatchesLlamaCpp' "$@" ./engine/
