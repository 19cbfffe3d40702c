package server

import (
	"errors"
	"net/http"

	"github.com/tinkershell/tinker/lib/zstd"
)

// zstdDecoder decodes compressed training bodies. Its memory is bounded:
// a frame may not ask for a window larger than maxZstdWindow, and the
// output stops at maxTrainingBodyBytes, both checked before allocating,
// so a hostile frame header or a bomb costs at most that much. Its CPU
// is bounded by the decoder's work budget, proportional to
// maxTrainingBodyBytes (under half a second of CPU; docs/zstd.md).
var zstdDecoder = zstd.Decoder{MaxOutput: maxTrainingBodyBytes, MaxWindow: maxZstdWindow}

// maxZstdWindow bounds the back-reference window a frame may ask for; the
// SDK's level-3 frames use a few MiB.
const maxZstdWindow = 32 << 20

// unzstdBody decompresses a zstd request body of at most
// maxTrainingBodyBytes once decompressed.
func unzstdBody(b []byte) ([]byte, *errorResponse) {
	out, err := zstdDecoder.DecodeAll(b, nil)
	switch {
	case errors.Is(err, zstd.ErrOutputTooLarge) || errors.Is(err, zstd.ErrWindowTooLarge):
		return nil, errorf(http.StatusRequestEntityTooLarge, "request body: larger than %d bytes once decompressed; split the batch into smaller requests", maxTrainingBodyBytes)
	case errors.Is(err, zstd.ErrTooMuchWork):
		return nil, errorf(http.StatusBadRequest, "request body: zstd stream too costly to decode (tiny blocks that each describe new tables); compress it in one call of a standard zstd encoder, or send it uncompressed")
	case err != nil:
		return nil, errorf(http.StatusBadRequest, "request body: not valid zstd (%v); send it uncompressed or as one zstd frame", err)
	}
	return out, nil
}
