# Strata's two set-up commands (see README.md):
#   make run    install what is needed, build, and run Strata on the demo model
#   make test   install what the tests need and run them all
# Everything else here is a step of those two.

GO      ?= go
BIN     := bin/strata
GOFLAGS ?= -buildvcs=false
export GOFLAGS

.PHONY: run test build deps test-deps check-repo vet test-go test-arm64 vet-darwin clean install uninstall app-mac

run: deps build
	./$(BIN)

build:
	$(GO) build -o $(BIN) .

deps:
	scripts/deps.sh run

test-deps:
	scripts/deps.sh test

test: test-deps check-repo vet test-go test-arm64 vet-darwin

# No big files outside testdata/ in git, every .go file gofmt-formatted.
check-repo:
	scripts/check-repo.sh

vet:
	$(GO) vet ./...

test-go:
	$(GO) test -race -timeout 15m ./...
	cd internal/uilocale && $(GO) test -race ./...
	# The llama.cpp comparisons again with every SIMD kernel off (the
	# synthetic types, the new types, the files llama-quantize made, qwen4exp).
	$(GO) test -tags purego -count=1 -run 'TestForwardMatchesLlamaCpp|TestGreedyMatchesLlamaCpp|TestNewTypesMatchLlamaCpp|TestLlamaQuantizeFilesMatchLlamaCpp|TestQwen4ExpGreedyMatchesLlamaCpp' ./engine/

# The arm64 (NEON) kernels under qemu-user, SIMD on and off.
test-arm64:
	scripts/test-arm64.sh

# macOS builds of everything that does not import fyne (the UI needs cgo).
vet-darwin:
	scripts/vet-darwin.sh

clean:
	rm -rf bin dist

# Linux: install the app for this user (PREFIX=~/.local): the program, its
# menu entry and icon. AUTOSTART=1 also turns on Start at login (the same
# entry the menu's "Start at login" writes). `make uninstall` undoes it.
PREFIX    ?= $(HOME)/.local
APPID     := dev.strata.app
BUNDLE    := $(GO) run ./packaging/bundle

install: build
	$(BUNDLE) check
	install -Dm755 $(BIN) $(PREFIX)/bin/strata
	mkdir -p $(PREFIX)/share/applications
	$(BUNDLE) desktop -exec $(abspath $(PREFIX))/bin/strata -out $(PREFIX)/share/applications/$(APPID).desktop
	install -Dm644 resources/icons/app.png $(PREFIX)/share/icons/hicolor/1024x1024/apps/$(APPID).png
	install -Dm644 resources/icons/app.png $(PREFIX)/share/pixmaps/$(APPID).png
	@if command -v update-desktop-database >/dev/null; then update-desktop-database -q $(PREFIX)/share/applications; fi
	$(if $(filter 1,$(AUTOSTART)),$(BUNDLE) autostart -exe $(abspath $(PREFIX))/bin/strata on)
	@echo "installed $(PREFIX)/bin/strata and its menu entry (Strata)"

uninstall:
	-$(BUNDLE) autostart -exe $(abspath $(PREFIX))/bin/strata off
	rm -f $(PREFIX)/bin/strata $(PREFIX)/share/applications/$(APPID).desktop \
		$(PREFIX)/share/icons/hicolor/1024x1024/apps/$(APPID).png $(PREFIX)/share/pixmaps/$(APPID).png

# macOS: dist/Strata.app and a .dmg (see packaging/macos/build.sh).
app-mac:
	packaging/macos/build.sh
