package tinkerapi

import (
	"github.com/klauspost/compress/zstd"
	"github.com/tinkershell/tinker/lib/lazy"
)

// zstdEncoder compresses forward_backward bodies when the server asks for
// it (proto_compress_fwdbwd): one frame with its content size, at the
// default level, like the SDK's zstd.ZstdCompressor().compress. Training
// bodies are mostly little-endian token ids and float32 weights, which it
// shrinks several times over. Its EncodeAll is safe for concurrent use. Made
// on first use: most processes never train.
var zstdEncoder = lazy.Value[*zstd.Encoder]{New: func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(err) // only bad options fail
	}
	return e
}}
