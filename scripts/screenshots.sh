#!/usr/bin/env bash
# Starts the real Strata menu-bar app under Xvfb and a private D-Bus
# session, opens each window through the tray's D-Bus menu
# (com.canonical.dbusmenu Event, as a tray host would), and saves PNG
# screenshots of them. Fails if a window does not appear.
#
#   scripts/screenshots.sh [OUT_DIR]     (default: screenshots/)
#
# The chat window gets a message typed and sent (xdotool, as a person
# would), so chat.png shows a streamed reply from the demo model; the
# Status window is captured after it, so status.png plots that reply.
#
# Needs (Debian): xvfb dbus dbus-x11 x11-utils x11-apps (xwininfo, xwd),
# xdotool, Mesa's GL (libgl1-mesa-dri) and Fyne's build dependencies.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(realpath -m "${1:-$root/screenshots}")"

if [[ "${STRATA_SCREENSHOTS_INSIDE:-}" != 1 ]]; then
	for tool in Xvfb dbus-run-session xwininfo xwd xdotool; do
		command -v "$tool" >/dev/null || { echo "screenshots: $tool is missing (apt-get install xvfb dbus dbus-x11 x11-utils x11-apps xdotool)" >&2; exit 1; }
	done
	work="$(mktemp -d)"
	trap 'kill "${xvfb_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
	echo "screenshots: building strata and traymenu"
	(cd "$root" && go build -o "$work/strata" . && go build -o "$work/traymenu" ./scripts/traymenu)
	mkdir -p "$out"
	# A free display number.
	display=99
	while [[ -e "/tmp/.X11-unix/X$display" || -e "/tmp/.X$display-lock" ]]; do display=$((display + 1)); done
	Xvfb ":$display" -screen 0 1280x1024x24 -nolisten tcp >"$work/xvfb.log" 2>&1 &
	xvfb_pid=$!
	for _ in $(seq 100); do [[ -e "/tmp/.X11-unix/X$display" ]] && break; sleep 0.1; done
	DISPLAY=":$display" STRATA_SCREENSHOTS_INSIDE=1 WORK="$work" OUT="$out" \
		dbus-run-session -- "$0" "$out"
	exit $?
fi

# Inside the X server and the D-Bus session.
home="$WORK/home"
mkdir -p "$home"
"$WORK/strata" --home "$home" >"$WORK/strata.log" 2>&1 &
app=$!
cleanup() { kill "$app" 2>/dev/null || true; wait "$app" 2>/dev/null || true; }
trap cleanup EXIT
fail() {
	echo "screenshots: $*" >&2
	echo "--- strata log ---" >&2
	tail -n 40 "$WORK/strata.log" >&2 || true
	exit 1
}

# window_id TITLE: the id of the mapped top-level window with this title.
window_id() {
	xwininfo -root -tree 2>/dev/null | awk -v t="\"$1\"" 'index($0, t) && /[0-9]+x[0-9]+/ {print $1; exit}'
}

# wait_window TITLE: waits up to 20 s for the window; prints its id.
wait_window() {
	local id=""
	for _ in $(seq 200); do
		id="$(window_id "$1")"
		if [[ -n "$id" ]] && xwininfo -id "$id" | grep -q "IsViewable"; then echo "$id"; return; fi
		kill -0 "$app" 2>/dev/null || fail "strata exited before \"$1\" appeared"
		sleep 0.1
	done
	fail "window \"$1\" did not appear"
}

# capture TITLE FILE: waits for the window, then saves it.
capture() {
	local id
	id="$(wait_window "$1")"
	sleep 1 # let it finish drawing
	xwd -id "$id" -silent >"$WORK/shot.xwd"
	"$WORK/traymenu" xwd2png "$WORK/shot.xwd" "$OUT/$2"
	echo "screenshots: saved $OUT/$2 ($(xwininfo -id "$id" | awk '/Width|Height/ {printf "%s ", $2}'))"
}

echo "screenshots: tray menu items"
"$WORK/traymenu" list --pid "$app" --wait 60s || fail "the tray menu did not appear on D-Bus"

# Without a tray host the app opens its main window.
capture "Strata" main.png
"$WORK/traymenu" click --pid "$app" "Settings…" || fail "could not click Settings…"
capture "Strata Settings" settings.png
"$WORK/traymenu" click --pid "$app" "Models…" || fail "could not click Models…"
capture "Strata Models" models.png

# A chat: type a message into the focused message box and press Enter;
# the reply streams from the demo model through the local API.
"$WORK/traymenu" click --pid "$app" "Chat…" || fail "could not click Chat…"
chat="$(wait_window "Strata Chat")"
sleep 1
xdotool windowfocus --sync "$chat"
xdotool type --delay 20 "Write a haiku about the sea"
xdotool key Return
sleep 5 # the demo model writes its 512 tokens in a few seconds
capture "Strata Chat" chat.png
"$WORK/traymenu" click --pid "$app" "Status…" || fail "could not click Status…"
sleep 2 # two telemetry readings
capture "Strata Status" status.png
"$WORK/traymenu" list --pid "$app" >"$OUT/menu.txt"
echo "screenshots: done"
