// Package zstd is tinker's own Zstandard (RFC 8878) codec: a one-shot
// decoder that treats its input as hostile (window and output bounded by
// the caller before anything is allocated, corrupt input an error, never a
// panic) and a one-shot encoder that writes one frame with its content
// size. It replaces github.com/klauspost/compress in the binary, whose
// package initialisers cost ~0.2 ms of every start (docs/zstd.md).
// Dictionaries are not supported: a frame that names one is refused.
package zstd
