package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// TestCommittedOutput requires the committed assembly and declarations to
// be what the generator prints: edit the generator, then run go generate
// in lib/engine.
func TestCommittedOutput(t *testing.T) {
	asmout.CheckGenerated(t, "gemm_fwd_amd64.s", "gemm_fwd_stub_amd64.go", Generate)
}

// TestRow16StreamsGroups pins the decoding kernel's shape (fwdRow16):
// four row groups, each a loop that prefetches one line of each of the
// next group's four rows per weight line it reads (two 16-column chunks
// of bfloat16, one of float32) from a register that is not the one its
// loads use. One row at a time without prefetch streamed bfloat16
// weights at two thirds of the rate.
func TestRow16StreamsGroups(t *testing.T) {
	asm, _, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		name, load string
		chunks     int
	}{{"fwdRow16F32", "VMOVUPS", 1}, {"fwdRow16BF16", "VBROADCASTI32X8", 2}} {
		body := kernelText(t, string(asm), k.name)
		for g := 0; g < 16; g += 4 {
			loop := labelText(t, body, fmt.Sprintf("row%d:", g))
			pf := regexp.MustCompile(`PREFETCHT1\s+\((\w+)\)`).FindAllStringSubmatch(loop, -1)
			loads := regexp.MustCompile(k.load+`\s+\d*\((\w+)\)(\(\w+\*\d\))?, Z(1[7-9]|20)`).FindAllStringSubmatch(loop, -1)
			if len(pf) != 4 || len(loads) != 4*k.chunks {
				t.Fatalf("%s group %d: %d prefetches and %d weight loads, want 4 and %d:\n%s", k.name, g, len(pf), len(loads), 4*k.chunks, loop)
			}
			if pf[0][1] == loads[0][1] {
				t.Errorf("%s group %d prefetches from its own rows' register %s", k.name, g, pf[0][1])
			}
		}
		if k.chunks == 2 {
			loop := labelText(t, body, "row0:")
			if n := strings.Count(loop, "VPSHUFB"); n != 12 {
				t.Errorf("%s: %d VPSHUFB in a group's loop, want 12 (8 chunks' widening, 4 lines' pacing)", k.name, n)
			}
		}
		if strings.Contains(body, "row16:") {
			t.Errorf("%s has a loop per row", k.name)
		}
	}
}

// kernelText is the text of function name in asm, up to its RET.
func kernelText(t *testing.T, asm, name string) string {
	i := strings.Index(asm, "TEXT ·"+name+"(SB)")
	if i < 0 {
		t.Fatalf("no %s in the generated assembly", name)
	}
	return asm[i : i+strings.Index(asm[i:], "RET")]
}

// labelText is body from label to the next blank line.
func labelText(t *testing.T, body, label string) string {
	i := strings.Index(body, "\n"+label+"\n")
	if i < 0 {
		t.Fatalf("no label %s", label)
	}
	s := body[i+1:]
	if j := strings.Index(s, "\n\n"); j >= 0 {
		s = s[:j]
	}
	return s
}

