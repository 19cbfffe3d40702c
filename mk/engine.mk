# Sampling engine benchmarks (lib/engine): generated tokens/s of the tiny
# models for 1 sequence, 8 sequences in one request and 8 concurrent
# requests (with the speed-ups over 1 sequence, measured in the same run),
# and matrix-vector GFLOP/s of the engine's kernel next to a plain Go loop.
# Training: tokens/s of a full step (forward_backward over sequences of 128
# tokens with a rank-32 LoRA on every target, then optim_step) on the tiny
# models and a random Qwen3-0.6B-shaped model, with the GFLOP/s it implies
# next to the matrix-product peak measured in the same run.
# Numbers are wall-clock: on a shared machine, note the load average.
BENCH_TARGETS += bench-engine

.PHONY: bench-engine
bench-engine:
	@uptime
	$(GO) test -run '^$$' -bench 'BenchmarkGenerate' -benchtime 5x -count 1 ./lib/engine/
	$(GO) test -run '^$$' -bench 'BenchmarkMatVec' -benchtime 1s -count 1 ./lib/engine/
	$(GO) test -run '^$$' -bench 'BenchmarkTrainStep' -benchtime 1x -count 1 -timeout 30m ./lib/engine/
