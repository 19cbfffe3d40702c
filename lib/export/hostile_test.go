package export

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// rawSafetensors writes a safetensors file from a header given as JSON,
// with no data: shapes the writer would refuse.
func rawSafetensors(t *testing.T, path, header string) {
	t.Helper()
	b := make([]byte, 8, 8+len(header))
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	if err := os.WriteFile(path, append(b, header...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hostileAdapter is an adapter directory with config r and the two
// halves of q_proj of layer 0 given by their shapes, holding no data.
func hostileAdapter(t *testing.T, r int64, a, b string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, peft.ConfigFile, fmt.Appendf(nil, `{"r": %d, "lora_alpha": 32, "peft_type": "LORA", "base_model_name_or_path": %q}`, r, models.TinyLlama))
	const p = "base_model.model.model.layers.0.self_attn.q_proj.lora_"
	rawSafetensors(t, filepath.Join(dir, peft.WeightsFile), fmt.Sprintf(
		`{%q:{"dtype":"F32","shape":%s,"data_offsets":[0,0]},%q:{"dtype":"F32","shape":%s,"data_offsets":[0,0]}}`,
		p+"A.weight", a, p+"B.weight", b))
	return dir
}

// exportFails runs an export that must fail with want in its one-line
// error, within a bound (the failures pinned here hung or panicked), and
// leave nothing beside OUT.
func exportFails(t *testing.T, name string, o Options, want string) {
	t.Helper()
	parent := t.TempDir()
	o.Out = filepath.Join(parent, "out")
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("panic: %v", p)
			}
		}()
		_, err := Export(context.Background(), o)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: export still running (blocked)", name)
	}
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: err = %v, want one line with %q", name, err, want)
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Errorf("%s: left behind %v", name, left)
	}
}

// TestHostileShapes: shapes whose sizes overflow, a rank of 2^62 and a
// config with 2^40 layers are refused before anything is allocated from
// them, in both formats.
func TestHostileShapes(t *testing.T) {
	base := writeBase(t, baseSpec{model: models.TinyLlama, tied: true, shards: 1, dtype: safetensors.F32})
	const huge = "4611686018427387904" // 2^62
	overflow := hostileAdapter(t, 4, "[4,"+huge+"]", "[0,4]")
	bigRank := hostileAdapter(t, 1<<62, "["+huge+",64]", "[64,"+huge+"]")
	for _, format := range []string{Merged, PEFT} {
		exportFails(t, format+" overflow", Options{Adapter: overflow, Base: base, Format: format}, "too large")
		exportFails(t, format+" rank", Options{Adapter: bigRank, Base: base, Format: format}, "rank r must be between 1 and")
	}
	layers := writeBase(t, baseSpec{model: models.TinyLlama, tied: true, shards: 1, dtype: safetensors.F32})
	setConfig(t, layers, "num_hidden_layers", 1<<40)
	ad := writeAdapter(t, adapterSpec{model: models.TinyLlama, rank: 2, alpha: 4, modules: allModules[:1], dtype: safetensors.F32, seed: 4})
	setBase(t, ad, "someone/not-in-the-catalog")
	exportFails(t, "layers", Options{Adapter: ad, Base: layers}, "passes the bounds")
}

func setConfig(t *testing.T, dir, key string, v any) {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	var m map[string]any
	json.Unmarshal(b, &m)
	m[key] = v
	b, _ = json.Marshal(m)
	writeFile(t, dir, "config.json", b)
}

// replaceWith puts a FIFO (made here) or a node of /dev/zero's numbers
// at dir/name.
func replaceWith(t *testing.T, dir, name, kind string) {
	t.Helper()
	p := filepath.Join(dir, name)
	os.Remove(p)
	var err error
	if kind == "FIFO" {
		err = syscall.Mkfifo(p, 0o600)
	} else if err = syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|5); err != nil {
		t.Skipf("mknod needs root here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestSpecialFilesAsInputs: a FIFO (which a plain open waits on forever)
// or an endless device in place of an adapter or base file is refused at
// once, naming what it is.
func TestSpecialFilesAsInputs(t *testing.T) {
	for _, kind := range []string{"FIFO", "device"} {
		for _, c := range []struct {
			inBase bool
			file   string
		}{
			{false, peft.WeightsFile}, {false, peft.ConfigFile}, {true, "model.safetensors"}, {true, "config.json"},
		} {
			base := writeBase(t, baseSpec{model: models.TinyLlama, tied: true, shards: 1, dtype: safetensors.F32})
			ad := writeAdapter(t, adapterSpec{model: models.TinyLlama, rank: 2, alpha: 4, modules: allModules[:1], dtype: safetensors.F32, seed: 4})
			dir := map[bool]string{false: ad, true: base}[c.inBase]
			replaceWith(t, dir, c.file, kind)
			want := map[string]string{"FIFO": "is a FIFO", "device": "is a device"}[kind]
			exportFails(t, kind+" as "+c.file, Options{Adapter: ad, Base: base}, want)
		}
	}
}

// TestForceNeverDeletesInputs: --force replaces OUT, so an OUT that is,
// holds or sits inside an input is refused before anything is written.
func TestForceNeverDeletesInputs(t *testing.T) {
	base := writeBase(t, baseSpec{model: models.TinyLlama, tied: true, shards: 1, dtype: safetensors.F32})
	dl := t.TempDir()
	ad := filepath.Join(dl, "x")
	if err := os.Rename(writeAdapter(t, adapterSpec{model: models.TinyLlama, rank: 2, alpha: 4, modules: allModules[:1], dtype: safetensors.F32, seed: 4}), ad); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dl, "other"), 0o755)
	writeFile(t, filepath.Join(dl, "other"), "important.bin", []byte("keep"))
	for name, out := range map[string]string{"is the base": base, "holds the adapter": dl, "inside the adapter": filepath.Join(ad, "sub")} {
		_, err := Export(context.Background(), Options{Adapter: ad, Base: base, Out: out, Force: true})
		if err == nil || !strings.Contains(err.Error(), "is, holds or sits inside the input") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	for _, p := range []string{filepath.Join(dl, "other", "important.bin"), filepath.Join(base, "config.json"), filepath.Join(ad, peft.WeightsFile)} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("an input is gone: %v", err)
		}
	}
}

