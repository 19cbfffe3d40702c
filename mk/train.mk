# Training benchmarks: one training step (forward_backward and optim_step of
# tiny-llama) through the shell against the same requests sent with
# net/http (builtins), and SFT's steps per second (lib/train), on an
# in-process local server.
BENCH_TARGETS += bench-train

.PHONY: bench-train
bench-train:
	$(GO) test -run '^$$' -bench 'TrainStep|SFTStep' -benchtime 30x -count 3 ./builtins/ ./lib/train/
