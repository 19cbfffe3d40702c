package shell

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestMemTotalMatchesMeminfo: sysinfo's total is /proc/meminfo's MemTotal.
func TestMemTotalMatchesMeminfo(t *testing.T) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			want = kb << 10
		}
	}
	if got := memTotal(); got != want || got == 0 {
		t.Fatalf("memTotal() = %d, /proc/meminfo MemTotal = %d", got, want)
	}
}
