package zstd

import (
	"bytes"
	"math/rand/v2"
	"testing"

	kzstd "github.com/klauspost/compress/zstd"
)

var testLimits = Decoder{MaxOutput: 64 << 20, MaxWindow: 32 << 20}

// testInputs are the bodies both directions of the differential tests
// run over: realistic training bodies, random, repetitive and edge data.
func testInputs(t testing.TB) map[string][]byte {
	r := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 300<<10)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog; "), 5000)
	lowEntropy := make([]byte, 200<<10)
	for i := range lowEntropy {
		lowEntropy[i] = "abcd"[r.IntN(4)]
	}
	letters := make([]byte, 50<<10) // few matches, 16 symbols: direct Huffman weights, blocks without sequences
	for i := range letters {
		letters[i] = byte('a' + r.IntN(16))
	}
	lowBytes := make([]byte, 8<<10) // symbols 0-3: Huffman weights written four bits each
	for i := range lowBytes {
		lowBytes[i] = byte(r.IntN(4))
	}
	return map[string][]byte{"letters": letters, "bytes 0-3": lowBytes,
		"empty": {}, "one byte": {7}, "zeros 1 MiB": make([]byte, 1<<20),
		"random 300 KiB": random, "text": text, "low entropy": lowEntropy,
		"fwd body small": fwdBody(t, 1, 1, 64), "fwd body 8x512": fwdBody(t, 2, 8, 512),
		"fwd body 32x2048": fwdBody(t, 3, 32, 2048),
	}
}

// TestDecodeKlauspostFrames: frames klauspost writes at each level, with
// and without checksum and content size, decode to the input.
func TestDecodeKlauspostFrames(t *testing.T) {
	levels := []kzstd.EncoderLevel{kzstd.SpeedFastest, kzstd.SpeedDefault, kzstd.SpeedBetterCompression, kzstd.SpeedBestCompression}
	for name, in := range testInputs(t) {
		for _, lvl := range levels {
			for _, crc := range []bool{true, false} {
				e, err := kzstd.NewWriter(nil, kzstd.WithEncoderLevel(lvl), kzstd.WithEncoderCRC(crc), kzstd.WithEncoderConcurrency(1))
				if err != nil {
					t.Fatal(err)
				}
				z := e.EncodeAll(in, nil)
				got, err := testLimits.DecodeAll(z, nil)
				if err != nil || !bytes.Equal(got, in) {
					t.Errorf("%s at %v crc=%v: %d bytes, err %v; want the %d input bytes", name, lvl, crc, len(got), err, len(in))
				}
			}
		}
	}
}

// TestDecodeStreamingFrames: klauspost's streaming writer makes frames
// without a content size, with a window descriptor and many blocks.
func TestDecodeStreamingFrames(t *testing.T) {
	in := testInputs(t)["fwd body 32x2048"]
	var buf bytes.Buffer
	w, _ := kzstd.NewWriter(&buf, kzstd.WithWindowSize(1<<17), kzstd.WithEncoderConcurrency(1))
	w.Write(in)
	w.Close()
	got, err := testLimits.DecodeAll(buf.Bytes(), nil)
	if err != nil || !bytes.Equal(got, in) {
		t.Fatalf("streamed frame: %d bytes, err %v; want %d", len(got), err, len(in))
	}
}

// TestDecodeRLEAndRepeatModes: a hand-made frame whose first block has
// RLE literals and RLE sequence tables and whose second repeats those
// tables decodes as klauspost decodes it.
func TestDecodeRLEAndRepeatModes(t *testing.T) {
	frame := []byte{0x28, 0xB5, 0x2F, 0xFD, 0x20, 18, // single segment, 18 bytes
		0x44, 0, 0, // compressed block of 8 bytes
		0x19, 'x', // RLE literals: 3 x
		1, 0x54, 3, 2, 3, // one sequence; RLE tables: literal length 3, offset code 2, match length 6
		0x06,       // offset extra bits 2 (offset 3), end marker
		0x2D, 0, 0, // last compressed block of 5 bytes
		0x19, 'y', 1, 0xFC, 0x06} // RLE literals 3 y; one sequence, every table repeated
	want := []byte("xxxxxxxxxyyyyyyyyy")
	kd, _ := kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1))
	defer kd.Close()
	if theirs, err := kd.DecodeAll(frame, nil); err != nil || !bytes.Equal(theirs, want) {
		t.Fatalf("the oracle reads the hand-made frame as %q, %v; fix the frame", theirs, err)
	}
	if got, err := testLimits.DecodeAll(frame, nil); err != nil || !bytes.Equal(got, want) {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}
