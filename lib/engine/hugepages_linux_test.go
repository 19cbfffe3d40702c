package engine

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
	"golang.org/x/sys/unix"
)

// smapsMapping is one mapping of /proc/self/smaps: its range, its
// AnonHugePages in kB and its VmFlags words.
type smapsMapping struct {
	lo, hi uintptr
	hugeKB int
	flags  []string
}

// smapsMappings reads /proc/self/smaps (the test skips without it).
func smapsMappings(t *testing.T) []smapsMapping {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps to read: %v", err)
	}
	defer f.Close()
	var ms []smapsMapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fs[0], "-"); ok && !strings.HasSuffix(fs[0], ":") {
			a, _ := strconv.ParseUint(lo, 16, 64)
			b, _ := strconv.ParseUint(hi, 16, 64)
			ms = append(ms, smapsMapping{lo: uintptr(a), hi: uintptr(b)})
			continue
		}
		if len(ms) == 0 {
			continue
		}
		switch m := &ms[len(ms)-1]; fs[0] {
		case "AnonHugePages:":
			m.hugeKB, _ = strconv.Atoi(fs[1])
		case "VmFlags:":
			m.flags = fs[1:]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read smaps: %v", err)
	}
	return ms
}

// smapsOf returns the /proc/self/smaps block of the mapping that holds
// address p: its VmFlags words and its AnonHugePages in kB.
func smapsOf(t *testing.T, p uintptr) (flags []string, hugeKB int) {
	t.Helper()
	for _, m := range smapsMappings(t) {
		if m.lo <= p && p < m.hi {
			return m.flags, m.hugeKB
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

// notAdvised is how many bytes of [lo, hi) lie outside mappings marked for
// transparent huge pages (VmFlags "hg"), from /proc/self/smaps.
func notAdvised(t *testing.T, lo, hi uintptr) int {
	t.Helper()
	covered := 0
	for _, m := range smapsMappings(t) {
		if slices.Contains(m.flags, "hg") && m.lo < hi && m.hi > lo {
			covered += int(min(m.hi, hi) - max(m.lo, lo))
		}
	}
	return int(hi-lo) - covered
}

// TestLoadedMatricesInHugePages requires every byte of a loaded
// checkpoint's matrices, the bytes a decoding step streams, to lie in
// mappings marked for transparent huge pages: float32, bfloat16 kept, and
// the bf16 path's packed copies. Each matrix advised on its own left its
// first and last partial 2 MiB in 4 KiB pages (a 2 MiB bfloat16 k or v
// none at all), and the bfloat16 model read slower than the float32 one
// (hugeSlab).
func TestLoadedMatricesInHugePages(t *testing.T) {
	c := qwen3Small()
	c.Layers, c.VocabSize = 1, 1024 // every matrix at least 2 MiB in bfloat16
	ts := randomTensors(c, 3)
	for _, tc := range []struct {
		name    string
		dtype   safetensors.DType
		opt     LoadOptions
		compute bool
	}{
		{"f32", safetensors.F32, LoadOptions{}, false},
		{"bf16", safetensors.BF16, LoadOptions{BF16: BF16Keep}, false},
		{"bf16-compute", safetensors.BF16, LoadOptions{BF16Compute: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.compute && !bf16Compute() {
				t.Skip("no bf16 compute on this CPU")
			}
			dir := t.TempDir()
			writeHFDir(t, dir, c, ts, tc.dtype, 1)
			m, err := LoadDirWith(dir, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			ws := decodeMatrixWords(m)
			if len(ws) != 8 {
				t.Fatalf("%d matrices, want 8", len(ws))
			}
			total, bad := 0, 0
			for _, w := range ws {
				lo := uintptr(unsafe.Pointer(unsafe.SliceData(w)))
				total += len(w) * 8
				bad += notAdvised(t, lo, lo+uintptr(len(w))*8)
			}
			if bad > 0 {
				t.Fatalf("%d of the matrices' %d bytes outside MADV_HUGEPAGE mappings", bad, total)
			}
		})
	}
}

// TestConvertedMatricesInHugePages is TestLoadedMatricesInHugePages for
// the matrices converted at load rather than read: GPT-OSS's fused MXFP4
// (and dense) experts, split per expert (gptoss_load.go), and DeepSeek
// V3.1's FP8 and Kimi K2's INT4 weights (quant_load.go), in float32 and
// kept in bfloat16; and the fused experts of transformers 5.x's layout
// for the other MoE families (splitFusedExperts, here Qwen3-MoE's), in
// bf16 compute too. Each is 2 MiB or more in bfloat16, so that every one
// comes from the slab.
func TestConvertedMatricesInHugePages(t *testing.T) {
	modes := []struct {
		name string
		opt  LoadOptions
	}{{"f32", LoadOptions{BF16: BF16Widen}}, {"bf16", LoadOptions{BF16: BF16Keep}}}

	g := gptOssConfig()
	g.Hidden, g.MoEIntermediate, g.Experts, g.ExpertsPerToken = 1024, 1024, 2, 1
	g.Layers, g.LayerTypes = 1, g.LayerTypes[:1]
	for _, dense := range []bool{false, true} {
		_, file := gptOssCheckpoint(g, 5, dense)
		dir := writeCheckpoint(t, g, file)
		for _, mode := range modes {
			t.Run(fmt.Sprintf("gpt-oss/dense=%v/%s", dense, mode.name), func(t *testing.T) {
				requireExpertsAdvised(t, dir, mode.opt)
			})
		}
	}

	f := moeConfig(true)
	f.Hidden, f.MoEIntermediate, f.Experts, f.ExpertsPerToken = 1024, 1024, 2, 1
	f.Layers, f.MLPOnlyLayers, f.VocabSize = 1, nil, 64
	fdir := t.TempDir()
	writeHFDir(t, fdir, f, fuseExperts(f, randomTensors(f, 4)), safetensors.BF16, 1)
	for _, mode := range append(modes, struct {
		name string
		opt  LoadOptions
	}{"bf16-compute", LoadOptions{BF16Compute: true}}) {
		t.Run("fused-qwen3-moe/"+mode.name, func(t *testing.T) {
			if mode.opt.BF16Compute && !bf16Compute() {
				t.Skip("no bf16 compute on this CPU")
			}
			requireExpertsAdvised(t, fdir, mode.opt)
		})
	}

	q, err := TinyConfig(models.TinyDeepSeek)
	if err != nil {
		t.Fatal(err)
	}
	q.Layers, q.Intermediate = 1, 16384 // the dense layer only; [16384, 64] is 2 MiB in bfloat16
	ts := randomTensors(q, 9)
	for _, kimi := range []bool{false, true} {
		qcfg := map[string]any{"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": qtBlock[:]}
		if kimi {
			qcfg = map[string]any{"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": map[string]any{
				"group_0": map[string]any{"weights": map[string]any{"num_bits": 4, "group_size": qtGroup, "symmetric": true, "type": "int"}}}}
		}
		var stored []safetensors.Tensor
		for _, n := range sortedKeys(ts) {
			switch {
			case strings.Contains(n, ".mlp.") && kimi:
				parts, _ := qtInt4(n, ts[n])
				stored = append(stored, parts...)
			case strings.Contains(n, ".mlp."):
				parts, _ := qtFP8(n, ts[n])
				stored = append(stored, parts...)
			default:
				stored = append(stored, f32Tensor(n, ts[n]))
			}
		}
		dir := t.TempDir()
		qtWrite(t, dir, q, false, qcfg, stored)
		for _, mode := range modes {
			t.Run(fmt.Sprintf("%s/%s", map[bool]string{false: "fp8", true: "int4"}[kimi], mode.name), func(t *testing.T) {
				m, err := LoadDirWith(dir, mode.opt)
				if err != nil {
					t.Fatal(err)
				}
				l := m.w.layers[0]
				requireAdvised(t, []mat{l.gate, l.up, l.down})
			})
		}
	}
}

// requireExpertsAdvised loads dir with opt and requires its first layer's
// experts to lie in huge-page mappings (requireAdvised).
func requireExpertsAdvised(t *testing.T, dir string, opt LoadOptions) {
	t.Helper()
	m, err := LoadDirWith(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	var ms []mat
	for _, x := range m.w.layers[0].moe.experts {
		ms = append(ms, x.gate, x.up, x.down)
	}
	requireAdvised(t, ms)
}

// requireAdvised requires every byte of ms (the bf16 compute copy, the
// bfloat16 or the float32 data) to lie in huge-page mappings.
func requireAdvised(t *testing.T, ms []mat) {
	t.Helper()
	total, bad := 0, 0
	for _, x := range ms {
		var lo, n uintptr
		switch {
		case x.vn != nil:
			lo, n = uintptr(unsafe.Pointer(unsafe.SliceData(x.vn))), uintptr(2*len(x.vn))
		case x.bf != nil:
			lo, n = uintptr(unsafe.Pointer(unsafe.SliceData(x.bf))), uintptr(2*len(x.bf))
		default:
			lo, n = uintptr(unsafe.Pointer(unsafe.SliceData(x.data))), uintptr(4*len(x.data))
		}
		if n < hugePage {
			t.Fatalf("a %d-byte matrix: too small for the slab; enlarge the test's shapes", n)
		}
		total += int(n)
		bad += notAdvised(t, lo, lo+n)
	}
	if bad > 0 {
		t.Fatalf("%d of the converted matrices' %d bytes outside MADV_HUGEPAGE mappings", bad, total)
	}
}

// TestMinorFaultsCountFreshPages pins minorFaults, the training
// benchmark's faults-per-step figure: touching every 4 KiB page of a fresh
// mapping kept out of huge pages faults once a page, which minorFaults
// must see.
func TestMinorFaultsCountFreshPages(t *testing.T) {
	const size, page = 16 << 20, 4 << 10
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatalf("mmap %d bytes: %v", size, err)
	}
	defer func() { _ = unix.Munmap(b) }()
	// A kernel without transparent huge pages refuses the advice (EINVAL),
	// and its pages are 4 KiB anyway.
	if err := unix.Madvise(b, unix.MADV_NOHUGEPAGE); err != nil && err != unix.EINVAL {
		t.Fatalf("madvise NOHUGEPAGE: %v", err)
	}
	f0 := minorFaults()
	for i := 0; i < size; i += page {
		b[i] = 1
	}
	// Fault-around and other threads can move the count a little either
	// way; a counter that missed the faults would be far below.
	if got := minorFaults() - f0; got < size/page*3/4 {
		t.Fatalf("touching %d fresh pages counted %d minor faults", size/page, got)
	}
}
