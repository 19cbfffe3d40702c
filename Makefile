# tinker — build, test and benchmark. `make test` is what CI runs.
GO      ?= go
BIN     := bin/tinker
PKGS    := ./...
# Component makefiles in mk/ add prerequisites of `make test` to TEST_DEPS
# (e.g. test data fetched from the npm registry) and benchmarks to BENCH_TARGETS.
TEST_DEPS :=
BENCH_TARGETS :=

.PHONY: all build run test vet unit golden golden-update bench clean testdeps
all: build

build:
	$(GO) build -trimpath -ldflags "-s -w" -o $(BIN) ./cmd/tinker

include $(wildcard mk/*.mk)

testdeps: $(TEST_DEPS)

test: vet testdeps build
	$(GO) test -count=1 $(PKGS)

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

bench: build $(BENCH_TARGETS)

clean:
	rm -rf bin
