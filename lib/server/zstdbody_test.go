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
