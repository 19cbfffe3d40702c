package server

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// DefaultTrainMemory is the default training activation budget: a quarter
// of the machine's memory (MemTotal in /proc/meminfo), or 2 GiB where that
// cannot be read.
func DefaultTrainMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 2 << 30
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil || kb <= 0 {
			break
		}
		return kb << 10 / 4
	}
	return 2 << 30
}
