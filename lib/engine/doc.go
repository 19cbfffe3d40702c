// Package engine is the local server's sampling and training engine: a
// pure-Go float32 transformer forward pass for Llama-3, Qwen3 dense,
// Qwen3-MoE and GPT-OSS models (RMSNorm, rotary embeddings with Llama-3.1
// or YaRN frequency scaling, grouped-query attention with a KV cache,
// SwiGLU MLP, Qwen3's per-head q/k norms, tied or untied lm_head, routed
// experts: moe.go; GPT-OSS's sinks, sliding windows and experts:
// gptoss*.go), LoRA adapters applied on the fly, token sampling with
// temperature, top-k, top-p, seeds, stop conditions and log-probabilities,
// and LoRA training (Trainer): the losses of forward/forward_backward, a
// backward pass to the adapter's parameters with the base weights frozen,
// gradient accumulation, AdamW, and the adapter and optimizer state.
//
// Models come from a Hugging Face model directory (LoadDir; FindModelDir
// searches the Hugging Face cache) or, for the built-in tiny models
// tinker-local/tiny-llama, tiny-qwen3, tiny-qwen3-moe and tiny-gpt-oss,
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
//     (seeded tokens unchanged, logprobs ~1e-6 apart); attention's scores and
//     weighted sums (dot1, axpy) and the elementwise kernels still round
//     each product before its add. Forward products use the
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
//     golang.org/x/sys/cpu and independent of GOEXPERIMENT: a 4-token ×
//     6-row tile (the tokens packed four at a time, so four rows a power
//     of two apart do not share an L1 set; 4×4 tiles and single rows take
//     what is left) and a 1-token × 16-row kernel for decoding, both over
//     float32 or bfloat16 weights (widened exactly), the lane tree done
//     with shuffles. A block of rows (256 KiB) stays in L2 while a block
//     of packed tokens (768 KiB) passes it, so a 512-token batch of 3072
//     columns comes from L2 rather than L3. A kernel packs the tokens
//     (fwdPackGroup), on all workers when the product is split.
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
//     waking a parked thread for each one cost a quarter of the time.
//   - Backward kernels (gemm_bwd_amd64.s, generated by internal/asmgen/bwd
//     the same way): matMulT and outerAcc as register tiles of up to 6-12
//     rows × 1-4 16-lane vectors (at most 24 accumulators), each lane
//     adding its products in the scalar kernels' sequential order, each
//     one fused multiply-add; weight strips are packed contiguous (and
//     widened from bfloat16) once per block and prefetched a strip ahead.
//     TestBackwardAsmMatchesScalar compares them with the scalar kernels.
//   - Other vector kernels (kernels_simd.go, GOEXPERIMENT=simd on amd64
//     with AVX2) give the scalar kernels' bits: a lane holds one output
//     element and adds its products in the same order (MulAdd in the
//     matrix products; a separate multiply and add in attention's dot1 and
//     axpy); backward products run lanes along the row-major
//     columns. Without AVX-512 or the experiment the scalar kernels run;
//     TestForwardKernelsMatchScalar and TestSIMDMatchesScalar compare them.
//   - Elementwise kernels (kernels_elem.go; vector twins in
//     kernels_elem_simd.go) use the engine's own exp64 (range reduction
//     and a degree-13 polynomial, separate multiply and add, within 2 ulp
//     of math.Exp) instead of math.Exp, which vectors cannot reproduce, so
//     SiLU, softmax and the loss gradient have the same bits on both paths;
//     float64 reductions (RMSNorm's sums, the gradient norm) are eight
//     lane-strided partial sums added in a fixed tree (sumSquares).
//     TestSIMDElementwiseMatchScalar compares both paths.
//   - Forward attention (forward.go, kernels_attn*.go): decoding rows go
//     one at a time; a run of consecutive positions of one sequence (a
//     prefill chunk, a training sequence) goes per KV head in blocks of 16
//     positions, which read each cached key and value once for all the
//     block's query heads. Both keep dot1's lane tree for each score and
//     ascending positions for each output element, so a row's bits do not
//     depend on its batch; TestAttentionBlocksMatchRows compares them.
//   - Attention backward (backward.go, kernels_attn_bwd*.go) recomputes
//     the probabilities in the same blocks (KV heads split over workers,
//     blocks in ascending position): scores and datt·v with the forward's
//     block kernels, dq with its weighted sum, dk and dv by
//     attnScatterBlock over the block's packed heads. Each worker copies
//     its KV head's keys and values contiguous once (packHead) rather than
//     the block kernels packing every tile again for every block
//     (packRows' copies, forward and backward, were 8% of the CPU
//     samples of a 4096-token step on the 0.6B widths with 4 layers).
//     Each dk/dv element still adds its terms in ascending (position,
//     head) order, so the bits are those of the per-position loop kept
//     as attentionBackwardRef (TestAttentionBackwardBlocksMatchRef).
//   - Attention memory is linear in the sequence: no T×T matrix exists.
//     The forward keeps only each query's output, and the backward
//     recomputes one block's probabilities at a time (attnRows positions ×
//     a KV head's query heads against the keys before them: 2 MB per
//     worker at 4096 tokens on the 0.6B shape). Flash-style key tiles with
//     an online softmax were not adopted: rescaled partial sums would give
//     each score bits that depend on where tiles start, and the rule that
//     every output element sums its keys in ascending order in one pass is
//     what makes a row's bits independent of its batch, its block and the
//     thread count. Key tiles would buy cache reuse at long lengths, a
//     speed question to decide on a quiet machine (issue 34).
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
//     does, instead of 8 requests. Rows carry their adapter; each adapter's
//     low-rank product runs over its own rows. Admission is first come,
//     first served, up to maxBatchSeqs sequences (a larger request runs
//     alone). A cancelled caller returns at once; its rows leave before the
//     next step and its callbacks are not called again.
//   - Parallelism: a step's rows are split over GOMAXPROCS groups, each
//     running its own forward pass (small models); large models keep one
//     batch and split each matrix product's rows across cores. Draws over
//     large vocabularies are spread across cores too, and so are the
//     training loss's logits rows (scoreRows: a CPU profile of a 2 × 512
//     step on the 0.6B widths with 4 layers put the vocabulary-wide
//     softmax at 29% of the samples, run on one core), each row whole on
//     one core, so the bits do not change.
//   - Training runs a request's datums one after another: each keeps only its
//     own activations (ActivationBytes tells the cost up front), its
//     gradient is computed alone and added to the accumulated gradient in
//     datum order, so gradients do not depend on how data are split into
//     calls, and each kernel splits its outputs (never a sum) across cores.
//     The arena is sized from ActivationBytes before the first datum
//     (grown mid-datum, its overflow came from the garbage-collected heap,
//     on top of the next datum's arena).
//   - Long datums recompute (recompute.go): when a datum's kept
//     activations would pass the keep limit (DefaultKeepLimit, 4 GiB;
//     SetKeepLimit), it keeps only each layer's input residual and runs
//     each layer forward again just before its backward. The same kernels
//     on the same inputs give the same bits, so gradients do not depend on
//     the mode (TestRecomputeMatchesKept); it costs one more forward pass.
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
//   - GPT-OSS's sliding-window and sink layers attend one row at a time
//     (attendRow, which starts at the window and adds the sink to the
//     softmax's denominator), so a row's bits still do not depend on the
//     batch; their backward pass (attentionBackwardRows) recomputes each
//     probability with the forward's kernels, one position and head at a
//     time. Simpler and slower than the blocked path; the blocked
//     kernels could learn windows and sinks later.
//   - bfloat16 matrices of large checkpoints stay bfloat16 in memory
//     (exactly widened on use); everything else is float32.
package engine
