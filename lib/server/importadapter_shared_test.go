package server

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/export"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// hiddenSide matches the expert factors the service shares across experts.
var hiddenSide = regexp.MustCompile(`\.experts\.(?:w[13]\.lora_A|w2\.lora_B)\.weight$`)

// asService rewrites the local adapter in dir in place as the service
// saves it (the expert factors are already its shared-outer form; GPT-OSS
// attention goes under .attn); it returns the per-expert form of the same
// adapter (the shared factor repeated for each of experts) in a new
// directory, which samplers read too.
func asService(t *testing.T, dir string, gptOss bool, experts int) (perExpert string) {
	t.Helper()
	f, err := safetensors.ReadFile(filepath.Join(dir, peft.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	var svc, per []safetensors.Tensor
	for _, x := range f.Tensors {
		if hiddenSide.MatchString(x.Name) {
			if x.Shape[0] != 1 {
				t.Fatalf("%s has shape %v: the local server's hidden-side factor is not shared", x.Name, x.Shape)
			}
			p := x
			p.Data, p.Shape = []byte(strings.Repeat(string(x.Data), experts)), []int64{int64(experts), x.Shape[1], x.Shape[2]}
			per = append(per, p)
		} else {
			per = append(per, x)
		}
		if gptOss {
			x.Name = strings.Replace(x.Name, ".self_attn.", ".attn.", 1)
		}
		svc = append(svc, x)
	}
	perExpert = filepath.Join(t.TempDir(), "per-expert")
	os.Mkdir(perExpert, 0o755)
	cfg, _ := os.ReadFile(filepath.Join(dir, peft.ConfigFile))
	for d, ts := range map[string][]safetensors.Tensor{dir: svc, perExpert: per} {
		os.WriteFile(filepath.Join(d, peft.ConfigFile), cfg, 0o644)
		w, err := os.Create(filepath.Join(d, peft.WeightsFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := safetensors.Write(w, ts, nil); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	return perExpert
}

// An adapter trained on the service (shared hidden-side expert factors,
// GPT-OSS attention as .attn) imports, directly or (Qwen3-MoE) as its PEFT
// export, into a local run whose checkpoint samples as the same adapter in
// per-expert form does; the checkpoint keeps the shared form, and an
// adapter whose experts have hidden-side factors of their own is refused.
func TestImportServiceSharedExperts(t *testing.T) {
	for _, name := range []string{models.TinyQwen3MoE, models.TinyGptOss} {
		t.Run(name, func(t *testing.T) {
			svc := trainedMoE(t, name)
			per := asService(t, svc, name == models.TinyGptOss, 8)
			srcs := []string{svc}
			if name == models.TinyQwen3MoE {
				pe := filepath.Join(t.TempDir(), "peft")
				if _, err := export.Export(context.Background(), export.Options{Adapter: svc, Format: export.PEFT, Out: pe}); err != nil {
					t.Fatal(err)
				}
				srcs = append(srcs, pe)
			}
			prompt := []int{models.TinyBOS, 's', 'v', 'c', ' ', 'x', 'y', 'z', '\n', 'h', 'i'}
			want := modelAdapterLogprobs(t, name, per, prompt)
			for _, src := range srcs {
				data := t.TempDir()
				res, err := ImportAdapter(context.Background(), data, src, name, "", t0)
				if err != nil {
					t.Fatal(err)
				}
				ck := checkpointPath(data, res.RunID, "weights", "imported")
				got := modelAdapterLogprobs(t, name, ck, prompt)
				if d := maxAbsDiff(want, got); d > 1e-4 {
					t.Errorf("%s: imported weights differ from the per-expert adapter by %g", filepath.Base(src), d)
				}
				f, err := safetensors.ReadFile(filepath.Join(ck, peft.WeightsFile))
				if err != nil {
					t.Fatal(err)
				}
				if x, _ := f.Tensor("base_model.model.model.layers.1.mlp.experts.w2.lora_B.weight"); x.Shape[0] != 1 {
					t.Errorf("%s: imported w2 lora_B has shape %v, want the shared [1, ...]", filepath.Base(src), x.Shape)
				}
			}
			if _, err := ImportAdapter(context.Background(), t.TempDir(), distinctExpert(t, per), name, "", t0); err == nil ||
				!strings.Contains(err.Error(), "expert 5's lora_B differs from expert 0's") {
				t.Errorf("per-expert hidden-side factors: err %v", err)
			}
		})
	}
}

// distinctExpert changes expert 5's slice of every w2 lora_B in the
// per-expert adapter dir, in place, and returns dir.
func distinctExpert(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, peft.WeightsFile)
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for _, x := range f.Tensors {
		if strings.HasSuffix(x.Name, ".experts.w2.lora_B.weight") {
			n := len(x.Data) / int(x.Shape[0])
			x.Data = slices.Clone(x.Data)
			x.Data[5*n] ^= 0x40
		}
		ts = append(ts, x)
	}
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := safetensors.Write(w, ts, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}