// setNaN makes one value of an F32 adapter's weights NaN.
func setNaN(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, peft.WeightsFile)
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(f.Tensors[0].Data[4:], 0x7fc00000)
	w, _ := os.Create(path)
	defer w.Close()
	if err := safetensors.Write(w, f.Tensors, nil); err != nil {
		t.Fatal(err)
	}
}

// TestNonFiniteAdapterRefused: NaN weights are refused in both formats
// (the merge once wrote them into the model and exited 0).
func TestNonFiniteAdapterRefused(t *testing.T) {
	base := writeBase(t, baseSpec{model: models.TinyLlama, tied: true, shards: 1, dtype: safetensors.F32})
	ad := writeAdapter(t, adapterSpec{model: models.TinyLlama, rank: 2, alpha: 4, modules: allModules[:1], dtype: safetensors.F32, seed: 4})
	setNaN(t, ad)
	for _, format := range []string{Merged, PEFT} {
		exportFails(t, format, Options{Adapter: ad, Base: base, Format: format}, "NaN or infinite")
	}
}

// TestOutLinksAndMode: an OUT that is a dangling symbolic link is refused
// before any work; one that links to a directory has that directory
// replaced and stays a link; the output directory is 0755 as a download's.
func TestOutLinksAndMode(t *testing.T) {
	ad := writeAdapter(t, adapterSpec{model: models.TinyLlama, rank: 2, alpha: 4, modules: allModules[:1], dtype: safetensors.F32, seed: 4})
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	os.Symlink(filepath.Join(parent, "missing", "dir"), out)
	var written int64
	_, err := Export(context.Background(), Options{Adapter: ad, Format: PEFT, Out: out, Progress: func(n, _ int64) { written = n }})
	if err == nil || !strings.Contains(err.Error(), "symbolic link to a missing directory") || written != 0 {
		t.Errorf("dangling link: err = %v after %d bytes", err, written)
	}
	os.Remove(out)
	os.Mkdir(filepath.Join(parent, "real"), 0o755)
	os.Symlink("real", out)
	if _, err := Export(context.Background(), Options{Adapter: ad, Format: PEFT, Out: out, Force: true}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(out); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	st, err := os.Stat(filepath.Join(parent, "real", peft.WeightsFile))
	if err != nil {
		t.Fatalf("the linked directory was not written: %v", err)
	}
	_ = st
	if st, _ := os.Stat(filepath.Join(parent, "real")); st.Mode().Perm() != 0o755 {
		t.Errorf("output directory mode %v, want 0755", st.Mode().Perm())
	}
}

// TestPEFTConfigForms: PEFT allows target_modules as one regular
// expression and a fractional lora_alpha; both export, the scale is
// alpha/r exactly.
func TestPEFTConfigForms(t *testing.T) {
	ad := writeAdapter(t, adapterSpec{model: models.TinyLlama, rank: 2, alpha: 4, modules: allModules[:1], dtype: safetensors.F32, seed: 4})
	writeFile(t, ad, peft.ConfigFile, fmt.Appendf(nil, `{"r": 2, "lora_alpha": 5.5, "target_modules": ".*\\.q_proj$", "peft_type": "LORA", "base_model_name_or_path": %q}`, models.TinyLlama))
	a, err := ReadAdapter(ad)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if a.Scale != 2.75 || a.Config.TargetRegex != `.*\.q_proj$` {
		t.Errorf("scale %v, target regex %q", a.Scale, a.Config.TargetRegex)
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := Export(context.Background(), Options{Adapter: ad, Format: PEFT, Out: out}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(out, peft.ConfigFile))
	if !strings.Contains(string(b), `"lora_alpha": 5.5`) || !strings.Contains(string(b), `"q_proj"`) {
		t.Errorf("exported config:\n%s", b)
	}
}

// Checked on every core, a NaN is still reported in the first module
// that holds one, whichever core finds which first.
func TestNonFiniteFirstModuleNamed(t *testing.T) {
	var a Adapter
	for i := range 64 {
		vals := make([]float32, 4096)
		if i == 9 || i == 40 || i == 63 {
			vals[i] = float32(math.Inf(1))
		}
		ta, err := safetensors.FromFloat32(fmt.Sprintf("m%d.lora_A", i), safetensors.F32, []int{4, 1024}, vals)
		if err != nil {
			t.Fatal(err)
		}
		tb := ta
		tb.Name = fmt.Sprintf("m%d.lora_B", i)
		a.Modules = append(a.Modules, Module{Path: fmt.Sprint(i), A: &ta, B: &tb})
	}
	err := a.checkFinite()
	if err == nil || !strings.Contains(err.Error(), "tensor m9.lora_A ") || !strings.Contains(err.Error(), "(element 9)") {
		t.Fatalf("checkFinite = %v, want module 9's A named", err)
	}
}
