# Batch sampling benchmark (lib/batch): 16 rows on the tiny Llama from the
# local server, by Run at concurrency 8, one request at a time, and grouped
# one request per prompt; at 1 ms and 100 ms of server-side queueing delay.
BENCH_TARGETS += bench-batch

.PHONY: bench-batch
bench-batch:
	$(GO) test -run '^$$' -bench BenchmarkBatch -benchtime 3x ./lib/batch/
