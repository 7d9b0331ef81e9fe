# Strata's two set-up commands (see README.md):
#   make run    install what is needed, build, and run Strata on the demo model
#   make test   install what the tests need and run them all
# Everything else here is a step of those two.

GO      ?= go
BIN     := bin/strata
GOFLAGS ?= -buildvcs=false
export GOFLAGS

.PHONY: run test build deps test-deps check-repo vet test-go test-arm64 vet-darwin clean

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
	# The llama.cpp comparisons again with every SIMD kernel off.
	$(GO) test -tags purego -count=1 -run 'TestForwardMatchesLlamaCpp|TestGreedyMatchesLlamaCpp' ./engine/

# The arm64 (NEON) kernels under qemu-user, SIMD on and off.
test-arm64:
	scripts/test-arm64.sh

# macOS builds of everything that does not import fyne (the UI needs cgo).
vet-darwin:
	scripts/vet-darwin.sh

clean:
	rm -rf bin
