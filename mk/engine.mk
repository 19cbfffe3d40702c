# Engine benchmarks (lib/engine), each next to a reference measured in the
# same run:
# - GEMM: GFLOP/s of the forward matrix product on the Qwen3-0.6B layer
#   shapes for M = 1, 8, 128, 512 vectors, with the SIMD and the scalar
#   kernels, next to the CPU's FMA and mul+add peaks from a tiny loop;
#   the backward products (dx = dy·W, LoRA gradients) on one core, the
#   assembly tiles next to the archsimd ones.
# - Training step: tokens/s of forward_backward (sequences of 128 tokens,
#   rank-32 LoRA on every target) + optim_step on tiny-llama, tiny-qwen3
#   and a random Qwen3-0.6B-shaped model, next to the scalar kernels (the
#   tiny models only) and, where python3-torch is installed, the same
#   step in PyTorch on the same threads (OpenBLAS preloaded) with the
#   ratio (TINKER_BENCH_TORCH_RUNS=N in the environment: the median of N
#   PyTorch processes, whose speed moves between processes, with the
#   ratio's range; TINKER_BENCH_TORCH_PAIRS=N: N engine steps and PyTorch
#   processes alternated, the pairs' median ratio); and the model FLOPs
#   utilisation (%MFU by wall time, %MFU-cpu by CPU time) against the
#   widest FMA peak. Each shape runs TRAIN_STEPS steps (and PyTorch as
#   many after its warm-up), each between two runs of the FMA loop: the
#   figures are medians, %MFU of each step against its own probes, with
#   the least and greatest beside them (-min, -max) and every step logged,
#   as one step on this VM can be 1.5x another.
# - Training memory (bench-engine-memory, not part of bench-engine): peak
#   RSS of one step (rank-32 LoRA on every linear layer) on the 0.6B widths
#   with 4 layers at 2 x 512 and 1 x 2048, and on all 28 layers at 2 x 512,
#   1 x 2048 and 1 x 4096, the engine and PyTorch (the same model, at the
#   first three shapes) each in a child process of its own, measured by
#   wait4's maxrss, with PyTorch / engine; next to the engine's weights,
#   trainer state and activation arena.
# - Prefill (512-token prompt, next to PyTorch's in float32 and bfloat16
#   where python3-torch is installed) and decode tokens/s on the 0.6B shape with
#   float32 and bfloat16 weights, decode against the memory-bandwidth limit.
# - Generation tokens/s of the tiny models and the 0.6B shape in bfloat16
#   (1 sequence, 8 in one request, 8 concurrent requests; conc/batch is the
#   median of per-round ratios). A tiny model's round takes ~60 ms, so a
#   few rounds are one scheduler hiccup away from a wrong median: they run
#   20 rounds, the 0.6B shape 5.
# Numbers are wall-clock: on a shared machine, note the load average.
BENCH_TARGETS += bench-engine

