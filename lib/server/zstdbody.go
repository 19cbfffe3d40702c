package server

import (
	"errors"
	"net/http"

	"github.com/klauspost/compress/zstd"
	"github.com/tinkershell/tinker/lib/lazy"
)

// zstdDecoder decodes compressed training bodies. Its memory is bounded:
// a frame may not ask for a window larger than maxZstdWindow, and
// DecodeAll stops at maxTrainingBodyBytes of output (WithDecoderMaxMemory),
// so a hostile frame header or a bomb costs at most that much. Made on
// first use, as most processes never see such a body.
var zstdDecoder = lazy.Value[*zstd.Decoder]{New: func() *zstd.Decoder {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(maxTrainingBodyBytes),
		zstd.WithDecoderMaxWindow(maxZstdWindow))
	if err != nil {
		panic(err) // only bad options fail, and these are constants
	}
	return d
}}

// maxZstdWindow bounds the back-reference window a frame may ask for; the
// SDK's level-3 frames use a few MiB.
const maxZstdWindow = 32 << 20

// unzstdBody decompresses a zstd request body of at most
// maxTrainingBodyBytes once decompressed.
func unzstdBody(b []byte) ([]byte, *errorResponse) {
	out, err := zstdDecoder.Get().DecodeAll(b, nil)
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) || len(out) > maxTrainingBodyBytes:
		return nil, errorf(http.StatusRequestEntityTooLarge, "request body: larger than %d bytes once decompressed; split the batch into smaller requests", maxTrainingBodyBytes)
	case err != nil:
		return nil, errorf(http.StatusBadRequest, "request body: not valid zstd (%v); send it uncompressed or as one zstd frame", err)
	}
	return out, nil
}
