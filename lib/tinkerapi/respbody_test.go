package tinkerapi

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestResponseBoundAfterDecoding: a gzip bomb (100 MiB of JSON padding in
// about 100 KB) answering get_server_capabilities is refused once 64 MiB
// are decoded, not buffered whole; answers in gzip and deflate that the
// client asked for (Accept-Encoding: gzip, deflate) decode.
func TestResponseBoundAfterDecoding(t *testing.T) {
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zw.Write([]byte(`{"supported_models": [], "pad": "`))
	zw.Write(bytes.Repeat([]byte(" "), 100<<20))
	zw.Write([]byte(`"}`))
	zw.Close()
	small := func(enc string) []byte {
		var b bytes.Buffer
		var w interface {
			Write([]byte) (int, error)
			Close() error
		}
		if enc == "gzip" {
			w = gzip.NewWriter(&b)
		} else {
			w, _ = zlib.NewWriterLevel(&b, zlib.DefaultCompression)
		}
		w.Write([]byte(`{"supported_models": [{"model_name": "m", "max_context_length": 8}]}`))
		w.Close()
		return b.Bytes()
	}
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.URL.Path != "/api/v1/get_server_capabilities" {
			return false
		}
		if got := r.Header.Get("Accept-Encoding"); got != "gzip, deflate" {
			t.Errorf("Accept-Encoding %q", got)
		}
		body, enc := bomb.Bytes(), "gzip"
		switch n {
		case 2:
			body = small("gzip")
		case 3:
			body, enc = small("deflate"), "deflate"
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", enc)
		w.Write(body)
		return true
	})
	c, _ := testClient(t, f)
	_, err := c.GetServerCapabilities(ctxT(t))
	if !errors.Is(err, errTooLarge) || !strings.Contains(err.Error(), "64 MiB") {
		t.Fatalf("gzip bomb of %d bytes: err %v, want the 64 MiB bound", bomb.Len(), err)
	}
	for _, enc := range []string{"gzip", "deflate"} {
		caps, err := c.GetServerCapabilities(ctxT(t))
		if err != nil || len(caps.SupportedModels) != 1 {
			t.Errorf("%s answer: %+v, %v", enc, caps, err)
		}
	}
}
