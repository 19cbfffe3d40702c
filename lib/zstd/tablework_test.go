package zstd

import (
	"bytes"
	"testing"

	kzstd "github.com/klauspost/compress/zstd"
)

// tableHeavyFrame is a frame of n small blocks that each describe three
// 512- or 256-state FSE tables for one 3-byte match: the most table building a
// hostile sender gets per input byte.
func tableHeavyFrame(n int) ([]byte, []byte) { return heavyFrame(n, false) }

// heavyFrame is tableHeavyFrame, each block with a new 2,048-entry
// Huffman tree for one literal as well when huff is set.
func heavyFrame(n int, huff bool) ([]byte, []byte) {
	f := []byte{0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x58} // no size, 16 MiB window
	f = append(f, 0x20, 0, 0, 'a', 'b', 'c', 'd')   // raw block "abcd"
	want := []byte("abcd")
	for i := 0; i < n; i++ {
		size := uint32(13)
		if huff {
			size = 23
		}
		hdr := size<<3 | 2<<1
		if i == n-1 {
			hdr |= 1
		}
		f = append(f, byte(hdr), byte(hdr>>8), byte(hdr>>16))
		if huff {
			// Compressed literals, one stream, 1 literal in 8 bytes: a tree of
			// weights 11, 10, ..., 1 listed four bits each (the last symbol's
			// implied 1: 2,048 entries, two of the longest codes as RFC 8878
			// wants), then the 1-bit code 1 of symbol 0 under its end marker.
			lh := uint32(2) | 1<<4 | 8<<14
			f = append(f, byte(lh), byte(lh>>8), byte(lh>>16), 127+11, 0xBA, 0x98, 0x76, 0x54, 0x32, 0x10, 0x03)
		} else {
			f = append(f, 0) // no literals
		}
		f = append(f, 1, 0xA8)                            // one sequence, three described tables
		f = append(f, 0xE4, 0xFF, 0xE3, 0x7F, 0xE4, 0xFF) // logs 9, 8, 9: symbol 0 holds all states but one
		f = append(f, 0, 0, 0, 0x04)                      // states 0, no extra bits: a repeat offset, length 3
		want = append(want, "xyz"...)                     // 3 bytes; which ones, the repeat offsets decide
		if huff {
			want = append(want, 0) // the literal, after the match
		}
	}
	return f, want
}

// TestTableHeavyFrame: described tables in every block, each built into
// the same reused memory, decode as klauspost decodes them.
// BenchmarkTableHeavy is the CPU such a frame costs (about what
// klauspost's decoder spends: zstd lets every block describe tables).
func TestTableHeavyFrame(t *testing.T) {
	f, want := tableHeavyFrame(20000)
	kd, _ := kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1), kzstd.WithDecoderMaxMemory(1<<30))
	defer kd.Close()
	theirs, kerr := kd.DecodeAll(f, nil)
	got, err := testLimits.DecodeAll(f, nil)
	if kerr != nil || len(theirs) != len(want) {
		t.Fatalf("oracle: %d bytes, %v", len(theirs), kerr)
	}
	if err != nil || !bytes.Equal(got, theirs) {
		t.Fatalf("ours: %d bytes, %v", len(got), err)
	}
}

// BenchmarkTableHeavy decodes a frame of 20,000 table-describing blocks,
// beside klauspost's decoder on the same frame.
func BenchmarkTableHeavy(b *testing.B) {
	f, _ := tableHeavyFrame(20000)
	kd, _ := kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1), kzstd.WithDecoderMaxMemory(1<<30))
	defer kd.Close()
	b.Run("ours", func(b *testing.B) {
		for b.Loop() {
			testLimits.DecodeAll(f, nil)
		}
	})
	b.Run("klauspost", func(b *testing.B) {
		for b.Loop() {
			kd.DecodeAll(f, nil)
		}
	})
}
