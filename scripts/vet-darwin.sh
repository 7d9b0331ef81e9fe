#!/usr/bin/env bash
# go vet for macOS (arm64, no cgo) over every package that does not import
# fyne, directly or not: the engine, the API and the rest must build for
# the Mac without the UI's cgo. The list is computed, not written down.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOOS=darwin GOARCH=arm64 CGO_ENABLED=0
pkgs=$(go list -e -f '{{.ImportPath}}{{range .Deps}} {{.}}{{end}}' ./... |
	awk '{ ui = 0; for (i = 2; i <= NF; i++) if ($i ~ /^fyne\.io\//) ui = 1; if (!ui) print $1 }')
if [ -z "$pkgs" ]; then
	echo "vet-darwin: no packages found" >&2
	exit 1
fi
echo "vet-darwin: $(echo "$pkgs" | wc -l) packages without fyne" >&2
# shellcheck disable=SC2086
go vet $pkgs
# The Metal backend's tests must compile for the Mac too (they run on the
# GPU there; here they only build).
for p in $(go list ./metal/...); do
	go test -c -o /dev/null "$p"
done
