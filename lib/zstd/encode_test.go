package zstd

import (
	"bytes"
	"testing"

	kzstd "github.com/klauspost/compress/zstd"
)

// TestEncodeKlauspostDecodes: klauspost's decoder reads our frames back
// to the input, and so does ours; realistic bodies really shrink.
func TestEncodeKlauspostDecodes(t *testing.T) {
	kd, err := kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	for name, in := range testInputs(t) {
		z := Encode(nil, in)
		got, err := kd.DecodeAll(z, nil)
		if err != nil || !bytes.Equal(got, in) {
			t.Errorf("%s: klauspost decodes %d bytes, err %v; want the %d input bytes", name, len(got), err, len(in))
		}
		if got, err := testLimits.DecodeAll(z, nil); err != nil || !bytes.Equal(got, in) {
			t.Errorf("%s: we decode %d bytes, err %v; want %d", name, len(got), err, len(in))
		}
		t.Logf("%s: %d -> %d", name, len(in), len(z))
	}
}
