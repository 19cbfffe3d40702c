package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// pssReadBound bounds a read of smaps_rollup (about 1 KiB: a dozen
// lines), so a changed format cannot make a reading unbounded.
const pssReadBound = 16 << 10

// watchPss reads pid's PSS (Linux's /proc/PID/smaps_rollup) every
// interval until stop is closed and returns the largest reading in MB,
// 0 with none (every <= 0, no such file, or the process gone first).
func watchPss(pid int, every time.Duration, stop <-chan struct{}) float64 {
	if every <= 0 {
		<-stop
		return 0
	}
	path := fmt.Sprintf("/proc/%d/smaps_rollup", pid)
	tick := time.NewTicker(every)
	defer tick.Stop()
	peak := 0.0
	for {
		select {
		case <-stop:
			return peak
		case <-tick.C:
			if kb, err := readPss(path); err == nil {
				peak = max(peak, float64(kb)/1024)
			}
		}
	}
}

// readPss is the Pss line of an smaps_rollup file, in kB.
func readPss(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, pssReadBound))
	if err != nil {
		return 0, err
	}
	i := bytes.Index(b, []byte("\nPss:"))
	if i < 0 {
		return 0, fmt.Errorf("%s: no Pss line", path)
	}
	line, _, _ := bytes.Cut(b[i+len("\nPss:"):], []byte("\n"))
	kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(line), []byte("kB")))), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: Pss line %q: %w", path, line, err)
	}
	return kb, nil
}
