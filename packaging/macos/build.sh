#!/usr/bin/env bash
# Builds Strata.app and Strata-<version>.dmg in dist/ — macOS only.
#
#   packaging/macos/build.sh            # the Mac's own architecture
#   ARCH=amd64 packaging/macos/build.sh # an Intel build on an Apple-silicon Mac
#
# Needs Xcode's command-line tools (cgo for Fyne, codesign, hdiutil) and Go.
# Uses the fyne packaging tool (fyne.io/tools, run with `go run`) which reads
# FyneApp.toml (name, id, version, icon), then puts packaging/macos/Info.plist
# in place of the generated one: it sets LSUIElement so Strata lives in the
# menu bar with no Dock icon. The bundle is signed ad hoc; a release build
# should sign with a Developer ID and notarize (not done here).
set -euo pipefail

if [[ "$(uname -s)" != Darwin ]]; then
	echo "build.sh: builds the macOS app; run it on a Mac" >&2
	exit 2
fi
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
arch="${ARCH:-$(go env GOARCH)}"
version="$(sed -n 's/^ *Version *= *"\(.*\)"/\1/p' FyneApp.toml)"
fyne_tool="fyne.io/tools/cmd/fyne@v1.7.4"
dist="$root/dist"
rm -rf "$dist/Strata.app"
mkdir -p "$dist"

echo "building Strata $version for darwin/$arch"
GOOS=darwin GOARCH="$arch" CGO_ENABLED=1 go run "$fyne_tool" package \
	--target darwin --release --name Strata --app-id dev.strata.app \
	--app-version "$version" --icon resources/icons/app.png --src .
mv Strata.app "$dist/Strata.app"

plist="$dist/Strata.app/Contents/Info.plist"
cp packaging/macos/Info.plist "$plist"
/usr/libexec/PlistBuddy -c "Set :CFBundleShortVersionString $version" "$plist"
exe="$(ls "$dist/Strata.app/Contents/MacOS" | head -n1)"
/usr/libexec/PlistBuddy -c "Set :CFBundleExecutable $exe" "$plist"
plutil -lint "$plist"

codesign --force --deep --sign - "$dist/Strata.app"

dmg="$dist/Strata-$version-$arch.dmg"
rm -f "$dmg"
staging="$(mktemp -d)"
trap 'rm -rf "$staging"' EXIT
cp -R "$dist/Strata.app" "$staging/"
ln -s /Applications "$staging/Applications"
hdiutil create -volname "Strata $version" -srcfolder "$staging" -ov -format UDZO "$dmg"
echo "wrote $dist/Strata.app and $dmg"
