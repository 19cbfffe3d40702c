package zstd

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
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

// blockFrame is a hand-made frame without a content size whose window
// descriptor is wd and whose one compressed block holds RLE literals
// "xxx" and one sequence (RLE tables: literal length 3, offset 3, match
// length code 52) whose match is 65539+mlExtra bytes: 65542+mlExtra in
// all.
func blockFrame(wd byte, mlExtra uint16) []byte {
	body := []byte{0x19, 'x', // RLE literals: 3 x
		1, 0x54, 3, 2, 52, // one sequence; RLE tables: literal length code 3, offset code 2, match length code 52
		// Read backwards from the marker (bit 18): offset extra bits 2
		// (offset 3), then the match length's 16 extra bits.
		byte(mlExtra), byte(mlExtra >> 8), 0x06}
	h := 1 | 2<<1 | len(body)<<3 // last compressed block
	return append([]byte{0x28, 0xB5, 0x2F, 0xFD, 0, wd, byte(h), byte(h >> 8), byte(h >> 16)}, body...)
}

// TestDecodeBlockMaximum: a block's content may not pass the block
// maximum, 128 KiB or the window when smaller (RFC 8878 3.1.1.2.4), nor
// the output bound, and the decoder stops before writing past either,
// not once the block has ended.
func TestDecodeBlockMaximum(t *testing.T) {
	kd, _ := kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1))
	defer kd.Close()
	const mib = 0x50 // window descriptor: 1 MiB
	ok := blockFrame(mib, 0)
	want := bytes.Repeat([]byte("x"), 65542)
	if theirs, err := kd.DecodeAll(ok, nil); err != nil || !bytes.Equal(theirs, want) {
		t.Fatalf("the oracle reads the hand-made frame as %d bytes, %v; fix the frame", len(theirs), err)
	}
	if got, err := testLimits.DecodeAll(ok, nil); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("a 65,542-byte block: %d bytes, %v", len(got), err)
	}
	for _, tc := range []struct {
		name     string
		frame    []byte
		max      int   // MaxOutput
		wantErr  error // and the message naming the maximum, for ErrCorrupt
		blockMax int
	}{
		// 3 + 65539 + 65535 = 131077 bytes, 5 over 128 KiB.
		{"over 128 KiB", blockFrame(mib, 0xFFFF), 64 << 20, ErrCorrupt, 128 << 10},
		// 65542 bytes in a 1 KiB window (descriptor 0).
		{"over the window", blockFrame(0, 0), 64 << 20, ErrCorrupt, 1 << 10},
		// Within the block maximum, over the output bound.
		{"over the output bound", ok, 65541, ErrOutputTooLarge, 128 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &decoder{Decoder: Decoder{MaxOutput: tc.max, MaxWindow: 1 << 20}}
			d.budget = d.workBudget()
			err := d.run(tc.frame)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == ErrCorrupt && !strings.Contains(err.Error(), fmt.Sprintf("block content over %d bytes", tc.blockMax)) {
				t.Errorf("err %q does not name the block maximum %d", err, tc.blockMax)
			}
			if len(d.out) > min(tc.blockMax, tc.max) {
				t.Errorf("wrote %d bytes before refusing; the limit is %d", len(d.out), min(tc.blockMax, tc.max))
			}
		})
	}
}
