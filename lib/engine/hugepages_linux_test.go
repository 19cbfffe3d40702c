package engine

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// smapsOf returns the /proc/self/smaps block of the mapping that holds
// address p: its VmFlags words and its AnonHugePages in kB.
func smapsOf(t *testing.T, p uintptr) (flags []string, hugeKB int) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps to read: %v", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fs[0], "-"); ok && !strings.HasSuffix(fs[0], ":") {
			a, _ := strconv.ParseUint(lo, 16, 64)
			b, _ := strconv.ParseUint(hi, 16, 64)
			in = uintptr(a) <= p && p < uintptr(b)
			continue
		}
		switch {
		case in && fs[0] == "AnonHugePages:":
			hugeKB, _ = strconv.Atoi(fs[1])
		case in && fs[0] == "VmFlags:":
			return fs[1:], hugeKB
		}
	}
	t.Fatalf("no mapping holds %#x", p)
	return nil, 0
}

// TestArenaAdvisesHugePages requires the training arena's buffer to sit in
// a mapping marked for transparent huge pages (VmFlags "hg", which
// madvise(MADV_HUGEPAGE) sets): where THP is madvise-only, as on the VMs
// this project measures on, the Go heap gets none without it.
func TestArenaAdvisesHugePages(t *testing.T) {
	var a arena
	a.reserve(16 << 20) // 64 MiB
	mid := uintptr(unsafe.Pointer(&a.buf[len(a.buf)/2]))
	for i := 0; i < len(a.buf); i += 1024 {
		a.buf[i] = 1
	}
	flags, huge := smapsOf(t, mid)
	t.Logf("VmFlags %v, AnonHugePages %d kB", flags, huge)
	if !slices.Contains(flags, "hg") {
		t.Fatalf("arena mapping VmFlags %v lack hg: no MADV_HUGEPAGE", flags)
	}
}

// TestWeightsAdviseHugePages requires a weight converted at load to sit in
// a mapping marked for transparent huge pages, like the arena's.
func TestWeightsAdviseHugePages(t *testing.T) {
	st, err := safetensors.FromFloat32("w", safetensors.BF16, []int{1024, 4096}, make([]float32, 1024*4096))
	if err != nil {
		t.Fatal(err)
	}
	w, err := toTensor(&st)
	if err != nil {
		t.Fatal(err)
	}
	flags, huge := smapsOf(t, uintptr(unsafe.Pointer(&w.Data[len(w.Data)/2])))
	t.Logf("VmFlags %v, AnonHugePages %d kB", flags, huge)
	if !slices.Contains(flags, "hg") {
		t.Fatalf("weight mapping VmFlags %v lack hg: no MADV_HUGEPAGE", flags)
	}
}
