package tinkerapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// checkpointPage renders a /api/v1/checkpoints page of n entries.
func checkpointPage(n int) string {
	var b strings.Builder
	b.WriteString(`{"checkpoints": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"checkpoint_id": "sampler_weights/%06d", "checkpoint_type": "sampler", "time": "2025-12-27T08:51:24.966034Z", "tinker_path": "tinker://79db3d29-8bda-515f-a3c3-f9c1a8806642:train:%d/sampler_weights/%06d", "size_bytes": 176264704, "public": false, "expires_at": null}`, i, i%7, i)
	}
	fmt.Fprintf(&b, `], "cursor": {"offset": 0, "limit": %d, "total_count": 10000}}`, n)
	return b.String()
}

// BenchmarkListUserCheckpoints1000 is one 1000-entry page over loopback:
// request, read, validate and decode.
func BenchmarkListUserCheckpoints1000(b *testing.B) {
	page := checkpointPage(1000)
	f := newFake(&testing.T{}, func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.URL.Path != "/api/v1/checkpoints" {
			return false
		}
		writeJSON(w, 200, page)
		return true
	})
	defer f.srv.Close()
	c, err := New(Config{BaseURL: f.srv.URL, APIKey: testKey})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetBytes(int64(len(page)))
	b.ResetTimer()
	for b.Loop() {
		got, err := c.ListUserCheckpoints(ctx, 1000, 0)
		if err != nil || len(got.Checkpoints) != 1000 {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeCheckpoints1000 isolates validation plus decoding.
func BenchmarkDecodeCheckpoints1000(b *testing.B) {
	page := []byte(checkpointPage(1000))
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		out, err := decodeCheckpoints(page, nil)
		if err != nil || len(out.Checkpoints) != 1000 {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeCheckpointsCompact1000 is the same page in the compact
// form the local server (and FastAPI) writes: no space after ':' or ','.
func BenchmarkDecodeCheckpointsCompact1000(b *testing.B) {
	page := []byte(strings.NewReplacer(`": `, `":`, `, `, `,`).Replace(checkpointPage(1000)))
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		out, err := decodeCheckpoints(page, nil)
		if err != nil || len(out.Checkpoints) != 1000 {
			b.Fatal(err)
		}
	}
}
