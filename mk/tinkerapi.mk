# API client benchmarks (lib/tinkerapi): one 1000-checkpoint page fetched,
# validated and decoded over loopback, and the decode step alone.
BENCH_TARGETS += bench-tinkerapi

.PHONY: bench-tinkerapi
bench-tinkerapi:
	$(GO) test -run '^$$' -bench . -benchmem ./lib/tinkerapi/
