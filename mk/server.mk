# Local Tinker server benchmarks (lib/server): import of 10,000 checkpoints,
# and GET /api/v1/checkpoints?limit=100 under a loopback load generator
# (target: >= 3,000 req/s, p99 < 50 ms), save of a Qwen3-8B rank-32 adapter
# (s and MB/s), archive download over loopback, raw adapter generation,
# sample round trips under a second user's flood of uncollected futures
# (round trips/s, p99), and a training step (8 x 128 tokens on tiny-qwen3) over
# HTTP next to the same step in the engine. TINKER_BENCH_REQUESTS sets the counts.
.PHONY: bench-server
BENCH_TARGETS += bench-server

bench-server:
	@echo "== local server: import 10k checkpoints; list endpoint under load (16 clients, 100 items/page)"
	$(GO) test -run '^$$' -bench 'Import10k|ListEndpointLoad|FuturesLoad|SaveCheckpoint|ArchiveDownload|WriteWeights|TrainStepHTTP' -benchtime 1x ./lib/server ./lib/peft
