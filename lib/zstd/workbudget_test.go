package zstd

import (
	"bytes"
	"errors"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	kzstd "github.com/klauspost/compress/zstd"
)

// decodeWork decodes z under lim and returns the output, the work units
// spent and the error.
func decodeWork(lim Decoder, z []byte) ([]byte, int64, error) {
	d := &decoder{Decoder: lim, budget: lim.workBudget()}
	err := d.run(z)
	return d.out, d.work, err
}

// TestWorkBudgetStopsHeavyFrames: a frame of tiny blocks that each
// describe new tables (valid: klauspost decodes a short one as we do)
// is refused with ErrTooMuchWork once the budget for the allowed output
// is spent, and the tables built by then fit the budget: counted from
// the blocks decoded, not from the decoder's own counter.
func TestWorkBudgetStopsHeavyFrames(t *testing.T) {
	kd, _ := kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1), kzstd.WithDecoderMaxMemory(1<<30))
	defer kd.Close()
	for _, huff := range []bool{false, true} {
		short, want := heavyFrame(200, huff)
		theirs, kerr := kd.DecodeAll(short, nil)
		if kerr != nil || len(theirs) != len(want) {
			t.Fatalf("huff=%v: oracle decodes %d bytes, %v", huff, len(theirs), kerr)
		}
		if got, err := testLimits.DecodeAll(short, nil); err != nil || !bytes.Equal(got, theirs) {
			t.Fatalf("huff=%v: we decode %d bytes, %v", huff, len(got), err)
		}

		// 1 MiB of content allowed; the frame's 8 MiB of input would
		// otherwise build tables for hundreds of thousands of blocks.
		lim := Decoder{MaxOutput: 1 << 20, MaxWindow: 1 << 24}
		perBlock, states, blockIn := 3, 512+256+512, 16
		if huff {
			perBlock, states, blockIn = 4, states+2048, 21
		}
		f, _ := heavyFrame((8<<20)/blockIn, huff)
		out, work, err := decodeWork(lim, f)
		if !errors.Is(err, ErrTooMuchWork) {
			t.Fatalf("huff=%v: %d-byte frame: %d bytes, err %v; want ErrTooMuchWork", huff, len(f), len(out), err)
		}
		blocks := (len(out) - 4) / perBlock
		budget := lim.workBudget()
		if built := int64(blocks) * int64(states) * workPerState; built > budget || blocks == 0 {
			t.Errorf("huff=%v: %d blocks decoded, %d units of tables built; budget %d", huff, blocks, built, budget)
		}
		if work > budget+workPerState*(2048+255) {
			t.Errorf("huff=%v: stopped at %d units, budget %d: over by more than one step", huff, work, budget)
		}
		t.Logf("huff=%v: stopped after %d of %d blocks (%d units)", huff, blocks, (8<<20)/blockIn, work)
	}
}

// TestWorkOfRealFrames: frames real encoders write (ours; klauspost's at
// four levels, one-shot and streamed with a flush every 4 KiB; the
// reference zstd CLI's when it is installed, with its usual blocks and
// with ~256-byte ones) cost well under the budget per byte of content, so
// a frame at the output bound still decodes: at most half of
// workBudgetPerByte units per byte.
func TestWorkOfRealFrames(t *testing.T) {
	cli, err := exec.LookPath("zstd")
	if err != nil {
		t.Logf("no zstd command: the reference encoder's frames are left out")
	}
	levels := []kzstd.EncoderLevel{kzstd.SpeedFastest, kzstd.SpeedDefault, kzstd.SpeedBetterCompression, kzstd.SpeedBestCompression}
	worst, worstName := 0.0, ""
	for name, in := range testInputs(t) {
		if len(in) < 4096 {
			continue // the per-frame constant dominates; workBudgetBase covers it
		}
		frames := map[string][]byte{"ours": Encode(nil, in)}
		for _, lvl := range levels {
			e, _ := kzstd.NewWriter(nil, kzstd.WithEncoderLevel(lvl), kzstd.WithEncoderConcurrency(1))
			frames["klauspost "+lvl.String()] = e.EncodeAll(in, nil)
			var buf bytes.Buffer
			e.Reset(&buf)
			for rest := in; len(rest) > 0; rest = rest[min(4096, len(rest)):] {
				e.Write(rest[:min(4096, len(rest))])
				e.Flush()
			}
			e.Close()
			frames["klauspost streamed "+lvl.String()] = buf.Bytes()
		}
		for _, args := range [][]string{{"-1"}, {"-3"}, {"-19"}, {"-3", "--target-compressed-block-size=256"}} {
			if cli == "" {
				break
			}
			cmd := exec.Command(cli, append([]string{"-q", "-c"}, args...)...)
			cmd.Stdin = bytes.NewReader(in)
			if z, err := cmd.Output(); err == nil { // an older CLI may lack the block size flag
				frames["zstd "+strings.Join(args, " ")] = z
			}
		}
		for how, z := range frames {
			out, work, err := decodeWork(testLimits, z)
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("%s, %s: %d bytes, err %v", name, how, len(out), err)
			}
			perByte := float64(work) / float64(len(in))
			if perByte > worst {
				worst, worstName = perByte, name+", "+how
			}
			if perByte > workBudgetPerByte/2 {
				t.Errorf("%s, %s: %.2f units per byte of content, over half the budget's %d", name, how, perByte, workBudgetPerByte)
			}
		}
	}
	t.Logf("worst: %.2f units per byte (%s)", worst, worstName)
}

// TestManySmallFramesAllocateLinearly: a stream of many frames that each
// declare a tiny content size grows the output geometrically, not by the
// size declared (which copied everything so far once per frame: 6 M
// one-byte frames in a 64 MiB body would have copied ~10^13 bytes).
// Measured in bytes allocated, not time.
func TestManySmallFramesAllocateLinearly(t *testing.T) {
	const n = 20000
	var z []byte
	for range n { // single segment, content size 1, one raw last block "x"
		z = append(z, 0x28, 0xB5, 0x2F, 0xFD, 0x20, 1, 0x09, 0, 0, 'x')
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := testLimits.DecodeAll(z, nil)
	runtime.ReadMemStats(&after)
	if err != nil || len(out) != n {
		t.Fatalf("%d frames: %d bytes, err %v", n, len(out), err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16*n+4<<20 {
		t.Errorf("%d one-byte frames allocated %d bytes; want O(content)", n, alloc)
	}
}

// TestHeavyFramesReuseTables: blocks that each describe a new Huffman
// tree and new FSE tables build them into the decoder's reused memory:
// 5,000 such blocks allocate about the output, not a table per block
// (a 2,048-entry tree is 4 KiB).
func TestHeavyFramesReuseTables(t *testing.T) {
	f, want := heavyFrame(5000, true)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := testLimits.DecodeAll(f, nil)
	runtime.ReadMemStats(&after)
	if err != nil || len(out) != len(want) {
		t.Fatalf("%d bytes, err %v", len(out), err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("%d table-describing blocks allocated %d bytes; want the tables' memory reused", 5000, alloc)
	}
}
