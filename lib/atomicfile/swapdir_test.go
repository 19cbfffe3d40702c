package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// mkCopy makes directory p holding one file f with content s.
func mkCopy(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "f"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func content(p string) string {
	b, err := os.ReadFile(filepath.Join(p, "f"))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestSwapDir(t *testing.T) {
	for _, atomic := range []bool{true, false} {
		name := map[bool]string{true: "exchange", false: "two-step"}[atomic]
		t.Run(name, func(t *testing.T) {
			if !atomic {
				defer DisableAtomicRename()()
			}
			parent := t.TempDir()
			dir := filepath.Join(parent, "ck")
			for i, s := range []string{"first", "second", "third"} {
				td, err := MkdirTemp(parent, ".ck.tmp-")
				if err != nil {
					t.Fatal(err)
				}
				mkCopy(t, td.Path, s)
				if err := SwapDir(td, dir); err != nil {
					t.Fatalf("swap %d: %v", i, err)
				}
				td.Release()
				if got := content(dir); got != s {
					t.Fatalf("after swap %d ck holds %q", i, got)
				}
				if got := names(t, parent); len(got) != 1 {
					t.Fatalf("after swap %d the parent holds %v", i, got)
				}
			}
		})
	}
}

// The states a killed two-step SwapDir leaves (the layout between its
// renames, with the writer's lock gone) and what FinishSwaps makes of them.
func TestFinishSwapsCrashStates(t *testing.T) {
	if !lockSupported {
		t.Skip("no directory locks: FinishSwaps cannot tell live from abandoned")
	}
	cases := []struct {
		name       string
		dir, nw, o string // content of ck, .ck.new-0123456789ab, .ck.old-0123456789ab ("" = absent)
		want       string
	}{
		{"after the new copy was named", "old", "new", "", "new"},
		{"after the old copy went aside", "", "new", "old", "new"},
		{"after the new copy was put in place", "new", "", "old", "new"},
		{"old copy alone", "", "", "old", "old"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			for p, s := range map[string]string{"ck": c.dir, ".ck.new-0123456789ab": c.nw, ".ck.old-0123456789ab": c.o} {
				if s != "" {
					mkCopy(t, filepath.Join(parent, p), s)
					age(t, filepath.Join(parent, p))
				}
			}
			// A sweep of temporaries first must not take either half.
			if _, err := SweepStale(parent, ".ck."); err != nil {
				t.Fatal(err)
			}
			if _, err := FinishSwaps(filepath.Join(parent, "ck")); err != nil {
				t.Fatal(err)
			}
			if got := content(filepath.Join(parent, "ck")); got != c.want {
				t.Errorf("ck holds %q, want %q", got, c.want)
			}
			if got := names(t, parent); len(got) != 1 {
				t.Errorf("the parent holds %v, want ck alone", got)
			}
		})
	}
}

// A swap in progress (its new copy still locked by its writer) is left alone.
func TestFinishSwapsLeavesLiveSwap(t *testing.T) {
	if !lockSupported {
		t.Skip("no directory locks")
	}
	parent := t.TempDir()
	td, err := MkdirTemp(parent, ".ck.tmp-")
	if err != nil {
		t.Fatal(err)
	}
	defer td.Release()
	mkCopy(t, td.Path, "new")
	mkCopy(t, filepath.Join(parent, ".ck.old-0123456789ab"), "old")
	newp := filepath.Join(parent, ".ck.new-0123456789ab")
	if err := os.Rename(td.Path, newp); err != nil {
		t.Fatal(err)
	}
	if n, err := FinishSwaps(filepath.Join(parent, "ck")); n != 0 || err != nil {
		t.Fatalf("FinishSwaps = %d, %v on a live swap", n, err)
	}
	if content(newp) != "new" || content(filepath.Join(parent, ".ck.old-0123456789ab")) != "old" {
		t.Errorf("a live swap was disturbed: %v", names(t, parent))
	}
}
