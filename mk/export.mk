# Export benchmark (lib/export): merging a rank-32 adapter into a ~1 GB
# four-shard bfloat16 model, next to a plain copy of the same shards, with
# each child's peak RSS against the largest shard plus the adapter.
BENCH_TARGETS += bench-export

.PHONY: bench-export
bench-export:
	$(GO) run ./lib/export/internal/exportbench -runs 2
