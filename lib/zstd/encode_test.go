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

// TestRatioAgainstKlauspost logs our size beside klauspost's default on
// a realistic body and fails if ours is more than 15% larger.
func TestRatioAgainstKlauspost(t *testing.T) {
	in := fwdBody(t, 5, 32, 2048)
	ke, _ := kzstd.NewWriter(nil, kzstd.WithEncoderConcurrency(1))
	theirs, ours := len(ke.EncodeAll(in, nil)), len(Encode(nil, in))
	t.Logf("body %d bytes: ours %d (%.2fx), klauspost default %d (%.2fx)", len(in), ours, float64(len(in))/float64(ours), theirs, float64(len(in))/float64(theirs))
	if ours*100 > theirs*115 {
		t.Errorf("ours %d bytes against klauspost's %d", ours, theirs)
	}
}

// FuzzEncodeRoundTrip: whatever we encode, klauspost and we decode back.
func FuzzEncodeRoundTrip(f *testing.F) {
	f.Add([]byte("abcabcabcabcabcabcabcabc xyz"))
	f.Add(fwdBody(f, 8, 1, 32))
	kd, _ := kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1))
	f.Fuzz(func(t *testing.T, in []byte) {
		z := Encode(nil, in)
		if got, err := kd.DecodeAll(z, nil); err != nil || !bytes.Equal(got, in) {
			t.Fatalf("klauspost: %d bytes, err %v; want %d", len(got), err, len(in))
		}
		if got, err := testLimits.DecodeAll(z, nil); err != nil || !bytes.Equal(got, in) {
			t.Fatalf("ours: %d bytes, err %v; want %d", len(got), err, len(in))
		}
	})
}

// BenchmarkCodec encodes and decodes a realistic training body, beside
// klauspost's default level for comparison.
func BenchmarkCodec(b *testing.B) {
	in := fwdBody(b, 5, 32, 2048)
	z := Encode(nil, in)
	ke, _ := kzstd.NewWriter(nil, kzstd.WithEncoderConcurrency(1))
	kd, _ := kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1))
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			Encode(nil, in)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			testLimits.DecodeAll(z, nil)
		}
	})
	b.Run("klauspost-encode", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			ke.EncodeAll(in, nil)
		}
	})
	b.Run("klauspost-decode", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			kd.DecodeAll(z, nil)
		}
	})
}

// TestEncodeHeaderSizes: content sizes at each edge of the header's size
// field, and past the one-segment limit (a window descriptor), decode
// back through both decoders.
func TestEncodeHeaderSizes(t *testing.T) {
	kd, _ := kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1), kzstd.WithDecoderMaxMemory(1<<30))
	defer kd.Close()
	var big []byte
	for seed := uint64(0); len(big) <= 1<<encWindowLog; seed++ {
		big = append(big, fwdBody(t, 100+seed, 32, 2048)...)
	}
	for _, n := range []int{255, 256, 257, 1<<16 + 255, 1<<16 + 256, 1<<16 + 257, len(big)} {
		in := big[:n]
		z := Encode(nil, in)
		if got, err := kd.DecodeAll(z, nil); err != nil || !bytes.Equal(got, in) {
			t.Errorf("%d bytes: klauspost decodes %d, err %v", n, len(got), err)
		}
		if got, err := testLimits.DecodeAll(z, nil); err != nil || !bytes.Equal(got, in) {
			t.Errorf("%d bytes: we decode %d, err %v", n, len(got), err)
		}
	}
	if z := Encode(nil, big); z[4]&0x20 != 0 {
		t.Errorf("%d bytes written as one segment; want a window descriptor", len(big))
	}
}
