// Package engine is the local server's sampling and training engine: a
// pure-Go float32 transformer forward pass for Llama-3, Qwen3 dense,
// Qwen3-MoE, GPT-OSS and DeepSeek-V3 / Kimi K2 models (RMSNorm, rotary
// embeddings with Llama-3.1 or YaRN frequency scaling, grouped-query
// attention with a KV cache, SwiGLU MLP, Qwen3's per-head q/k norms, tied
// or untied lm_head, routed experts: moe.go; GPT-OSS's sinks, sliding
// windows and experts: gptoss*.go; DeepSeek's latent attention, grouped
// sigmoid routing and shared experts: deepseek*.go, mla*.go), LoRA
// adapters applied on the fly, token sampling with
// temperature, top-k, top-p, seeds, stop conditions and log-probabilities,
// and LoRA training (Trainer): the losses of forward/forward_backward, a
// backward pass to the adapter's parameters with the base weights frozen,
// gradient accumulation, AdamW, and the adapter and optimizer state.
//
// Models come from a Hugging Face model directory (LoadDir; FindModelDir
// searches the Hugging Face cache) or, for the built-in tiny models
// tinker-local/tiny-llama, tiny-qwen3, tiny-qwen3-moe, tiny-gpt-oss and
// tiny-deepseek,
// from a seeded generator (Load). The tiny models' weights are UNTRAINED:
// they emit byte noise and exist so that sampling, adapters and the server
// run end to end with no download. Pool loads each base model once and caches adapters.
//
// Design choices:
//
//   - LoRA is applied on the fly (y = W·x + (alpha/r)·B·(A·x)), never merged:
//     the base weights stay shared by every adapter's sampler, an adapter
//     costs only its own r·(in+out) floats per matrix, and loading is instant.
//   - Reported logprobs are those of the sampling distribution before
//     truncation, log softmax(logits/T) over the full vocabulary (see
//     Sequence); prompt logprobs are at temperature 1.
//   - Batch invariance: each output element of a matrix product is summed in
//     one fixed order that depends only on the shapes, never on the batch,
//     the goroutine split or the kernel, and every term is one fused
//     multiply-add (the product not rounded before its add) on every path:
//     VFMADD231PS in the AVX-512 and AVX2 assembly, MulAdd in archsimd,
//     fma32 in the scalar kernels (the compiler's FMADDS on arm64; on
//     amd64 fma32Soft, exact in float64 and rounded once through
//     round-to-odd: float32(math.FMA(...)) rounds twice and differs in
//     rare cases (TestFMA32), and GOAMD64=v3 fuses x*y+z only where no
//     load was folded into the add first (TestScalarKernelsFuse); it is
//     ~6× slower than a multiply and an add, and runs only on CPUs
//     without AVX2+FMA3 and in the vector kernels' column tails). So a
//     seeded sample has the same bits alone, in a batch, batched with
//     other requests and on another machine (TestConcurrentMatchesSolo).
//     Invariance needs the same operations in the same order, not
//     unfused ones: products were once kept unfused, and a separate
//     multiply and add issue two instructions per term, which held the
//     kernels to about half of the 512-bit FMA peak (issue 34). Fused,
//     with the same tiles, the forward products on the Qwen3-0.6B shapes
//     did 1.3–1.8× the FLOPs per CPU-second at 128 and 512 vectors (two
//     of twelve ~1.06×) and matMulT 1.8× on two of its three base
//     shapes, test binaries alternated on a shared AVX-512 Xeon (load
//     average 27–37 on 2 cores: ratios only); the LoRA-sized backward
//     shapes were within that noise. The tile shapes were not changed:
//     the products' registers freed by fusing are left for a measurement
//     on a quiet machine. Fusing changed results in the last bits only
//     (seeded tokens unchanged, logprobs ~1e-6 apart). Attention's scores
//     and weighted sums are fused too (attnDot, axpyFMA order; see the
//     attention items below); the elementwise kernels still round each
//     product before its add. Forward products use the
//     "dot-form" (dotLanes in kernels.go): 16 lane partial sums, lane l
//     adding the products at k ≡ l (mod 16) in ascending k, then a fixed
//     tree over the lanes (i+8, i+4, i+2, i+1). It reads inputs and
//     row-major weights contiguously along k, so one-token decoding
//     streams weight rows at memory speed. The same rule holds for every
//     K, including the rank-sized K of a LoRA B product (there the lane
//     tree costs about as much as the products: ~28 GFLOP/s at K = 32
//     against ~75 at K = 1024, a few percent of a forward pass). Backward
//     products sum sequentially over their index.
//   - Forward kernels (gemm_fwd_amd64.s) are AVX-512 assembly generated
//     with avo by internal/asmgen/fwd (go generate; a test checks the
//     committed file is its output), chosen at run time with
//     lib/cpufeat and independent of GOEXPERIMENT: a 4-token ×
//     6-row tile (the tokens packed four at a time, so four rows a power
//     of two apart do not share an L1 set; a last tile overlapping the one
//     before takes the rows past the last whole one, 4×4 tiles and single
//     rows what is left) and a 1-token × 16-row kernel for decoding, both
//     over float32 or bfloat16 weights (widened exactly), the lane tree
//     done with shuffles. One 6-row tile (24 KiB of float32 at 1024 columns)
//     stays in L1 while a block of packed groups (768 KiB) passes it from
//     L2 (fwdTile4x6G), so each step reads four lines of x from L2 against
//     six rows from L1. The tile writes its sums straight into each
//     vector's output row (the kernel reads the row pointers from the
//     slice headers), or adds them there (sum first, then y + sum: the
//     bits of the staged add), under a row mask so that an overlapping
//     last tile adds nothing twice; staging them in a block that putRow
//     then copied or added into the rows was 4.3% of the 0.6B step's
//     CPU (TestForwardTilesWriteRows pins rows apart, columns outside
//     the range untouched). The order before it, a block of rows in L2 met by
//     one group at a time, read six weight lines from L2 a step: the
//     kernel on one group in L1 ran at ~93% of the FMA peak, but cycling
//     the groups cost ~10% more and groups arriving from L3 ~20% more;
//     the tile in L1 took 8-17% less CPU on the 0.6B shapes at M = 64-512
//     (paired runs on one thread of a shared Xeon, issue 34). An earlier
//     try of this order had measured no gain, by best-of runs, which the
//     machine's drift swamps. A kernel packs the tokens (fwdPackGroup),
//     on all workers when the product is split. Each kernel step
//     prefetches one line of the next tile into L2, so a tile does not
//     start from memory. Rows longer than 1024 columns (o_proj, down) are
//     summed in 1024-column pieces, each group's accumulators kept in
//     memory between pieces (fwdTile4x6KG), so that a piece of the tile
//     stays in L1. Every lane still adds its products in ascending k, so
//     the bits are the same (TestForwardBlocksMatchScalar shrinks the
//     pieces and the blocks of groups). The decoding kernel (fwdRow16)
//     is written for memory: it reads its 16 rows four at a time, one
//     group after another (four add chains; one chain of 4-cycle adds
//     over 32 bytes of bfloat16 was near a core's share of memory), and
//     each step prefetches into L2 the line the next group reads at the
//     same column (the L2 streamer stops at every 4 KiB page; a group is
//     8-48 KiB on the 0.6B shape, so a fixed distance suited one shape
//     and not another). One row at a time without prefetch streamed
//     bfloat16 weights at 0.4-0.55 of the bf16 path's prefetching
//     kernels' rate in the same run of BenchmarkBF16Decode (a loaded
//     machine); now at 0.75-0.9 of it. Decoding now reads a piece's
//     rows as four long streams instead (fwdRowLong: rows i..i+3 of each
//     quarter of the piece a call, each stream's own line 1 KiB ahead,
//     without row16's pacing shuffle), the same bits and 1.04-1.09x as
//     fast on Zen 4 (the decode section at the end); fwdRow16 stays for
//     the benchmarks to compare (fwdLong). The 4×6 tile of whole rows also
//     prefetches the packed vectors 4 KiB ahead into L1 (xAhead in
//     internal/asmgen/fwd): its x loads from L2 stalled under the
//     hardware prefetchers, and the prefetch took 3-5% less time on the
//     1024-column shapes (paired, one thread). The tile in pieces does
//     too, its last 16 steps of a piece prefetching the next group's
//     piece (a gstride away): 1-3% less time on o_proj and down, where
//     running on into the group's own next piece was 0-4% slower than
//     no prefetch. Each group also prefetches its four output rows'
//     lines into L1 before its products: accumulating, the add read them
//     at the group's end and a miss there stalled the next group. Paired
//     against main's staged tiles on one thread (0.6B shapes, M =
//     128-1024, the batch in matMul's slices, a loaded machine), the
//     direct write with the x prefetch took 0.86-0.99 of their time when
//     not accumulating but 0.94-1.07 when accumulating; with the output
//     prefetch 0.87-0.97 and 0.94-1.01. Rows 4 and 5 of the tile reduce
//     over their own eight accumulators (24 shuffles and adds where a
//     16-accumulator tree with eight zeros took 45, and 16 moves and
//     clears): the same bits, about 1% of a tile at 1024 columns. Rows of 16-64 float32
//     columns (a LoRA B, K its rank) go to fwdCols instead: at such K a
//     tile's shuffle tree and stores cost more than its two to four
//     chunks of products (the LoRA B products ran at a quarter of the
//     big products' rate per FLOP), so fwdCols puts 16 rows across the
//     vector lanes (a panel of the rows transposed), keeps one
//     accumulator per dot-form lane, filled with x[k] broadcast, and
//     adds them in the lane tree's order with vertical adds: the same
//     additions, 0.42-0.76 of the tiles' time at 16-32 columns and M =
//     128-512 on 1024 to 151,936 rows, 0.88-0.99 at 64 columns and M =
//     128 (paired, one thread; the kernel prefetches the output
//     lines of the tokens two pairs on, without which long rows ran
//     1.4-1.8 times the tiles' time). Each call transposes its rows into
//     panels, which batches under 128 vectors do not pay for
//     (fwdColsMinTokens): they keep the tiles.
//     A batch larger than a core's L2 (2 MiB here; 4 MiB of packed vectors
//     at 512 × 2048) is split over the workers one 768 KiB slice at a time
//     (fwdSliceBytes): given the whole batch, each of a core's eight row
//     pieces streamed all of it from L3 again, and the 0.6B o_proj fell
//     from 66% of the FMA peak at M = 128 to 43% at 512. Slices took 2-29%
//     less process CPU at M = 512 and 1024 on two busy cores
//     (BenchmarkForwardSliceAB, paired). Measured and left as they were
//     (paired, within ±5%): smaller kernel calls spreading the next tile's
//     prefetch, 512- and 768-column pieces instead of 1024, and one job
//     over all slices instead of a barrier per slice. On one core, with
//     the tokens and weights in L2, the 4×6 tile runs at ~85-93% of the
//     FMA loop; a whole product at M = 1024 takes 18-40% longer per FLOP,
//     of which packing is 2-5% and weights coming from L3 once per slice
//     5-10% (issue 34).
//   - Where the forward tile's time goes (issue 34, fwdpeak). Each figure
//     below is a share of the 512-bit FMA loop (fmaChains16) timed beside
//     it, medians of paired rounds on a machine at load 5-17, so only
//     differences of several points mean anything.
//     BenchmarkForwardTileGap, one thread, 0.6B shapes at M = 512-1024:
//     the 4×6 tile with its weights in L1 and a block of groups in L2
//     runs at 84-92% (K = 1024) and 86-89% (pieces, K = 2048-3072). The
//     rest of the tile is its own overhead: the lane tree and the row
//     stores are ~77 shuffles and adds, all on the two ports the FMAs
//     use, per 1,536 FMAs of a group at K = 1024 (~5%), and the loop's
//     and prefetches' uops. Over all rows (fwdTilesL1, each tile's
//     weights from memory) 80-89% at K = 1024 and 58-79% in pieces; the
//     whole product on one thread 73-84%, packing being 1-4% of it.
//     BenchmarkForwardGapParallel, matMul on both cores by process CPU:
//     76-81% with the weights in L3 and 74-77% with them cold. In situ
//     the tile does about as well: a CPU profile of the wide4 2 × 512
//     step (-benchtime 3x) put 13.7 s in fwdTile4x6GF32 for 1.6 TFLOP of
//     forward products at K = 1024 (q, k, v, gate, up, lm_head), 117
//     GFLOP per CPU-second against the FMA loop's 157 in that run: 74%.
//     Packing (fwdPackGroup) was under 0.5% of that profile. So the
//     forward products lose their last quarter to the memory side:
//     weights streaming in, tiles switching, slices re-reading L2.
//     Kept: the tiles spread their prefetch of the next tile's weights
//     over three quarters of their steps (pfStep, fwdPrefetchSpread)
//     instead of a line every step from the first, which kept a
//     prefetch to memory outstanding every dozen cycles at a tile's
//     start, each holding a fill buffer the x loads from L2 need:
//     0.89-0.98 of the process CPU with cold weights on both cores
//     (BenchmarkForwardPrefetchAB). Measured and dropped: prefetching
//     the next group's accumulators into L1 in fwdTile4x6KG (1.02-1.04x
//     the time), and larger slices at K ≥ 2048 to share each weight
//     tile among more tokens (1152 KiB 1.00-1.02x, 1536 KiB 1.08-1.18x:
//     the slice and the accumulators outgrow L2 before the weights'
//     traffic matters), and 2 or 4 row pieces a worker instead of 8
//     (forkRows; fewer tiles start without a prefetch: 0.95-1.02x the
//     CPU, so the balancing under load stays). Reordering the pieces over a block of tiles has
//     the same footprint problem: the accumulators (64 bytes an output)
//     of a core's rows for 96 tokens take as much L2 as the slice.
//   - The forward products in situ, second look (issue 34, fwdstream).
//     Timed inside the wide4 2 × 512 step (process CPU around each
//     matMulFold at K = 1024, B's FLOPs counted, against the FMA loop on
//     both cores just before the step; a loaded machine): the lm_head
//     at 79-85%, the same weights alone at M = 128 77%, so the head
//     runs in the step as it does alone. The layers' products (q, k, v,
//     gate, up at M = 1024, the two datums batched) ran at 72%: matMul
//     cut the batch in fixed steps of 192 vectors, which left a last
//     slice of 64, and a slice under fwdColsMinTokens keeps the fold off
//     the whole batch (B·t then a second pass over all outputs) besides
//     ending each product on a slice too small to balance. Slices now
//     share the groups evenly (sliceOf): 0.94-0.96 of matMulFold's
//     process CPU at M = 1024 on the 0.6B layer shapes (paired in one
//     process, weights cold, both cores), the layers then at 78% in situ
//     (TestMatMulFoldMatchesScalar's M = 1024 case pins that the fold
//     takes such a batch). What is left is spread thin: one thread
//     loses 10-11% inside the tile with everything in L1 (the lane tree
//     and row stores ~5%, which no tile shape changes since the tree is
//     per output and the products per output are K/16; the prefetch
//     and loop uops 2-6%, a variant without prefetches in L1 0.94-0.98);
//     two workers take 0.99-1.04 of one worker's CPU for the same
//     product; weights cold against hot 0.97-0.99; B's fwdCols, 3% of
//     a layer product's FLOPs at a lower rate. Measured and dropped:
//     the chunk loop unrolled 2 and 4 times (one pointer update and
//     branch per 2 or 4 steps: 0.98-1.02 of the CPU with W cold on both
//     cores), output rows in huge pages against 4 KiB pages and against
//     rows padded by a line (0.97-1.01; the arena is advised huge, so a
//     power-of-two row stride could have aliased in L2), and the fold
//     at 64 vectors a slice so that o_proj and down (96- and 64-vector slices)
//     take it (0.99-1.00). Packing the batch is ~2% of a 2048-row
//     product's time at M = 1024 and a third of a LoRA A's (32 rows),
//     and the training forward packed each layer input once per
//     product that reads it: A and W of every LoRA layer, q, k and v
//     (six packs of one batch), gate and up (four). The products that
//     read one batch now share its pack (packedIn, matMulOn,
//     matMulFoldOn; TestTrainLinearPacksOnceKeepsBits): q, k and v
//     0.95-0.96 of their process CPU, gate and up 0.98, one layer alone
//     0.98 (BenchmarkTrainLinearPackAB, M = 1024, W cold, both cores,
//     paired, a loaded machine).
//   - Rows of K >= 2048 (o_proj's 2048, down's 3072; issue 34, fwdk).
//     At K = 3072 a 768 KiB slice holds 16 groups, so each weight tile
//     meets 16 groups per trip from L3 where it meets 48 at K = 1024.
//     Tried, all paired in one process on both cores with the weights
//     cold, M = 256-1024, a machine at load 7-20, and dropped:
//     fwdTilesKBlocked (commit 2a05b7b, reverted), the pieces taken
//     across a block of tiles, so that a piece of 48 groups stays in L2
//     and every tile of the block meets it before the next piece, each
//     tile's accumulators kept between pieces (same bits): 1.10-1.26x
//     the CPU of tile by tile, worse with smaller blocks (1.35-1.45x at
//     one or two tiles) and no better at 384-768 KiB of groups or 288
//     KiB to 768 KiB of accumulators. Each pass brings the next piece of
//     the groups from L3 for a handful of tiles, more bytes than the
//     weights it saves; a block of tiles large enough to pay needs
//     accumulators (1.5 KiB a group a tile) that do not fit beside the
//     groups. Pieces of 1536 columns instead of 1024 (fwdKC;
//     BenchmarkForwardKCAB): 1.11-1.15x; 768: 0.97-1.03. The x prefetch
//     2 KiB ahead in the pieces' kernel instead of 4 (xAhead):
//     0.98-1.01 in both orders. Weights hot in L3 against cold from
//     memory at K = 2048-3072: 0.99-1.00 (cold/hot 1.01-1.02), so the
//     weights' traffic is at most 1-2% of these products.
//   - A LoRA's B on the lm_head (issue 34, headfold). Its logits are
//     two rounded sums, W·x in dotLanes order and then B·t (its own
//     dotLanes sum over the rank) added, in training, in Forward and in
//     the sampler alike. Continuing the tile's FMA chain into B's rank
//     columns would make them one sum (other bits) and every path that
//     computes logits, the decoding kernels included, would have to
//     change with it; the bits were kept. B's product alone cost 0.12-0.14
//     of W's time for 3% of its FLOPs (BenchmarkForwardFoldAB: a quarter
//     of the 0.6B lm_head, 37,984 × 1024, M = 128, W cold, both cores).
//     Kept: matMulFold (trainLinear, every LoRA layer without a bias):
//     each worker adds B·t (fwdCols) into a run of at most 256 KiB of
//     output rows right after its tiles wrote them, while they are in
//     L2, instead of a second pass over all of them: 0.92-0.99 of the
//     two products' process CPU on that head shape (paired, load 13-19;
//     median about 0.95), 0.95-1.03 on layer shapes at M = 512 (no
//     clear change); the wide4 2 × 512 training step's tok per CPU-s
//     against main's binary, six interleaved pairs: 0.85-1.06, median
//     1.00, the ~1% expected lost in the step's noise.
//     TestMatMulFoldMatchesScalar pins the bits. A
//     128-token chunk's logits (78 MB) stay in L3 (384 MiB here) between
//     the passes, so the second pass was never a trip to DRAM; what is
//     left of B's cost is fwdCols itself. Measured and dropped: the 4×6
//     tile going on into B's rows before it stores (W's sums reduced and
//     kept, B's products in the freed accumulators, their own lane
//     trees, added in the row stores; same bits; commit 224cf50,
//     reverted): 0.97-1.01 of
//     matMulFold's time, the second tree, clears and adds per group
//     costing what the pass over the rows in L2 did.
//   - Measured and dropped (issue 34, headfold): a tile call's last group
//     prefetching, at its step c, line c of each of the six rows that
//     run next (the same tile's next piece at K >= 2048, else the next
//     tile) into L1, so that the next call's first group would not read
//     them from L2 (commit d24b8d5, reverted; BenchmarkForwardL1AheadAB
//     there): paired against the same prefetches aimed at the call's own
//     rows, matMul on both cores with W cold, M = 512 (load ~15):
//     0.99-1.11 at K = 1024, 1.01-1.09 at K = 2048 and 3072, 1.00 on an
//     lm_head slice at M = 128; no gain to weigh against a branch a step
//     and one more register (the tile had none left: col had to share
//     the chunk counter's).
//   - o_proj and down_proj add B·t in a second pass (issue 34,
//     foldhead). The fold takes a batch only when every slice of it
//     (fwdSliceBytes of packed vectors) holds fwdColsMinTokens (128)
//     vectors, since fwdCols transposes B's rows into panels on each
//     call; slices are 192 vectors at K = 1024 but 96 at o_proj's 2048
//     and 64 at down's 3072, so these two never took it. With the
//     minimum at 64 they do: fold ÷ two products on the 0.6B o_proj and
//     down at M = 256 and 512 (BenchmarkForwardFoldAB, paired process
//     CPU, load ~18) 0.97-0.99 in one run, 1.01-1.04 in the next. B is
//     3.4-6.4% of W's time there (cpu-B/W) for 1-1.6% of its FLOPs; the
//     fold saves one pass over outputs in L3 (2 MB at 512 × 1024) but
//     transposes B once a slice (six times at o_proj, M = 512) instead
//     of once, and the two cancel. Kept at 128. What could pay: B's
//     panels made once per product and shared by the slices (the
//     kernel's row mask would have to start a piece off a 16-row
//     boundary); the bound is B's 3-6% of these two products, under 1%
//     of a step.
//   - On amd64 CPUs with AVX2 but without AVX-512 (most Intel client
//     CPUs, AMD Zen 2 and 3) the forward product runs AVX2 assembly
//     instead (gemm_fwd_avx2_amd64.s from internal/asmgen/fwdavx2,
//     selected by fwdAVX2 in kernels_fwd_avx2_amd64.go, also without
//     GOEXPERIMENT; the CPU must also have FMA3, which every AVX2 CPU of
//     Intel since Haswell and AMD since Zen has; without it the scalar
//     kernels run): a 16-lane sum is two 8-lane YMM accumulators, so
//     16 registers hold a 2-token × 3-row tile (tokens packed as for
//     AVX-512) and decoding reads up to 8 rows one after another; a
//     column tail (K mod 16) comes from a zero-padded float32 panel,
//     since AVX2 has no 16-bit masked load. avo rather than archsimd
//     because the tile needs all 16 registers.
//     TestForwardAVX2MatchesScalar forces it on AVX-512 machines.
//   - Parallel regions (matrix products split by rows, attention by rows or
//     heads, the batch's forward passes and draws) run through forkJoin
//     (workers.go) on worker goroutines that are kept and spin briefly
//     between jobs: a decoding step runs ~200 products of 50-200 µs, and
//     waking a parked thread for each one cost a quarter of the time. The
//     spin budget adapts (workerPool.spin, adapt: 25-500 µs): in a tiny
//     model's training step most gaps between parallel jobs were longer
//     than 500 µs (serial parts too small to split), each spun in full,
//     and spinning was a quarter of the step's CPU samples; a caller whose
//     workers are still inside its job spins 20 µs and then sleeps until
//     the last one leaves (finishSpin). With both, spinning fell from ~28%
//     to ~10% of that step's samples and its tokens per CPU-second rose
//     1.3-1.7× (loaded machine, interleaved with the previous build).
//   - Backward kernels (gemm_bwd_amd64.s, generated by internal/asmgen/bwd
//     the same way): matMulT and outerAcc as register tiles of up to 6-12
//     rows × 1-4 16-lane vectors (at most 24 accumulators), each lane
//     adding its products in the scalar kernels' sequential order, each
//     one fused multiply-add. A tile broadcasts each row's value once
//     into a register for its 1-4 vectors: folded into every FMA, the
//     broadcast made more loads than FMAs, and the kernels alone ran
//     about 1.5× slower. matMulT packs W into panels of 1024 rows × 1-4
//     vectors (256 KiB at most, in L2; widened from bfloat16), the first
//     tile of the batch packing as it multiplies (its reads of W, from
//     L3, overlap its FMAs), and every tile sums all 1024 rows between
//     one load and one store of its accumulators. The previous 128-row
//     strips in L1 made each tile reload and store its accumulators
//     every 128 rows, from an xs block that at 512 tokens no longer sat
//     in L2 without conflicts, and prefetched the next strip in every
//     tile of the batch: at 512 tokens matMulT took 1.05-1.25× the
//     forward product's time for the same FLOPs and now takes 0.8-0.9×;
//     at 128 tokens 0.97-1.1×, now 0.94-1.04× (BenchmarkBackwardVsForward,
//     paired single-thread runs on a loaded machine). The bits are the
//     same: each output still sums its rows in ascending order, one FMA
//     each. A panel in L2 feeds the tiles as fast as a strip in L1
//     (BenchmarkBackwardPanel); software prefetch of the panel gained
//     nothing; packing a whole 256-column block per row, 8 × 3 tiles and
//     tiles that keep a token tile's rows in L1 across panels measured
//     no faster. outerAcc packs its strips of a wide vs (a new page per
//     batch step otherwise), its first tile packing as it multiplies, as
//     matMulT's does. A LoRA B's gradient (rank columns) over a us
//     beyond L2 runs with its lanes along dst's rows, C read and written
//     by gathers and scatters (bwdColsT): its tiles across the rank read
//     one line of each of the batch's rows of us, from L3, and took 2-4×
//     matMulT's time per FLOP at 512 tokens; transposed, 0.46-0.75× the
//     old time (outerTransposeFloats). Packing matMulT's batch into
//     panels (one pointer, tiles up to 14 rows) was tried: the
//     transposing copy cost more than the tiles gained.
//     TestBackwardAsmMatchesScalar compares them with the scalar kernels.
//   - LoRA's input gradient rides on the base product (matMulTLoRA):
//     dx = Wᵀ·dy + Aᵀ·dt was matMulT through W, then a second matMulT
//     through A's 32 rows over all of dx (from L3 at 512 tokens) with
//     tiles that loaded and stored their accumulators every 32 rows. A's
//     rows now run as a further term of each of W's column blocks while
//     that block of dx is in L2. Each element continues the same chain of
//     fused multiply-adds (W's rows ascending, then A's), so the bits are
//     the two calls' on every path (TestMatMulTLoRAMatchesTwoCalls; the
//     fallbacks make the two calls). Fold ÷ two calls: 0.97-1.0 on the
//     0.6B shapes at 128 and 512 tokens (BenchmarkBackwardLoRAFold,
//     paired single-thread runs, loaded machine; 0.97-1.0 in CPU on two
//     cores at 512). A LoRA B's matMulT (rank columns, one panel wide)
//     reads B in place: its rows lie one after another, so the packing
//     the base matrices need (rows 4-12 KiB apart) was a plain copy;
//     in place ÷ packed 0.94-1.02 at 128 and 512 tokens, 1 and 2 cores.
//   - A LoRA A's weight gradient (outerAcc, rank rows × the layer's
//     inputs) is split among the cores by columns (outerSplitColsRows):
//     split by rows, each core had 16 rows, three tiles per strip of the
//     inputs, and packed every strip itself, from rows 4-12 KiB apart.
//     Column split ÷ row split on two cores: 0.79-0.86 in CPU time at 512
//     tokens, 0.90-0.97 at 128 (BenchmarkOuterSplitAB, loaded machine).
//     Each element still sums the batch in ascending order in one tile.
//   - Where matMulT's time goes at 512-1024 tokens (issue 34; this CPU:
//     48 KiB L1d, 2 MiB L2 per core; paired single-thread ratios on a
//     loaded machine). bwdRF6x4 alone, its panel in L2 and A in L1, runs
//     at 0.88-0.97 of the 512-bit FMA loop: 4 panel loads and 6
//     broadcasts per 24 FMAs are not the limit. matMulT itself runs at
//     0.75-0.83. The rest: the tiles read A (the batch's rows of dy, 6
//     MiB at 512 tokens × 3072) from L3, 1.05-1.18× the time of the same
//     tiles with A in L1; and the packing tile takes 3-4× a plain tile
//     with W in L3, 6-7× from DRAM (4.7× on 2 MiB pages), one per 85
//     tiles at 512 tokens, since training runs the backward products
//     once per sequence (M = 512, not 1024, in a 2 × 512 step). Tried
//     without gain: 48 rows through all four panels of a column block
//     before the next rows (A from L2 for three panels; also with kc 256
//     and 512): 0.91-1.13 of the current order, nothing consistent;
//     prefetching the next tile's A rows into L2 every step: no change;
//     the packing tile's prefetch 16, 32 or 64 rows ahead: no change;
//     spreading the next panel's packing over the current panel's tiles
//     (a tile copying 12 rows of it and prefetching the next 12 a tile
//     ahead): each such tile took 1.04-1.09× a plain one with W in L3,
//     1.13-1.2× from DRAM, more in all than one packing tile. Left to
//     try: the weights on 2 MiB pages, and both sequences of a step
//     through one product (half the packing per token).
//   - matMulT in situ, second look (issue 34, bwdpeak; one thread, paired
//     ratios on a machine at load 12-15, so only effects above ~3% show).
//     BenchmarkBackwardFMAShare runs matMulT on the 0.6B shapes at M =
//     512, 1024 and 2048 with W from DRAM (a new copy of W each call) as
//     a share of the FMA loop run beside it: 0.72-0.81, with no trend in
//     M (the packing per token falls 4× from 512 to 2048); with W hot in
//     L3 about the same (0.78-0.81); bfloat16 W 0.98× the float32 time
//     at M <= 1024, 1.0-1.05× at 2048. Pieces of one column block at M =
//     512 against the same loop: the 6×4 tile alone 0.93-0.99; reading
//     A from the batch's rows 0.89-0.96; A and C (rows 4-12 KiB apart)
//     0.85-0.90; the panels packed beforehand 0.71-0.88 and the real
//     block (packing tile included, W in L3) 0.64-0.82, so the packing
//     costs about 8% at 512 tokens. The packing tile reads 1024 rows a
//     page or more apart, 4 lines each: a TLB walk per row under the
//     VM's nested paging and 16 L1 fill buffers bound it (copying the 4
//     panels of a block from DRAM ran at ~6 GB/s), and prefetches stall
//     on the same walks. Tried without gain: (1) the last tiles of a
//     panel prefetching the next panel into L2: one line per step made
//     those tiles 3.7-11× a plain one; one row (4 lines) every 16 steps
//     over 16 tiles cut the packing tile from ~45 to ~32 µs but matMulT
//     took 1.00-1.05× the time over 12 shape × M pairs; (2) every tile
//     prefetching the next tile's C rows into L2 in its loop: 0.98-1.01;
//     (3) C rows padded off multiples of 4 KiB: 0.97-1.0. Done: a LoRA
//     A's rows ride in the base term's last tiles (bwdRows2, tMulFold):
//     as tiles of their own (32 steps between a load and a store of C,
//     from L3) they cost 1.5-2.5× the base per FLOP; matMulTLoRA over
//     matMulT went from 1.05-1.09 to 1.01-1.05 at K = 1024 (the FLOPs
//     alone: 1.031), BenchmarkBackwardLoRAFold's fold/two from 0.97-0.98
//     to 0.95-0.97 at K = 1024, M = 512; unchanged at K = 3072. Same
//     bits (TestMatMulTLoRAMatchesTwoCalls). Left: weights on 2 MiB pages
//     (a walk per 2 MiB instead of per row), a step's sequences in one
//     product (M = 1024: half the packing per token), and q/k/v (and
//     gate/up), which add into one dx: one matMulTAsm call with all six
//     terms in the same order keeps each element's chain, so its bits.
//   - matMulT's gap to the tile, measured in place (issue 34, bwdpack; one
//     thread, W cold on 2 MiB pages as a training step has it, paired
//     ratios at load 10-16): the block ran at 0.79-0.84 of the FMA loop at
//     both 512 and 1024 tokens, so packing, whose share halves from 512
//     to 1024, is not most of it. Taking one piece away at a time: the
//     packing tiles 0.95-0.98 of the time, A hot 0.97, C hot (the same six
//     rows for every tile) 0.95-0.96, all three 0.88. C is each tile's
//     start: 24 lines from L3 before its first multiply-add. A product
//     that overwrites dx (accumulate false) cleared dx and then loaded the
//     zeros back in every tile of its first 1024 weight rows; those tiles
//     now start their accumulators at +0 (the bwdRF…Z, bwdRG…Z and
//     bwdPack…Z tiles, VPXORD): the value the cleared dx gave them, so the
//     same bits (TestBackwardAsmMatchesScalar and
//     TestMatMulTLoRAMatchesTwoCalls start from random dx). Zero start ÷
//     clear-and-add (BenchmarkBackwardZeroStart): 0.95-0.97 where the
//     weights have 1024 rows (o_proj, down_proj: one block of rows),
//     0.97-1.0 where they have 2048-3072. Tried without gain: every
//     other panel's tiles walking the batch from its end, so that the
//     next panel finds the last tiles' A rows in L2: 0.97-1.0 at 512
//     tokens, 1.0 at 1024; packing a column block's four panels before its
//     tiles, reading 1 KiB of each weight row at once (2 MiB pages):
//     1.04-1.08× the time, so a core reads W from DRAM at ~5 GB/s however
//     the rows are cut, and only the packing tile's overlap hides part of
//     it. Where packing weighs most: the output layer's backward
//     (then 128 positions a pass, W the whole vocabulary; see "The output
//     layer's chunk" below):
//     matMulT on 32768 × 1024 ran at 0.71 of the FMA loop at M = 128,
//     0.75 at 256 and 0.82 at 512 (same run, W cold).
//   - matMulT's blocks of weight rows (issue 34, bwd2; one thread, W
//     cold, paired thread-CPU ratios): a term of up to 3072 rows
//     (kcWhole: q_proj, gate, up on Qwen3-0.6B) is now one block, its
//     panel up to 768 KiB in L2, so each tile loads and stores its six
//     rows of dx once rather than once per 1024 rows (from L3 at 512
//     tokens). Whole ÷ 1024-row blocks (BenchmarkBackwardKCWhole) on
//     3072 × 1024 and 2048 × 1024 at 512 and 1024 tokens: 0.95-0.98, and
//     0.96-0.99 with the LoRA fold, at load 4 on 4 KiB pages; 0.97-1.03
//     (median 0.98, 16 of 24 below 1) at load 17, on either page size;
//     matMulTLoRA on two cores (process CPU, 2 MiB pages, load 22) 0.97-
//     1.09, median 1.0: within that noise.
//     The same sums in the same order, so the same bits
//     (TestMatMulTLoRAMatchesTwoCalls has a term past kcWhole). Tried
//     without gain, again: each full tile prefetching the next tile's C
//     rows into L2 after starting its own: 0.97-1.04 writing, 0.98-1.0
//     accumulating (3 shapes × 512 and 1024 tokens, load 14); the last 24
//     or 48 tiles of each panel prefetching the next panel's weight rows
//     into L2 (one row every kc/rows-per-tile steps), W and the rows on 2
//     MiB pages, so no walk per row: 0.99-1.03 (3 shapes at 512 tokens,
//     load 20).
//   - A LoRA layer's other backward products in situ (issue 34, bwd2;
//     BenchmarkLoRAGradFMAShare: one thread, rank 32, 512 tokens, the
//     layer's input and output gradient on 2 MiB pages, load 19): the
//     gradient of A's outputs (matMulT through B) at 0.83-0.88 of the FMA
//     loop, A's and B's gradients (outerAcc) at 0.57-0.65 and 0.51-0.58.
//     Each packed strip of the layer's input (or output gradient) meets
//     only rank rows of tiles, so its packing tile, reading rows 4-12 KiB
//     apart from L3, weighs on it as on matMulT's panels at a few dozen
//     tokens; the transposed C's gathers and scatters are under a tenth
//     (plain loads and stores in their place, wrong values, timing only:
//     0.87-1.0 of B's time). Their tiles along the rank are now 8 × 3 vectors, four
//     to a strip, instead of 6 × 4 with a 2-row tail (outerTileFloor).
//     A's gradients of q, k and v (gate and up; MLA's q and kv-A) read
//     the same input: they are now one pass over its strips
//     (outerAccShared, from linearsBackward), each strip packed once for
//     96 (64) rows of tiles instead of once per layer. Each element still
//     sums the batch in ascending order in one tile: the same bits
//     (TestOuterAccSharedMatchesScalar against outerAcc's assembly and
//     scalar kernels and float64 sums; the training tests unchanged).
//   - The same products on the AMD EPYC Zen 4 VM (issue 34, loragrad;
//     2 vCPUs, load 15-25 from other sessions, so ratios only): in a CPU
//     profile of the qwen3-wide4 2 × 512 and 1 × 2048 steps (-short, one
//     step each, 71 CPU-s of samples) the forward products took 41%,
//     the input gradients (bwdRF6x4, the LoRA fold bwdRG6x4) 36%,
//     attention 14%, and every LoRA weight gradient together 1.7% (B's
//     1.4%, A's 0.3%; dts through B 1%); in the 28-layer 0.6B 2 × 512
//     step's (two steps, 68 CPU-s, with outerAccShared) 40%, 36%, ~8%,
//     and 1.9% (B's 1.2%, A's 0.7%; dts 0.9%). Against the 512-bit FMA loop
//     (one thread, paired): matMulT at 0.89-0.92 (BenchmarkBackwardFMAShare,
//     M = 512, W cold), dts 0.90-0.95, A's gradients 0.77-0.91, B's
//     0.72-0.85 (BenchmarkLoRAGradFMAShare): the backward is not the
//     Xeon's laggard here, and the LoRA gradients are too small a share
//     to move a step. outerAccShared over one outerAcc per layer
//     (BenchmarkOuterAccShared, 3 × and 2 × 32 × 1024 at 512 and 2048
//     tokens): process CPU 0.85-1.0 (median 0.93) on one and two threads,
//     thread CPU 0.93-0.97 on one (load 17-19); a whole qwen3-wide4
//     2 × 512 step (-short, old and new test binaries interleaved, 4
//     rounds each, load 15-25): 9.97-10.61 CPU-s against 10.31-10.75,
//     paired 0.95-1.03, median 0.98, within the noise, as the A
//     gradients' 0.3% of the step predicts. Tried and not kept: B's
//     gradient with the plain tiles instead of the transposed ones on
//     Zen 4 (1024-3072 × 32 at 512 tokens, one thread): 0.96-1.35 of the
//     time, the transposed ones still better.
//     Left: B's gradient (the lowest fraction) and dts both stream the
//     layer's output gradient from L3; one pass over its strips for both
//     would read it once (about 1% of a step at stake), but B's gradient
//     sums over the batch and dts over the output's rows, each in one
//     ascending chain: the cores could split such a pass by neither
//     without changing one of the two sums' order.
//   - Other vector kernels (kernels_simd.go, GOEXPERIMENT=simd on amd64
//     with AVX2) give the scalar kernels' bits: a lane holds one output
//     element and adds its products in the same order (MulAdd in the
//     matrix products and attention); backward products run lanes along
//     the row-major columns. Without AVX-512 or the experiment the scalar kernels run;
//     TestForwardKernelsMatchScalar and TestSIMDMatchesScalar compare them.
//   - Elementwise kernels (kernels_elem.go; vector twins in
//     kernels_elem_simd.go and kernels_exp_simd.go) use the engine's own
//     exp64 (range reduction and a degree-13 polynomial by Horner's rule,
//     within 2 ulp of math.Exp) instead of math.Exp, which vectors cannot
//     reproduce, so SiLU, softmax and the loss gradient have the same bits
//     on both paths. exp64 fuses every multiply-add (math.FMA; the vector
//     twins' FMA instructions round once too, so the vector bodies need
//     FMA and otherwise fall back to the scalar one). float64 reductions
//     (RMSNorm's sums, the gradient norm, the loss's and the sampler's
//     Σ exp, so a token drawn at T = 1 reports its prompt logprob's bits,
//     TestSamplerLogprobMatchesLogSumExp) are eight
//     lane-strided partial sums added in a fixed tree (sumSquares), which
//     vectors compute without reordering and which a single serial chain
//     would make slower than the exponentials themselves.
//     TestSIMDElementwiseMatchScalar compares the scalar body with the
//     512-bit and the 256-bit ones.
//   - Where the elementwise time goes (CPU profile of a training step,
//     qwen3-wide4 at 2 × 512 tokens, rank 32, before the change below,
//     with asyncPreempt's samples put back where they belong, see below):
//     the loss's vocabulary-wide exponentials were 28% of the samples
//     (log-sum-exp and the gradient's exp 14% each); attention's softmax
//     exponentials 3.5%; RMSNorm forward and backward with the q/k head
//     norms 0.5-0.7%, SwiGLU 0.4-0.5%, AdamW with its gradient norm under
//     0.3%, rotary embeddings and residual adds under 0.1% each; at
//     1 × 2048 the loss 22% and attention's exponentials 9%. So only the
//     exponentials got more work. The loss's run eight float64 lanes on
//     AVX-512 (kernels_exp_simd.go), and the backward keeps them (a pooled
//     float64 buffer, 1.2 MB at a 150k vocabulary) and scales them by
//     −Σg / Σexp instead of computing exp(z − lse) again: one exponential
//     pass per row, not two. Attention's (expShift32, expShift64) run
//     eight lanes too. After this and the VZEROUPPER below, the loss was
//     2% of a 2 × 512 step and attention's exponentials under 1%.
//     BenchmarkElementwise times each kernel in CPU-ns per element. The
//     other kernels keep their vector twins; the training step's row
//     loops (norms, rotary, SwiGLU, residual copies) split their rows
//     over the cores (eachRow): on the 28-layer 0.6B shape at 2 × 512
//     they were 3-4% of the samples, run on one core while the others
//     waited. A bf16-path prefill spent more there (SwiGLU 4-10% on four
//     float64 lanes, the norms 3-5%), so with AVX-512 SwiGLU forward and
//     backward run eight float64 lanes and RMSNorm's sum of squares eight
//     (lane l still adds i ≡ l mod 8) and its scaling sixteen float32
//     lanes: the same operations per element, the same bits.
//     AdamW and the gradient norm run on all cores (adamStep,
//     gradSquares), which matters only for large adapters.
//   - Vector kernels end with archsimd.ClearAVXUpperBits (VZEROUPPER),
//     which archsimd does not emit by itself: Go's scalar float code is
//     SSE, and while the vector registers' upper halves are dirty each SSE
//     instruction waits on them. Without it, attention-length rows (1 to
//     256 values) of expShift64 took 7× the CPU time. For the same reason
//     a vector loop should keep no scalar float live across it (the
//     compiler reloads it with an SSE move each iteration; expSum8 is a
//     function of its own for this: the log-sum-exp took 7× the time).
//     The clear comes before a kernel's scalar tail or lane reduction, not
//     after it: scaling a 67-score row (three scalar multiplies after the
//     vector loop) took twelve times as long with the clear at the end as
//     with it before the tail (loaded 2-core Xeon: a ratio), and such tails
//     were a tenth of the tiny models' training step (max32Vec, scaleVec,
//     sumLanesVec; issue 34).
//   - Profiles and runtime.asyncPreempt: on a loaded machine a CPU profile
//     puts a fifth to a quarter of a step's samples (half of a
//     single-threaded microbenchmark's) on asyncPreempt's first
//     instruction, under the vector loops. That is attribution, not cost.
//     A thread the kernel has descheduled still looks busy to the Go
//     scheduler, which asks it to yield (SIGURG) once its goroutine has
//     run 10 ms of wall time; the profiling signal (SIGPROF) that fell due
//     meanwhile is delivered right after the SIGURG handler has pointed
//     the thread at asyncPreempt, so the sample lands there. A perf trace
//     of the signals (perf record -e signal:signal_deliver) found 36% of
//     the SIGPROFs 12-22 µs after a SIGURG on the same thread (by chance
//     about 1%), and GODEBUG=asyncpreemptoff=1 in the same run moved
//     those samples onto the loops (the loss kept its 28%) with CPU per
//     step unchanged. The preemptions themselves are some 30 a second per
//     thread, microseconds each. Profile with GODEBUG=asyncpreemptoff=1 to
//     see the loops' own shares.
//   - Forward attention (forward.go, kernels_attn*.go): decoding rows go
//     one at a time; a run of consecutive positions of one sequence (a
//     prefill chunk, a training sequence) goes per KV head in blocks of 16
//     positions, which read each cached key and value once for all the
//     block's query heads. Both keep attnDot's order for each score (eight
//     lanes, one fused multiply-add per term, then a fixed tree) and
//     ascending positions for each output element (one fused multiply-add
//     per term), so a row's bits do not depend on its batch;
//     TestAttentionBlocksMatchRows compares them. Fusing changed
//     attention's bits (issue 34: the kernels issued a multiply and an add
//     per term with at most four accumulators, about a quarter of the
//     512-bit FMA peak); the references (attnDot, weightedScalar,
//     attentionBackwardRef) fuse the same way, and the pinned samples, the
//     PyTorch comparisons and the finite-difference checks held unchanged.
//     With AVX-512 the blocked kernels run 512-bit twins
//     (kernels_attn_avx512.go) with the same bits: a score register holds
//     one element of 16 keys (a tile stored transposed), so attnDot's
//     eight lanes are eight registers and its tree vertical adds (see
//     "Attention tiles" below). Their whole tiles run as
//     assembly register tiles (kernels_attn_amd64.s, generated with avo by
//     internal/asmgen/attn): three queries × sixteen keys of scores (24
//     accumulators), and weighted sums as tiles of up to 6 outputs × 64
//     elements (24 accumulators, VFMADD231PS into them in place); Go's
//     archsimd code keeps vectors in 15 registers and, having only the
//     FMA form that overwrites a multiplicand, copied every accumulator
//     back each pass and ran at a quarter to a third of the FMA peak on
//     the kernels alone. A tile takes the keys its first query sees and
//     each later query its remaining keys after it, so each element still
//     adds in ascending order. Each worker also packs a KV head's keys (in
//     transposed tiles) and values once per attention call (headPack)
//     rather than every tile again for every block: those copies had been
//     a quarter of the forward's CPU at 512 tokens. Together about 1.5×
//     less CPU for the 512-token forward and 1.3× for the backward
//     (BenchmarkAttentionLong, interleaved with the previous build on a
//     loaded 2-core Xeon: ratios only). The backward's softmax
//     exponentials run on eight float64 lanes (exp8x2 in
//     kernels_exp_simd.go, exp64's bits), the forward's on sixteen
//     float32 lanes (exp32; "Softmax in float32" below).
//   - Attention's vector kernels end with archsimd.ClearAVXUpperBits
//     (VZEROUPPER; Go does not emit it). Go loads scalar float constants
//     and reloads spills with legacy SSE instructions; inside a loop of
//     256/512-bit code, with the registers' upper halves dirty, those cost
//     ~10× on the Xeon of issue 34: the 4-lane exponential (exp4x2, its
//     constants broadcast from scalars each pass) ran 32.6 CPU-ns an
//     element, and 3.5 with a VZEROUPPER after each pass. That was twice a
//     128-element score's dot product and half the forward attention's
//     CPU. exp8x2 broadcasts its constants with VEX moves, and with the
//     VZEROUPPER takes a few CPU-ns (BenchmarkSoftmaxExp). Other archsimd loops whose disassembly
//     shows MOVSD/MOVUPS between vector instructions are worth the same
//     check.
//   - Attention backward (backward.go, kernels_attn_bwd*.go) recomputes
//     the probabilities in the same blocks (KV heads split over workers,
//     blocks in ascending position): scores and datt·v with the forward's
//     block kernels, dq with its weighted sum, dk and dv by
//     attnScatterBlock over the block's packed heads. Each worker copies
//     its KV head's keys and values contiguous once (packHead) rather than
//     the block kernels packing every tile again for every block
//     (packRows' copies, forward and backward, were 8% of the CPU
//     samples of a 4096-token step on the 0.6B widths with 4 layers).
//     The same copy is also kept in the 512-bit score kernel's tiles
//     (packKeyTiles), which the kernel otherwise built again for
//     every block (a quarter of the scores' time), and the head's dk and
//     dv accumulate in contiguous rows copied back once: every block adds
//     to every earlier key's, and the gradients' own rows, 4 KiB apart on
//     the 0.6B shape, each began a new page. Together ~10% less CPU for a
//     512-token backward (BenchmarkAttentionLong, loaded machine, best of
//     ten). When the KV heads do not divide among the workers (one KV
//     head on two cores left one idle), each block's positions (scores,
//     softmax, dq) and then its keys (dk, dv) are split instead
//     (blockSplit, shares of equal work: splitWork). Each dk/dv element
//     still adds its terms in ascending (position, head) order, whatever
//     the split, so the bits are those of the per-position loop kept as
//     attentionBackwardRef (TestAttentionBackwardBlocksMatchRef, GOMAXPROCS
//     1 and 3 with one and two KV heads).
//     dq, dk and dv run the forward's register tiles (scatterTiles: a
//     tile of keys takes the queries all its keys see, each key its
//     earlier queries first). In archsimd, four outputs per pass of the
//     weighted sums (eight accumulators) had been slower: the compiler
//     allocates 15 vector registers and spilled two accumulators every
//     row. Each query's softmax sums (Σ exp, Σ p·dp) run in eight
//     float64 lanes and a fixed tree (now expScores32 and dot64Lanes) and its
//     maximum comes from max32Vec over the raw scores: as one ascending
//     chain each, with Go's scalar max, softmaxGrad had taken as much of
//     a 512-token backward as the score products. That changed the
//     backward's bits (not the forward's) in the last places; the
//     reference uses the same sums.
//   - Attention at 512-2048 tokens (issue 34; no bits changed, the
//     existing bit tests pin every step). A profile of one 0.6B-head
//     layer (BenchmarkAttentionLong) had the assembly tiles at about a
//     third of attention's CPU and the Go around them at two thirds:
//     (1) weighted sums over contiguous rows (the forward's packed
//     values, the backward's keys for dq) went eight rows per register
//     tile call (attnBlock, sized for L1 aliasing of the strided cache),
//     so the 24-accumulator tile loaded and stored its outputs every
//     eight multiply-adds and the triangle went through weighted1; they
//     now go weightedSpan (64) rows per call (TestWeightedBlockLongSpan).
//     (2) The backward's softmax gradient made seven 4-lane passes and a
//     scalar float32 conversion loop per query; softmaxGrad8 does it in
//     three 8-lane passes (TestSoftmaxGradPathsMatch). (3) The forward's
//     softmax (scale, max, exp, a serial float64 sum, scale) runs per
//     block (softmaxRows): scale and max fused in 16 lanes, every
//     exponential in 8 float64 lanes (the tail padded), and the sums,
//     which must stay ascending chains for softmax32's bits, four rows
//     at a time as independent chains (TestSoftmaxRowsMatchRows). (4) The
//     backward takes 32 positions per block (attnBackRows), so the dk/dv
//     tiles load and store their accumulators once per 64 queries.
//     (5) dk and dv read ds and p in the queries' rows (scatterColumns:
//     attnTileZ takes A's column stride), without the two transposes per
//     block, whose reads 8 KiB apart shared an L1 set at 2048 tokens;
//     the rows are padded (scoreStride) so that column reads spread over
//     the sets. (6) The score tiles reduce each query's eight keys with
//     whole-register shuffles (laneSums8: 10 shuffle-port operations a
//     query where the VHADDPS pairs took 22; since replaced by transposed
//     key tiles that need none). Together, against the
//     build before (BenchmarkAttentionLong, interleaved, best CPU time of
//     three runs each on a machine loaded by other sessions, so ratios
//     only): forward 1.9× and backward 1.9× less CPU at 512 tokens, 1.6×
//     and 1.5× at 2048. Left as they were then: exp64's precision (a float32
//     exponential would be cheaper but changes every probability's bits
//     and the pinned references; since done, "Softmax in float32") and the division p/Σ (a correctly
//     rounded quotient needs the divide).
//   - Attention tiles (issue 34, "attntiles"; no bits changed). Measured
//     alone (BenchmarkAttnTiles, one thread, operands in L1, against the
//     one-core 512-bit FMA loop run between the batches) the register
//     tiles were not at the 35-40% seen in profiles: the weighted-sum
//     tile ran at 0.83-0.93 of the loop (k = 64 and 256 rows), the old
//     score tile at 0.76. What held the scores back was the pair layout's
//     reduction: per query and eight keys, ten shuffles and five adds on
//     the two ports the fused multiply-adds use, plus a doubled copy of
//     every query. The score tile now takes 16 keys stored transposed
//     (attnDotsT; packKeyTile, by a 16×16 register transpose,
//     attnKeyTileT, since the scalar transpose alone was a tenth of a
//     512-token forward): a lane is a key, attnDot's eight lane sums are
//     eight registers, its tree seven vertical adds, and each query
//     element is broadcast from memory into its multiply-add. Three
//     queries (24 accumulators) take 8 key vectors and 24 broadcasts per
//     24 multiply-adds; those loads, not the arithmetic, bound it. The
//     query pointers advance one by one: an indexed operand splits a
//     three-operand instruction from its load (un-lamination), and the
//     tile went from 0.77-0.82 to 0.87 of the loop. TestAttentionScoreTilesMatchAttnDot
//     pins its bits. The forward's "memmove" was 12.6% of a 512-token
//     forward's samples: the query copy (half), the output copy (a third)
//     and headPack. The weighted sums now go straight into ws.att when a
//     block's rows are one slab: the tiles run per query head, whose
//     outputs are rows qd apart (stridedRows); rows not one slab keep the
//     scratch and copy (TestAttentionBlocksRowsNotOneSlab). The query copy
//     stays: the score tile broadcasts from the queries, and a block's
//     queries in ws.q, 8 KiB apart, would share eight L1 sets. The score
//     rows are padded (scoreStride) as the backward's are. The forward
//     softmax's float64 sums, serial and ascending per row for
//     softmax32's bits, run eight rows at a time, a row per lane of
//     attnSumRows8 (8×8 transposes, then one add per element per row):
//     0.82-0.85 of the four scalar chains' softmax time
//     (BenchmarkSoftmaxBlock; TestSoftmaxSumRows8MatchesSerial uses values whose
//     add order shows, since sums of a few hundred float32 in float64 are
//     mostly exact and would hide a reordering). Against main
//     before this work (BenchmarkAttentionLong, one thread, builds
//     interleaved on a machine loaded by other sessions: ratios of the
//     least and the median CPU time): forward 0.78-0.87 at 512 tokens and
//     0.82-0.88 at 2048, backward 0.97 at 512 and 0.90-0.95 at 2048 (on
//     two threads the forward 0.86-0.87 and 0.83-0.99). In place the
//     tiles now run at about two thirds to three quarters of the loop
//     (profile, 2048 tokens); the forward's softmax (float64 exponentials for the bits,
//     ascending sums) is now about 30% of it and the next lever (taken:
//     "Softmax in float32" below).
//     Profiles of these benchmarks put 11-16% of the samples on
//     runtime.asyncPreempt's first instruction; with
//     GODEBUG=asyncpreemptoff=1 the CPU time is the same, so that share is
//     the profiler's, not a cost of the kernels.
//   - Softmax in float32 (issue 34, "softexp"; changes the
//     probabilities in the last bits). The forward's numerators were
//     float32(exp64(s − max)): a float64 exponential of degree 13 on
//     eight lanes, rounded to float32 at once, so its 1e-16 accuracy was
//     thrown away, and exp8x2 with its constants was ~20% of a
//     2048-token forward (profile), the whole softmax 28%. They are now
//     exp32 (kernels_exp32.go): the same reduction in float32, a degree-7
//     Taylor polynomial (truncation under 1e-8 relative), every step one
//     float32 fused multiply-add, on sixteen lanes (AVX-512; eight with
//     AVX2; fma32 in the scalar body), within 1 ulp of e^x rounded to
//     float32 (TestExp32Accuracy), as PyTorch's vectorised expf is. Each
//     lane does the scalar body's operations (TestExp32VecMatchesScalar),
//     and a row's last few go through masked loads and stores, so a
//     probability's bits still depend only on its row, not on its batch,
//     block or the thread count. The float64 exponential had been chosen
//     to share exp64 with the loss and SiLU (which keep it), not for the
//     accuracy, which the rounding discarded.
//     The backward had recomputed the probabilities from the scores in
//     float64 throughout (float64 scale, exp64 on eight lanes: 7% of a
//     2048-token backward). It now recomputes the forward's own
//     numerators (expScores32: float32 scale and maximum, exp32, widened
//     to float64 and summed in the same pass, sixteen lanes), so the
//     gradient is that of the function the forward computed; the
//     normalisation, Σ p·dp and ds stay float64. attentionBackwardRef spells the same
//     steps out per position; TestSoftmaxGradPathsMatch pins the paths'
//     bits; the finite-difference and float64-reference checks pass with
//     their tolerances unchanged. Golden sample logprobs
//     (golden/testdata/sample_batch.txtar) moved in the 7th digit, the
//     same tokens. The exponentials fell from ~20% to ~7% of the forward's
//     profile. Two more passes went:
//     the forward stored its scaled scores before the exponentials
//     (scaleMax16) and the backward divided by Σ (VDIVPD, 5% of its
//     profile). Now both take the maximum of the raw scores (max16Vec:
//     sixteen lanes, two chains; the single 8-lane chain of max32Vec
//     waited on every max) times scale, which is the same float32 as the
//     maximum of the scaled scores, and scale inside the exponentials'
//     pass (same bits); the backward multiplies by 1/Σ (float64; p moves
//     by an ulp of float64, far below the float32 it feeds).
//     BenchmarkSoftmaxBlock, under load: 0.5 of the float64 softmax with
//     exp32, 0.82-0.86 of that with the two passes gone, 0.88-0.90 of
//     that with max16Vec's lanes halved in registers before the scalar
//     max;
//     BenchmarkSoftmaxExp 0.33-0.35 of the float64 exponentials per
//     element. All of it against the build before (BenchmarkAttentionLong,
//     four interleaved rounds on a machine loaded by other sessions, least
//     CPU time, so ratios only): forward 0.84 at 512 tokens and 0.86 at
//     2048, backward 0.85 and 0.91. What is left of the forward at 2048
//     (profile): score tiles ~36%, weighted-sum tiles ~31%, the ascending
//     float64 sums (attnSumRows8) ~6%, the query copy ~7%, the
//     exponentials ~7%; of the backward the tiles ~72%.
//   - Softmax numerators in one generated pass (issue 34, "attnfwd").
//     The forward's sum Σ e_t is now taken in the exponentials' pass, in
//     expScores32's eight float64 lanes (lane t mod 8, ascending, sum8's
//     tree) instead of one ascending chain in a pass of its own
//     (attnSumRows8, deleted): the forward's Σ is then bit for bit the
//     backward's, and softmax32/softmaxSink on the decode path use the
//     same order (TestSoftmaxSumIsBackwardSum). Float64 sums of a row's
//     float32 numerators are exact or within an ulp of float64 either
//     way, so float32(1/Σ) moved in no test; the pinned samples held.
//     A float32 sum with a fixed order would also be batch-invariant but
//     moves 1/Σ by float32 ulps; the widening costs two conversions per
//     sixteen lanes in a pass that is not bound by them. The pass itself
//     (scale, subtract the maximum, exp32, widen, sum, optionally store
//     the widened copy for the backward) is the generated kernel
//     attnExpSum16 (internal/asmgen/attn/expsum.go): the archsimd loop it
//     replaces called the 16-lane exp32 as a function every 32 scores
//     (Go passes it no constants in registers, so all twenty were reloaded
//     and broadcast each call, and everything live was spilled around
//     it), and its partial float64 stores went through a stack buffer and
//     runtime.memmove for every eight numerators, tail or not: memmove
//     was 43% of a 512-token backward's samples, expScores16 66%. Same
//     bits as the scalar body (TestExpSumKernelMatchesScalar: lengths
//     0-70, exp32's limits, ±Inf, NaN, nothing written past the row).
//     BenchmarkAttentionLong, least CPU of three interleaved runs against
//     the build before, under load (ratios only): backward 0.38-0.42 at
//     512 tokens and 0.35 at 2048, forward 0.69 at 512 and 0.94 at 2048;
//     BenchmarkSoftmaxBlock 0.31; the qwen3-wide4 1 × 2048 training step
//     0.85-0.88 of the CPU per token (BenchmarkTrainStep, two interleaved
//     rounds). After it the tiles are ~75% of forward
//     and backward at 2048 (attnTileZ6 38%, attnDotsT3 30% of the two
//     together), the packs' copies 3-4% (forward queries; backward
//     queries, output gradients and dq in and out).
//   - Attention memory is linear in the sequence: no T×T matrix exists.
//     The forward keeps only each query's output, and the backward
//     recomputes one block's probabilities at a time (attnBackRows
//     positions × a KV head's query heads against the keys before them:
//     about 2 MB per worker at 4096 tokens on the 0.6B shape). Flash-style key tiles with
//     an online softmax were not adopted: rescaled partial sums would give
//     each score bits that depend on where tiles start, and the rule that
//     every output element sums its keys in ascending order in one pass is
//     what makes a row's bits independent of its batch, its block and the
//     thread count. Measured (BenchmarkAttentionLong, one layer of the
//     0.6B heads, CPU time on a loaded 2-core Xeon): attention's CPU time
//     per FLOP was the same at 512 and 2048 tokens, forward and backward,
//     so cache reuse at length, what key tiles buy, was not where the
//     time went; the exponentials and SSE transitions above were.
//   - Concurrent requests share one batch (batcher.go): every Sample call
//     on a base model or any of its adapters joins the model's running
//     batch, whose one goroutine (started by the first call, gone when the
//     last leaves) steps a forward pass over the next token of every
//     generating sample plus prompt positions still to prefill (at most
//     prefillChunk of one prompt; up to prefillBatch in all while nothing
//     generates, so requests arriving together prefill in one pass and
//     decode together, TestConcurrentPromptsOneBatch; while others
//     generate, sharedPrefill per waiting prompt, prefillChunk in all),
//     then lets each sample draw with its own
//     sampler and random stream. Decoding reads every weight once per step,
//     so 8 concurrent requests cost about what one request of 8 samples
//     does, instead of 8 requests. A new stepping goroutine (the batch was
//     idle) first yields its core while that brings in more requests
//     (gather: at most 16 yields or 100 µs, stopping after 2 that brought
//     none), so calls made together are admitted together even when
//     their goroutines have not run yet; it never sleeps, since a timed
//     wait would delay a lone request for nothing and only guess at
//     arrivals (TestArrivingPromptsOneBatch). Rows carry their adapter;
//     each adapter's low-rank product runs over its own rows. Admission is first come,
//     first served, up to maxBatchSeqs sequences (a larger request runs
//     alone). A cancelled caller returns at once; its rows leave before the
//     next step and its callbacks are not called again.
//   - Requests with the same prompt and adapter prefill it once
//     (prefixshare.go): a request whose prompt has not begun follows an
//     earlier active request with that prompt and starts its samples from
//     copies of the leader's prompt cache and last logits, which hold the
//     bits it would compute itself. Followers that arrive while the
//     leader's prompt is prefilled draw their first tokens before the next
//     forward pass, so they decode in the same steps as the leader, as
//     num_samples does (TestFollowerJoinsNextStep; drawn after it, they
//     cost one more step of the leader alone, 17 steps against 16 on the
//     0.6B shape's 16 tokens). Without it, 8 concurrent requests with
//     one 64-token prompt on the 0.6B shape cost 8 prefills where one
//     request of 8 samples costs one (about 0.3× its speed, measured with
//     BenchmarkGenerate under load). Requests that want prompt logprobs
//     prefill their own, and may lead others: which request leads is
//     the batcher's queue order (TestIdenticalPromptsPrefillOnce pins
//     both orders, TestLateIdenticalPromptShares).
//   - Parallelism: a step's rows are split over GOMAXPROCS groups, each
//     running its own forward pass (small models); large models keep one
//     batch and split each matrix product's rows across cores. Draws over
//     large vocabularies are spread across cores too, and so are the
//     training loss's logits rows (scoreRows: a CPU profile of a 2 × 512
//     step on the 0.6B widths with 4 layers put the vocabulary-wide
//     softmax at 29% of the samples, run on one core), each row whole on
//     one core, so the bits do not change.
//   - Training computes each datum's gradient alone and adds it to the
//     accumulated gradient in datum order, so gradients do not depend on
//     how data are split into calls, and each kernel splits its outputs
//     (never a sum) across cores. ActivationBytes tells one datum's
//     memory up front, CallBytes a call's.
//   - Datums through each layer together (batchpass.go, issue 34): a
//     call's consecutive datums form groups, and a group runs as one pass,
//     its datums' rows one after another (segments), so each base product
//     (x·Wᵀ forward, dy·W and Wᵀ·dy backward) packs and streams W once for
//     M = the group's tokens (1,024 at 2 × 512) instead of once per datum.
//     The bits are those of one datum after another:
//     Per row: products, norms, rotary and SwiGLU are per row, and the
//     kernels fix each row's reduction order whatever the other rows
//     (batch invariance, above).
//     Per datum: the rotary tables restart at each datum's position 0;
//     each datum has its own KV cache, views of its rows of the
//     layer's k and v slabs, so forward attention (one call, rows
//     pointing at their own datum's cache) and the attention backward
//     (one call per segment) see only the datum's positions; each
//     datum's loss rows are scored against its own targets, and the
//     output layer's products run over runs of datums (below, "The
//     output layer's chunk").
//     LoRA gradients: every adapted matrix's weight gradient (outerAcc)
//     is summed over one segment's rows from zero, then added to the
//     call's pending gradient (commitParam) before the next segment's,
//     which is pending + d0 + d1 per element as with one datum after
//     another; the output layer's, summed over a datum's logits
//     chunks, is committed once per datum. No per-datum gradient
//     buffer is needed.
//     TestBatchedDatumsKeepBits compares a batched call of 2 and 3
//     datums with one call per datum (outputs, loss, accumulated gradient,
//     on one core and two) and fails on any row given another datum's
//     position, cache, logits or gradient segment, or a changed commit
//     order (each was tried).
//     Memory stays bounded: a group grows while its rows stay within
//     batchRows (512: a product over 512 rows already amortises W's
//     stream, and more rows only take memory), its kept activations within the
//     keep limit (so a datum that would recompute runs alone, as does
//     every datum under SetKeepLimit(0)), and, under a call limit (the
//     server's training budget, SetCallLimit), its ActivationBytes within
//     that limit; otherwise datums run one by one as before. A group's
//     arena is at most ActivationBytes of its summed rows (the output
//     layer's scratch is one chunk of those rows at a time), which is what CallBytes
//     reports and the arena reserves up front. Models with experts or
//     latent attention run a datum a pass (their routing and caches are
//     per datum). So a group's arena never passes a 512-token datum's,
//     and datums of 512 tokens or more run one by one
//     (TestBatchGroupsOnlyShortDatums): with batchRows at 2,048 the 0.6B
//     2 × 512 step kept both datums' activations and peaked at 5.6 GB
//     against 4.3 one by one, for no gain.
//     What it buys depends on the datums' length (BenchmarkBatchedProducts,
//     CPU time of products over groups of rows against one per datum,
//     cold weights, measured on a loaded machine): at 2 × 512 one product
//     over 1,024 rows gains nothing in the forward (1.00) and 2% in
//     matMulT (0.98), since 512 rows already reuse each packed piece of W
//     enough; at 8 × 128 matMulT takes 0.85-0.88 and the forward
//     0.97-0.99, the same in groups of 512 rows as in one of 1,024
//     (groups of 256: matMulT 0.92-0.94). A whole step of the 0.6B
//     widths with 4 layers (BenchmarkBatchRowsStep, CPU time against the
//     datums one by one, interleaved, load average 15): 8 × 128 in
//     groups of 512 rows 0.98, in one of 1,024 1.00; 2 × 512 as one
//     group 1.03, so the gain is the products' and small in a step.
//     Small dense models keep datum slots (next) rather than batching:
//     their weights (K = 64-256) stay in L2 from datum to datum, so there
//     is no weight stream to save, while what they lose is the cores
//     waiting on each other inside products of some 10 µs; side by side,
//     each core runs whole datums. Where slots do not run (one core, or a
//     budget that holds only one arena) the same model batches.
//     Small dense models (Model.groups) run a wave of datums side by side
//     instead, one per core, each in its own slot (arena and gradient),
//     committed in datum order (datumslots.go; CallBytes counts the slots):
//     their products were too small to split across cores without the
//     cores waiting on one another.
//     The arena is sized from ActivationBytes before the first datum
//     (grown mid-datum, its overflow came from the garbage-collected heap,
//     on top of the next datum's arena).
//   - Long datums recompute (recompute.go): when a datum's kept
//     activations would pass the keep limit (DefaultKeepLimit, 4 GiB;
//     SetKeepLimit), it keeps only each layer's input residual and runs
//     each layer forward again just before its backward. The same kernels
//     on the same inputs give the same bits, so gradients do not depend on
//     the mode (TestRecomputeMatchesKept); it costs one more forward pass.
//   - The output layer's chunk (issue 34, headchunk). The head runs a
//     datum's positions a chunk at a time so that a long datum's logits
//     never exist at once, and every chunk streams the whole output matrix
//     forward and backward (622 MB at the 0.6B shape), so a small chunk
//     runs the backward's product where packing weighs most (0.71 of the
//     FMA loop at M = 128, 0.82 at 512, bwdpack's figures above). The
//     chunk is now as many positions as 320 MiB of float32 logits hold
//     (headBytes), in multiples of 128 (headChunk), at most the datum: 512
//     on Qwen3's 151,936 words, 256 at 262,144, the whole datum on the
//     tiny models. Interleaved step A/B in one process (BenchmarkHeadChunk,
//     rank 32 on every target, median of paired per-round ratios, load
//     10-17, so ratios only), chunk 512 ÷ chunk 128: 0.6B 2 × 512 0.97
//     CPU, 0.97 wall (3 rounds); the 0.6B widths with one layer (the head
//     most of the step) 0.88 CPU, chunk 256 0.97 (4 rounds); wide4
//     1 × 2048 0.97 CPU, 0.92 wall (3 rounds). 2 × 128 has one chunk a
//     datum either way. The cost is memory where a datum keeps its
//     activations, about 220 MiB of arena at 512 positions and more: the
//     0.6B 2 × 512 step's peak RSS 5,469 → 5,698 MiB (BenchmarkTrainMemory,
//     arena 2,573 → 2,796 MiB), 4%, for 3% of the step; the wide4 shapes'
//     arenas 442 → 665 MiB (2 × 512) and 825 → 1,033 (1 × 2048), still
//     well under PyTorch's peak there. headBytes is the knob if memory
//     matters more. The logits and the head's gradients of A·x are now freed when
//     the head is done, so the backward's dx and layer scratch reuse them
//     (ActivationBytes takes the larger of the two, TestActivationBytes
//     pins it exact): a recomputing datum, whose one layer's scratch is
//     larger than 512 positions of logits, takes the larger chunk for
//     nothing and its arena shrinks (1 × 4096: arena 1,091 → 1,016 MiB,
//     peak RSS 4,141 → 4,084 MiB; TestActivationBudget).
//     A group's datums share the chunk (issue 34, foldhead): consecutive
//     datums whose rows fit one chunk of the group's rows (headRuns; the
//     headBytes budget, which ActivationBytes of the summed rows already
//     counts) run the head's products once over all their rows, so 2 ×
//     128 streams the 622 MB output matrix once forward and once
//     backward instead of once per datum, at M = 256. The bits stay one
//     datum's after another's: the products are per row, each datum's
//     rows are scored by its own scorer, and the head's LoRA gradient is
//     summed per datum and committed in datum order (weightGrads, as in
//     the layers). A datum longer than the chunk runs alone, chunk by
//     chunk, as in a call of its own. TestBatchedHeadRunsKeepBits runs
//     every split (one run, two, each alone and in chunks) against one
//     call per datum; TestHeadRunsShareChunks pins the runs. Interleaved
//     step A/B in one process (BenchmarkHeadChunk, HEAD_CHUNKS=128,256:
//     chunk 128 keeps the datums apart, 256 shares it; medians of paired
//     per-round CPU ratios, load 8-19): the 0.6B widths with one layer
//     at 2 × 128 0.94 (5 rounds); the 28-layer 0.6B shape at 2 × 128
//     0.99 (3 rounds) and 0.95 (5 rounds, order rotated).
//   - Mixture-of-experts layers (moe.go, moe_train.go) route each token in
//     float64 with exp64, run each expert's matrices once over the rows
//     routed to it, and add each row's experts in ascending expert order,
//     so a row's bits stay independent of the batch; the backward pass
//     goes through the routing weights and the router's softmax to the
//     layer input (the router itself is frozen). The experts' adapters
//     take the service's shared-outer form (moe_lora.go): the shared
//     factor's gradient sums over the experts in ascending order, rows
//     ascending within each, so its bits too are fixed. TestMoEMatchesReference
//     and TestMoEGradientsMatchFiniteDifferences check them against the
//     float64 reference, on data whose routing keeps clear of ties.
//   - GPT-OSS's sliding-window and sink layers take the blocked paths
//     too (gptoss_attn.go): a block reads keys from the window start of
//     its first position, each query's probabilities before its own
//     window are zero (adding +0 to a sum still at +0 keeps the bits of a
//     sum that starts at the window), and the sink joins the softmax's
//     denominator (softmaxSink forward, softmaxGrad backward). The
//     forward keeps attendRow's bits (TestAttentionWindowBlocksMatchRows);
//     the backward is checked against a float64 reference and for thread
//     count invariance (TestAttentionWindowBackward) and, in the model,
//     against finite differences (TestGptOssGradientsMatchFiniteDifferences).
//   - DeepSeek's latent attention (mla.go). Sampling (prefill and decode)
//     caches the latent, not each head's key and value: per layer and
//     position kv_lora_rank + qk_rope_head_dim floats (kv_a_layernorm's
//     output, then the rotated key part), 576 on DeepSeek V3.1's shape
//     against 2·128·192 expanded, 85 times less, which is what makes
//     long contexts of these models fit (Config.KVBytesPerPosition
//     reports it; TestLatentCacheBytes). Attention runs absorbed
//     (mla_latent.go): q_nope·(W_uk·c) = (W_ukᵀ·q_nope)·c, so each
//     head's query becomes [W_ukᵀ·q_nope | q_rope], all heads score the
//     cached rows as one shared key head, the probabilities weight the
//     cached latents, and W_uv·(Σ p·c) gives the head's value; W_uk and
//     W_uv are row ranges of kv_b_proj, read in place. The service never
//     adapts kv_b_proj (its LoRA sits on kv_a_proj_with_mqa, before the
//     cache), so nothing is absorbed per adapter. Every row, a decoding
//     one too, goes through the blocked kernels in units of up to
//     attnRows positions × latentHeads heads, so each cached row is read
//     once per unit rather than once per head pair, and a query's bits
//     do not depend on its block: a sequence alone, batched, in any
//     prefill chunking or thread count gives the same bits
//     (TestLatentIndependentOfBatchAndThreads, emulated runs too;
//     TestConcurrentMatchesSolo covers tiny-deepseek). The absorbed form sums in another order than the
//     expanded one: TestLatentDecodeMatchesExpanded holds prompt and
//     decoded logprobs within 2e-5 (relative) of the training forward's
//     expanded form, both within the float64 reference's tolerance. It
//     costs more arithmetic per cached position (kv_lora_rank + rope for
//     the score and kv_lora_rank for the sum, per head, against nope+rope
//     twice), the price inference servers pay for the smaller cache.
//     Training keeps the expanded form: a head is qk_nope+qk_rope wide,
//     each value is padded with zeros to that width (as transformers pads
//     for flash attention), which reuses the blocked forward and backward
//     with their batch invariance; a datum's keys and values live only for
//     its pass, so the cache's size matters less there. Hence a DeepSeek
//     training forward reproduces the sampler's logprobs within float32
//     rounding (about 1e-6), not bit for bit as for the other families,
//     and an on-policy RL ratio is 1 within that
//     (TestForwardMatchesSampler). Training's
//     memory accounting (memory.go) counts that expanded form. No
//     admission limit sizes the sampling cache (the batcher admits by
//     sequence count, maxBatchSeqs). The rotary part
//     rotates neighbouring pairs in place, which gives transformers'
//     scores (it de-interleaves q and k alike, then rotates halves), and
//     YaRN's mscale² joins the queries. Routing (deepseek_moe.go) chooses
//     on sigmoid scores plus the correction bias within the best groups
//     and weights by the unbiased scores; the shared experts sit in the
//     layer's dense MLP slots, so they run, train and count as the dense
//     MLP does. TestDeepSeekMatchesReference and
//     TestDeepSeekGradientsMatchFiniteDifferences check them.
//   - bfloat16 matrices of large checkpoints stay bfloat16 in memory
//     (exactly widened on use); everything else is float32. Checkpoints
//     of 1B parameters or fewer are widened to float32 at load
//     (BF16Auto in load.go says why and what would change it); the bits
//     are the same either way.
//   - The bf16 compute path (kernels_bf16*.go, gemm_bf16_amd64.s from
//     internal/asmgen/bf16; LoadOptions.BF16Compute, `tinker serve
//     --bf16-compute`) is a second numeric path, as PyTorch's bf16 path
//     (oneDNN) is: every product with a bfloat16 matrix rounds its
//     activations to bfloat16 (nearest even, denormals to zero) and adds
//     the exact bf16×bf16 products in one float32 accumulator per output,
//     column pairs in ascending order from zero. With AMX (TDPBF16PS,
//     tiles of 16 tokens × 16 rows × 32 columns; Linux grants the tile
//     state on request, arch_prctl ARCH_REQ_XCOMP_PERM, once per process)
//     or else AVX512-BF16 (VDPBF16PS, 16 rows per vector, tokens
//     broadcast). Weights are kept only in the VNNI layout (16 rows ×
//     column pair per 64 bytes; the embedding keeps its rows), so a bf16
//     model takes half the memory of a float32 one. Go's assembler knows
//     neither instruction set: the generator encodes them as bytes.
//     Attention takes the path too (kernels_bf16_attn_amd64.go): queries,
//     keys, values and the softmax's probabilities are rounded to
//     bfloat16, the scores Q·Kᵀ and the outputs P·V run on the same
//     kernels, the softmax is one AVX-512 kernel in float32 (bf16Softmax:
//     its own exp, exactly zero outside the window). A sequence's keys and
//     values are rounded and packed as they arrive and kept beside its
//     float32 cache (kvCache.bf16: half its size again), so a decoding
//     step packs one position; each output adds its key pairs in chunks of
//     32 keys counted from key 0, with zero probabilities outside its
//     window, so a query's bits do not depend on the block of queries it
//     is computed in (TestBF16AttentionInvariant). With the float32
//     attention and softmax, this path spent over half of a 512-token
//     prefill of the 0.6B shape in attention and a third in the products;
//     now the products take most of it. A product's blocking follows the
//     caches (kernels_bf16_amd64.go): tokens in panels of up to 1 MiB
//     (bf16Panel; the down projection's 512 × 3072 inputs are 3 MiB),
//     each meeting 512 KiB chunks of weight blocks, so both stay within a
//     2 MiB L2; token rows sit one cache line past a multiple of 32
//     columns, since 16 rows 2 or 6 KiB apart (the 0.6B widths) fell in
//     two L1 sets. On data in L2 the AMX kernel reached ~2 TFLOP/s per
//     core, within the tile unit's 1,024 FLOP per cycle; the products of
//     a prefill ran at a fifth to a third of that on a loaded machine,
//     so what is left is in feeding the tiles, not in the tiles.
//     Products over the same inputs (q, k and v; gate and up) round them
//     once and share one fork of the workers (matMulBF16Group), and a
//     prefill's per-row work (norms, q/k norms with the rotation and the
//     cache copy, SwiGLU, the rounding) is split over the cores (eachRow)
//     instead of running on one while the other waits; each row's bits
//     are its own either way. Tried on this Xeon and dropped, as neither
//     beat the plain kernel in paired runs on one core (under load):
//     blocks of 256 columns with the partial sums stored and reloaded
//     between them, which keeps a token tile's rows in L1 (1.15-1.6x the
//     time: the tile unit waits on the stores and loads of the sums),
//     tokens packed as contiguous 1 KiB tiles rather than rows (1.00-1.05x),
//     and other chunk and panel sizes (within ±10%). Kept: the prefill
//     kernel prefetches its weight streams two k steps ahead into L1
//     (amxBF16W2N2: 0.94-1.00x), and the o and down products, added to
//     the residual, store into a slab of their own and are added after
//     (linearAdd: 0.95x against adding through the kernels' buffer).
//     Decoding reads each weight once: the one-token kernels prefetch
//     their weight streams 4 KiB ahead into L2 (the L2 streamer stops at
//     every 4 KiB page), and the decode benchmarks' read-bandwidth probe
//     (decodeMatrixWords) times the same kind of loads (1-8 streams per core,
//     with and without that prefetch, the fastest kept) over the decode's
//     own matrices, so decoding's share of it is a share of what the cores
//     can pull from those bytes.
//     On a Zen 4 (AMD EPYC, 2 vCPUs, AVX512-BF16 without AMX; measured
//     2026-11-29 under load average 15-25, so ratios only) the path runs
//     the VDPBF16PS kernels. VDPBF16PS alone (BenchmarkBF16Peak, 24
//     chains) does 2.00x the 512-bit FMA probe's FLOPs, its second source
//     in a register or a broadcast dword alike; the 4-token × 6-block
//     kernel on weights in L2 reaches 96-99% of that. In the products it
//     reached 73-80% at 1024 columns and 58-61% on the down projection
//     (3072): the chunk of weight blocks (512 KiB, rounded to even blocks:
//     16 at 1024 columns, 4 at 3072) was no multiple of 6, so a quarter of
//     the blocks, and all of the down projection's, ran on the one-block
//     kernel (4 accumulators, bound by VDPBF16PS's latency), and pieces
//     of 32 rows cut 1024 rows into 8-block pieces. Chunks and pieces are
//     now whole kernel calls (bf16AVX, bf16PieceRows), the edges take the
//     generated t × n kernel that fits (avxBF16Kernels; every one pinned
//     by TestBF16AVXBlockingsMatchEmulation): 82-88% on the five 0.6B
//     shapes at 128 and 512 tokens (BenchmarkBF16AVXShare, each product
//     beside the FMA probe), the kernel 89% of the product's CPU profile
//     (the rest packing, copying the sums, the fork); the kernels then
//     stored straight into equally spaced output rows, as the AMX tiles
//     do (bf16ChunkAVX): 85-91% against 83-87% in alternate runs. A
//     512-token prefill of the 0.6B shape on the bf16 path: 1.79-1.93x
//     the bfloat16 weights' float32 path in tokens per CPU-second
//     (BenchmarkPrefillBF16, same run) against 1.60-1.67x before; 1.15-1.21x
//     the previous build's rate in alternate runs. PyTorch 1.13's bf16
//     prefill (oneDNN) is behind here: the engine's ran at 2.8x its rate
//     in wall time and 2.7x per CPU-second (BenchmarkPrefillBF16Torch,
//     alternated, load average 10).
//     Tried and dropped (BenchmarkBF16AVXShapes, paired in one process):
//     blockings of 8 × 3, 6 × 4, 5 × 5, 7 × 4, 12 × 2 and 14 × 2 (0.95-1.03x
//     of 4 × 6's CPU time), weight chunks of 256, 320 and 768 KiB (within
//     noise; 2-block chunks at 3072 columns 1.25x), PREFETCHT0 of the
//     weight streams 512 or 2048 bytes ahead in the 4 × 6 kernel
//     (0.99-1.02x). For decoding, one-token kernels over 4, 8 or 12
//     blocks and 256 KiB or 1 MiB chunks (BenchmarkBF16DecodeShapes) could
//     not be told apart under this load (repeats of one blocking differed
//     by 7%); it keeps 6 blocks prefetched 4 KiB ahead.
//     Within a machine the bits do not depend on the batch, the tile, the
//     thread count, prefill or decode (the path is chosen per matrix,
//     never by batch size; TestBF16BatchInvariance,
//     TestBF16ModelPrefillMatchesDecode, TestBF16AMXUnderSignals for
//     tiles under preemption signals). Across machines they do: VDPBF16PS
//     adds a pair's odd product then its even one, each rounded
//     (TestBF16AVX512MatchesEmulation pins this), while TDPBF16PS rounds
//     its own way (measured: it matches neither order nor an exact 32-term
//     sum), so an AMX machine and a Zen 4 give different bf16-path logprobs.
//     Hence opt-in: it changes logprobs at bf16 precision (the tiny models
//     in bf16: up to 0.014 nats against the float32 path), breaks
//     cross-machine reproducibility, and a model loaded without it keeps
//     the float32 path's bits. The training backward's input gradients
//     (matMulT, Wᵀ·dy) take the path too, each worker packing a VNNI panel
//     of Wᵀ for 32 columns at a time from W's VNNI copy (packPanelT) rather
//     than keeping a second one; LoRA products and the adapter's gradients
//     stay float32. The attention backward stays float32 too: it
//     recomputes the probabilities from the unrounded queries and keys.
//     TestBF16TrainingGradients: within 1.5% (relative L2) of the float32
//     path's gradients, the same bits however the data are split.
//
// # Decoding one sequence (issue 34)
//
// What a decoding step of the Qwen3-0.6B shape spends, measured on the
// shared 2-core Xeon under load (load average 13-16: shares and ratios
// only, no rates). BenchmarkDecode's CPU profile (bfloat16 weights, 33
// positions): fwdRow16BF16 is 97.5% of the step's samples, attention over
// the cache 1.2%, everything else (norms, rope, the residual adds,
// sampling, the fork hand-offs) under 2%. Timed inside the step (a
// throwaway build): the products 97.5% of its wall time, sampling
// 0.4-1.3% (pick over 151,936 logits: 0.3-0.55 ms of one thread, 0.2 ms
// of it the float64 exponentials, 0.1 ms the cumulative walk), the rest
// of the forward pass ~2%. So decode is the one-token kernel and how the
// two cores share memory; per-token Go code is not where the bandwidth
// goes. Decoding's products that read the same vector (q, k, v; gate, up)
// now share one fork (matMulGroup): four forks a layer instead of seven.
// BenchmarkDecode/bf16 against main's build, alternated, three pairs
// under load: 1.00, 1.11 and 1.12 of its decode tokens per CPU-second
// (spin and tails are CPU too); the wall-time figures were too noisy to
// read.
//
// The kernel against the read probes, one thread, thread CPU time, the
// model's 1.19 GB of bfloat16 matrices: 12.1-12.5 GB per CPU-second
// against 10.0-13.6 for the probes (one to eight streams, with and without
// prefetch) in the same process; the 4-stream probe read 14.8 in an
// earlier run beside 12.1 for the kernel, so a single comparison does
// not settle a 10-15% gap here. Variants of fwdRow16BF16 (generated for the
// experiment, the same bits checked), median of nine interleaved passes
// each, thread CPU time against the kernel as it is: the next group's
// line into L2 (the kernel) 1.00; two groups ahead 0.99-1.00; into L1
// (PREFETCHT0) 1.07; 1 or 4 KiB ahead in the same row 1.26-1.27 (L2) and
// 1.20-1.28 (L1); PREFETCHNTA 1.88; no prefetch 1.41; two rows at a time
// 0.93-0.97, eight 0.98-1.01; a piece's rows read as four or eight runs
// far apart (the probe's layout: each stream its own pages) 0.94-1.06.
// The same kernel under two names measured 0.95-1.01, so none of these is
// a gain beyond the noise and the kernel stays. Pieces per worker in
// forkRows (2, 4, 16 against 8; both cores, wall time): medians
// 0.98-1.02 with quartiles ±10%: no conclusion on a loaded machine.
//
// Row pairs (measured, not adopted). Stored two rows to a run (dword k of
// pair p: row 2p's weight k in the low half, row 2p+1's in the high), one
// 64-byte load gives 16 columns of two rows: VPSLLD $16 widens the first,
// VPANDD with 0xFFFF0000 the second, the same products in the same order
// (the same bits, checked), where the kernel takes a VPMOVZXWD (a load
// and a shuffle) and a VPSLLD per row. A throwaway kernel (commit a65e8f5
// on branch decodekernel, reverted) over 672 MiB of the 0.6B shapes,
// paired ratios under load (load average 7-18), two pairs a group: one
// thread 0.94-0.98 of the thread CPU time (the kernel against itself
// 0.98-1.01; four pairs a group 0.95-0.98), two threads 0.96-0.98 of the
// process CPU time (itself 0.99-1.02), wall time too noisy to read. About
// 3%, so the layout stays: every reader of a bfloat16 matrix would move
// with it (the AVX-512 and AVX2 forward tiles, the backward's widening
// and packing, packVNNI, the Go rows and load16, the embedding's rowInto,
// the latent slices), odd row counts would need a padding row, and most
// of bf16 decode's distance to the bandwidth probe is not the kernel (one
// thread alone streams at the probe's rate). Worth redoing once the fork
// costs are gone: then the kernel's 3% is decode's 3%.
//
// The --bf16-compute decode (amxBF16T1N2, 98% of its CPU profile) ran its
// one token as a 16-row tile, 15 rows zero; its tiles now have the
// block's own rows (amxTileCfgs: same bits, TestAMXTilesStoreOnlyTheirTokens).
//
// Where a decoding step's wall time goes around the forks (decodefork):
// a throwaway build stamped every fork of BenchmarkDecode/bf16 (the
// offer, the worker's first claim, each side's last piece, the return)
// over 12-token decodes, under load (load average 11-18, so medians per
// product, no rates). A token is 113 forks: q/k/v, o, gate/up and down
// per layer, and the lm_head; attention at these lengths runs on the
// calling core. (1) Start skew: the worker claimed its first piece a
// median 62-70 µs after the offer on every product, and 45% of the forks
// ended before it arrived at all. The spin budget sat at spinMin (25 µs):
// it learned from the gap up to the worker's own wake-up, and the wake-up
// alone (~63 µs here) made every gap look longer than twice the budget,
// so the worker went to sleep before nearly every product. It now learns
// from the gap up to the offer (workerPool.learn). (2) Tails: the worker
// left a median 40-50 µs before the caller's last piece was done, and the
// lm_head's 8 pieces a worker were 19 MB each, over a millisecond of one
// core; decoding's pieces are now guided (decodePieces: a 1/(4·workers)
// share of what is left, down to 32K weights), 21-31 pieces a product,
// 54 for the lm_head. (3) Serial code between forks: 3-4 ms a token
// under load, most of it before o (q/k norms, rope, attention: ~50 µs a
// layer) and the sampler. On a loaded machine a spinning worker and its
// caller often share one CPU (the kernel groups each session's threads,
// sched_autogroup): with a 500 µs budget the caller finished its last
// piece ~515 µs after the worker left, i.e. only once the spin ran out,
// and yielding the CPU while spinning (sched_yield) made the worker's
// start 3-7 ms late instead. So A/B runs under load cannot show what a
// longer spin gains on a quiet machine; take that from a quiet run.
//
// The serial code between a decoding step's products was measured
// and a read-ahead into the idle core tried, not adopted. A throwaway
// build that stamped forward's sections on BenchmarkDecode/bf16's model
// (loaded machine, so shares only) put the products at 97% of a token:
// q/k/v 19%, o 11%, gate/up 27-28%, down 15%, lm_head 24%; between them
// attention over the cache 1.3-2.2%, q/k norms and rope 0.6%, the
// sampler 0.3-0.5%, other norms and SwiGLU 0.4%. The experiment: after
// each product the caller offered the next one's pieces (up to 1 MiB) to
// a spinning worker to pull into its L2, and the spin budget doubled
// after any gap within 4 budgets instead of 2. Quiet interleaved A/B,
// four rounds of BenchmarkDecode/bf16 -benchtime 1x (2026-11-29, load
// 0.1-1.8), tok/s: this code 21.5, 20.9, 21.9, 20.2; both changes 19.8,
// 19.2, 20.3, 20.7; read-ahead alone 19.5, 18.7, 21.8, 22.2; budget
// alone 20.2, 19.9, 19.9, 19.2. Their share of the bandwidth probe rose
// (77-82% against 78-79%) only because the probe beside them read
// lower, and they spent 3-9% more CPU a token. So the remaining gap to
// the read limit is the two threads' streaming in fwdRow16BF16, not the
// serial code.
//
// A bfloat16 KV cache for the float32 path was not built: a position's
// keys and values take 224 KiB over the 28 layers in float32, so the
// cache is 0.3-0.6% of a token's reads at the benchmark's 1-33 positions
// (the weights: 1.19 GB in bfloat16), 10% at ~520 positions and as much
// as the weights at ~5,200. It would change the float32 path's logprobs
// (keys and values rounded), and prefill would have to round the same
// way to keep its bits equal to decoding's, so it is a numeric path of
// its own, as --bf16-compute is; that path already reads keys and values
// as bfloat16 (kvCache.bf16). What long contexts did lose was the
// second core: a lone decoding row's attention was one unit, so one core
// read the whole cache while the other waited for the next product; past
// attnSplitWork (256 positions on the 0.6B shape) each KV head is now a
// unit of its own (TestAttentionLoneRowSplitsHeads: the same bits). The
// next step for long contexts is the bfloat16 cache for the float32 path,
// opt-in, with attention kernels that widen keys and values as they load
// them.
//
// The decode on Zen 4 (an AMD EPYC VM, 2 vCPUs, AVX512-BF16, no AMX;
// 2026-11-29, load average 14-24 from other sessions: ratios only). The
// lead's quiet BenchmarkDecode put float32 at 91.8% of the read limit
// and bfloat16 at 64.7%, but its probe, a 1 GiB buffer of its own, read
// 33.5 GB/s beside the float32 model and 56.4 beside the bfloat16 one in
// the same process, and the bfloat16 decode streamed 36.7, more than the
// probe beside float32: the buffer did not stand for the model's memory.
// Its pages were 4 KiB, the benchmark's float32 matrices were in huge
// pages (randomTensors advises them) and its bfloat16 ones were not
// (matricesToBF16 did not advise them, where loading a bf16 checkpoint
// does). The probe now reads the decode's own matrices (decodeMatrixWords:
// the same bytes, pages and count, TestDecodeMatrixWordsBF16), and
// matricesToBF16 advises huge pages as loading does. Which of the
// buffer's pages or the host's moved it to 56 was not settled under load.
//
// The quiet run after that still read the float32 matrices at 53.6-56.9
// GB/s and the bfloat16 ones at 34-36. Two causes, one ours. Ours: each
// matrix advised on its own (adviseHuge) only gets the whole 2 MiB pages
// inside it, and the heap starts an allocation on any 8 KiB boundary, so
// a matrix's first and last partial 2 MiB stayed in 4 KiB pages (pagemap
// and kpageflags): 83% of the float32 0.6B model's bytes in huge pages,
// 65-70% of the bfloat16 one's (its 2 MiB k and v had none), 0% of the
// bf16 path's packed copies (packVNNI did not advise them). Loading and
// withBF16Compute now carve the matrices from 2 MiB-aligned chunks
// advised whole (hugeSlab): 100% for all three (TestLoadedMatricesInHugePages
// requires every byte of a loaded checkpoint's matrices in MADV_HUGEPAGE
// mappings; the benchmarks' randomTensors and matricesToBF16 use the same
// slab). Under load (average 3-4), in one process, old layout against new
// over the same bfloat16 bytes: one thread read 27.0 against 30.8 GB per
// CPU-second (4 KiB pages throughout: 25.2); the two-core probe 1.065x
// (median of eight pairs) and the decode's process CPU a token 1.07x less;
// the bf16-compute path's packed copies 1.01-1.02x. The rest is not the
// memory: the same float32 matrices, nothing else changed in the process
// and no page migrated, compacted or split (/proc/vmstat), read 62-64
// GB/s for half a minute and then 34 for the next (no steal time): the
// host's memory bandwidth comes and goes on its own, and the benchmark
// ran float32 first and bfloat16 after. Compare the two only in
// interleaved runs; each decode's share of the probe beside it stays
// meaningful.
//
// The matrices converted at load come from the same slab: GPT-OSS's
// MXFP4 (or dense) fused experts, dequantised a row at a time into each
// expert's matrix, and DeepSeek V3.1's FP8 and Kimi K2's INT4 weights
// (TestConvertedMatricesInHugePages); no whole fused or float32 copy is
// made on the way, so a load's peak RSS fell (VmHWM, one process a load:
// a 2-layer, 8-expert GPT-OSS of width 1024 from MXFP4 300 to 235 MB in
// float32 and 255-325 to 136 MB kept in bfloat16; a DeepSeek from FP8 169
// to 113 MB and from INT4 147 to 87 MB in bfloat16, equal in float32),
// and no bit changed (the weights' bits and the logprobs, before and
// after, in float32, bfloat16 and bf16 compute). So do the other MoE
// families' fused experts in transformers 5.x's layout (Qwen3-MoE's and
// DeepSeek's mlp.experts.gate_up_proj and down_proj, splitFusedExperts):
// each expert's rows are contiguous there, so the fused tensor is
// converted once into the slab and the experts' matrices are slices of
// it, with no float32 copy of the whole on the way to bfloat16. VmHWM,
// one process a load, three pairs each, from bfloat16: a 2-layer,
// 8-expert Qwen3-MoE of width 1024 kept in bfloat16 255-260 to 159 MB
// (bf16 compute 259-309 to 209), a 2-layer, 6-expert DeepSeek 156 to 82
// (168 to 111), equal widened to float32 and from float32; the same bits
// (weights and logprobs, tiny and these, from F32, BF16 and F16, in
// every load mode). A signalling NaN is still made quiet, as the
// widening and rounding it replaces did.
//
// The kernel on Zen 4, one thread, thread CPU time, over the model's
// 1.19 GB of bfloat16 matrices against the probe over the same bytes,
// interleaved in one process (medians of 6-8 rounds): fwdRow16BF16 as it
// was (VPMOVZXWD + VPSLLD) read 20.6 GB per CPU-second against the
// probe's 25.9 (0.80), while fwdRow16F32 read 24.8 against 29.3 (0.85):
// fewer bytes per CPU-second from half the bytes per weight, so on Zen 4
// the widening, not memory, seemed to hold it (it did not: below). Same-bits variants (checked against
// dotLanes): a 256-bit broadcast load and one in-quarter VPSHUFB, the
// lanes' quarters 1 and 2 swapped and x swapped to match, 22.6-22.7
// (1.07-1.10x in every round's pair, 0.87-0.88 of the probe): kept;
// VPERMW of a whole line with a zeroing mask (no shift), 21.7 (1.05x).
// The broadcast form without x's swap (timing only) read 22.2: the swap
// costs nothing measurable. Its prefetch on Zen 4 (same setup, six
// rounds): into L1 (PREFETCHT0) 12.5 and none 12.4 against 23.0 for the
// next group's line into L2, two groups ahead 22.7: the L2 prefetch stays. Decoding the bfloat16 model, old kernel
// against new alternated in one process (eight pairs of 16 tokens, load
// average 17-24): the old kernel took 1.03-1.17x the new one's process
// CPU a token (median 1.09); wall time 0.83-2.14x, too noisy to read. The row-pair layout (no
// shuffle at all, every bfloat16 reader changed) was not tried on Zen 4.
//
// Cheaper widening, no layout change, the same bits (2026-11-29, load
// average 5-13: ratios only). Each form was checked against dotLanesBF
// (16 rows, lengths 1-3072 with tails and odd chunk counts, rows at odd
// element offsets) and timed against the broadcast form on one thread
// (thread CPU time) over 480 MB of bfloat16 matrices of the 0.6B layer
// shapes in huge pages, the forms in turn within each of 15 rounds
// (medians of the paired ratios, 2-6 runs), on two threads (process CPU
// and wall), and "hot": 512 KiB of rows in L2 read again and again, the
// loop's own cost. Figures: the broadcast form's time over the form's
// (above 1: the form faster).
//   - The broadcast (VBROADCASTI64X4), VPSLLVD by 16 in lanes 0-7 and by
//     0 in 8-15, VPANDD 0xFFFF0000 (even columns in lanes 0-7, odd ones
//     in 8-15; x permuted to match, the accumulators back before the
//     tree): hot 1.01-1.07, from memory 0.93-0.97, two threads 0.96.
//   - VPEXPANDW from memory with a zeroing mask (the odd words), one
//     instruction, columns in order: hot 0.97-1.03, memory 0.98-1.03.
//   - 256-bit halves, VPSLLD and VPANDD from memory, two 256-bit FMAs
//     into eight ymm accumulators a group: hot 1.26-1.50, memory
//     0.93-0.95 (one 256-bit load, both on the register: 1.23-1.52, 0.91-0.94).
//   - One 64-byte line load, two zero-masked VPERMW: hot 1.56-1.66,
//     memory 0.87-0.88 (two threads 0.87-0.88).
//   - Eight rows a group: memory 0.95 (two threads 0.98); each row's
//     prefetch just before its loads: 0.99-1.00.
//   - The zero-extension it replaced (VPMOVZXWD + VPSLLD): hot 1.29,
//     memory 0.89-0.93. So the widening's cost was not what held the
//     kernel (the reading above): the broadcast is the slower form in L2.
//
// From memory the kernel ran slower the faster it ran from L2, so the
// other way round: the broadcast form plus shuffles whose results nothing
// reads (row16Pace). One a chunk: hot 0.68-0.70, memory 1.12-1.15 (every
// one of 15 pairs above 1.04), two threads' process CPU 1.11-1.14; two a
// chunk: hot 0.60, memory 0.98; four: hot 0.40, memory 0.69 (bound by
// the loop now); a 256-bit one a chunk: hot 0.83, memory 1.08; one a
// weight line (every other chunk): hot 0.80, memory 1.13-1.17 (1.04x
// the one-a-chunk form, paired), two threads' CPU 1.13-1.16 and wall
// 1.07-1.26. The zero-extension with two a chunk: hot 0.77, memory
// 1.11-1.14. Pacing pays over a broad band, the loop's L2 rate 1.2-1.7x
// its rate from memory; why a faster loop reads memory slower
// (prefetches dropped, the hardware prefetchers' training, the host's
// memory) was not settled. Kept: one a weight line. Decoding the
// bfloat16 model with it and without (fwdRow16BF16Unpaced) alternated in
// one process (eight rounds of 24 tokens, load 10-13): process CPU a
// token 1.14x less on one thread (1.04-1.33) and 1.12x on two
// (1.03-1.16, every round above 1.03); wall 1.04x and 1.09x, too noisy
// to read. BenchmarkDecode's bfloat16 decode from two builds run
// alternately (one a chunk, four pairs, load 5-14): tokens per
// CPU-second 0.92-1.17x (median 1.03), separate processes too noisy to
// read. BenchmarkRow16Pacing repeats the kernels' paired comparison in
// one process (nine runs at load 4-11: hot 0.80-0.81, one thread
// 1.11-1.16, two threads' CPU 1.02-1.17, wall 1.02-1.26). It is a tuning for this host: a core
// whose memory outran 0.8x of the loop's L2 rate would lose by it, and
// it was not measured on the Xeon. The same unused shuffle in
// fwdRow16F32 (one a chunk, a line of float32): hot 1.00, memory 0.97 on
// one thread and two, so that kernel is not paced. Decoding the brief's
// VPSLLVD and the VPEXPANDW forms against the broadcast one the same
// way: 0.95-1.00x and 1.00-1.06x, within the noise.
//
// BenchmarkPrefillDecode's decode figure is the median of five decodes,
// each against the mean of the read-bandwidth probes over the model's
// matrices taken just before and just after it (measureDecode);
// BenchmarkDecode runs that part alone for A/B runs. Each probe reads
// those bytes with every read variant (1-8 streams a core, with and
// without prefetch, and the plain 512-bit sum), two rounds with the
// variants in turn, and takes the fastest single reading (fastestRead;
// the test log counts which variant won). It used to pick one variant
// per process from a best-of-two pass over a buffer of its own, and
// under load kept S1T0-1K, which read slower than the decoding kernel:
// one noisy pass decided every probe after it. BenchmarkBF16Decode and
// BenchmarkDecodeAVX2 now probe the same way over the bytes they read
// (the bf16 path's packed copies separately, GB/s-read-packed) instead
// of the 1 GiB buffer, which only BenchmarkReadBandwidth still reads.
// Under load the probe, two goroutines that must run at once, fell to
// 3.8-5 GB/s while decoding streamed 6-8, so shares above 100% mean a
// loaded machine, not a fast kernel: take the figure from a quiet run.
//
// That figure compares unlike things: the decode's mean over a second of
// 32 tokens, every pause from another process included, against the
// fastest of 42 readings spread over three seconds, every disturbed one
// left out. Under load the mean falls and the maximum does not, so the
// same build read 68-85% over nine A/B rounds. BenchmarkDecode and
// BenchmarkPrefillDecode now also report %decode-of-limit-paired
// (pairedShare, beside the old figure): one more decode with one reading
// of the matrices after every token, from Sample's StopFunc, which runs
// on the stepping goroutine, so readings and tokens take turns and never
// overlap. Each token (forward, sampling, the batcher's hand-offs) is set
// against the faster of the two readings on either side of it, tens of
// milliseconds away, by the two variants that read fastest in that
// decode's probes, alternating; the figure is the median over the tokens.
// The limit stays a real reading of the same bytes at that moment by the
// fastest known way, never a mean or a model. The readings (poolRead)
// claim 2 MiB pieces on the engine's worker pool, as the decode's
// products claim theirs: with the fixed halves of bandwidthOver a core
// the host slowed held up the whole reading, and under load (average 6-9)
// the paired readings fell to 12 GB/s against the probes' 21 while the
// decode's did not, a share of 108%; with pieces they read what the
// probes did (101% of their median). On the pool, the worker also stays
// busy between tokens instead of sleeping through a reading and waking
// for the next token with a halved spin budget, which would charge the
// decode a cost the plain decode does not pay. Five rounds under load
// average 6-12 (2026-11-29, 17:55-18:01): the old figure 41-58%, the
// paired one 51-70%, 2-24 points above it in every round; neither is
// narrow under that load (in one round the paired readings ran at 54 GB/s,
// 1.8x the probes' median, and the tokens beside them as fast): the quiet
// run decides. Three more (load 10-16): old 28.5, 42.5, 65.8%, paired
// 86.0, 56.1, 66.5%; the round where the decode streamed fastest (36
// GB/s, probes 55) had the two figures agree, and one old-only round
// beside them read 113%, its probes all slowed by the load.
//
// Where a bfloat16 decoding token's time goes (the 0.6B shape, positions
// 1-32). Under perf (load average 1-1.5), of the decode's CPU samples
// 90% were in fwdRow16BF16, 5.6% in the idle worker's wait for the next
// product (workerPool.next, four fifths of it in runtime.Gosched), 1.2%
// attention, 0.5% norms, rope, SwiGLU and the residual adds, 0.4%
// sampling, the rest the scheduler. The worker spent 12% of its time
// waiting and ran 43% of the rows. BenchmarkDecodeGap times it token by
// token, the variants in turn (eleven runs, load average 5-14, so only
// what holds in every run counts): the products alone, the same forks on
// fixed vectors, took 88-98% of a forward step, so the work between them
// (norms, rope, attention at these positions, the logits' rounding) is a
// few percent. The same pieces in a single fork (no barrier between the
// products; not a valid decode, a bound on what fewer forks could win)
// took 102-149% of the forks' time in the six runs that had it, never
// less: the 113 hand-offs and tails of a token cost nothing measurable,
// so fusing more of them (q/k/v and gate/up already share one) is not
// where the share is. The whole
// token cut as one group (a few huge pieces first) took 77-132%, and the
// forks cut coarser (a third of the weights left, at least 4x
// decodeMinPiece) 104-105% under load 10-14: decodePieces stays. The read
// probe over the token's bytes took 63-118% of the products' time,
// 63-87% below load 8. What is left is the kernels' pace against the
// probe's, and under load the forks' ends: a worker the machine takes
// away holds the piece it claimed until it runs again, whatever the
// piece's size.
//
// The quiet run after those changes (2026-11-29, 18:43-18:51, load
// average 1.9-2.4) settles what the paired figure was for and what it is
// not: the two figures agreed (bfloat16 73.6% and 74.7% in
// BenchmarkDecode, 73.6% and 73.3% in BenchmarkPrefillDecode; float32 72%
// / 78% and 76% / 77%), and the share sat below 80% because the host was
// in a fast phase: the probe read 59-63 GB/s, and the decode 43.5-48 GB/s,
// float32 and bfloat16 alike. In a slower phase (a 35.9 GB/s probe) the
// same build's bfloat16 decode read 87.6%, and the previous build's quiet
// run 83% of 30 GB/s. So the two cores' row kernels top out at 44-48 GB/s
// on this host whatever the weights' width, and the share of the probe is
// that cap over the phase's bandwidth. The cap is not the kernels'
// arithmetic (row16Pace, which slows the loop, reads faster) nor the forks
// (BenchmarkDecodeGap's single fork was never faster); what is left is how
// the kernel's 16 rows' streams meet the prefetchers, against the probe's
// fastest variants (one to eight streams a core with prefetch 1 KiB ahead
// into L2, S4T1-1K and S8T1-1K most often): the next thing to try was a
// row kernel with fewer, longer streams, now fwdRowLong (below).
//
// Other stream and prefetch arrangements of fwdRow16 were tried and none
// read faster (2026-11-29, 18:56-19:03, load average 0.9-4.9; commit
// be170ea on branch decodestreams, reverted: the generator's variants,
// TestRow16VariantsMatchDotLanes and BenchmarkRow16Streams). Each kept
// every row's dotLanes order (the same bits, checked with tails and odd
// chunk counts). Two threads from memory over 480 MB of bfloat16 (and
// 480 MB of float32) matrices of the 0.6B layer shapes in huge pages,
// 9-15 paired rounds a figure with the order alternating; figures are
// the product kernel's time over the variant's (above 1: the variant
// faster), medians of the process CPU and wall ratios, bfloat16 first,
// float32 after, over two to ten runs each:
//   - Each row's own line 1 or 2 KiB ahead into L2, instead of the next
//     group's line (the probe's S4T1-1K form): 0.55-0.84 / 0.89-0.98;
//     1 KiB ahead into L1: 0.43-0.71 / 0.75-0.91. The rows are 2-12 KiB,
//     so only the next group's prefetch starts a row early enough.
//   - Both (next group's line and 1 KiB ahead): 0.99-1.02 / 1.00-1.02.
//   - The next group's line two groups ahead: 0.96-1.03 / 0.99-1.01.
//   - Two rows a group (eight streams of two rows a call, longer runs),
//     next pair's line: 0.78-1.00 / 0.87-0.97; the line four rows ahead
//     (two pairs): 0.97-1.08 CPU, 0.98-1.05 wall / 0.88-0.96, the
//     closest, never 1.05 in every round (three focused runs of 15
//     rounds: medians 1.04, 1.05, 1.04 CPU and 1.04, 1.04, 1.02 wall,
//     minima 0.96-1.01; the last four runs, two at load 1, 0.97-1.03
//     CPU, 0.92-1.05 wall); eight rows ahead
//     0.97-1.04 / 0.87-0.97; four rows ahead with two lines a row an
//     iteration 0.98-1.15 CPU, 0.99-1.04 wall / 0.86-0.96.
//   - One row at a time, the line four or eight rows ahead: 0.92-1.01 /
//     0.84-0.95 (one add chain).
//   - Two weight lines a row an iteration (four groups): 0.93-1.00 /
//     0.96-1.02.
//   - Group j as rows j, j+4, j+8, j+12 (four streams that each walk
//     four consecutive rows, contiguous memory, the next row's line
//     prefetched): 0.81-0.99 / 0.97-1.00; two rows ahead 0.72-0.97;
//     with 1 KiB ahead as well 0.84-1.01.
//   - The product against itself: 0.99-1.03 / 0.97-1.01.
//
// In the same runs the product kernel alone, two threads, read the
// bfloat16 matrices at 0.85-0.94 of the S4T1-1K probe and 0.85-0.96 of
// S8T1-1K over the same bytes (the probes' time over the kernel's, CPU
// and wall, medians of paired rounds), more than decode's 73-78% of the
// fastest probe reading: most of that distance is not the kernel's
// arrangement. fwdRow16F32 read its float32 matrices at 0.80-0.84 of
// both (five runs at load 0.9-1.1), a wider gap that no arrangement
// above closed (the best, both prefetches, 1.01-1.02). The rest of
// decode's distance would be what it adds around the kernel (pieces of
// 32K weights up, the two cores' start and end on each product) and a
// limit that is the fastest of 42 readings rather than a paired median;
// not measured here.
//
// That rest, measured (BenchmarkDecodePieces, 2026-11-29, 19:14-19:18,
// load average 1.2-1.6 from this run alone, seven runs of 32 tokens; the
// products read the matrices at 47.7-51.8 GB/s, the fast phase): token by
// token, each variant in a fresh random order (a fixed rotation would
// keep each behind the same one), the figures are medians of per-token
// wall ratios. Decode's products as decode runs them read at 78-85% of
// the paired 2 MiB pool
// probe (poolRead by the fastest variant; 79-86% of the fixed-halves
// probe). Against the same forks on pieces cut once before the tokens:
// the row kernel over whole matrices in fixed halves, one fork a token
// (no barrier, not a valid decode) 0.944-0.993 of the time; a fork a
// layer in fixed halves 0.957-0.994; a fork a product in fixed halves
// (each core one contiguous half of each matrix) 0.982-1.013; decode's
// pieces in one fork 0.974-1.008; pieces of about 2 MiB 1.023-1.044;
// coarser guided pieces (a quarter of what is left) 0.967-0.999; one more
// index a fork in which the core that runs out first reads the next
// product's first 256 KiB 0.987-1.016. The probe read in 0.86-0.91 of the
// fixed-halves token's time. So of the 15-22% between decode's products
// and the paired probe, the forks, the pieces and the hand-offs are at
// most 1-6% (the barrier-free bound), and the kernel's own pace over the
// probe's is the 9-15% left. One oddity: decode's forks with their pieces
// cut each call (forkDecode) took 1.5-7.5% more than with pieces cut once,
// though the cut costs ~34 ns a piece (0.4% of a token); in real decodes
// a per-shape cache of the pieces gained nothing (8 paired rounds of 32
// tokens in one process, load 0.9-1.2: 0.92-1.03 wall and CPU, median
// 1.01), nor did the coarser cut (0.97-1.03). A busy third process changes
// the picture (load 3-6, an unrelated test at 100% of a core, products at
// 18.6-22.3 GB/s): one fork 0.71-0.76 of the products' time, a fork a layer
// 0.77-0.80, a fork a product in halves 0.99-1.01: a worker the host
// descheduled holds its piece and the other core waits at every fork's
// end, which no cut of the pieces avoids; only fewer barriers would, and
// decode's products depend on each other's outputs. Pieces of 2 MiB
// under that load: 0.93-0.98 in the benchmark, and 0.79-1.10 in paired
// decodes (8 rounds): no decode-level change cleared 1.04 in every round,
// so decodePieces and the pool stay.
//
// A row kernel with four long streams (fwdRowLong; 2026-11-29,
// 20:05-21:00, load average 1.7-3.9, another helper's benchmarks reading
// memory beside these: ratios only). A piece's rows are contiguous, so
// fwdRowsLong cuts a piece of 16k rows into quarters and each call reads
// rows i..i+3 of every quarter: four streams that run on across row ends
// for the whole piece, each prefetching its own line 1 KiB ahead into L2,
// the S4T1-1K probe's pattern. Each row keeps its accumulator and chunk
// order: no output bit changed (TestRowLongMatchesDotLanes with tails and
// odd chunk counts, TestForwardKernelsMatchScalar, TestDecodeForkMatchesScalar;
// BenchmarkDecodeLongAB compares the decode's tokens and logprobs bit for
// bit). BenchmarkRowLong runs decode's forks (decodePieces over q/k/v, o,
// gate/up and down of 16 layers, 480 MB of bfloat16) on the worker pool.
// Whole passes alternating left fwdRow16 against itself at 0.87-1.17 a
// round, so the kernels now alternate fork by fork, each on alternate
// layers (neither reads what the other left in L3), swapped every round:
// the control's median 0.998-1.014 over 41 rounds. Its CPU time a fork
// (getrusage) is too coarse to read; wall only. fwdRow16's wall over the
// variant's, medians of 41 rounds, in phases where the kernels read 28-36
// GB/s (at 17-20 GB/s, the host's memory taken by others, every variant
// read 0.96-1.02):
//   - four streams, 1 KiB ahead (kept): 1.069-1.081 (seven runs); float32
//     1.035-1.039; the lm_head's shape alone (ROWLONG_LMHEAD) 1.078-1.131,
//     every round of two runs above 1.02;
//   - no prefetch 1.05-1.06, 512 B ahead 1.06, 2 KiB 1.03-1.04, 4 KiB
//     1.02, 8 KiB 1.02, 1 KiB into L1 1.01, without row16's pacing
//     shuffle 1.075-1.089 (level with paced);
//   - eight streams: no prefetch 1.05, 1, 2 or 4 KiB ahead 1.05-1.07;
//   - two or four lines of a stream in a burst, x's chunks held in
//     registers (the probe's order): 1.06-1.08.
//
// fwdRow16 read 0.90-0.95 of the S4T1-1K and S8T1-1K probes over the same
// pieces; fwdRowLong about 1.0 of them. No minimum over the rounds stayed
// above 1, the control's neither (0.62-0.96).
//
// In decode the gain is smaller and not settled under that load.
// BenchmarkDecodeLongTokens switches kernels after every token (from
// StopFunc) and pairs neighbouring tokens (380 pairs a run, its control
// with one kernel under both labels 1.004-1.006): bfloat16 medians
// 0.98-1.12 over 21 runs (median 1.01; 19 of them at 13-20 GB/s, the two
// at 41-46 GB/s 1.005 and 1.021), float32 1.07-1.15 over three (lower
// quartiles 1.02-1.13). BenchmarkDecode/bf16 from main's build and
// fwdRowLong's, alternating in separate processes, in the fast phase (probe
// 62.5-63 GB/s): %decode-of-limit 73.6 and 73.9 against 76.6 and 77.7,
// paired 73.1 and 73.2 against 77.3 and 78.4 (GB/s 46.2-46.3 against
// 47.9-48.5): short of 80% still; other rounds fell in unlike phases.
// fwdLong selects the kernel, so a quiet run can repeat the comparison in
// one process.
//
// A bfloat16 decoding token outside its products (2026-11-29, 20:05-20:40,
// the 0.6B shape, positions 1-33; another session's benchmarks kept the
// load average at 1.6-3.8, so times are from its quietest rounds and
// ratios only; BenchmarkDecodeOnly is that decode with nothing else in
// the process, to run under perf). Timestamps around every fork and
// step of forward (temporary, not kept) put a 26.9 ms token at 891 per
// mille in the forks and 109 between them, all on one core while the other
// spins: attention 41 (1.1 ms, 39 µs a layer), q/k norms, rope and the
// cache copy 17, sampling and the batcher between tokens 12.5, SwiGLU
// 9.6, the two norms 6, the embedding and rope table 0.2; inside the
// forks the tails (one core done, the other on its last piece) 14-24
// and the worker's join 3-4. Under perf the row kernel was 835 per mille
// of the CPU samples, the idle worker's spin 57 and the scheduler's
// yields about 35 more, page faults under the cache copy 4.7. One core,
// hot, each piece alone: a sampler's pick over 151,936 logits 251 µs
// (the float64 exponentials 164, the draw's cumulative walk 72, the max
// 5.6), SwiGLU 4.8 µs a layer, the q/k norms 1.7, rope 0.8, a norm of
// 1024 0.24. Three changes, every bit the same:
//   - Attention's score kernels left a row's last one to three keys
//     (positions past a multiple of four) to attnDot's scalar fma32Soft:
//     one layer's attention at positions 14, 16, 17, 18 took 32, 17, 28
//     and 38 µs, against 10, 10, 12, 15 with the vector kernels taking
//     that group too (attnDotsVec; TestAttnKernelsMatchPerPosition now
//     covers every remainder of four). In the timed decode, attention
//     fell from 1.03-1.10 to 0.65 ms a token (tokens of 27-62 ms under
//     that load, so not a clean pair); decodes alternated in one
//     process (10 rounds of 33 tokens, twice, load 1.8-3.9): wall 1.031
//     and 1.017, process CPU 1.050 and 1.017 (medians; minima 0.88-0.92).
//   - Every decoded position's keys and values (4 KiB each a layer on
//     this shape) landed in memory the process had never touched: the
//     Go heap holding a model grows to twice its size before it
//     collects, so each new cache, and each page of it, came fresh from
//     the kernel, 56 page faults a token at 1.6-11 µs each on this KVM
//     guest (a separate program: 104 against 15 µs a token for the same
//     copies into touched memory, 615 under the other session's load).
//     The batcher now keeps finished sequences' caches (kvPool: at most
//     kvPoolBytes over all loaded models together, dropped after
//     kvPoolIdle unused; kvpool.go), cleared where they were written,
//     and hands them to the next requests: a 34-token request's minor faults went from
//     4,710 to 2,583 (TestKVPoolReusedSameBits: pooled caches, filled
//     before by a longer request, give a fresh model's bits, one sample
//     and clones). In one process under load 2.8-3.7 the decode's wall
//     and CPU moved 0.99-1.02x: within that load's noise.
//   - The sampler's 1.2 MB of exponentials came fresh for each request
//     (300 page faults on its first token); they now come from a pool
//     shared by all samplers (expsPool).
//
// After the three, the same timestamps (load 2.8, a 24.8 ms token): 89
// per mille between the forks against 104-112 before; attention 0.68 ms
// a token, the q/k norms, rope and cache copy 0.20 (0.41-0.46 before:
// the faults), sampling and the batcher 0.30, SwiGLU 0.20, the norms
// 0.15, and about 5 µs between each fork's end and the next one's offer
// beyond the work between them (110 forks: about 20 per mille; the cut
// and forkJoin take 1-2 µs of it hot, the rest is cold caches and the
// allocations' fresh pages); the forks' tails 11-15, the join 3.
// Decodes alternated in one process, each change against the build
// without it (16 rounds, load 3.2-3.6): the vector tail 1.028 wall and
// 1.013 CPU (medians; minima 0.85 and 0.83), the pool 1.020 and 1.012
// (0.70, 0.98). BenchmarkDecode's bfloat16 decode from this build and
// main's alternated (eight pairs, load 2.6-4.1, another session's
// memory-bound runs beside them): %decode-of-limit-paired 1.013x
// (0.975-1.125), tokens per second 0.978x (0.79-2.47): that load swamps
// a few per cent either way; the quiet run decides.
//
// Most of what is left: a 34-token request still faults 2,583 pages, the
// allocations' fresh pages while the heap grows: about 250 KB a token,
// 130 KB of it cutPieces' piece lists, 20 KB the forks' jobs and
// closures and forward's slices, the rest each request's workspace and
// logits; pieces kept per fork site would remove the largest part, 32
// pages a token, 0.2-0.6% of it at these fault costs (the per-shape
// cache of the pieces above: a median of 1.01 in paired decodes).
// forkDecode now appends its pieces to a slice from a pool (piecesPool):
// BenchmarkDecodeOnly's 33-token decodes after the first fault 815 pages
// each, 2,294 before (minor faults of -benchtime 4x less 1x, over three).
// Attention at these positions is
// compute in L2, about 1 µs a position a layer (the scores and the
// weighted sums 0.17 µs each alone): the Go vector code's loads and
// moves, about a third of the FMA ports' rate; an assembly kernel for a
// lone row would be the next step. Tried and not kept: reading the
// layer's keys and values line by line before attention (0.995-1.005,
// the data was in L2 or L3 already at these positions: cold and hot
// runs took the same time); a lone row's attention split by KV head over
// both cores at these positions (0.995 under load 3.5); the weighted
// sums two query heads at a time, each value row loaded once a pair as
// the scores load each key (the same bits, tested): one layer on one
// core, alternated, 17.7 against 21.8 µs at position 16, equal at 31,
// 63 and 250, 141 against 132 at 127 (load 3.2), no gain to keep; the sampler's
// exponentials on both cores, one core computing the first half's and
// adding them to the lanes, the other the second half's, then the lanes
// going on over the second half in order (the same bits, tested): 87-88
// µs against 158 on one core when the worker joined at once (the fork
// 80, the lanes' second half 8 in vectors, 31 in scalar code), a median
// of 123 under load 3-4, where the worker often came late (the fork
// alone then 155), and decodes alternated in one process 0.998 wall and
// 0.990 CPU (16 rounds, 0.50-1.54): about 70 µs of a 27 ms token that
// load turns into a loss. The draw's walk is one chain of float64 adds.
//
// Pieces for the long-stream kernel (BenchmarkDecodeCuts; 2026-11-29,
// 20:56-21:21, load average 0.5-3.4, another helper's benchmarks beside
// them: ratios only). fwdRowsLong reads a piece's quarters as its four
// streams, so the piece's length sets theirs; decodePieces was tuned for
// fwdRow16. The benchmark switches forkDecode's cut (decodeCut) after
// every token, decodePieces on every other token, and pairs each other
// token with the mean of its two neighbours (their wall over its, above
// 1: the cut faster; 44-250 pairs a cut a run, the tokens read 17.5-35.6
// GB/s, most runs 25-30). Medians over 7-14 bfloat16 runs (one float32):
//   - control (decodePieces under another label) 0.993-1.003;
//   - guided, half of what is left (div 2 instead of 8) 0.999-1.023,
//     float32 1.014; with at least 128K or 512K weights 1.004-1.022;
//   - a quarter of what is left 1.000-1.014; at least 128K weights
//     1.000-1.021, 512K 0.993-1.010, both 0.998-1.019; pieces of whole
//     64-row blocks (each stream whole 16-row blocks) 0.993-1.012;
//   - fixed halves of each matrix 0.996-1.018 (float32 0.993), fixed
//     eighths 0.997-1.021; the lm_head alone in halves, in 16ths or
//     guided by halves (the layers as decodePieces) 0.994-0.998;
//   - fwdRow16 on decodePieces, for scale: 0.932-0.963 (float32
//     0.864-0.874).
//
// Every cut kept the tokens' and logprobs' bits (the benchmark checks).
// No cut cleared 1.03: the coarser guided ones gain 1-2% on the layers'
// products, and decodePieces stays. Within one process fwdRowsLong
// decodes 1.04-1.07x as fast as fwdRow16 (its products' 1.07-1.08 over
// ~90% of a token would give 1.06-1.07), so the smaller figures before
// came from runs at 13-20 GB/s, where every kernel variant read alike.
// Single pairs fell to 0.32-0.80 in every cut, the control's too.
// In the same half hour float32 tokens read 49-51 GB/s and bfloat16 ones
// 27-31 (separate processes alternating a minute apart, load 1.7-1.8;
// BenchmarkDecode at 21:12: float32 51.6 GB/s, 83.8% of its probe,
// bfloat16 31.5, 77.6% of a probe of only 45.8 over its own matrices):
// a bfloat16 token took 0.8x a float32 one for half the bytes, which
// the pieces do not explain.
//
// A lone decoding row's attention in generated kernels (2026-11-29,
// 22:45-23:20, load average 2-3.6 from another helper's runs beside
// these: ratios only). attendRow now hands each KV head to
// attendKVHeadAsm (kernels_attn_lone_amd64.go; AVX-512, head dims a
// multiple of 64): attnRowDots<r> (internal/asmgen/attn/rowdots.go)
// scores r ≤ 4 query heads against the keys read in place, eight keys a
// block (four when r > 2) with attnDot's eight lanes in one 256-bit
// accumulator per key and query and the trees by attnDotsVec's VHADDPS
// and halves, a last group of one to three repeating its last key into
// padding; softmaxRows does the softmax (scaleScores then softmaxSink's
// bits); attnTileW<r> (128 columns, r ≤ 2) or attnTileZ<r> add the
// weighted values from +0 in ascending key order. No output bit changed
// (TestLoneRowAsmMatchesGo: positions 0-299, groups of 1-8, head dims
// 64 and 128, with and without sinks, against the Go vector kernels and
// the scalar path; TestAttnKernelsMatchPerPosition, the decode and batch
// tests). loneRowAsm switches it for the paired benchmarks.
//
// One layer on the 0.6B heads, the Go kernels' time over the generated
// ones', alternating on one thread (BenchmarkLoneRowAttnAB, 41 rounds,
// medians; lower quartiles within 0.05 of them): at positions 16, 64, 250
// and 1000, 2.45-2.48, 2.80-3.14, 2.68-2.93 and 2.72-2.99 in thread CPU
// (2.02, 2.42, 2.50, 2.76 in one run at load 3.5), 3.2-4.0 µs, 7.9-10.2,
// 34-42 and 182-245 a layer. Of that, the 128-column tiles against the
// 64-column ones: 1.09, 1.14, 1.10, 1.03. Hot, at position 16 the scores
// take 1.1 µs of 3.2, the softmaxes 0.85, the sums 0.73, the calls and
// slicing the rest; the scores and sums run at about half the FMA
// ports' rate (keys 4 KiB apart share eight L1 sets; contiguous keys
// score 1.4x as fast).
//
// In a decode the cache is cold: the layer's 40 MB of weights stream
// through L2 and L3 between one token's attention and the next, and a
// position's keys of every head are one 4 KiB page, of which each head
// reads 512 bytes. Timestamps around attention in the decode (temporary,
// not kept) put it at 0.23-0.43 ms a token at positions 1-8, 0.77-0.98
// at 30-38 and 1.58-2.25 at 88-96, against 0.26-0.40, 1.03-1.94 and
// 2.86-3.56 with the Go kernels: at position 92, 59 µs a layer where
// the same work hot takes 11. Read head by head from cold memory those
// bytes come at 8.5-11 GB/s; in address order at 36-58
// (a test program, 68 KB to 1 MB). BenchmarkLoneRowAttnColdAB repeats
// that state (a 48 MiB pass before each of 28 layers' attention): Go
// over generated 1.13-1.33, 1.39-1.72, 1.40-1.87, 1.64-1.79 (wall
// medians; with the code warm, 5 of position 16's 30 µs go). So
// attnRowDots prefetches into L2 the keys and values 16 positions ahead
// of the block it scores, and the first 16 before it starts: paired
// with the same kernel without (a temporary variant), 1.05, 1.18, 1.25
// and 1.14 cold, 1.007 and 0.995 in decodes. Tried and not kept, cold:
// every head's scores and sums a block of 32 (or 16) positions at a
// time, so each page is read across heads in turn, 0.96-1.18 cold, 1.000
// and 0.999 in decodes; prefetching the next block of 32 positions whole
// (every head) 0.91-0.98; reading the layer's keys and values in address
// order before the scores (a load a line, asm or Go) 0.82-1.07 in the
// benchmark (one run of a Go loop outside attendRow had shown 1.13-1.78)
// and 0.988-0.994 in decodes; the caches in 2 MiB pages (a throwaway
// allocation) no change either in the benchmark or in decodes;
// prefetching the next KV head's first 16 keys and values before this
// head's softmax and sums, 1.01-1.15 cold and 1.000-1.004 in decodes; a lone
// row split by KV head over both cores at every position, slower and
// erratic at load 3.3 (the second core was busy).
//
// Decodes alternating the Go and generated kernels token by token
// (BenchmarkDecodeLoneAttnTokens, positions 1-97, 380 pairs a run),
// seven runs at load 1.5-4.2: process CPU medians 1.000-1.013 (five of
// them 1.010-1.013), wall 1.002-1.013, lower quartiles 0.96-0.99; the
// control (one kernel under both labels) 0.997-1.000. At the 1-33
// positions of BenchmarkDecode attention is now 1-4% of a token, most
// of it waiting on the cold cache (perf over that benchmark, tokens
// alternating: the Go kernels' scores and sums 0.80% of the process's
// samples, attnRowDots2 and attnTileW2 0.52%, their samples on the
// multiply-adds just after each key's load, and 7% of attnRowDots2's in
// its prologue's prefetches): the next step is reading it at the
// pace of address order, which none of the tries above reached.
//
// The serial work moved into the forks (decodeFuse, forward_fuse.go;
// 2026-11-29, 22:45-23:35, load average 0.5-4 from the other sessions:
// ratios only). A decoding step on the float32-compute path (one to three
// rows, no adapter) now finishes each head of q, k and v (bias, q/k norm,
// rope, the cache copy) on the core that computed its last rows, attends
// each KV head (attendRow, its own scratch) once its key, value and query
// heads are finished, and applies SwiGLU to 128-row blocks once gate's and
// up's rows of them are done, all inside the forks: each element's
// arithmetic is unchanged, only where and when it runs. The q, k and v
// products are cut k, v, q, so groups complete one by one over q's pieces
// and only the last group's attention is left for a tail. With that, a
// dense layer's products run as one fork and a step's layers as one
// (fuseLayer, fuseToken): a core that claims the first piece of o (gate
// and up, down, the next layer's q, k and v) waits there until every KV
// head has attended (o is done and the core that finished it normed the
// rows; SwiGLU is done; down is done and its last core normed the rows for
// the next layer) instead of the fork ending, the caller doing the serial
// part and offering the next fork. Each product is still cut on its own
// (cut as one, the guided pieces were a share of the whole layer and the
// first products one or two pieces: a tail of tens of µs at every
// phase), and the waits spin as long as an idle worker does (spinFor):
// with naps after 20 µs, as finish does, the layer fork took 1.18x the
// forks' wall time. TestDecodeFuseSameBits decodes three sequences in
// steps of one to three rows and a prompt three and two positions at a
// time (Qwen3, Llama 3 with q, k and v biases, GPT-OSS with sinks and a
// sliding window; float32 and bfloat16; 3 layers) fused in each shape and
// unfused: every logit and cached key and value the same bits.
// forkDecode's arguments, pieces and piece function now come from a pool
// (decodeForks): a decoding token's forward allocates 3.7x fewer bytes
// and 3.2x fewer objects (BenchmarkDecodeOnly's memory profile; what is
// left is mostly forkJoin's job).
//
// BenchmarkDecodeFuseTokens switches a variant after every token and
// pairs neighbours (bfloat16 0.6B shape, positions 1-65, eight rounds of
// 64 tokens: 504 pairs; old over new, above 1: the variant faster; the
// control, one build under both labels, 0.998-1.006). Everything fused
// against nothing: wall 1.09-1.14 (lower quartiles 1.02-1.08) where the
// other sessions' load made tokens 52-86 ms, 1.011, 1.015 and 1.019
// (quartiles 0.986-0.989; process CPU 1.008-1.017) in the quieter phases
// (tokens 30-34 ms, load 0.5-2.7); float32 weights 1.016; positions
// 1-321, where attention is a larger share, 1.050 (quartile 1.018).
// Parts: attention inside the q, k and v fork 1.024; the fork a layer
// against forks a product, both fused, 1.14-1.16 under load; a fork a
// step against a fork a layer 1.003-1.006. Under load the gain is the
// hand-offs a descheduled core no longer holds up; quiet, what moved off
// the serial path (attention, norms, rope, SwiGLU: about 50 per mille of
// a token on one core, now shared and overlapped with the other core's
// streaming). With the lone row's generated attention kernels merged
// (load 1-1.7): 1.012 and 1.023 (tokens 27-29 ms), positions 1-321 1.029,
// float32 1.016. Under perf (BenchmarkDecodeOnly) the row kernel is now
// 94% of the decode's CPU samples and the worker as busy as the caller
// (18.2% and 18.3% of the process's samples; before, 12% and 19%, the
// worker's wait for the next fork 5%). BenchmarkDecode/bf16 after the
// merge, two runs: 78.3% of the limit (paired 78.3%) with the probe at
// 58.4 GB/s, 89.3% (97.9%) at 35.5: the fast phase's gap is the row
// kernel's streaming now. Tried and not kept: decoding's pieces down to
// 16K or 8K weights (a shorter last piece at every fork's end) 0.994 and
// 0.998.
//
// What was left outside the fused fork or cold in it (2026-11-30,
// 01:05-01:50, load average 2.2-4.8: another helper's decode benchmarks
// ran beside every run, tokens took 37-85 ms against 26-29 quiet, so
// ratios only; BenchmarkDecodeFuseTokens' control read 0.995-1.003).
//
// The final norm and the lm_head now run inside the step's fork
// (fuseHead, forward_fuse.go): when every row of a fork of every layer
// wants logits, the core that finishes the last layer's down norms the
// rows with the final norm, as it does for the next layer's attention,
// and the lm_head's pieces are the fork's last phase, without the fork's
// end, the serial norm and the next fork's offer. Each logit is the same
// matRows row of the same normed vector: no output bit changed
// (TestDecodeFuseSameBits decodes with it on and off, and fails if the
// decoding steps' fork did not run the lm_head; a wrong norm there fails
// it). Token-paired, on over off: positions 1-65 wall 1.001 and 0.996,
// process CPU 1.000 and 0.996 (lower quartiles 0.94-0.96), 1-321 0.999
// and 1.003: the few µs a token it saves are below what this load
// resolves (timestamps, temporary: from the last down rows' end to the
// lm_head's first piece 1.2 µs a token, against 7.5 to the unfused
// lm_head's call; with the pooled jobs below, tokens 1.002 bfloat16 and
// 1.003 float32). Kept: one hand-off fewer, which is what a descheduled
// core holds up. The sampler's max per lm_head piece was not done: the max is
// 5.6 µs of a pick's 251 (0.02% of a token); its exponentials (164 µs)
// need the max of every logit first, so only a phase after the lm_head
// could share them between the cores (the earlier separate fork's
// 87-88 against 158 µs), which needs the rows' samplers inside forward:
// about 70 µs a token, 0.3%, not measurable under this load. forkJoin's
// jobs now come from a pool (jobPool, workers.go): a job goes back only
// when no worker holds it (refs: a worker takes one when its look at the
// offer finds the job, and reads no field before the offer is confirmed),
// so no worker's pointer meets a job reset for another fork, and the
// parking channel is made once with the job. It was about one allocation
// a token (memory profile of BenchmarkDecodeOnly: forkJoin 132 of 6,302
// objects over four 33-token decodes, finish's parking channel 83), now
// none (TestForkJoinReusesJobs); token-paired 1.003 wall and CPU (1-65,
// load 2.4-3.4), no time to see.
//
// The cold keys and values (not kept; none changed a bit). Attention's
// own wall time a token (timestamps around attendRow in the fork,
// temporary), medians over tokens alternating on and off: positions 1-65
// 0.83-1.19 ms cold; attending twice and timing the second, 0.23 (1-321:
// 0.80 against 2.36); loading every line of the group's keys and values
// just before (untimed) 0.31-0.36 against 0.90-0.92, one line of each
// page another head's (the translations warm, not the data) 0.81-0.96
// against 0.93-1.14; the full loads timed with the attention 1.4-1.8x
// the cold attention alone. So most of attention's time in a decode is
// the cache lines' wait, about 2% of a token, the data rather than the
// translations, and attnRowDots' own prefetches already fetch it faster
// than loads ahead of it. Their distance (rowDotsAhead, 16 keys) against
// 8, 32 and 64, attention's time a token alternating (1-65; 1-321): 8
// 0.96; 0.91, 32 1.10 and 1.01; 0.98, 64 1.00; 1.14: no distance clearly
// better, 16 stays. Prefetches (PREFETCHT1, a generated kernel, gone
// with the tries) issued while the layer's products stream:
//   - the layer's cache in address order, a share before each k and v
//     piece's product: attention 0.96-0.83x (1-65, 1-321); tokens 0.989
//     and 0.973 wall, 0.991 and 0.975 CPU (slower); keys only 0.987;
//   - in the phases' waits (the core waiting for the other's last piece,
//     bandwidth one core leaves unused), the next layer's cache from the
//     wait before down on: attention 0.89-0.94x, tokens 0.992;
//   - each group's keys and values (strided by position) before the q
//     piece holding its last query row, whose core most likely attends
//     it: attention 0.74-0.80x, the closest; tokens 0.999 (1-65) and
//     0.992 (1-321); keys only 0.997; with the piece's last 64 or 128
//     rows after the prefetches 0.87x and 0.74x; at the group's first
//     query row 0.82-0.95x.
//
// Lines fetched during the products are mostly gone (the weights stream
// through L2, and this host's L3 is shared with the other process's
// streams) or in the other core's L2: q's last pieces are 32-64 rows
// (decodePieces), so the last groups' query heads end on either core.
// What attention saves, the prefetching core spends. The cold-hot gap
// (0.8 ms a token at 1-65, 1.6 at 1-321 under this load) stays; a
// weight stream that did not evict the cache (non-temporal prefetches in
// the row kernel) is the untried way at it.
//
// The phases' waits (not kept): a core that claims a piece of the next
// phase waits in await while the other finishes the phase before, one
// core streaming where two did (the waits took about 0.6 ms of the
// quieter tokens, timestamps, temporary; under this load a descheduled
// core made them tens of ms). Prefetching, while waiting, the first 16,
// 64 or 256 KiB of each of the claimed piece's four streams into L2
// (fwdRowsLong's quarters, 1 KiB a look at the phase): tokens 1.000,
// 0.997 and 0.995, 0.991 wall (1-65, load 3.1-4.5): none.
//
// The row kernel's pace and decoding's pieces, again (2026-11-30,
// 01:04-01:40, load average 2.3-4.6: another helper's memory-bound
// benchmarks ran throughout, so no reading here is from the fast phase;
// decoding tokens read 14-33 GB/s, ratios only). Where a bfloat16 token
// loses against the probe, BenchmarkRowLongWidth: the same 0.6B layer
// shapes in bfloat16 and in float32, read as decode's forks, each width
// and way once a layer per round. On one core in a quieter minute (the
// probe over each matrix in two halves at 32.6 GB/s), each way's rate
// over that probe's: bfloat16, the probe over decode's pieces 0.886,
// fwdRowsLong over them 0.819, over the halves 0.892; float32 0.924,
// 0.944, 0.970; bfloat16's bytes a second over float32's 0.99 for the
// probe over halves, 0.87 for the kernel over the pieces, 0.91 over the
// halves. So two things: every piece costs (pieces of fixed sizes, one
// core, probe at 30 GB/s: the probe over 64 KiB, 256 KiB and 1 MiB
// pieces read 0.78, 0.92 and 0.99 of its halves, about 0.6-0.75 µs a
// piece, the start of four new streams; the bfloat16 kernel 0.71, 0.84,
// 0.88; float32 0.83, 0.90, 0.95), and the bfloat16 kernel itself is
// slow a byte. BenchmarkRowLongHot gives the kernels' pace where memory
// is not the limit (one core, CPU time): with the rows in L2 the paced
// bfloat16 kernel read 36.3 GB/s, float32 73-80; with 8 and 16 MiB in
// L3 35.5 and 34.8. The fast phase asks about 29 GB/s of each core, 0.8
// of the paced loop's own ceiling, where the generator's note on row16's
// pacing says a pacing shuffle loses. Without it (row16Pace dropped from
// rowLong) the loop reads 45.8-46.0 GB/s in L2 and 43.1 and 41.2 from
// L3; also taking x with its quarters already swapped (variant A1KX,
// fwdSwapQuarters, which needs a buffer a piece) 47.7-48.1 in L2, but
// level in decodes too (0.996 and 0.998, the control 1.006), so it is
// not kept. In decodes the two were level at these phases (the paced kernel as
// variant A1KP, token-paired, BenchmarkDecodeAheadTokens: the unpaced
// one's tokens over the paced one's 1.001, 0.997, 0.995 and 0.991 as
// medians of 378 pairs, lower quartiles 0.94-0.99, the control 0.996
// and 1.005; 151 pairs at 38+ GB/s 0.997); on one core from memory
// 0.995-1.014 (BenchmarkRowLong, ROWLONG_THREADS=1). fwdRowLong is now
// unpaced: the same bits (only a shuffle into a register nothing reads
// went), a quarter more headroom for a phase that reads faster than
// these did; the lead's quiet run can set rowLongVariant to A1KP's
// index to compare.
//
// The pieces: decodePieces now takes a half of what is left (1/workers)
// and at least 128K weights (256 KiB of bfloat16): 24 pieces a 0.6B
// layer and 12 for the lm_head, against 101 and 54. BenchmarkDecodeCuts,
// positions 1-300, the cut's tokens over its decodePieces neighbours'
// (the old cut as control): 1.051-1.072 in four runs whose tokens read
// 18-22 GB/s (lower quartiles 0.99-1.03), 1.015 at 28.4 GB/s, float32
// 1.030; a half with 64K or 256K weights 1.015-1.061, a quarter with
// 128K 1.003-1.042; the lm_head's cut alone made no difference (1.002,
// 1.014). After the change the old cut as the variant read 0.987 and
// 0.964 (control 0.995, 0.997). Earlier runs of these cuts (above,
// 1.004-1.022) came before the fused fork and with the paced kernel.
// Pieces never change a bit; TestDecodePiecesShrinkToTheEnd keeps the
// lm_head's last piece at 128 rows or fewer. Both changes against main's
// paced kernel and old cut at once ("main" in BenchmarkDecodeAheadTokens,
// load 3.5-4.5, tokens mostly under 25 GB/s): the new tokens' time over
// main's 0.954 and 0.950 (lower quartiles 0.905-0.907, process CPU the
// same), 0.973 over 32 pairs at 38+ GB/s; the control 1.008; two more
// runs 0.945 and 0.947; positions 1-321 0.952 (638 pairs); float32 (the
// cut alone: pacing was bfloat16's) 0.975, 0.965 and 0.966. Pairs whose
// tokens read 38+ GB/s, where this phase reached the fast one's pace:
// bfloat16 0.962 over 144 pairs (lower quartile 0.938) and 0.973 over
// 32; float32 1.014 over 41 and 0.989 over 52 (level). That gain is the
// load's, though: when the other helper's runs ended (01:53-01:57, load
// 1.2-1.9, the host in a slow phase: the probe over halves read 33.8
// GB/s on two cores, tokens 25-38 GB/s) the same comparison read 0.999,
// 0.992, 0.991 and 0.999 (CPU 0.988-0.993), and the build before main's
// merge 1.000 and 0.999: level, about 1% less CPU (BenchmarkDecode/bf16
// from main's build and this one alternating, three pairs at load 1.6-1.9
// with the probe at 33 GB/s: decode 30.9-32.3 GB/s against 29.8-34.4,
// paired 85-95% against 78-97%: the phase's noise). Kept for the loaded
// host (a core the host takes away holds fewer claims up) and as level
// quiet. In that quiet minute on one core (BenchmarkRowLong,
// ROWLONG_THREADS=1, the unpaced kernel as base, 31 rounds): the probe
// S4T1-1K read 1.12-1.15x the kernel's rate, S8T1-1K 1.07-1.08x; paced
// 0.995-0.999, A1KX 1.001-1.006, no prefetch 1.019-1.036, 2 KiB
// 0.925-0.970, 3 KiB with 48 lines 0.893-0.911; in a second minute
// (01:57, the probe over pieces at 24-27 GB/s) PREFETCHT0 1 KiB
// 0.729-0.737, 512 B 0.975-0.985 (temporary variants, not kept), the
// probe without prefetch (S4) 1.09-1.15x like S4T1-1K's 1.12-1.17x:
// on one core the kernel reads about 0.88 of the probe, and no prefetch
// form moves that; in decodes no prefetch 0.990 and 1.000, 2 KiB 0.994
// (control 1.002).
//
// Prefetch distances and hints, token-paired against the product's (the
// generator's rowLongVariants, rowLongVariant, and rowLongWarmLines:
// fwdRowLongWarm prefetches a piece's first lines of each stream at
// once, since a stream's own prefetch covers nothing of its first
// rowLongAhead bytes), all paced against the paced product and the old
// cut, medians at these phases: 2 KiB 0.943-0.999, 3
// KiB 0.961-0.986, 4 KiB 0.902, no prefetch 1.000, PREFETCHNTA 1 KiB
// 0.811, PREFETCHT0 2 KiB 0.824; with the warm-up, 1 KiB and 16 lines
// 0.989, 32 lines 0.998; 2 KiB and 32 lines 0.987; 3 KiB and 48 lines
// 0.956-1.099 over four runs (0.960, 0.982, 0.989); 4 KiB and 64 lines
// 0.948-1.001. On one core (BenchmarkRowLong, ROWLONG_THREADS=1,
// ROWLONG_BASE=long, 31 rounds): 2 and 3 KiB 0.97-0.99, 3 KiB with 48
// lines 0.973-0.986, 4 KiB with 64 0.958, NTA 0.87, 1 KiB with 16 lines
// 1.015-1.027, with 64 0.997-1.006 (the control 0.988-1.005). Unpaced,
// with the new cut, at tokens under 25 GB/s: 2 KiB 0.928, 3 KiB with 48
// lines 0.908, no prefetch 1.021: the slower the phase, the less
// prefetching pays; at tokens of 25-38 GB/s (01:50) no prefetch 0.985
// and 1.001, 2 KiB 1.014 and 0.987 (the control 1.004), 2 KiB over 43
// pairs at 32-38 GB/s 1.058 and over 30 at 38+ 1.000. None is kept;
// the variants stayed generated for a quiet run to judge in the fast
// phase, where the bandwidth-delay product is larger
// (BenchmarkDecodeAheadTokens groups the pairs by their read rate; that
// run is the next paragraph).
//
// The variants in a quiet run (2026-11-30, 02:03-02:21, load average
// 0.3-1.9, nothing else running; BenchmarkDecodeAheadTokens, 189-252
// pairs a variant, the host in its fast phase for some runs and not
// others, so the pairs whose tokens read 38+ GB/s are given apart). In
// the fast phase: 2 KiB ahead 0.925 and 0.910 (174 and 187 pairs), 3 KiB
// with 48 warm lines 0.896 (240): farther prefetching loses most where
// the bandwidth is highest. No prefetch at all (A0): 1.028, 1.026,
// 1.023, 1.009, 1.000, 0.995 and 0.982 over 250, 66, 155, 143, 170, 95
// and 21 fast pairs, and 0.960-1.006 (median about 0.985) at 25-38 GB/s:
// a gain of about 1% where the goal is, paid for by about 1.5% in the
// slower phases, so the 1 KiB prefetch stays. A0 with 16 lines warmed
// 1.019 and 0.992; the paced kernel (A1KP) 0.985-1.010 in every phase,
// and 0.991-0.999 over all pairs. A2K, A3K, A4K, NTA1K, T02K and A1KX
// are no longer generated (their figures above), nor is the warm-up
// (fwdRowLongWarm, rowLongWarmLines); A1KP and A0 stay for the next
// quiet run to compare. The fused fork against unfused decoding
// in the same run (BenchmarkDecodeFuseTokens, 380 pairs): 1.034 wall,
// 1.028 CPU (lower quartiles 1.016 and 0.998).
//
// The cache head-major, measured and not built (2026-11-30, 03:38-03:47,
// load average 0.6-2.9, another helper's runs beside: ratios only).
// BenchmarkLoneRowAttnColdHeadsAB attends one row over 28 layers' caches
// evicted before each layer (as BenchmarkLoneRowAttnColdAB), the same
// values position-major (the cache's layout: a position's keys of every
// head one 4 KiB page) or head-major ([KV head][position][head dim], a
// capacity of twice the positions: each head's keys and values two
// linear streams), through the same generated kernels (only the key
// stride differs; the outputs the same bits). Head-major's speed over
// position-major's, wall medians of 15-31 rounds, five runs with
// position-major labelled old and four with it new: positions 16
// 0.75-0.97 (head-major slower), 64 0.87-0.96, 320 0.94-1.04, 1000
// 0.98-1.27, with the evicting pass in 2 MiB pages (as the weights are)
// or 4 KiB ones alike; the control 0.98-1.03. So the cold attention is
// not the 1.3x faster at positions 64 and 320 that building the layout
// through every reader and writer needed. In this state a line comes
// slowly in either order: one load a line in the kernels' order and
// nothing else (Go, four chains) reads head-major 1.02-1.42x, 1.34-1.85x
// and 1.5-1.96x as fast as position-major at 64, 320 and 1000 (level at
// 16), but only at 10-19 GB/s, and takes 0.78-0.85 of the product's
// whole attention over the position-major cache, whose prefetches 16
// keys ahead (64 KiB there, 8 KiB head-major) already take the lines
// near that pace. Without the prefetches (a temporary attnRowDotsNP
// variant) head-major attended at 0.71-0.84 of the product's speed, and
// the Go kernels (no prefetches) were slower head-major than
// position-major too (0.76-0.86). Hot (no eviction, one layer in L2)
// head-major attends 1.06-1.35x as fast (the scores' contiguous keys),
// but a decode's attention is hot for about 0.23 ms of a token at
// positions 1-65: not worth a layout every path must keep. A layer's
// cache is already one linear block, and reading it in address order
// ahead of the scores was tried before (above, 0.82-1.07): the cold
// cache's cost is the lines one core gets in flight, not their order.
//
// Decoding with an adapter in the fused fork (fuseLoRA, forward_fuse.go;
// 2026-11-30, 03:38-04:02, load average 0.7-3.5: another helper's decode
// benchmarks ran beside every run, tokens 37-98 ms, ratios only). Before,
// fuseWorkers declined every step with an adapter row, so such a step
// took a fork a product and each adapter product (A·x, rank × the input;
// B·t, the output × rank, float32) ran on the calling core: a rank-32
// adapter on every linear layer and the lm_head adds 100 MB of float32 to
// the 0.6B shape's 1.19 GB of bfloat16 (8.4% more bytes), and its tokens
// took 1.165x and 1.224x a base token's wall, 1.174x and 1.210x CPU
// (token-paired, adapter against none, 252 pairs a run; base tokens 37
// and 24 ms; lower quartiles 1.129-1.197). Now each
// phase's A-products are its first pieces (one per matrix and adapter of
// the step's rows; every phase has its whole input at its start), and
// each piece of output rows adds B·(A·x) to them after the base product:
// for o, gate, up, down and the lm_head in runPiece, for q, k and v in
// finishHead after the bias and before the norm and rope, where biasLoRA
// adds it to the whole product (the bias first, then each adapter's
// rows). Each element is matRows' same dot of the same vectors added the
// same way as matMul's accumulate (putRow): the same bits.
// TestDecodeFuseLoRASameBits decodes steps of one adapter's rows, an
// adapter's and a base row, and two adapters' (ranks 8 and 4, one with
// an lm_head adapter, one without) and a base row, Qwen3, Llama 3 with
// q, k and v biases and GPT-OSS (q, k and v fused in its mixture-of-
// experts layers), float32 and bfloat16, every fused shape: every logit
// and cached key and value the same bits as unfused, and it fails if the
// three-row step's fork did not hold both adapters; it failed with the
// B-product moved before the bias (q, k and v).
//
// An A-product is claimed (todo, busy, done): a piece whose B-product
// needs one no core has started computes it itself; one another core is
// computing it waits for. First the B-products waited for the A pieces:
// 1.055-1.081 against unfused where tokens took 38-43 ms, but 0.83-0.95
// where they took 50-98: the core that claimed the next phase's A piece
// waits for the phase (and naps after spinFor), and the other, which
// opened the phase, then waited for it (timestamps, temporary: 32 ms of
// waits a 84 ms token under that load, 0.2 ms of a 43 ms one). Claimed
// (then with the recomputing below), alternating the two builds' runs
// (load 3.0-3.5, tokens 45-60 ms): fused over unfused 1.036 and 1.060
// wall (CPU 1.039, 1.016), the waiting build's 0.928 and 0.949 in
// between. The kept form (03:55-04:01, load 0.7-2.3, tokens 38-43 ms):
// 1.067, 1.053, 1.051 and 1.057 wall, 1.067, 1.057, 1.063 and 1.052 CPU
// (lower quartiles 1.020-1.039); positions 1-321 1.092 wall, 1.083 CPU
// (638 pairs); float32 weights 1.047 and 1.048 (CPU 1.048, 1.051), but
// 0.870 in a run whose load rose from 1.7 to 2.6 (tokens 102-117 ms):
// a core the host takes away while it computes an A-product still holds
// the phase's other core up; the control 1.001 wall, 1.006 CPU. An
// adapter's tokens over base tokens, both fused: 1.105 wall, 1.099 CPU
// (lower quartiles 1.077; base tokens 36 ms): for 8.4% more bytes,
// the float32 rows of rank 32 reading slower a byte than bfloat16's long
// rows (the lm_head's B, 151936 rows of 32, 0.81 ms of one core alone).
// fuseLoRA stays a switch (BenchmarkDecodeFuseTokens' lora, with
// FUSE_LORA=32; adapter and adapter-unfused compare against base tokens).
// Tried and not kept: an A-product another core is computing computed
// again into this core's own scratch rather than waited for, level
// (1.007 wall, 1.002 CPU under load 2.6-3.5) and wrong: a group's
// A-products are one buffer per matrix, reused by the next layer's, and
// the helped phase could end while the slow core still wrote it (go test
// -race found it, and one run of TestDecodeFuseLoRASameBits failed); now
// a phase cannot end before every A-product it read is done. Also
// tried (a variant, gone): the core that opens a phase computes its
// A-products before it opens it, so no B-product ever waits on another
// core: 0.980 and 0.969 wall, 0.976 and 0.969 CPU against the claimed
// pieces (load 1.8, tokens 38 ms; the other core idles meanwhile); under
// a load that takes cores away it may do better, not measured.
//
// The bf16 compute path (--bf16-compute) in the fused fork (fuseBF16,
// forward_fuse.go; 2026-11-30, 04:05-04:35, load average 2.1-4.5:
// another helper's decode benchmarks ran beside every run, tokens took
// 37-70 ms, ratios only). Before, fuseWorkers declined it (groupWorkers
// gives the bf16 path one core, since each product rounds its vectors per
// call): one fork a product, attention (attentionBF16) and the norms
// between forks on one core. Now each phase's input is rounded and packed
// to bfloat16 once, by the core that opens the phase (packPhase, in
// open: after the norm for q, k and v, gate and up and the lm_head,
// after the last KV head's attention for o, after the last SwiGLU block
// for down), and every piece reads that copy (bf16Rows), as
// matMulBF16Group's pieces read the one it rounds a fork; attention on
// that path runs a KV head at a time inside the fork once its heads are
// finished (attendBF16Head: the head's new keys and values packed, then
// its query heads attended, a run of consecutive positions a unit, as
// attentionBF16 does), the packed caches made and cut back before the
// fork (bf16AttnPrep) and their counts moved on by the core whose KV head
// attends last (bf16AttnDone). Each output is the same kernel's one
// accumulator over the same rounded values: no output bit changed.
// TestDecodeFuseBF16SameBits decodes as TestDecodeFuseSameBits does
// (Qwen3, Llama 3 with biases, GPT-OSS with sinks and a sliding window;
// without adapters and with two, ranks 8 and 4) on the bf16 path, every
// logit, cached key and value, packed key and value and packed count the
// same bits fused in each shape as unfused, and fails if the bf16 path
// gave the float32 path's logits or the step's fork did not run the
// lm_head; it failed with o and down reading the normed rows' packed
// copy, and with KV head 0's new keys and values left unpacked.
// Token-paired (BenchmarkDecodeFuseTokens, FUSE_DTYPE=bf16-compute,
// FUSE_SWITCH=bf16, 504 pairs at positions 1-65): unfused over fused
// 1.167 and 1.173 wall, 1.162 and 1.174 CPU (lower quartiles 1.099-1.112);
// positions 1-321 1.201 wall, 1.197 CPU (638 pairs); the control 1.002
// wall, 0.997 CPU. The same weights on the float32 compute path (fused)
// over the bf16 path (fused), swapped between steps (FUSE_SWITCH=compute):
// 0.958 and 1.028, level within this load.
//
// Under perf the one-token kernel (avxBF16T1N6) was most of the decode's
// samples and its edge kernels (N1-N4) 9% of the kernels' time. Pieces
// cut in whole kernel calls (96 rows, bf16PieceRows) rather than 16-row
// blocks: 0.992 and 0.996 wall (CPU 0.993 twice), not kept. The
// one-token AVX512-BF16 kernels prefetched AMX's 4 KiB ahead (the
// generator's weightPrefetch, measured on AMX); here, token-paired on
// the fused bf16 path, 4 KiB's tokens took 1.114 and 1.094x (CPU 1.115,
// 1.090; lower quartiles 1.036-1.044) as long as 1 KiB ahead, 1.077x 512
// B, 1.043x 2 KiB, 1.023x no prefetch. They now prefetch 1 KiB
// (avxWeightPrefetch), as fwdRowLong does; the AMX kernels keep 4 KiB.
// Afterwards 4 KiB as the variant read 0.918 (2 KiB 0.947). The lead's
// quiet run (2026-11-30 05:02-05:05, load average 1.6-1.8, 380 pairs
// each, old/new with the variant new): 4 KiB 0.928 wall, 0.926 CPU; 2
// KiB 0.961, 0.953; 512 B 0.998, 0.997; none 0.953, 0.950. So 4 KiB, 2
// KiB and none are no longer generated; 512 B, level, stays for the next
// comparison (bf16T1Variant, FUSE_SWITCH=t1pf512). Prefetching changes
// no bit (TestBF16AVXBlockingsMatchEmulation runs every variant).
// Fewer blocks a one-token call (bf16AVX.n1, 6): 4 read 0.992 wall, 2
// 0.975. With both: unfused over fused 1.191 wall, 1.185 CPU (1-65),
// 1.190 and 1.192 (1-321); float32 compute over bf16 compute, both
// fused, 1.043 wall, 1.040 CPU (1-65), 1.195 and 1.196 (1-321, where
// the bf16 path's attention reads half the cache's bytes).
// BenchmarkDecode/bf16-compute, main's build and this one alternating
// (load 3.8-4.5): main 57.7% and 52.3% of the limit (paired 61.7% and
// 62.2%), this 75.9% and 73.7% (paired 93.0% and 79.2%); tokens a
// CPU-second 13.9 and 14.6 against 15.9 and 16.0; the float32 compute
// path (bf16) beside it in this build, two runs at load 4.1: 70.2% and
// 70.6% (paired 81.2%, 82.4%) against bf16-compute's 76.7% and 78.1%
// (85.7%, 79.9%). fuseBF16 stays a switch (FUSE_SWITCH=bf16).
//
// Sampling groups from adapters (2026-11-30, 04:05-04:50, load average
// 1.5-4.2: another helper's decode benchmarks ran beside most runs, so
// ratios only). BenchmarkGenerateLoRA pairs BenchmarkGenerate's cases
// with and without a rank-32 adapter (alpha 64) on every linear layer
// and the lm_head, the order alternating by round, plus 8tenant: 8
// concurrent requests each with its own adapter and prompt (against the
// same prompts on the base: requests share a prompt's prefill only with
// the same adapter, prefixshare.go, so 8conc's shared prompt would have
// charged the tenants seven prefills more; with it they read 0.30). On
// the 0.6B shape the adapter adds 8.4% to the bytes a step reads, eight
// adapters 67%, so the goal, 0.9/(1 + extra bytes), is 0.83 for one
// adapter and 0.54 for eight. Before the change below (3 rounds of 16
// tokens after a 64-token prompt, load 2.5-3.5), adapter over base tok/s:
// 8batch 0.91 wall, 0.90 CPU; 8conc 0.86, 0.89; 8tenant 0.70, 0.78; with
// 64 tokens (load 4) 8batch 0.89 CPU, 8tenant 0.88. The tiny models
// (where rank 32 is 77% and 40% more bytes): 0.65-0.79 for one adapter,
// 0.53-0.57 for eight, against goals of 0.51 and 0.65 for one. A
// profile of 8tenant: the prompts' tiles most of the time; the adapter
// products (addLoRA) 5-10% of CPU, and at eight adapters of one row each
// nearly all of their matMul calls (A 32 × 1024-3072, B up to 3072 × 32,
// one vector) fall under productWorkers' cut and ran one after another
// on the calling core while the other idled, two calls a matrix an
// adapter.
//
// So batches of up to 16 rows (loraProducts, lora_fork.go) now run every
// A-product of a step's matrices (q, k and v together, gate and up
// together, o, down, the lm_head, an expert's) for every adapter as the
// row pieces of one fork, then every B-product as a second (on the
// calling core when a stage is under parallelMinWork multiply-adds).
// Each element is matRows' dot of the same vectors added as matMul's
// accumulate, the bias first: no output bit changed.
// TestLoRAForkMatchesAlone decodes eight sequences of three adapters
// (ranks 8 and 4, one without an lm_head) and base rows in steps of eight
// and five rows, Qwen3, Llama 3 with q, k and v biases and GPT-OSS's
// experts, float32 and bfloat16, on one core and three, against each
// sequence alone through addLoRA: every logit and cached key and value
// the same bits; it fails with the B-products not accumulating or the
// bias added after them. Larger batches (prefill chunks) keep addLoRA.
// BenchmarkLoRAForkSteps alternates loraFork off and on step by step
// (8 rows at positions 1-96, each side its own caches; old over new):
// eight adapters 1.09-1.10 CPU, 1.09-1.17 wall, at load 1.7-3.4 (lower
// quartiles 1.02-1.12), one adapter 1.03-1.04, the control 0.996-0.999;
// but with
// the host loaded to 3.7-4.2, eight adapters 0.87-0.92 (a fork a core
// the host takes away holds up, 8 more a layer; one adapter still
// 1.01-1.03). Forking only stages of 1M multiply-adds or more (so the
// small matrices run on the calling core): 1.045-1.057 and 1.009 quiet,
// 1.02-1.05 at load 3.5 (where the default read 1.06 and 1.09 in one
// run): kept at parallelMinWork (loraForkMinWork, a variable
// for the benchmark). loraFork stays a switch. After it, adapter over
// base (BenchmarkGenerateLoRA, 3 rounds of 32 tokens after the 64-token
// prompts, load 2.1-2.7): 1seq 0.92 wall, 0.94 CPU; 8batch 0.93, 0.93;
// 8conc 0.90, 0.91; 8tenant 0.82, 0.82 (lower quartiles 0.78-0.90):
// above the goal's 0.83 and 0.54. Tiny models (7 rounds): 0.64-0.76 for
// one adapter, 0.42-0.48 for eight (goals 0.51-0.65 and 0.13-0.22); the
// fork's own pairing there (GEN_LORA_AB=fork, request against request)
// read 0.92-1.03, within that pairing's noise (one sequence, which
// loraProducts barely touches, 0.95-1.00): not resolved.
//
// The lead's quiet run (2026-11-30 04:49-05:25, load average 1.6-2.1, this
// run alone). BenchmarkLoRAForkSteps: eight adapters 1.119 CPU, 1.157
// wall (lower quartiles 1.072, 1.109), one adapter 1.034 and 1.033, the
// control 0.999. Token-paired decodes (BenchmarkDecodeFuseTokens, 380
// pairs, bfloat16 weights, old/new with the switch on in new): the
// adapter fused against unfused 1.101 CPU, 1.109 wall (FUSE_LORA=32,
// "adapter"; 38.9 against 43.3 ms a token); "lora" 1.039 and 1.034;
// --bf16-compute fused against unfused 1.078 and 1.072; the float32
// compute path's fork 1.074 and 1.073. A coarser cut of decoding's
// pieces (FUSE_SWITCH=min256k and min512k: the 1/workers share down to
// 256K or 512K weights, fewer pieces each starting four streams): 0.998
// and 0.995 CPU, 1.001 and 0.997 wall, in the slow phase (tokens at
// 35-37 ms): decodePieces stays. BenchmarkDecode/bf16, this build and
// e5f4ba1's alternating (8 runs each), then 10 more of this one: the
// only run in the fast phase (a 64.3 GB/s probe) read 80.2% (50.9 GB/s,
// 42.7 tok/s), e5f4ba1's 79.4% at 59.3; the others 70.9-95.7%, the
// lowest where the probe read 43-49 GB/s and the decode 31-34 (the phase
// moved within the run). --bf16-compute: this build 83.5-95.3% (paired
// 89.5-100.4%), e5f4ba1's 69.1-88.2% (76.2-92.3%).
//
// Adapters' small products on the tiny models (2026-11-30, 06:05-06:50,
// load average 1.4-5.7 from the other sessions: ratios only).
// BenchmarkLoRAForkSteps now takes the tiny models (LORA_STEPS_MODEL) and
// a rank (LORA_STEPS_RANK), and pairs the base model's step with the
// adapters' (LORA_STEPS_AB=base: adapter over base steps a second, beside
// the goal 0.9/(1+bytes+)). Eight rows, positions 1-96, 576 pairs, wall
// medians, load 2.4-2.5: tiny-qwen3 eight rank-32 adapters 0.47 (goal
// 0.22), eight of rank 8 0.58 (0.50), one of rank 32 0.69-0.72 (0.65),
// one of rank 8 0.72-0.75 (0.82); tiny-llama 0.39 (0.13), 0.47-0.50
// (0.36), 0.65-0.66 (0.51), 0.73-0.75 (0.76). Only a single rank-8
// adapter misses its byte goal: on these shapes an adapter costs per
// product, not per byte. CPU profiles: eight tenants on tiny-qwen3, the
// adapters' products (fwdRowLongF32, one vector an adapter) 21% of the
// process, the base's tiles 17-19%, the spinning worker
// (workerPool.next) 21%, attention 7%, loraProducts' own Go code
// (gathers, pieces, clears) under 2%; one rank-8 adapter, loraProducts
// 12%, nearly all of it the 4x6 tiles on 8-row A-products and K = 8
// B-products. So the kernels on those shapes hold the adapter's time,
// not per-adapter Go code. The forks were a loss there: loraFork on
// against off (addLoRA, every small product on the calling core)
// 0.84-0.99 wall in every tiny case, eight adapters or one, rank 32 or
// 8. Stages of 64K-256K multiply-adds now fork only when no worker
// sleeps (loraForkAwakeMinWork; loraForkMinWork 256K otherwise):
// tiny-llama's other products are too small to fork, so its worker slept
// before each of the adapter's few forked stages and the ~60 µs wake-up
// outweighed them. Paired against forking from 64K (LORA_STEPS_AB=minwork,
// 3840 pairs a run, load 3.9-4.2): tiny-llama eight adapters 1.159,
// 1.161, 1.166 wall (CPU 1.158, 1.167, 1.169), one 1.164, 1.181, 1.182;
// tiny-qwen3 eight 1.035, 1.054, 1.063, one 1.050-1.069. Forking only
// from 256K, awake or not (load 1.4-5.7): tiny-llama 0.98-1.38 (median
// 1.13), tiny-qwen3 eight adapters 0.89-1.07, 0.89-0.90 in the two
// quietest runs (load 1.4-1.5), where forking its stages paid: the
// awake rule keeps those forks. The 0.6B shape's stages at rank 32 are
// all 256K or more (unchanged); at rank 8 the smaller ones with
// 256K alone measured 0.999 and 1.001 wall (eight and one adapter, 288
// pairs, load 2.7-3.5), with the awake rule 1.042 and 1.026 wall (CPU
// 1.039, 1.012) for eight adapters and 0.996 (0.996) for one (load
// 3.6-4.1). Whole requests (BenchmarkGenerateLoRA with
// GEN_LORA_AB=minwork, 20 rounds, load 3.8): tiny-qwen3 8tenant 1.092
// wall, 8conc 1.078, 8batch 0.990; tiny-llama 0.994-0.997; 1seq, whose
// single rows fork nothing either way, 1.017 and 1.058 (the pairing's
// noise): the steps' gain on tiny-llama did not carry to its requests.
//
// Tried and not kept, no output bit changed by either
// (TestLoRAForkMatchesAlone passed): (1) each adapter's A- and then
// B-product of a stage as one piece of one fork, when the pairs were
// even (none over half a core's share: eight tenants, not one), two
// forks a stage becoming one: 0.6B shape, eight adapters, 1.019, 1.028,
// 1.004 and 1.025 wall (CPU 1.017, 1.022, 1.001, 1.025; load 2-3.7),
// under the 1.03 gate. (2) Pieces of at most 2 MiB of float32: eight
// tenants' lm_head B-products were a piece each, 19 MB, over half a
// millisecond a worker could hold a step by when the host takes its
// core; 0.996 and 1.002 wall at load 2-4.4 (eight adapters), 1.002 (one).
// Both with the 256K threshold against main: eight adapters 1.005 wall
// at load 2, 1.034 at 4.3-5.3; one adapter 1.009 and 1.005. The
// loaded host's cost was not the pieces' size at these loads.
//
// Since decoding steps of 4-16 rows take the fused fork (fuseMaxRows),
// which runs their adapters itself, loraProducts serves the steps that
// do not fuse (decodeFuse off, too little work for two cores, layers the
// fork does not take); BenchmarkLoRAForkSteps holds fuseMaxRows at 3 to
// measure it. Its LORA_STEPS_AB=fuse pairs the adapters' 8-row steps
// through loraProducts (old) and fused (new), 1920 pairs a tiny run,
// load 2.6-3.5 (the 0.6B run beside them): tiny-qwen3 eight adapters
// 0.92 and 0.89 wall (one run 1.58), one 0.98 and 0.96; tiny-llama
// eight 0.91, 0.90 and 0.91, one 0.95, 0.94 and 0.93; the 0.6B shape,
// eight adapters, 1.119 wall, 1.115 CPU, one 1.152 and 1.149 (288
// pairs, load 2.9-3.9).
//
// # Decoding groups of 2-16 rows (issue 34)
//
// RL loops sample a group of 4-16 sequences from one prompt every step,
// so a decoding step has that many rows; such a step reads the weights
// once and should approach max(weight bytes / read bandwidth, 2·R·params
// / compute peak). BenchmarkDecodeRows decodes steps of R rows on the
// 0.6B shape (bfloat16 weights, the float32 compute path, or the bf16
// compute path with ROWS_DTYPE=bf16-compute) and prints each step's share
// of that roofline: the read bandwidth the fastest reading of the step's
// own matrices (variantReads over decodeMatrixWords), the peak the
// 512-bit FMA loop (fmaProbe) or VDPBF16PS's (avxBF16PeakReg) on every
// core, both in wall time beside the steps (2026-11-30, 06:05-06:40;
// another helper's benchmarks held a core most of the time, load average
// 2-5.5, so the shares are against what the probes got in the same
// minutes, and the ratios below are step-paired in one process). Before
// the changes below, median step's share of the roofline: bfloat16 R=2
// 44.8% (read-bound), R=4 26.4% (read-bound), R=8 39.7% and R=16 61.0%
// (compute-bound); bf16 compute 69.8%, 59.1%, 38.4%, 27.8%.
//
// Where the time went. At R = 4-12 the steps were not fused (fuseWorkers
// took one to three rows): a fork a product, 4×6 tiles (fwdTile4x6G) over
// one to three groups of four vectors. A tile's kernel prefetches the
// next tile's rows a line a chunk step, and with one group a tile of 1024
// bfloat16 columns has 64 steps for 192 lines: rows 2-5 of every tile
// came from memory on demand (perf: the widening after their loads held
// 67% of the kernel's samples at R=4). At R = 2-3 (fused) fwdRowLong ran
// once a vector, reading each weight line again from L1 or L2 and
// widening it again: each vector added a one-vector pass of CPU (66, 101
// and 129 ms of CPU a step at R = 1, 2, 3). On the bf16 compute path the
// kernels of two to four tokens (avxBF16T<t>N<n>) had no weight
// prefetch; at R=8 their weight loads held 40% of avxBF16T4N6's samples,
// and the kernel ran at about 75% of VDPBF16PS's peak on a core.
//
// What changed (no output bit; each a package variable that
// BenchmarkDecodeRows' ROWS_SWITCH flips step by step, old over new,
// medians of 16-24 pairs, wall, CPU within a few per cent of it):
//   - fwdPrefetchWide: a 4×6 tile's chunk step asks for up to four lines
//     of the next tile (pfStep a multiple of 64 up to 256; the generator's
//     pfWideLines), so one to three groups cover the next tile within
//     three quarters of their steps. R=4 1.46 and 1.57, R=8 1.23 and
//     1.24, R=16 (four groups, covered before) 0.99-1.01. Training's
//     batches keep one line a step (pfStep ≤ 64).
//   - fwdRowMulti2/3 (fwdRowsMulti): fwdRowLong's four streams for two or
//     three vectors at once, each weight line loaded and widened once, two
//     rows of each stream a call for two vectors, one for three (16 and 12
//     accumulators). R=2 1.33 and 1.33, R=3 1.43 and 1.52. A batch's last
//     two or three vectors past its groups of four take it too.
//     TestRowMultiMatchesRowLong checks every output against fwdRowLong a
//     vector at a time and matRowsScalar.
//   - fuseMaxRows (16, was 3): steps of up to 16 rows take the fused
//     fork; the tile kernels take any rows of a piece. The adapters'
//     A-product states were three a matrix (one per row of a three-row
//     step) and are now one per adapter group of the step (fuseState.ng).
//     R=4 1.24, R=8 1.23, R=16 1.12; bf16 compute 1.20, 1.21, 1.12.
//     TestDecodeFuseManyRowsSameBits decodes steps of 4-16 rows fused and
//     unfused (Qwen3, Llama 3 with biases, GPT-OSS; float32, bfloat16 and
//     bf16 compute; no adapter, two, five): every logit and cached key and
//     value the same bits; with the states three a matrix and five
//     adapters it hangs.
//   - bf16AVXPrefetch: the kernels of two to four tokens prefetch each
//     block's line 1 KiB ahead (avxBF16T<t>N<n>P, avxBF16KernelsPf), as
//     the one-token ones do. Two runs: R=2 1.03-1.10, R=4 1.03-1.07, R=8
//     1.02-1.04, R=16 1.00-1.03 (q1 0.98-1.03).
//
// All four against none (ROWS_SWITCH=all, two runs, load average
// 4.3-4.8): bfloat16 R=2 1.40 and 1.38, R=3 1.50 and 1.47, R=4 1.86 and
// 1.81, R=8 1.46 and 1.48, R=16 1.08 and 1.10 (lower quartiles 1.06-1.79);
// bf16 compute R=2 1.04 and 1.04, R=4 1.22 and 1.25, R=8 1.23 and 1.20,
// R=16 1.17 and 1.17 (q1 0.99-1.17).
//
// After them (06:39, load 3-3.7, a core mostly the other helper's),
// the median step's share of the roofline: bfloat16 R=2 59.1%, R=4
// 54.4%, R=8 63.0%, R=16 71.0%; bf16 compute 68.2%, 61.3%, 48.0%, 57.8%.
// BenchmarkGenerate's 0.6B shape (8 samples of 16 tokens after a 64-token
// prompt), main's build and this one alternating in separate processes
// (two pairs, load 3.4-4.2): tokens per CPU-second 1.44 and 1.31x for
// 8batch, 1.49 and 1.37x for 8conc. Training's and prefill's products
// (BenchmarkProductTiles' forward shapes at M = 128 and 512, one core,
// the two builds alternating, eight rounds) read 0.999 (q1 0.982) and
// 1.003 in two runs, 0.854 in a first run that another process
// disturbed: their tiles keep one line a step.
//
// Tried and not kept: fused pieces of whole tiles (48 rows, not 16, on the
// float32 path at four rows or more: no tile computing rows of the one
// before again) 0.96-1.05, level; a fwdRowMulti4 (four vectors, one row
// of each stream a call, 16 accumulators) in place of the tiles at four
// rows 0.84-0.86 in three runs (slower: the tiles' six rows a step read
// x four times for 24 FMAs, the row kernel four x loads and swaps for 16).
//
// The 4×6 tile at R = 8-16 (88% of R=16's CPU samples, about 68% of the
// FMA probe in the step). Its widening is not what holds it: on one core
// with its six rows and four groups in L1 (a benchmark calling the kernel
// on one tile, the kernels alternating, 12 rounds) it ran at 96% of the
// one-core FMA loop with bfloat16 weights (VPMOVZXWD and VPSLLD), the
// same as with float32 weights (no widening at all), and with the row
// kernels' broadcast and VPSHUFB at 94% with x packed with its quarters
// swapped beforehand, 84% with x swapped in the kernel (four VSHUFF32X4 a
// step). In the step (ROWS_SWITCH, the kernels generated beside the tile
// for the rows of 1024 columns): x swapped in the kernel R=8 1.00, R=16
// 0.92; a swapped copy of the packed groups R=8 1.00, R=16 0.99. Not
// built. What holds it is reading the next tile from memory: the same
// benchmark over 64 MiB of rows, a tile a call with its prefetch of the
// next, ran at 0.76-0.83 of the rate in L1 at four groups (0.61-0.66 at
// two); without the prefetch 0.61-0.64; prefetching the next tile's rows
// from memory with the rows being read in L1 cost 10-17% at four groups
// and 25-27% at two, and the same prefetches of rows already in L2 nothing
// (PREFETCHT2 the same as T1, PREFETCHNTA 10% slower). Pieces of 512
// columns (fwdKC) at R = 8 and 16: 0.92 and 0.91.
//   - fwdPrefetchEven: fwdPrefetchStep rounded a wide step (over a line)
//     up to a multiple of 64 within three quarters of the tile's steps,
//     so the next tile's 192 lines came two a step over 37% of an R=16
//     tile, three a step over 50% of an R=8 one; now the step is the
//     tile's bytes over all of its steps, any stride (the kernel asks for
//     the lines from pf up to the step: none further apart than 64
//     bytes). Three runs, CPU medians (wall within 0.03): R=4 1.06,
//     1.07, 1.06; R=8 1.09, 1.06, 1.06; R=12 1.05, 1.04; R=16 1.02,
//     1.01, 1.02 (lower quartiles 0.99-1.04; load average 2.9-3.9);
//     after merging main, load 1.6: R=4 1.11, R=8 1.07, R=16 1.02.
//     Training's products (many groups) never take a wide step, so their
//     strides are unchanged. TestFwdPrefetchStepCoversTile checks every
//     line covered and the wide steps no faster than the whole tile needs.
//
// What is left: memory. With the rows cycling through L2 (40 tiles, each
// prefetching the next) the tile ran at 0.99 of its rate in L1 at two and
// four groups, from memory (with fwdPrefetchEven) at 0.80 at four groups
// and 0.65 at two, 5.6 and 9.2 GB/s of weights on the one core; on the bf16 compute path R =
// 8-16 are VDPBF16PS-bound at about 75% of its peak on a core.
//
// The fused fork on small models (2026-11-30, 07:17-07:27, this session
// alone on the machine: load average 1.2-2.1, its own two threads).
// fuseMaxRows sends steps of 4-16 rows into the fused fork on every
// model; fuseGroupWorkers counts a layer's seven matrices together, so
// a tiny model's step runs on both cores (tiny-llama, about 50K
// multiply-adds a row a layer, at four rows) where the products one at
// a time (tiny-llama's up to ten rows: each under 2·parallelMinWork)
// stayed on the calling core.
// BenchmarkDecodeRows takes ROWS_MODEL (a tiny model, or f32: the 0.6B
// shape in float32). Step-paired, fuseMaxRows 3 (old) over 16 (new),
// wall medians of 96-400 pairs a run (CPU within 0.07 of wall):
// tiny-llama R=4 1.27, 1.35, 1.40; R=8 1.37, 1.30, 1.24; R=16 1.40,
// 1.17, 1.05. tiny-qwen3 R=4 1.21, 1.18, 1.36; R=8 1.39, 1.12, 1.17;
// R=16 1.39, 1.13, 1.14. The 0.6B shape in float32 (24 pairs) R=4 1.06,
// 1.06, 1.07; R=8 1.03, 1.06, 1.08; R=16 1.03, 1.02, 1.04. Adapters
// (BenchmarkLoRAForkSteps, LORA_STEPS_AB=fuse, eight rows, 480-1920
// pairs a run), rank 32: tiny-llama eight adapters 1.29, 0.99, 1.35,
// 1.33, 1.38, 1.05, 1.21, then 1.37, 1.35, 1.36, 1.36 (control, fused
// on both sides: 1.000, q1 0.968); one 0.96, 1.45, 1.21, 1.44, 1.35,
// 1.35, 1.39, 1.31 (the 0.96 and 0.99 in the first minute, perhaps
// still disturbed); tiny-qwen3 eight 1.62, 1.27, 1.38, 1.35, 1.61,
// 1.43, 1.35; one 1.42, 1.39, 1.46, 1.52, 1.39, 1.53, 1.31. Rank 8:
// tiny-llama eight 1.26, 1.41, 1.43, one 1.41, 1.45, 1.45; tiny-qwen3
// eight 1.39, 1.37, one 1.40, 1.68; the 0.6B shape in bfloat16 (48
// pairs) eight 1.024 wall (CPU 1.014), one 1.034 (1.033). Where a tiny
// fused step's CPU goes (tiny-qwen3, eight rows, positions 1-96, fused
// both sides): the float32 4×6 tiles 38%, attention 21%, the fork's
// waits between phases (wait, nanotime) 10%, packing the groups 2.5%.
// No shape loses quiet, so fuseWorkers keeps no work threshold of its
// own (the lead's earlier tiny-llama 0.87 wall, eight adapters, was not
// reproduced quiet).
//
// With one core held by a busy loop the other side of that trade shows:
// the fork's phases wait for the worker the host took away, the old
// path's single-core products do not. Base tiny-llama R=4 0.92, R=8
// 1.08, R=16 0.95; tiny-qwen3 0.97, 1.07, 1.17 (400 pairs); adapters,
// rank 32, 288-3840 pairs a run: tiny-llama eight 0.90, 0.91, 0.89,
// 0.92, 0.91, one 0.99, 0.92, 0.95, 0.94, 0.91; tiny-qwen3 eight 1.20,
// 0.90, 0.92, 0.92, 0.87, one 1.00, 0.97, 1.02, 1.03, 1.00. A threshold
// that kept tiny steps on one core would give up 5-45% quiet to save at
// most 5-13% on a loaded host.
//
// Steps of three rows through the tiles (fwdRowsTile; 07:43-07:58, two
// helpers, load average 1.5-3.1). Over bfloat16 weights a fused step's
// three vectors are packed as one group of four (the last repeated, its
// outputs into scratch rows) and take the 4×6 tiles, as four rows do,
// instead of fwdRowMulti3; the same bits (every path sums in dotLanes
// order; TestRowsPartialGroupMatchesScalar, and the fused and batch
// tests unchanged). BenchmarkDecodeRows, ROWS_SWITCH=tile23, wall
// medians of 24-64 pairs (CPU within 0.04), eleven runs: R=3 1.23,
// 1.12, 1.06, 1.10, 1.15, 1.22, 1.01, 1.23, 0.99, 1.14, 1.09 (median
// 1.12; the 1.01 and 0.99 at 64 steps, a third 64-step run 1.14: the
// other helper's load, not the positions); R=2 (two
// vectors the same way) 1.11, 0.98, 1.02, 1.06, 1.05, 1.01, 0.96, 0.97,
// so two vectors keep fwdRowMulti2; R=1 (untouched) 1.005. Float32 lost
// (the 0.6B shape R=2 0.90, R=3 0.94: a tile of 1024 float32 columns
// needs six lines of the next tile a step at one group, the prefetch
// asks for four at most), and so did the tiny models at R=2 (0.73-0.78,
// R=3 1.07-1.11: packing a group a 16-row piece against rows of 64-256
// columns), so float32 weights keep fwdRowMulti2/3.
// BenchmarkRowsKernels (one 1024-column bfloat16 matrix, each kernel in
// turn, rate of weight bytes over fwdRowLong's in the same rounds): in
// L2 (512 KiB) fwdRowMulti2 0.70-0.77, fwdRowMulti3 0.48-0.53, the tiles
// with two or three vectors 0.36-0.54, four 0.41-0.53 (compute-bound:
// 1.4-2.1 vector-rows of fwdRowLong's one); from memory (64 MiB, both
// cores, pieces of 512 rows) 0.85, 0.75, 0.82 (two), 0.77 (three), 0.80
// (four), and on one core 0.80, 0.67, 0.64, 0.70, 0.65. So from memory
// the kernels read at 75-85% of fwdRowLong's rate, multi3 held by its
// twelve accumulators a widened line (compute), and the step's gain at
// R=3 is more than these kernels' own rates show; where the rest comes
// from (the step's 2048- and 3072-column matrices in fwdKC pieces, the
// lm_head) was not profiled.
// The same for a batch's last two or three vectors past its groups of
// four (fwdRowsTilePad, any weights, batches up to 32): they took
// fwdRowMulti2/3 over each piece again after the tiles; now the tiles
// take them as a padded group. ROWS_SWITCH=tilepad, wall medians of
// 16-96 pairs (CPU within 0.03), load average 2.9-4.3: bfloat16 R=6
// 1.04, 1.10, 1.10; R=7 1.18, 1.23, 1.24; R=11 1.14, 1.19; the 0.6B
// shape in float32 R=6 1.32, 1.42, R=7 1.36, 1.47; tiny-qwen3 R=6 1.05,
// 1.08, R=7 1.29, 1.30; tiny-llama R=6 1.08, R=7 1.32; at 64 steps
// (load 1.5-1.7) bfloat16 R=6 1.14, R=7 1.26, float32 R=7 1.49. A last lone
// vector (R=5, 9, 13) keeps fwdRowLong: padded, R=5 read 0.99.
package engine
