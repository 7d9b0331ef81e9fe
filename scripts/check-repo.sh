#!/usr/bin/env bash
# Checks what the repository tracks (run by `make test`, so by CI):
#   - no tracked file over 1 MB outside a testdata/ folder (build output,
#     binaries and downloaded models stay out of git);
#   - every tracked .go file is gofmt-formatted.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))

if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	echo "check-repo: not a git checkout; run it from a clone" >&2
	exit 1
fi

fail=0
# Sizes of the blobs in the index (what a commit would hold).
while IFS=' ' read -r size path; do
	case "/$path" in
	*/testdata/*) continue ;;
	esac
	if [ "$size" -gt "$limit" ]; then
		echo "check-repo: $path is tracked and $size bytes (limit $limit outside testdata/)" >&2
		fail=1
	fi
done < <(git ls-files -s -z | tr '\0' '\n' | awk '{ split($0, a, "\t"); split(a[1], m, " "); print m[2], a[2] }' |
	git cat-file --batch-check='%(objectsize) %(rest)')

mapfile -t gofiles < <(git ls-files -- '*.go')
existing=()
for f in "${gofiles[@]}"; do
	[ -f "$f" ] && existing+=("$f")
done
if [ "${#existing[@]}" -gt 0 ]; then
	unformatted=$(gofmt -l "${existing[@]}")
	if [ -n "$unformatted" ]; then
		echo "check-repo: gofmt would change these files (run gofmt -w):" >&2
		echo "$unformatted" | sed 's/^/  /' >&2
		fail=1
	fi
fi
exit "$fail"
