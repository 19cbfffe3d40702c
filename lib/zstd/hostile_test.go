package zstd

import (
	"bytes"
	"errors"
	"testing"

	kzstd "github.com/klauspost/compress/zstd"
)

// TestDecodeBounds: the caller's output and window bounds hold whether
// or not the frame declares its size, and the errors say which.
func TestDecodeBounds(t *testing.T) {
	zeros := make([]byte, 1<<20)
	z := Encode(nil, zeros)
	if _, err := (Decoder{MaxOutput: len(zeros) - 1, MaxWindow: 1 << 30}).DecodeAll(z, nil); !errors.Is(err, ErrOutputTooLarge) {
		t.Errorf("declared size over the bound: err %v, want ErrOutputTooLarge", err)
	}
	var buf bytes.Buffer
	w, _ := kzstd.NewWriter(&buf, kzstd.WithEncoderConcurrency(1), kzstd.WithWindowSize(1<<20))
	w.Write(zeros)
	w.Close()
	if _, err := (Decoder{MaxOutput: len(zeros) - 1, MaxWindow: 1 << 20}).DecodeAll(buf.Bytes(), nil); !errors.Is(err, ErrOutputTooLarge) {
		t.Errorf("undeclared size over the bound: err %v, want ErrOutputTooLarge", err)
	}
	if _, err := (Decoder{MaxOutput: 1 << 30, MaxWindow: 1<<20 - 1}).DecodeAll(buf.Bytes(), nil); !errors.Is(err, ErrWindowTooLarge) {
		t.Errorf("window over the bound: err %v, want ErrWindowTooLarge", err)
	}
	if got, err := (Decoder{MaxOutput: len(zeros), MaxWindow: 1 << 20}).DecodeAll(buf.Bytes(), nil); err != nil || !bytes.Equal(got, zeros) {
		t.Errorf("at the bounds: %d bytes, err %v", len(got), err)
	}
}

// TestDecodeRefusals: dictionaries, bad checksums, truncations and
// garbage are errors, never panics or silent output.
func TestDecodeRefusals(t *testing.T) {
	// Magic, single segment with a one-byte dictionary id 5, size 1, then a raw block.
	dict := []byte{0x28, 0xB5, 0x2F, 0xFD, 0x21, 5, 1, 0x09, 0, 0, 'x'}
	if _, err := testLimits.DecodeAll(dict, nil); !errors.Is(err, ErrDictionary) {
		t.Errorf("frame with a dictionary id: err %v, want ErrDictionary", err)
	}
	in := fwdBody(t, 9, 2, 256)
	z := Encode(nil, in)
	bad := bytes.Clone(z)
	bad[len(bad)-1] ^= 1
	if _, err := testLimits.DecodeAll(bad, nil); !errors.Is(err, ErrChecksum) {
		t.Errorf("flipped checksum: err %v, want ErrChecksum", err)
	}
	for n := 0; n < len(z); n++ {
		if out, err := testLimits.DecodeAll(z[:n], nil); err == nil {
			t.Fatalf("truncated to %d of %d bytes: %d bytes and no error", n, len(z), len(out))
		}
	}
	if _, err := testLimits.DecodeAll([]byte("not zstd at all"), nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("garbage: err %v, want ErrCorrupt", err)
	}
}

// TestDecodeSeveralFrames: frames and skippable frames in a row decode
// to the frames' contents in order.
func TestDecodeSeveralFrames(t *testing.T) {
	a, b := []byte("first frame, first frame, first frame"), fwdBody(t, 4, 1, 128)
	skip := []byte{0x5A, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 'a', 'b', 'c'}
	ke, _ := kzstd.NewWriter(nil, kzstd.WithEncoderConcurrency(1))
	stream := append(append(append(Encode(nil, a), skip...), ke.EncodeAll(b, nil)...), skip...)
	got, err := testLimits.DecodeAll(stream, []byte("prefix:"))
	if want := append(append([]byte("prefix:"), a...), b...); err != nil || !bytes.Equal(got, want) {
		t.Errorf("several frames: %d bytes, err %v; want %d", len(got), err, len(want))
	}
}

// FuzzDecode: any input is an error or content within the bounds, never
// a panic; when klauspost also accepts it, both agree.
func FuzzDecode(f *testing.F) {
	ke, _ := kzstd.NewWriter(nil, kzstd.WithEncoderConcurrency(1))
	bare, _ := kzstd.NewWriter(nil, kzstd.WithEncoderConcurrency(1), kzstd.WithEncoderCRC(false), kzstd.WithEncoderLevel(kzstd.SpeedBestCompression))
	for _, in := range [][]byte{[]byte("hello hello hello hello"), fwdBody(f, 6, 1, 64), make([]byte, 3000)} {
		f.Add(Encode(nil, in))
		f.Add(ke.EncodeAll(in, nil))
		f.Add(bare.EncodeAll(in, nil)) // no checksum: mutations reach the blocks
	}
	kd, _ := kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1), kzstd.WithDecoderMaxMemory(1<<20))
	lim := Decoder{MaxOutput: 1 << 20, MaxWindow: 1 << 20}
	f.Fuzz(func(t *testing.T, z []byte) {
		got, err := lim.DecodeAll(z, nil)
		if err != nil {
			return
		}
		if len(got) > lim.MaxOutput {
			t.Fatalf("%d bytes past the bound", len(got))
		}
		if theirs, kerr := kd.DecodeAll(z, nil); kerr == nil && !bytes.Equal(theirs, got) {
			t.Fatalf("we decode %d bytes, klauspost %d different ones", len(got), len(theirs))
		}
	})
}
