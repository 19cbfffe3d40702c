package server

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/tinkershell/tinker/lib/tinkerproto"
)

// TestZstdTrainingBodies: a forward_backward body sent zstd-compressed (as
// the SDK sends it once client/config offers proto_compress_fwdbwd) gets
// the same answer as the plain one; a small body that inflates past the
// training body bound (a zstd bomb) and a body that is not zstd are
// refused without work.
func TestZstdTrainingBodies(t *testing.T) {
	e := newEnv(t, "", Options{})
	if code, b, _ := e.do("POST", "/api/v1/client/config", map[string]string{"sdk_version": "0.25.0"}); code != 200 || !strings.Contains(string(b), `"proto_compress_fwdbwd":true`) {
		t.Errorf("client/config = %d %s, want proto_compress_fwdbwd offered", code, b)
	}
	enc, _ := zstd.NewWriter(nil)
	pb, _ := tinkerproto.Marshal(&tinkerproto.ForwardBackwardRequest{ModelId: "no-such-model", SeqId: 1, LossFn: "cross_entropy",
		Data: []*tinkerproto.Datum{{ModelInput: []*tinkerproto.Chunk{{Chunk: &tinkerproto.Chunk_EncodedText{EncodedText: &tinkerproto.EncodedTextChunk{Tokens: []byte{1, 0, 0, 0}}}}}}}})
	plainCode, plain := postFwd(t, e, pb, "")
	zCode, z := postFwd(t, e, enc.EncodeAll(pb, nil), "zstd")
	if plainCode == 413 || plainCode == 415 || zCode != plainCode || z != plain {
		t.Errorf("compressed body = %d %s; plain = %d %s: want the same answer", zCode, z, plainCode, plain)
	}
	bomb := enc.EncodeAll(make([]byte, maxTrainingBodyBytes+1), nil)
	if len(bomb) > 1<<20 {
		t.Fatalf("the bomb is %d bytes compressed", len(bomb))
	}
	if code, b := postFwd(t, e, bomb, "zstd"); code != http.StatusRequestEntityTooLarge || !strings.Contains(b, "decompressed") {
		t.Errorf("zstd bomb of %d bytes = %d %s, want 413 naming the decompressed size", len(bomb), code, b)
	}
	if code, b := postFwd(t, e, []byte("not zstd at all"), "zstd"); code != 400 || !strings.Contains(b, "not valid zstd") {
		t.Errorf("garbage labelled zstd = %d %s, want 400", code, b)
	}
	if code, b := postFwd(t, e, pb, "br"); code != http.StatusUnsupportedMediaType {
		t.Errorf("Content-Encoding br = %d %s, want 415", code, b)
	}
}

func postFwd(t *testing.T, e *env, body []byte, encoding string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", e.url+"/api/v1/forward_backward", bytes.NewReader(body))
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/x-protobuf")
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// TestZstdCostlyBody: a valid zstd body of tiny blocks that each describe
// three new FSE tables (lib/zstd's heavyFrame) would cost ~17 s of CPU
// of table building at the body bound; it is refused with 400 and what to
// do once the decoder's work budget is spent.
func TestZstdCostlyBody(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes half a second's worth of tables")
	}
	e := newEnv(t, "", Options{})
	f := []byte{0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x58, 0x20, 0, 0, 'a', 'b', 'c', 'd'} // no size, 16 MiB window; raw block "abcd"
	const n = 200000
	for i := 0; i < n; i++ {
		hdr := uint32(13)<<3 | 2<<1
		if i == n-1 {
			hdr |= 1
		}
		f = append(f, byte(hdr), byte(hdr>>8), byte(hdr>>16), 0, 1, 0xA8, 0xE4, 0xFF, 0xE3, 0x7F, 0xE4, 0xFF, 0, 0, 0, 0x04)
	}
	if code, b := postFwd(t, e, f, "zstd"); code != http.StatusBadRequest || !strings.Contains(b, "too costly") || !strings.Contains(b, "standard zstd encoder") {
		t.Errorf("table-heavy body of %d bytes = %d %s, want 400 saying what to do", len(f), code, b)
	}
}
