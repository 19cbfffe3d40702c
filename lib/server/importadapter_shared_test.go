package server

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
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
// saves it: each hidden-side expert factor cut to expert 0's ([1, ...]),
// GPT-OSS attention under .attn; it returns the per-expert form of the
// same adapter (expert 0's factor repeated) in a new directory.
func asService(t *testing.T, dir string, gptOss bool) (perExpert string) {
	t.Helper()
	f, err := safetensors.ReadFile(filepath.Join(dir, peft.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	var svc, per []safetensors.Tensor
	for _, x := range f.Tensors {
		if hiddenSide.MatchString(x.Name) {
			n := len(x.Data) / int(x.Shape[0])
			x.Data = []byte(strings.Repeat(string(x.Data[:n]), int(x.Shape[0])))
			per = append(per, x)
			x.Data, x.Shape = x.Data[:n], []int64{1, x.Shape[1], x.Shape[2]}
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
// per-expert form does: the factor is broadcast at import.
func TestImportServiceSharedExperts(t *testing.T) {
	for _, name := range []string{models.TinyQwen3MoE, models.TinyGptOss} {
		t.Run(name, func(t *testing.T) {
			svc := trainedMoE(t, name)
			per := asService(t, svc, name == models.TinyGptOss)
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
				got := modelAdapterLogprobs(t, name, checkpointPath(data, res.RunID, "weights", "imported"), prompt)
				if d := maxAbsDiff(want, got); d > 1e-4 {
					t.Errorf("%s: imported weights differ from the per-expert adapter by %g", filepath.Base(src), d)
				}
			}
		})
	}
}
