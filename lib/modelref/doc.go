// Package modelref resolves the model a sampling call names: a base model
// name or a tinker:// sampler checkpoint path becomes the base model, its
// tokenizer, its chat renderer and the renderer's stop defaults. sample(),
// `tinker sample` and the batch sampler all resolve through here, so they
// accept and refuse the same names with the same words, and the tokenizer is
// loaded once per call.
package modelref