TORCH_PY ?= /usr/bin/python3
# Timed training steps per shape in bench-engine (medians over them).
TRAIN_STEPS ?= 5
TORCH_PKGS := python3-torch python3-numpy libopenblas0-pthread
OPENBLAS = $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 /usr/lib/*/openblas-pthread/libblas.so.3))
# Evaluated when the recipe runs, after bench-engine-deps had its chance.
TORCH_ENV = $(shell $(TORCH_PY) -c 'import torch' >/dev/null 2>&1 && echo TINKER_BENCH_TORCH=$(TORCH_PY) $(if $(OPENBLAS),LD_PRELOAD=$(OPENBLAS)))

.PHONY: bench-engine bench-engine-deps bench-engine-memory
# The PyTorch reference comes from Debian's packages: installed here as root
# with apt-get, otherwise the benchmark says how and runs without it.
bench-engine-deps:
	@if $(TORCH_PY) -c 'import torch' >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "bench-engine: installing $(TORCH_PKGS) for the PyTorch reference"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(TORCH_PKGS) >/dev/null || \
	  echo "bench-engine: apt-get failed; the training step runs without the PyTorch reference"; \
	else echo "bench-engine: no PyTorch reference (sudo apt-get install $(TORCH_PKGS) adds it)"; fi

bench-engine: bench-engine-deps
	@uptime
	$(GO) test -run '^$$' -bench 'BenchmarkGEMM' -benchtime 5x -count 1 ./lib/engine/
	$(GO) test -run '^$$' -bench 'BenchmarkBackwardProducts' -benchtime 5x -count 1 -cpu 1 ./lib/engine/
	@uptime
	@echo "MFU counts 2 FLOPs per multiply-add of the base products forward and of their input gradients backward (4 x params x tokens), causal attention (the forward's scores and weighted values and the backward's five products: scores recomputed, datt.v, dq, dk, dv), and the rank-32 LoRA products (forward, both gradients); layer 0's unneeded q/k/v input gradients and recomputed layers are not counted (stepFLOPs in lib/engine/train_bench_test.go)"
	$(TORCH_ENV) $(GO) test -run '^$$' -bench 'BenchmarkTrainStep' -benchtime $(TRAIN_STEPS)x -count 1 -timeout 120m ./lib/engine/
	@uptime
	$(TORCH_ENV) $(GO) test -run '^$$' -bench 'BenchmarkPrefillDecode' -benchtime 1x -count 1 -timeout 60m ./lib/engine/
	@uptime
	$(GO) test -run '^$$' -bench 'BenchmarkGenerate/tinker-local/' -benchtime 20x -count 1 ./lib/engine/
	$(GO) test -run '^$$' -bench 'BenchmarkGenerate/qwen3' -benchtime 5x -count 1 ./lib/engine/

bench-engine-memory: bench-engine-deps
	@uptime
	$(TORCH_ENV) $(GO) test -run '^$$' -bench 'BenchmarkTrainMemory' -benchtime 1x -count 1 -timeout 180m ./lib/engine/
	@uptime

# The engine's kernels for the CPUs this machine is not: the AVX2 kernels
# of an x86-64 CPU without AVX-512 (qemu's "max" CPU model has AVX2 and FMA
# and no AVX-512), and an arm64 build (the scalar kernels), each running the
# engine's kernel-centred tests (-short) in qemu's user-mode emulator from
# Debian's qemu-user. Without it only the AVX-512 path would ever run here.
# TINKER_SKIP_EMULATED=1 leaves them out.
# What runs there (EMULATED_TESTS): every test named for a kernel or path
# comparison (Scalar, SIMD, AVX, Asm, Kernel, Blocks, ...), the worker and
# optimiser tests, and one small model end to end (tiny-llama: sampling
# against the float64 reference, pinned outputs, gradients against finite
# differences, batch-split and thread-count invariance; the 300-token
# generation against the reference is native-only, its time being the
# float64 reference's; TINKER_ENGINE_EMULATED=1
# makes the tests that loop over tiny models take that one), plus the MoE
# and GPT-OSS reference forwards. The scheduling, request-handling and
# loading tests are plain Go, the same on every CPU: the native run covers
# them. A new kernel test is picked up when its name says what it compares.
# Kernel tests that loop over many shapes take, under qemu, the shapes that
# reach each of the kernel's cases (qemuFew in lib/engine/emulated_test.go);
# tests of the AVX-512 kernels' blocking, and the generic forward test that
# repeats the AVX2 one, skip there. The native run takes every shape.
# Emulation runs slow on a busy machine: its package timeout is 30 minutes.
EMULATED_TESTS := Scalar|SIMD|AVX|Asm|Kernel|Blocks|Exp64|Lanes|MatMul|ForkJoin|AdamW|IndependentOf|^TestPinnedOutputs$$|^TestLogprobsMatchReference$$|^TestPromptLogprobsMatchReference$$|^TestGradientsMatchFiniteDifferences$$|^TestForwardMatchesSampler$$|^TestLoRAMatchesMergedReference$$|^TestLlama3RopeScaling$$|^TestRecomputeMatchesKept$$|^TestTopKCrossEntropyMatchesFiniteDifferences$$|^TestMoEMatchesReference$$|^TestGptOssMatchesReference$$|^TestPackTokens$$
.PHONY: engine-emulator test-engine-emulated
TEST_DEPS += engine-emulator
TEST_AFTER += test-engine-emulated

engine-emulator:
	@if [ -z "$$TINKER_SKIP_EMULATED" ]; then \
	  $(SHELL) mk/need-tools.sh "the engine's AVX2 and arm64 kernels are tested in an emulator; or set TINKER_SKIP_EMULATED=1 to leave them out" qemu-x86_64=qemu-user qemu-aarch64=qemu-user; \
	fi

test-engine-emulated:
	@if [ -n "$$TINKER_SKIP_EMULATED" ]; then echo "test-engine-emulated: left out (TINKER_SKIP_EMULATED is set)"; exit 0; fi; \
	set -e; \
	echo "engine tests on an x86-64 CPU without AVX-512 (qemu -cpu max):"; \
	TINKER_ENGINE_EMULATED=1 $(GO) test -count=1 -short -timeout 30m -run '$(EMULATED_TESTS)' -exec 'qemu-x86_64 -cpu max' ./lib/engine; \
	echo "engine tests on arm64 (qemu-aarch64):"; \
	TINKER_ENGINE_EMULATED=1 GOARCH=arm64 $(GO) test -count=1 -short -timeout 30m -run '$(EMULATED_TESTS)' -exec qemu-aarch64 ./lib/engine

# The engine's unsafe pointer arithmetic under the compiler's pointer
# checks: every unsafe.Add must stay inside the allocation it starts in. A
# pointer one past a row's end passes every numeric test, yet the garbage
# collector, finding it where the next span is free, stops the process
# with "found bad pointer in Go heap"; checkptr turns that rare crash into
# a test failure on every run (attention's weighted sums had one; the AMX
# tiles' view over all their rows and exp32's vector loads of a short
# row's tail had others, which the -race run found).
CHECKPTR_TESTS := Attention|Weighted|Softmax|Forward|Backward|Datum|MatMul|Recompute|Gradients|Exp|BF16|AMX|LossRow|PartLoads
.PHONY: test-engine-checkptr
TEST_AFTER += test-engine-checkptr

test-engine-checkptr:
	@echo "engine tests with the compiler's unsafe pointer checks (-d=checkptr):"
	$(GO) test -count=1 -short -timeout 30m -gcflags=all=-d=checkptr -run '$(CHECKPTR_TESTS)' ./lib/engine
