# Export benchmark (lib/export): merging a rank-32 adapter into a ~1 GB
# four-shard bfloat16 Llama-shaped model, then into a ~2.6 GB DeepSeek-shaped
# mixture-of-experts model in FP8 blocks (requantised where adapted), a
# ~1.7 GB Kimi K2 one with INT4 experts and a ~2.2 GB GPT-OSS one with MXFP4
# experts (exportbench -model kimi, -model gptoss), each
# next to a plain copy of the same shards in the same run, with each child's
# peak RSS against the largest shard plus the adapter. The models are
# generated into a temporary directory and deleted afterwards.
BENCH_TARGETS += bench-export

.PHONY: bench-export
bench-export:
	$(GO) run ./lib/export/internal/exportbench -runs 2
	$(GO) run ./lib/export/internal/exportbench -model deepseek -runs 1
	$(GO) run ./lib/export/internal/exportbench -model kimi -runs 1
	$(GO) run ./lib/export/internal/exportbench -model gptoss -runs 1
