package engine

import "testing"

// BenchmarkDecodeOnly decodes the bfloat16 Qwen3-0.6B shape, one
// sequence, decodeTokens tokens after a one-token prompt, with nothing
// else in the process between the decodes (no read probes, unlike
// BenchmarkDecode): the run to profile a decoding token under perf, and
// to alternate with another build's.
func BenchmarkDecodeOnly(b *testing.B) {
	m := qwen3SmallBF16(b, "qwen3-0.6b-shape")
	var cpu float64
	toks := 0
	for b.Loop() {
		_, c := sampleTimed(b, m, []int{0}, decodeTokens+1)
		cpu += c
		toks += decodeTokens + 1
	}
	b.ReportMetric(float64(toks)/b.Elapsed().Seconds(), "tok/s")
	b.ReportMetric(float64(toks)/cpu, "tok/cpu-s")
}
