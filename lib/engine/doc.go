// Package engine is the local server's sampling and training engine: a
// pure-Go float32 transformer forward pass for Llama-3 and Qwen3 dense models
// (RMSNorm, rotary embeddings with Llama-3.1 frequency scaling, grouped-query
// attention with a KV cache, SwiGLU MLP, Qwen3's per-head q/k norms, tied or
// untied lm_head), LoRA adapters applied on the fly, token sampling with
// temperature, top-k, top-p, seeds, stop conditions and log-probabilities,
// and LoRA training (Trainer): the losses of forward/forward_backward, a
// backward pass to the adapter's parameters with the base weights frozen,
// gradient accumulation, AdamW, and the adapter and optimizer state.
//
// Models come from a Hugging Face model directory (LoadDir; FindModelDir
// searches the Hugging Face cache) or, for the two built-in tiny models
// tinker-local/tiny-llama and tinker-local/tiny-qwen3, from a seeded
// generator (Load). The tiny models' weights are UNTRAINED: they emit byte
// noise and exist so that sampling, adapters and the server run end to end
// with no download. Pool loads each base model once and caches adapters.
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
//     the goroutine split or the kernel, and products are never fused into
//     FMAs, so a seeded sample has the same bits alone, in a batch,
//     batched with other requests and on another machine
//     (TestConcurrentMatchesSolo). Forward products use the
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
//     4-row tile (the tokens packed four at a time, so four rows a power
//     of two apart do not share an L1 set) and a 1-token × 16-row kernel
//     for decoding, both over float32 or bfloat16 weights (widened
//     exactly), the lane tree done with shuffles.
//   - Other vector kernels (kernels_simd.go, GOEXPERIMENT=simd on amd64
//     with AVX2) give the scalar kernels' bits: a lane holds one output
//     element and adds its products in the same order with a separate
//     multiply and add; backward products run lanes along the row-major
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
//   - Concurrent requests share one batch (batcher.go): every Sample call
//     on a base model or any of its adapters joins the model's running
//     batch, whose one goroutine (started by the first call, gone when the
//     last leaves) steps a forward pass over the next token of every
//     generating sample plus at most prefillChunk positions of prompts
//     still being prefilled, then lets each sample draw with its own
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
//     large vocabularies are spread across cores too.
//   - Training runs a request's datums one after another: each keeps only its
//     own activations (ActivationBytes tells the cost up front), its
//     gradient is computed alone and added to the accumulated gradient in
//     datum order, so gradients do not depend on how data are split into
//     calls, and each kernel splits its outputs (never a sum) across cores.
//   - bfloat16 matrices of large checkpoints stay bfloat16 in memory
//     (exactly widened on use); everything else is float32.
package engine
