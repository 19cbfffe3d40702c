package tinkerapi

import "github.com/tinkershell/tinker/lib/zstd"

// zstdBody compresses a forward_backward body when the server asks for it
// (proto_compress_fwdbwd): one frame with its content size, like the SDK's
// zstd.ZstdCompressor().compress. Training bodies are mostly little-endian
// token ids and float32 weights, which it shrinks several times over.
func zstdBody(body []byte) []byte { return zstd.Encode(nil, body) }
