package engine

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stepSample is one timed training step and the FMA peak measured beside
// it: the mean of the probes just before and just after the step, in
// GFLOP/s of wall time and per CPU-second. On this project's shared VMs
// the same binary's step has swung between ~40% and ~60% of a peak
// measured once per run; a step set against its own probes shows whether
// the machine or the step moved.
type stepSample struct {
	wall, cpu       float64 // seconds
	fmaWall, fmaCPU float64 // GFLOP/s, 0 without a vector loop
	gcs             uint32  // garbage collections during the step
	minflt          int64   // minor page faults during the step (the kernel zeroing fresh pages)
}

// timedSteps runs step once per b.Loop iteration between two FMA probes
// and returns one sample per step; each step's figures also go to the
// benchmark's log, so a run's spread can be read step by step.
func timedSteps(b *testing.B, step func()) []stepSample {
	var out []stepSample
	for b.Loop() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		gc0 := ms.NumGC
		w0, c0, _ := fmaProbe()
		f0 := minorFaults()
		cpu0, t0 := processCPU(), time.Now()
		step()
		s := stepSample{wall: time.Since(t0).Seconds(), cpu: processCPU() - cpu0, minflt: minorFaults() - f0}
		runtime.ReadMemStats(&ms)
		s.gcs = ms.NumGC - gc0
		w1, c1, _ := fmaProbe()
		s.fmaWall, s.fmaCPU = (w0+w1)/2, (c0+c1)/2
		out = append(out, s)
	}
	return out
}

// minorFaults is the process's minor page faults so far (getrusage
// ru_minflt): a fault maps a page the process had not touched, most often
// a fresh one the kernel zeroes first (clear_page_erms in a profile), so a
// step's count says whether the step touches memory it did not hold before.
func minorFaults() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return int64(ru.Minflt)
}

// stepRange is the median, least and greatest of a figure over a run's steps.
type stepRange struct{ med, lo, hi float64 }

// spreadOf takes each sample's figure f. The median of an even count is
// the mean of the middle two.
func spreadOf(ss []stepSample, f func(stepSample) float64) stepRange {
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = f(s)
	}
	slices.Sort(v)
	n := len(v)
	return stepRange{med: (v[(n-1)/2] + v[n/2]) / 2, lo: v[0], hi: v[n-1]}
}

// reportSteps reports a run's medians, the MFU spread against each step's
// own probes, and logs every step; flop is one step's FLOPs, tokens its
// tokens. It returns the median wall and CPU seconds of a step.
func reportSteps(b *testing.B, ss []stepSample, flop float64, tokens int) (wall, cpu float64) {
	w, c := spreadOf(ss, func(s stepSample) float64 { return s.wall }), spreadOf(ss, func(s stepSample) float64 { return s.cpu })
	for i, s := range ss {
		b.Logf("step %d: %.3f s, %.3f cpu-s, %.1f GFLOP/s, FMA probe %.1f GFLOP/s (%.1f per cpu-s), MFU %.1f%%, MFU-cpu %.1f%%, %d GCs, %d minor faults",
			i, s.wall, s.cpu, flop/s.wall/1e9, s.fmaWall, s.fmaCPU, s.mfu(flop), s.mfuCPU(flop), s.gcs, s.minflt)
	}
	if kb, ok := anonHugeKB(); ok {
		b.Logf("AnonHugePages %d MiB after the steps", kb>>10)
	}
	b.ReportMetric(w.med, "s/step")
	b.ReportMetric(c.med, "cpu-s/step")
	b.ReportMetric(spreadOf(ss, func(s stepSample) float64 { return float64(s.minflt) }).med, "minflt/step")
	b.ReportMetric(float64(tokens)/w.med, "tok/s")
	b.ReportMetric(float64(tokens)/c.med, "tok/cpu-s")
	if ss[0].fmaWall > 0 {
		fw, fc := spreadOf(ss, func(s stepSample) float64 { return s.fmaWall }), spreadOf(ss, func(s stepSample) float64 { return s.fmaCPU })
		m, mc := spreadOf(ss, func(s stepSample) float64 { return s.mfu(flop) }), spreadOf(ss, func(s stepSample) float64 { return s.mfuCPU(flop) })
		b.ReportMetric(fw.med, "GFLOP/s-fma-peak")
		b.ReportMetric(fc.med, "GFLOP/cpu-s-fma-peak")
		b.ReportMetric(m.med, "%MFU")
		b.ReportMetric(m.lo, "%MFU-min")
		b.ReportMetric(m.hi, "%MFU-max")
		b.ReportMetric(mc.med, "%MFU-cpu")
		b.ReportMetric(mc.lo, "%MFU-cpu-min")
		b.ReportMetric(mc.hi, "%MFU-cpu-max")
	}
	return w.med, c.med
}

// anonHugeKB is the process's memory in transparent huge pages
// (AnonHugePages of /proc/self/smaps_rollup, Linux only).
func anonHugeKB() (int, bool) {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "AnonHugePages:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb, err == nil
		}
	}
	return 0, false
}

// mfu is the step's FLOPs per second of wall time as a percentage of its
// probes' FMA peak; mfuCPU the same per CPU-second.
func (s stepSample) mfu(flop float64) float64    { return 100 * flop / s.wall / 1e9 / s.fmaWall }
func (s stepSample) mfuCPU(flop float64) float64 { return 100 * flop / s.cpu / 1e9 / s.fmaCPU }

// TestSpreadOfTakesMedianAndRange pins spreadOf on odd and even counts
// and unsorted input.
func TestSpreadOfTakesMedianAndRange(t *testing.T) {
	wall := func(s stepSample) float64 { return s.wall }
	for _, tc := range []struct {
		in   []float64
		want stepRange
	}{{[]float64{3}, stepRange{3, 3, 3}}, {[]float64{5, 1, 4}, stepRange{4, 1, 5}}, {[]float64{9, 2, 4, 1}, stepRange{3, 1, 9}}} {
		ss := make([]stepSample, len(tc.in))
		for i, v := range tc.in {
			ss[i].wall = v
		}
		if got := spreadOf(ss, wall); got != tc.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
