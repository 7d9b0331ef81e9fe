#!/usr/bin/env bash
# Installs what Strata needs: `deps.sh run` for building and running,
# `deps.sh test` also for the tests. Idempotent: only missing pieces are
# installed. On Linux it uses apt (with sudo when not root); on macOS it
# checks for the Xcode command line tools (cgo for the menu-bar UI).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-run}"

say() { printf 'deps: %s\n' "$*" >&2; }

if ! command -v go >/dev/null 2>&1; then
	say "Go is not installed: install Go 1.26.8 or newer (the go line of go.mod) from https://go.dev/dl and run this again."
	exit 1
fi

apt_install() {
	local missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	local sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		if ! command -v sudo >/dev/null 2>&1; then
			say "need root to install: ${missing[*]}"
			exit 1
		fi
		sudo="sudo"
	fi
	say "installing apt packages: ${missing[*]}"
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

case "$(uname -s)" in
Linux)
	if command -v apt-get >/dev/null 2>&1; then
		# Fyne (the menu-bar UI) builds with cgo against OpenGL and X11.
		pkgs=(gcc libc6-dev pkg-config libgl1-mesa-dev libx11-dev libxcursor-dev libxrandr-dev
			libxinerama-dev libxi-dev libxxf86vm-dev)
		if [ "$mode" = test ]; then
			# The oracle (llama.cpp via Node) and the app's screenshot script.
			command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
			command -v npm >/dev/null 2>&1 || pkgs+=(npm)
			pkgs+=(xvfb dbus dbus-x11 x11-utils x11-apps xdotool)
			# The Metal emulator (metal/internal/emu): clang 16 (Debian's
			# clang 14 lacks _Float16 on x86), the sanitizer runtimes and the
			# symbolizer that puts .metal lines in their reports.
			pkgs+=(clang-16 libclang-rt-16-dev llvm-16)
			# A real browser for the API's allowed-origins test.
			pkgs+=(chromium)
		fi
		apt_install "${pkgs[@]}"
	else
		say "not a Debian-like system: install a C compiler, pkg-config and the OpenGL/X11 development headers yourself"
	fi
	;;
Darwin)
	if ! xcode-select -p >/dev/null 2>&1; then
		say "the Xcode command line tools are missing: run 'xcode-select --install', then this again"
		exit 1
	fi
	if [ "$mode" = test ] && ! command -v npm >/dev/null 2>&1; then
		say "Node.js (npm) is missing: install it from https://nodejs.org (or 'brew install node'), then run this again"
		exit 1
	fi
	;;
esac

say "downloading Go modules"
go mod download

if [ "$mode" = test ] && [ -f tools/oracle/package-lock.json ]; then
	say "installing the llama.cpp oracle (tools/oracle)"
	(cd tools/oracle && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi
if [ "$mode" = test ] && [ -f tools/clients/package-lock.json ]; then
	say "installing the OpenAI and Ollama client libraries the API is tested with (tools/clients)"
	(cd tools/clients && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi
