# Training benchmarks (builtins): one training step (forward_backward and
# optim_step of tiny-llama) through the shell against the same requests sent
# with net/http, and sft()'s steps per second, on an in-process local server.
BENCH_TARGETS += bench-train

.PHONY: bench-train
bench-train:
	$(GO) test -run '^$$' -bench 'TrainStep|SFTStep' -benchtime 30x -count 3 ./builtins/
