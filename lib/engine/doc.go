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
// The measurements behind the choices below, and what was tried and
// dropped with its figures (issue 34's log), live in docs/, a file a
// subject and a heading a topic: docs/engine-products.md (the matrix
// products, LoRA's, the bf16 compute path), docs/engine-attention.md,
// docs/engine-decoding.md (batching, the worker pool, decoding one
// sequence and groups of rows), docs/engine-training.md,
// docs/engine-elementwise.md and docs/engine-measurement.md (how the
// benchmarks measure, profiles). Each bullet names its file and headings.
// The figures come from shared, loaded 2-vCPU VMs: paired ratios with
// their load averages, not rates.
//
// # Numerics
//
//   - LoRA is applied on the fly (y = W·x + (alpha/r)·B·(A·x)), never merged:
//     the base weights stay shared by every adapter's sampler, an adapter
//     costs only its own r·(in+out) floats per matrix, and loading is instant.
//   - Reported logprobs are those of the sampling distribution before
//     truncation, log softmax(logits/T) over the full vocabulary (see
//     Sequence); prompt logprobs are at temperature 1.
//   - Batch invariance: each output element of a matrix product is summed
//     in one fixed order that depends only on the shapes, never on the
//     batch, the goroutine split or the kernel, and every term is one fused
//     multiply-add on every path (VFMADD231PS in the assembly, MulAdd in
//     archsimd, fma32 in the scalar kernels: FMADDS on arm64, fma32Soft on
//     amd64, exact in float64 and rounded once through round-to-odd). So a
//     seeded sample has the same bits alone, in a batch, batched with other
//     requests and on another machine (TestConcurrentMatchesSolo). Forward
//     products use the dot-form (dotLanes in kernels.go): 16 lane partial
//     sums, lane l adding the products at k ≡ l (mod 16) in ascending k,
//     then a fixed tree over the lanes (i+8, i+4, i+2, i+1), for every K;
//     backward products sum sequentially over their index. Every kernel,
//     tile, piece and fork below keeps these orders, so none of them
//     changes a bit unless "Where output bits changed" says so.
//     (docs/engine-products.md, "Batch invariance and fused multiply-adds")
//   - bfloat16 matrices of large checkpoints stay bfloat16 in memory
//     (exactly widened on use); everything else is float32. Checkpoints
//     of 1B parameters or fewer are widened to float32 at load
//     (BF16Auto in load.go says why and what would change it); the bits
//     are the same either way. Matrices are carved from 2 MiB-aligned
//     chunks advised for huge pages (hugeSlab), converted ones included
//     (docs/engine-decoding.md, "Every matrix in huge pages (hugeSlab)").
//   - The bf16 compute path (kernels_bf16*.go, gemm_bf16_amd64.s from
//     internal/asmgen/bf16; LoadOptions.BF16Compute, `tinker serve
//     --bf16-compute`) is a second, opt-in numeric path, as PyTorch's
//     oneDNN bf16 path is: activations rounded to bfloat16, the exact
//     bf16×bf16 products added in one float32 accumulator per output,
//     column pairs in ascending order, with AMX (TDPBF16PS) or else
//     AVX512-BF16 (VDPBF16PS), encoded as bytes by the generator; weights
//     kept only in the VNNI layout; attention too (kvCache.bf16 beside the
//     float32 cache). Within a machine its bits do not depend on batch,
//     tile, thread count, prefill or decode (TestBF16BatchInvariance,
//     TestBF16ModelPrefillMatchesDecode); across machines they do, since
//     VDPBF16PS and TDPBF16PS round differently, hence opt-in. Training's
//     input gradients take it (packPanelT); LoRA products, the adapter's
//     gradients and the attention backward stay float32
//     (TestBF16TrainingGradients).
//     (docs/engine-products.md, "The bf16 compute path's numerics and blocking")
//
// # Matrix products
//
//   - Forward kernels (gemm_fwd_amd64.s) are AVX-512 assembly generated
//     with avo by internal/asmgen/fwd (go generate; a test checks the
//     committed file is its output), chosen at run time with lib/cpufeat
//     and independent of GOEXPERIMENT. A 4-token × 6-row tile (tokens
//     packed four at a time, fwdPackGroup; float32 or bfloat16 weights
//     widened exactly) stays in L1 while a block of packed groups passes
//     it from L2 (fwdTile4x6G); rows over 1024 columns go in 1024-column
//     pieces, the accumulators kept in memory between them (fwdTile4x6KG).
//     Tiles write or add their sums straight into the output rows under a
//     row mask, spread their prefetch of the next tile's rows over their
//     steps (fwdPrefetchSpread; several lines a step when one to three
//     groups share a tile, fwdPrefetchWide, fwdPrefetchEven) and prefetch
//     the packed vectors ahead (xAhead). Batches over a core's L2 are cut into fwdSliceBytes
//     slices sharing the groups evenly (sliceOf); rows of 16-64 columns
//     (a LoRA B) take fwdCols from fwdColsMinTokens vectors; products that
//     read one batch share its pack (packedIn). TestForwardBlocksMatchScalar
//     and TestForwardTilesWriteRows pin the bits.
//     (docs/engine-products.md, "Forward kernels")
//     Where the tile's time goes and what was tried:
//     (docs/engine-products.md, "Where the forward tile's time goes (fwdpeak)"),
//     (docs/engine-products.md, "The forward products in situ (fwdstream)"),
//     (docs/engine-products.md, "Rows of K >= 2048 (fwdk)").
//   - A LoRA's B·t is a second rounded sum added to W·x, in training, in
//     Forward and in the sampler alike; matMulFold (trainLinear) adds it
//     while the tiles' output rows are in L2, for batches whose slices
//     hold fwdColsMinTokens vectors (TestMatMulFoldMatchesScalar).
//     (docs/engine-products.md, "A LoRA's B on the lm_head (headfold)")
//   - On amd64 CPUs with AVX2 and FMA3 but without AVX-512 the forward
//     product runs gemm_fwd_avx2_amd64.s (internal/asmgen/fwdavx2, fwdAVX2
//     in kernels_fwd_avx2_amd64.go): a 2-token × 3-row tile in 16
//     registers (4 tokens × 3 rows, one 8-lane half at a time, from 2048
//     columns: fwd2Tile4), up to 8 rows in decoding, a column tail from a
//     zero-padded panel; without FMA3 the scalar kernels run
//     (TestForwardAVX2MatchesScalar forces it on AVX-512 machines).
//     From 128 vectors and 24 rows the same order runs in the backward's
//     tile form instead (fwdLanes, gemm_fwd_lanes_amd64.s from
//     internal/asmgen/fwdlanes): each of the 16 lane sums is a product of
//     K/16 terms, a 4-token × 24-row register tile over a panel of the
//     weights transposed per lane, the lanes then added in the dot form's
//     tree (TestForwardLanesAVX2MatchesDotForm); a product's vectors are
//     copied once into lane planes shared by its workers, so a lane's
//     plane of a panel stays in L1 (fwdLanesPlanesShared).
//     (docs/engine-products.md, "AVX2 without AVX-512")
//   - Backward kernels (gemm_bwd_amd64.s, generated by internal/asmgen/bwd
//     the same way): matMulT and outerAcc as register tiles of up to 6-12
//     rows × 1-4 16-lane vectors, each lane adding in the scalar kernels'
//     sequential order, one fused multiply-add each. matMulT packs W into
//     panels in L2 (a term of up to kcWhole rows is one block), its first
//     tile packing as it multiplies; tiles that overwrite dx start from +0
//     (the …Z tiles). A LoRA A's rows continue the base term's chain
//     (matMulTLoRA, tMulFold: TestMatMulTLoRAMatchesTwoCalls); a LoRA B's
//     matMulT reads B in place; B's weight gradient runs transposed
//     (bwdColsT), A's is split by columns (outerSplitColsRows), and the A
//     gradients of products that read one input share a pass over it
//     (outerAccShared).
//     TestBackwardAsmMatchesScalar compares them with the scalar kernels.
//     (docs/engine-products.md, "Backward kernels")
//     Measurements: (docs/engine-products.md, "Where matMulT's time goes at 512-1024 tokens"),
//     (docs/engine-products.md, "matMulT's gap to the tile (bwdpack)"),
//     (docs/engine-products.md, "The backward on Zen 4 (loragrad)").
//   - On amd64 CPUs with AVX2 and FMA3 but without AVX-512 the backward
//     products run gemm_bwd_avx2_amd64.s (internal/asmgen/bwdavx2, bwdAVX2
//     in gemm_bwd_avx2_amd64.go): matMulT's tiles of up to 4 rows × 3
//     8-lane vectors over a copied panel (bfloat16 widened), outerAcc's of
//     up to 12 × 1, a narrow dst over a wide us transposed
//     (outer2Transposed); the same sums in the same order
//     (TestBackwardAVX2MatchesScalar forces them on AVX-512 machines).
//     (docs/engine-products.md, "AVX2 without AVX-512")
//   - Other vector kernels (kernels_simd.go, GOEXPERIMENT=simd on amd64
//     with AVX2) give the scalar kernels' bits: a lane holds one output
//     element and adds its products in the same order (MulAdd in the
//     matrix products and attention); backward products run lanes along
//     the row-major columns. Without AVX-512 or the experiment the scalar kernels run;
//     TestForwardKernelsMatchScalar and TestSIMDMatchesScalar compare them.
//
// # Attention
//
//   - Forward attention (forward.go, kernels_attn*.go): decoding rows go
//     one at a time (attendRow; with AVX-512 each KV head through generated
//     kernels, attendKVHeadAsm; split by KV head past attnSplitWork); a run of
//     consecutive positions of one sequence goes per KV head in blocks of
//     16 positions. Each score keeps attnDot's order (eight lanes, a fused
//     multiply-add per term, a fixed tree) and each output element adds
//     its positions in ascending order, so a row's bits do not depend on
//     its batch (TestAttentionBlocksMatchRows). Whole tiles run as
//     generated assembly (kernels_attn_amd64.s from internal/asmgen/attn:
//     3 queries × 16 transposed keys of scores, weighted sums of up to 6
//     outputs × 64 elements), over keys and values packed once a call
//     (headPack). On AVX2 without AVX-512 the same generator's AVX2 tiles
//     run instead (attnAVX2: 3 queries × 4 keys of scores, 6 outputs × 16
//     elements of weighted sums, keys as contiguous rows, attnExpSum8),
//     with the same bits. (docs/engine-attention.md, "Forward attention"),
//     (docs/engine-attention.md, "Attention on AVX2 without AVX-512 (avx2attn)")
//   - Softmax: the numerators are float32 (exp32, kernels_exp32.go: within
//     1 ulp of e^x), computed with Σ in eight float64 lanes in one
//     generated pass (attnExpSum16), the backward's order
//     (TestSoftmaxSumIsBackwardSum); the backward recomputes the forward's
//     own numerators (expScores32) and keeps the normalisation, Σ p·dp and
//     ds in float64. (docs/engine-attention.md, "Softmax in float32 (softexp)"),
//     (docs/engine-attention.md, "Softmax numerators in one generated pass (attnfwd)")
//   - Attention backward (backward.go, kernels_attn_bwd*.go) recomputes
//     the probabilities a block at a time (backRows(n) positions: 32,
//     128 from 2,048 on, where the key gradients outgrow L2), KV
//     heads over the workers, or each block's positions and keys split
//     when the heads do not divide (blockSplit); each dk/dv element adds in
//     ascending (position, head) order whatever the split
//     (TestAttentionBackwardBlocksMatchRef).
//     (docs/engine-attention.md, "Attention backward")
//   - Attention memory is linear in the sequence: no T×T matrix exists.
//     Flash-style key tiles with an online softmax were not adopted:
//     rescaled partial sums would make each score's bits depend on where
//     tiles start. (docs/engine-attention.md, "Attention memory is linear in the sequence")
//   - GPT-OSS's sliding-window and sink layers take the blocked paths too
//     (gptoss_attn.go): probabilities before a query's window are zero
//     (+0 added keeps the bits) and the sink joins the denominator
//     (softmaxSink, softmaxGrad; TestAttentionWindowBlocksMatchRows).
//     (docs/engine-attention.md, "GPT-OSS's sliding windows and sinks")
//   - DeepSeek's latent attention (mla.go): sampling caches the latent
//     (kv_lora_rank + qk_rope_head_dim floats a position a layer,
//     Config.KVBytesPerPosition) and attends absorbed (mla_latent.go),
//     every row through the blocked kernels, so its bits do not depend on
//     batch or threads (TestLatentIndependentOfBatchAndThreads). Training
//     keeps the expanded form, so its forward reproduces the sampler's
//     logprobs within float32 rounding, not bit for bit
//     (TestLatentDecodeMatchesExpanded, TestForwardMatchesSampler).
//     (docs/engine-attention.md, "DeepSeek's latent attention")
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
//
// # Sampling and decoding
//
//   - Concurrent requests share one batch (batcher.go): every Sample call
//     on a model or its adapters joins the model's running batch, whose one
//     goroutine steps a forward pass over the next token of every
//     generating sample plus prompt positions still to prefill
//     (prefillChunk, prefillBatch, sharedPrefill), then lets each sample
//     draw with its own sampler and random stream; rows carry their
//     adapter. Admission is first come, first served, up to maxBatchSeqs.
//     (docs/engine-decoding.md, "Concurrent requests share one batch")
//   - Requests with the same prompt and adapter prefill it once
//     (prefixshare.go): followers start from copies of the leader's prompt
//     cache and last logits, the bits they would compute themselves.
//     (docs/engine-decoding.md, "Requests with the same prompt and adapter prefill it once")
//   - Parallelism: a step's rows are split over GOMAXPROCS groups, each
//     running its own forward pass (small models); large models keep one
//     batch and split each matrix product's rows across cores. Draws over
//     large vocabularies are spread across cores too, and so are the
//     training loss's logits rows (scoreRows: a CPU profile of a 2 × 512
//     step on the 0.6B widths with 4 layers put the vocabulary-wide
//     softmax at 29% of the samples, run on one core), each row whole on
//     one core, so the bits do not change.
//   - Parallel regions run through forkJoin (workers.go) on kept worker
//     goroutines that spin briefly between jobs (an adaptive budget,
//     workerPool.spin, learnt from the gap up to the offer) and a pooled
//     job a fork (jobPool): waking a parked thread for each of a decoding
//     step's ~200 products cost a quarter of the time.
//     (docs/engine-decoding.md, "Worker goroutines spin between jobs"),
//     (docs/engine-decoding.md, "Around the forks (decodefork)")
//   - Decoding one sequence is the one-token row kernel streaming the
//     weights (fwdRowLong: each piece's rows as four long streams, each
//     prefetching 1 KiB ahead into L2) over pieces cut by decodePieces.
//     A step's layers and its lm_head run as one fused fork (decodeFuse,
//     fuseHead in forward_fuse.go): q, k and v heads are finished,
//     attended, and SwiGLU applied inside the fork by the core that
//     completes them; adapters (fuseLoRA) and the bf16 path (fuseBF16)
//     take it too. Finished caches and the sampler's buffers are pooled
//     (kvPool, expsPool). Only where and when arithmetic runs changes:
//     TestDecodeFuseSameBits, TestDecodeFuseLoRASameBits and
//     TestDecodeFuseBF16SameBits compare fused and unfused bits. On this
//     host the two cores' row kernels top out at 44-48 GB/s, so decode's
//     share of the read bandwidth depends on the host's phase.
//     (docs/engine-decoding.md, "Where a decoding step's time goes"),
//     (docs/engine-decoding.md, "The serial work moved into the forks (decodeFuse)"),
//     (docs/engine-decoding.md, "The quiet run: the row kernels' cap")
//   - BenchmarkDecode's %decode-of-limit sets a decode against reads of
//     its own matrices with the fastest read variant (decodeMatrixWords,
//     fastestRead) taken beside it, and the paired figure (pairedShare)
//     token by token. (docs/engine-decoding.md, "The decode figure and the read probe")
//   - Decoding groups of 2-16 rows (RL's samples of one prompt) take the
//     fused fork (fuseMaxRows): two or three vectors through
//     fwdRowMulti2/3 (three bfloat16 ones as a padded group of the tiles,
//     fwdRowsTile), four and more through the 4×6 tiles with a wider
//     prefetch, a batch's last two or three (float32 weights: a lone
//     last one too, fwdRowsTilePadOne) as a padded group
//     (fwdRowsTilePad). Steps that do not fuse run their adapters'
//     products as two forks (loraProducts, lora_fork.go).
//     (docs/engine-decoding.md, "What changed"),
//     (docs/engine-decoding.md, "A last lone row padded (fwdRowsTilePadOne)"),
//     (docs/engine-decoding.md, "Adapters' small products on the tiny models")
//   - At long positions (RL rollouts: 500-4000) the cache outweighs the
//     weights. A lone row's attention past position 128 runs in units of
//     one to eight KV heads a block of 16 positions at a time
//     (attendHeadsBlocked: each cache page read across heads while
//     fresh), claimed by either core in the fused fork (fuseAttnShare,
//     fuseAttnBlocked, forward_fuse_attn.go) or unfused
//     (attnBlockedRows); past 512 KiB of a head's cache the weighted sums
//     prefetch the values (attnTileWP). With fewer rows than twice the
//     cores the units are whole rows where they can be (attnWholeRows),
//     so a row's pages are read once. The same kernels in the same
//     order: TestDecodeFuseAttnBlockedSameBits,
//     TestDecodeFuseWholeRowsSameBits.
//     (docs/engine-decoding.md, "The roofline at long positions (BenchmarkDecodeLong)"),
//     (docs/engine-decoding.md, "Every KV head a block at a time (fuseAttnBlocked, attnBlockedRows)"),
//     (docs/engine-decoding.md, "Whole rows a unit below two rows a core (attnWholeRows)")
//   - The samples of one prompt map its cache's whole pages from one
//     memory file instead of each copying it (kvAliasPrefix, kvalias.go;
//     Linux, from 32 MiB a row; copies wherever mapping fails). The
//     kernels read the same values at the same places: the same bits
//     (TestKVAliasSameBits); a 16-row group's prompt cache takes a
//     tenth of the memory and its steps read it from L3. The bf16
//     compute path's own copies are mapped from a file in their layout
//     the same way (kvAliasBF16, kvalias_bf16_linux.go). A num_samples
//     request's own prompt cache is that memory file, prefilled in
//     place (kvAliasLeader), and a long single request's cache takes
//     the file's pages once it is followed (kvAliasLeaderSingle): the
//     prompt is held once.
//     (docs/engine-decoding.md, "A group's prompt mapped once (kvAliasPrefix)"),
//     (docs/engine-decoding.md, "The bf16 path's copies mapped too (kvAliasBF16)"),
//     (docs/engine-decoding.md, "The leader's cache held once (kvAliasLeader)")
//
// # Training
//
//   - Training computes each datum's gradient alone and adds it to the
//     accumulated gradient in datum order, so gradients do not depend on
//     how data are split into calls, and each kernel splits its outputs
//     (never a sum) across cores. ActivationBytes tells one datum's
//     memory up front, CallBytes a call's.
//   - Datums through each layer together (batchpass.go): a call's short
//     consecutive datums run as one pass, their rows one after another, so
//     each base product streams W once for the group; rotary positions,
//     KV caches, loss rows and LoRA gradient segments stay per datum and
//     are committed in datum order, so the bits are those of one datum
//     after another (TestBatchedDatumsKeepBits). A group stays within
//     batchRows and the keep and call limits; small dense models run a
//     datum a core instead (datumslots.go).
//     (docs/engine-training.md, "Datums through each layer together")
//   - Long datums recompute (recompute.go): when a datum's kept
//     activations would pass the keep limit (DefaultKeepLimit, 4 GiB;
//     SetKeepLimit), it keeps only each layer's input residual and runs
//     each layer forward again just before its backward. The same kernels
//     on the same inputs give the same bits, so gradients do not depend on
//     the mode (TestRecomputeMatchesKept); it costs one more forward pass.
//   - The output layer runs a chunk of positions at a time (headBytes of
//     logits, multiples of headChunk), so a long datum's logits never
//     exist at once; consecutive datums whose rows fit one chunk share it
//     (headRuns; TestBatchedHeadRunsKeepBits).
//     (docs/engine-training.md, "The output layer's chunk")
//   - Elementwise kernels (kernels_elem.go; vector twins in
//     kernels_elem_simd.go and kernels_exp_simd.go) use the engine's own
//     exp64 (within 2 ulp of math.Exp), which vectors can reproduce, and
//     float64 reductions as eight lane-strided partial sums in a fixed
//     tree (sumSquares), so SiLU, softmax, norms and the loss have the same
//     bits on every path (TestSIMDElementwiseMatchScalar).
//     (docs/engine-elementwise.md, "Elementwise kernels")
//   - Vector kernels end with archsimd.ClearAVXUpperBits (VZEROUPPER),
//     before any scalar tail or lane reduction: Go's scalar float code is
//     SSE, and with the vector registers' upper halves dirty each SSE
//     instruction waits (7-12× the time). A vector loop keeps no scalar
//     float live across it for the same reason.
//     (docs/engine-elementwise.md, "VZEROUPPER")
//   - CPU profiles put a fifth to a quarter of a loaded step's samples on
//     runtime.asyncPreempt: attribution, not cost; profile with
//     GODEBUG=asyncpreemptoff=1 to see the loops' own shares.
//     (docs/engine-measurement.md, "Profiles and runtime.asyncPreempt (issue 34)")
//
// # Where output bits changed
//
// Every change in the docs/ log kept every output bit except these:
//
//   - Fused multiply-adds in the products (last bits; seeded tokens
//     unchanged, logprobs ~1e-6 apart) and in attention (the pinned
//     samples, PyTorch comparisons and finite-difference checks held).
//     (docs/engine-products.md, "Batch invariance and fused multiply-adds")
//   - The attention backward's softmax sums in eight float64 lanes and a
//     fixed tree (the backward's last places; the reference sums alike).
//     (docs/engine-attention.md, "Attention backward")
//   - Softmax numerators in float32 (exp32): the probabilities' last bits,
//     golden/testdata/sample_batch.txtar's logprobs in the 7th digit, the
//     same tokens; the backward multiplies by 1/Σ. Σ later took the
//     backward's lane order, which moved no test.
//     (docs/engine-attention.md, "Softmax in float32 (softexp)")
//   - The bf16 compute path, opt-in, has bits of its own, which differ
//     between AMX and AVX512-BF16 machines.
//   - DeepSeek's training forward (expanded) against its sampler
//     (absorbed): within about 1e-6, not bit for bit.
package engine
