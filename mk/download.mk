# Checkpoint download benchmark (lib/download): download+extract of a ~1 GiB
# archive on loopback, next to `curl | tar -x` on the same URL.
# The archive is generated once under .cache/download-bench.
BENCH_TARGETS += bench-download

.PHONY: bench-download
bench-download:
	$(GO) run ./lib/download/internal/dlbench -cache .cache/download-bench -runs 3
