package main

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestSplitArgs: commands between "--"s, an empty one kept (run refuses it).
func TestSplitArgs(t *testing.T) {
	var got [][]string
	for cmd := range splitArgs([]string{"a", "1", "--", "b", "--", "--", "c", "2", "3"}) {
		got = append(got, cmd)
	}
	want := [][]string{{"a", "1"}, {"b"}, {}, {"c", "2", "3"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("splitArgs = %q, want %q", got, want)
	}
}

// TestRunWatchedPss: a process that runs past a few readings has a peak
// PSS, at least the 64 MiB it writes and at most its peak RSS (wait4's,
// which counts each page once in one process); one that is not watched
// has none.
func TestRunWatchedPss(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("PSS is read on Linux only")
	}
	if _, err := os.Stat("/proc/self/smaps_rollup"); err != nil {
		t.Skip("no smaps_rollup")
	}
	// A helper run of this test binary: writes 64 MiB and holds it.
	if os.Getenv("TINKER_BENCH_HOLD") != "" {
		b := make([]byte, 64<<20)
		for i := range b {
			b[i] = byte(i)
		}
		time.Sleep(300 * time.Millisecond)
		runtime.KeepAlive(b)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{exe, "-test.run", "^TestRunWatchedPss$"}
	env := append(os.Environ(), "TINKER_BENCH_HOLD=1")
	r, _, err := runWatched(argv, env, 10*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.pss < 64 || r.pss > r.rss+1 {
		t.Errorf("peak PSS %.1f MB of a process holding 64 MiB, peak RSS %.1f MB", r.pss, r.rss)
	}
	if r, _, err = runOnce(argv, env); err != nil || r.pss != 0 {
		t.Errorf("unwatched: PSS %.1f MB (%v)", r.pss, err)
	}
	if _, err := readPss(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("readPss of a missing file: no error")
	}
}
