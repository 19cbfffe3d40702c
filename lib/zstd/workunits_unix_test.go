//go:build unix

package zstd

import (
	"syscall"
	"testing"

	kzstd "github.com/klauspost/compress/zstd"
)

// cpuTime is the process's user and system time so far, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime)
}

// BenchmarkWorkUnits reports the decoder's time per work unit on a real
// body and on the two table-heavy frames: a unit should cost about the
// same in each, so that the budget bounds time whatever the frame's shape.
// Under load read cpu-ns/unit (the process's CPU time, collector included).
func BenchmarkWorkUnits(b *testing.B) {
	fsef, _ := heavyFrame(20000, false)
	hufff, _ := heavyFrame(20000, true)
	ke, _ := kzstd.NewWriter(nil, kzstd.WithEncoderConcurrency(1))
	body, short := fwdBody(b, 5, 32, 2048), testInputs(b)["low entropy"]
	empty := []byte{0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x58} // empty raw blocks, the least input per block
	for range 1 << 20 {
		empty = append(empty, 0, 0, 0)
	}
	empty = append(empty, 1, 0, 0)
	for _, c := range []struct {
		name string
		z    []byte
	}{{"body-ours", Encode(nil, body)}, {"body-klauspost", ke.EncodeAll(body, nil)}, {"short-matches", ke.EncodeAll(short, nil)},
		{"empty-blocks", empty}, {"fse-tables", fsef}, {"huffman-tables", hufff}} {
		out, work, err := decodeWork(testLimits, c.z)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			cpu0 := cpuTime()
			for b.Loop() {
				testLimits.DecodeAll(c.z, nil)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(work), "ns/unit")
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/float64(work), "cpu-ns/unit")
			b.ReportMetric(float64(work)/float64(max(len(out), 1)), "units/B")
		})
	}
}
