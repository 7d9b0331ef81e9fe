#!/usr/bin/env bash
# Builds dist/Strata.app and dist/Strata-<version>-<arch>.dmg — on a Mac.
#
#   packaging/macos/build.sh                 # arm64 (Apple silicon)
#   ARCH=amd64 packaging/macos/build.sh      # an Intel build
#
# Needs Go and Xcode's command-line tools (cgo for Fyne, codesign,
# hdiutil, xcrun notarytool/stapler). Steps:
#  1. `fyne package` (fyne.io/tools, version pinned below, run with go run)
#     builds the app bundle from FyneApp.toml: name, id, version, icon.
#     It rewrites FyneApp.toml's Build number; the script puts the file
#     back, so FyneApp.toml stays the one source of version and build.
#  2. Info.plist is generated from FyneApp.toml by packaging/bundle:
#     LSUIElement (menu-bar app, no Dock icon), LSMinimumSystemVersion,
#     bundle id, version, build, icon.
#  3. codesign with the hardened runtime and Strata.entitlements, with
#     the identity in STRATA_SIGN_IDENTITY (e.g. "Developer ID
#     Application: Name (TEAMID)"); ad hoc ("-") when it is unset.
#  4. A .dmg holding Strata.app and a link to /Applications, signed too.
#  5. Notarised and stapled when credentials are present: either
#     STRATA_NOTARY_PROFILE (a `xcrun notarytool store-credentials`
#     keychain profile), or APPLE_ID, APPLE_TEAM_ID and
#     APPLE_APP_PASSWORD (an app-specific password). Notarisation needs a
#     Developer ID signature, not an ad hoc one.
set -euo pipefail

FYNE_TOOLS_VERSION=v1.7.4 # fyne.io/tools, pinned

if [[ "$(uname -s)" != Darwin ]]; then
	echo "build.sh: builds the macOS app; run it on a Mac (the checks that run anywhere: go test ./packaging/...)" >&2
	exit 2
fi
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
arch="${ARCH:-arm64}"
identity="${STRATA_SIGN_IDENTITY:--}"
bundle() { go run ./packaging/bundle "$@"; }

bundle check
read -r version build < <(bundle version)
dist="$root/dist"
app="$dist/Strata.app"
dmg="$dist/Strata-$version-$arch.dmg"
work="$(mktemp -d)"
cp FyneApp.toml "$work/FyneApp.toml"
trap 'cp "$work/FyneApp.toml" "$root/FyneApp.toml"; rm -rf "$work"' EXIT
rm -rf "$app" "$dmg"
mkdir -p "$dist"

echo "build.sh: Strata $version ($build) for darwin/$arch"
# --target darwin/ARCH builds one architecture (plain darwin would build a
# universal binary with lipo); name, id, version and icon come from
# FyneApp.toml.
CGO_ENABLED=1 go run "fyne.io/tools/cmd/fyne@$FYNE_TOOLS_VERSION" package \
	--target "darwin/$arch" --release --src . --icon "$(sed -n 's/^ *Icon *= *"\(.*\)"/\1/p' FyneApp.toml)"
mv Strata.app "$app"
cp "$work/FyneApp.toml" FyneApp.toml # fyne package bumped Build

exe="$(find "$app/Contents/MacOS" -maxdepth 1 -type f | head -n1)"
[[ -n "$exe" ]] || { echo "build.sh: no executable in $app/Contents/MacOS" >&2; exit 1; }
bundle plist -exe "$exe" -out "$app/Contents/Info.plist"
plutil -lint "$app/Contents/Info.plist"
[[ -f "$app/Contents/Resources/icon.icns" ]] || { echo "build.sh: fyne package made no icon.icns" >&2; exit 1; }

sign=(codesign --force --options runtime --entitlements packaging/macos/Strata.entitlements --sign "$identity")
[[ "$identity" != "-" ]] && sign+=(--timestamp)
"${sign[@]}" "$app"
codesign --verify --strict --verbose=2 "$app"

staging="$work/dmg"
mkdir -p "$staging"
cp -R "$app" "$staging/"
ln -s /Applications "$staging/Applications"
hdiutil create -volname "Strata $version" -srcfolder "$staging" -ov -format UDZO "$dmg"
[[ "$identity" != "-" ]] && codesign --force --timestamp --sign "$identity" "$dmg"

notary=()
if [[ -n "${STRATA_NOTARY_PROFILE:-}" ]]; then
	notary=(--keychain-profile "$STRATA_NOTARY_PROFILE")
elif [[ -n "${APPLE_ID:-}" && -n "${APPLE_TEAM_ID:-}" && -n "${APPLE_APP_PASSWORD:-}" ]]; then
	notary=(--apple-id "$APPLE_ID" --team-id "$APPLE_TEAM_ID" --password "$APPLE_APP_PASSWORD")
fi
if ((${#notary[@]})); then
	if [[ "$identity" == "-" ]]; then
		echo "build.sh: notarisation needs STRATA_SIGN_IDENTITY (a Developer ID); skipped" >&2
	else
		xcrun notarytool submit "$dmg" "${notary[@]}" --wait
		xcrun stapler staple "$app"
		xcrun stapler staple "$dmg"
	fi
else
	echo "build.sh: no notarisation credentials; the app opens after the Gatekeeper note in the README"
fi
echo "build.sh: wrote $app and $dmg"