// TestTile4x6PrefetchesX pins the x prefetch of the 4×6 tiles: each
// chunk step prefetches into L1 the four lines xAhead bytes past the ones
// it loads, from the register it loads them from; the tile in pieces
// does so until the last xAhead/256 steps of its piece, which prefetch
// through an index register (the next group's piece, a gstride away).
// Both still prefetch the next tile's weights into L2, and each group's
// output lines (ys[t][col:col+6]) into L1 before its products.
func TestTile4x6PrefetchesX(t *testing.T) {
	asm, _, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		name  string
		split bool
	}{{"fwdTile4x6GF32", false}, {"fwdTile4x6GBF16", false}, {"fwdTile4x6KGF32", true}, {"fwdTile4x6KGBF16", true}} {
		body := kernelText(t, string(asm), k.name)
		step := labelText(t, body, "nopf0:")
		loads := regexp.MustCompile(`VMOVUPS\s+(\d*)\((\w+)\), Z2[4-7]`).FindAllStringSubmatch(step, -1)
		pf := regexp.MustCompile(`PREFETCHT0\s+(\d+)\((\w+)\)\n`).FindAllStringSubmatch(step, -1)
		if len(loads) != 4 || len(pf) != 4 {
			t.Fatalf("%s: %d x loads and %d x prefetches in a step, want 4 and 4:\n%s", k.name, len(loads), len(pf), step)
		}
		for i, p := range pf {
			if p[2] != loads[0][2] || p[1] != fmt.Sprint(xAhead+64*i) {
				t.Errorf("%s: prefetch %d is %s(%s), want %d(%s)", k.name, i, p[1], p[2], xAhead+64*i, loads[0][2])
			}
		}
		if k.split {
			far := labelText(t, body, "nopf1:")
			idx := regexp.MustCompile(`PREFETCHT0\s+\d*\(`+loads[0][2]+`\)\(\w+\*1\)`).FindAllString(far, -1)
			if len(idx) != 4 || !strings.Contains(body, "CMPQ") || !strings.Contains(body, fmt.Sprintf("$0x%02x", xAhead/256)) {
				t.Errorf("%s: the last steps of a piece do not prefetch the next group's piece:\n%s", k.name, far)
			}
		}
		// The next tile: a line at pf, up to pfWideLines-1 more when
		// pfStep is past 64 bytes (fwdPrefetchWide), then pf advances.
		wide := `PREFETCHT1\s+\((\w+)\)\n`
		for l := 1; l < pfWideLines; l++ {
			wide += fmt.Sprintf(`\s+CMPQ\s+pfStep\+\d+\(FP\), \$0x%08x\n\s+JLE\s+(pfadv\d+)\n\s+PREFETCHT1\s+%d\(\w+\)\n`, 64*l, 64*l)
		}
		wide += `\n(pfadv\d+):\n\s+ADDQ\s+pfStep\+\d+\(FP\), (\w+)\n`
		if !regexp.MustCompile(wide).MatchString(body) {
			t.Errorf("%s does not prefetch the next tile's %d lines a step at most, advancing by its pfStep argument:\n%s", k.name, pfWideLines, body)
		}
		if ys := regexp.MustCompile(`PREFETCHT0\s+(20)?\(\w+\)\(\w+\*4\)`).FindAllString(body, -1); len(ys) != 8 {
			t.Errorf("%s prefetches %d output lines a group, want 8 (two for each of four rows): %v", k.name, len(ys), ys)
		}
	}
}

// TestRowLongStreams pins fwdRowLong's shape: four row groups, each a loop
// whose four weight streams (one base register, the span register at
// scales 1 and 2, and three times it) are each prefetched into L2 1 KiB
// past the line they load, from the same register: the streams run on
// across row ends, so a stream's own line ahead is always the next bytes
// it reads.
func TestRowLongStreams(t *testing.T) {
	asm, _, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		name, load string
		chunks     int
	}{{"fwdRowLongF32", "VMOVUPS", 1}, {"fwdRowLongBF16", "VBROADCASTI32X8", 2}} {
		body := kernelText(t, string(asm), k.name)
		for g := range 4 {
			loop := labelText(t, body, fmt.Sprintf("long%d:", g))
			pf := regexp.MustCompile(`PREFETCHT1\s+1024\((\w+)\)(\(\w+\*\d\))?`).FindAllStringSubmatch(loop, -1)
			loads := regexp.MustCompile(k.load+`\s+\d*\((\w+)\)(\(\w+\*\d\))?, Z(1[7-9]|20)`).FindAllStringSubmatch(loop, -1)
			if len(pf) != 4 || len(loads) != 4*k.chunks {
				t.Fatalf("%s group %d: %d prefetches and %d weight loads, want 4 and %d:\n%s", k.name, g, len(pf), len(loads), 4*k.chunks, loop)
			}
			for s := range 4 {
				if pf[s][1] != loads[s][1] || pf[s][2] != loads[s][2] {
					t.Errorf("%s group %d: stream %d prefetches %v, loads %v", k.name, g, s, pf[s][1:], loads[s][1:])
				}
			}
			seen := map[string]bool{}
			for _, l := range loads[:4] {
				seen[l[2]] = true
			}
			if len(seen) != 4 {
				t.Errorf("%s group %d: the four streams' loads use %d addressings, want 4", k.name, g, len(seen))
			}
		}
	}
}
