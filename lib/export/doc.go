// Package export turns a LoRA checkpoint into something other tools run:
// a merged Hugging Face model directory (W' = W + (alpha/r)·B·A baked into
// the base weights) or a PEFT adapter directory that PEFT loads (and vLLM
// for the layouts serving.go lists). It also reads adapters from both
// backends' archives and from PEFT, normalising the service's names
// (model.unembed_tokens) to the Hugging Face ones (lm_head).
//
// Design choices:
//
//   - Streaming, shard by shard. Each base shard's header is read, then its
//     tensors are read with ReadAt in row blocks of about a million
//     elements that are widened, updated, rounded and written while the
//     next block is made; nothing is memory mapped, so memory stays a few
//     blocks plus the adapter whatever the model's size (make bench-export
//     reports the peak RSS against the largest shard). Blocks are made on
//     every core while the previous ones are written, and the shard file
//     is written from its own goroutine (asyncwrite.go), so compute and
//     I/O overlap across tensors too. docs/export-performance.md says
//     where the time goes and how to profile it.
//   - One rounding. Each merged row is widened to float32, the update
//     B'·A (B' = scale·B) is summed in float32 and added, and the sum is
//     rounded once into the output dtype (round to nearest even).
//   - The base's layout. Output shards keep the base's file names and the
//     tensors in each; model.safetensors.index.json is written for them.
//     A tied base whose unembedding is adapted is untied: lm_head.weight
//     (embedding + update) goes into the embedding's shard and config.json
//     says tie_word_embeddings false, since the update must not reach the
//     input embedding.
//   - Atomic output. Everything is written into a hidden sibling of OUT
//     that is renamed into place only when complete; an existing OUT is
//     kept until then (and replaced only with Force).
//   - Llama 3, Qwen3, Qwen3-MoE and GPT-OSS: what the local engine runs
//     and can therefore check. Stacked expert adapters (w1/w2/w3) are split
//     per expert and merged into either of transformers' Qwen3-MoE expert
//     layouts (experts.go) or GPT-OSS's fused, interleaved, input-major
//     tensors (experts_gptoss.go); an MXFP4 base's experts are
//     dequantised and written dense, or requantised to MXFP4 by default
//     (mxfp4.go, mxfp4_quant.go). Their PEFT export names fused experts
//     with PEFT's target_parameters (peft_params.go), per-expert ones as
//     modules.
//   - DeepSeek V3.1 / Kimi K2 (latent*.go): the service's adapter layout
//     (stacked w1/w2/w3 experts whose hidden-side factor all experts
//     share, unembed_tokens) expanded per expert; FP8 block-quantised and
//     INT4 pack-quantized bases are dequantised a row block at a time,
//     merged in float32 and written in the chosen dtype or requantised in
//     the base's format. Checked against a float64 merge of tiny bases in
//     the released layouts, since the engine does not run these models.
package export
