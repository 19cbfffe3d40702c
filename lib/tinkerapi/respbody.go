package tinkerapi

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Bounds on a buffered API response, after decompression, so that a
// compression bomb or a hostile service cannot fill memory. Answers are a
// few MB at most (10,000 checkpoints are about 3 MB); future results
// (retrieve_future: sample results with logprobs, forward_backward
// outputs) may be far larger.
const (
	maxResponseBytes = 64 << 20
	maxResultBytes   = 512 << 20
)

// errTooLarge wraps every refusal of an oversized answer.
var errTooLarge = errors.New("response too large")

// bodyPool holds the buffers of answers read withPooledBody. A checkpoint
// listing's pages are read into them and decoded, and the strings kept
// are copied out (detachCheckpoints), so 10,000 checkpoints touch a few
// page buffers rather than 2.4 MB of fresh memory, whose first touch
// (page faults) cost more than the decoding.
var bodyPool sync.Pool

// recycle gives a pooled body back once nothing points into it.
func (r *Response) recycle() {
	if r.pooled {
		b := r.Body[:0]
		r.Body, r.pooled = nil, false
		bodyPool.Put(&b)
	}
}

// readBody reads a response body, decoding the Content-Encoding the
// client asked for (gzip, deflate), and stops past limit decoded bytes;
// pooled starts from a bodyPool buffer.
func readBody(hr *http.Response, limit int64, pooled bool) ([]byte, error) {
	r, err := decoded(hr)
	if err != nil {
		return nil, err
	}
	var start []byte
	if pooled {
		if p, ok := bodyPool.Get().(*[]byte); ok {
			start = *p
		}
	}
	buf := bytes.NewBuffer(start)
	// Sized from Content-Length (bounded by limit before allocating) when
	// the body is not encoded: io.ReadAll's growth copied and cleared a
	// 250 KB checkpoint page several times over.
	if r == hr.Body && hr.ContentLength > 0 && hr.ContentLength <= limit {
		buf.Grow(int(hr.ContentLength) + bytes.MinRead)
	}
	_, err = buf.ReadFrom(io.LimitReader(r, limit+1))
	body := buf.Bytes()
	if err == nil && int64(len(body)) > limit {
		err = fmt.Errorf("%w: more than %d MiB once decoded; refusing to buffer it", errTooLarge, limit>>20)
	}
	if err != nil {
		return nil, err // a pooled buffer is dropped: it may be the oversized one
	}
	return body, nil
}

// decoded wraps hr.Body in the decoder its Content-Encoding names. A
// transport that decoded the body itself leaves no Content-Encoding.
func decoded(hr *http.Response) (io.Reader, error) {
	switch enc := strings.ToLower(strings.TrimSpace(hr.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return hr.Body, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(hr.Body)
		if err != nil {
			return nil, fmt.Errorf("gzip response: %w", err)
		}
		return zr, nil
	case "deflate":
		return deflateReader(hr.Body)
	default:
		return nil, fmt.Errorf("response has Content-Encoding %q, which was not asked for", enc)
	}
}

// deflateReader reads HTTP "deflate": zlib-wrapped as the standard says,
// or raw deflate as some servers send it (httpx accepts both).
func deflateReader(r io.Reader) (io.Reader, error) {
	var head [2]byte
	n, err := io.ReadFull(r, head[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("deflate response: %w", err)
	}
	all := io.MultiReader(strings.NewReader(string(head[:n])), r)
	if n == 2 && head[0]&0x0f == 8 && (uint16(head[0])<<8|uint16(head[1]))%31 == 0 {
		zr, err := zlib.NewReader(all)
		if err != nil {
			return nil, fmt.Errorf("deflate response: %w", err)
		}
		return zr, nil
	}
	return flate.NewReader(all), nil
}
