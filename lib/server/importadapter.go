package server

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tinkershell/tinker/lib/export"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/store"
)

// AdapterImport is what ImportAdapter created.
type AdapterImport struct {
	RunID       string
	Path        string // tinker:// path of the weights checkpoint
	SamplerPath string // tinker:// path of the sampler checkpoint
	Rank        int
	Targets     []string // LoRA target groups of the run: attn, mlp, unembed
}

// ImportAdapter turns an external PEFT adapter into a training run of the
// local user with a weights checkpoint (float32, to continue training with
// load_state / create_training_client_from_state) and a sampler checkpoint
// of the same name. The run trains whole groups (attention, MLP,
// unembedding): a module of a group the adapter lacks starts as a fresh
// LoRA module does (A from the run's seed, B zero), which leaves the
// model's function unchanged. B is rescaled from the adapter's
// lora_alpha/r to the server's fixed alpha of 32.
func ImportAdapter(ctx context.Context, dataDir, dir, baseModel, name string, now time.Time) (AdapterImport, error) {
	read := export.ReadAdapter
	if f, _ := models.FamilyOf(baseModel); f == models.DeepSeekV3 {
		read = export.ReadLatentAdapter // latent attention and shared experts
	}
	a, err := read(dir)
	if err != nil {
		return AdapterImport{}, err
	}
	defer a.Close()
	// Mixture-of-experts runs train stacked expert tensors (w1/w2/w3).
	if a.Modules, err = export.StackExperts(a.Modules); err != nil {
		return AdapterImport{}, err
	}
	run, err := adapterRun(a, baseModel, now)
	if err != nil {
		return AdapterImport{}, err
	}
	if name == "" {
		name = "imported"
	}
	if err := validName(name); err != nil {
		return AdapterImport{}, err
	}
	if err := checkImportable(a, run); err != nil {
		return AdapterImport{}, err
	}
	res := AdapterImport{RunID: run.ID, Rank: run.LoraRank, Targets: runTargets(run)}
	hold, err := holdRunDir(dataDir, run.ID)
	if err != nil {
		return AdapterImport{}, err
	}
	defer hold.Close()
	ckpts, err := writeImported(ctx, dataDir, a, run, name)
	if err != nil {
		return AdapterImport{}, err
	}
	if err := recordImport(dataDir, run, ckpts, now); err != nil {
		os.RemoveAll(checkpointPath(dataDir, run.ID, "", ""))
		return AdapterImport{}, err
	}
	res.Path, res.SamplerPath = ckpts[0].TinkerPath(), ckpts[1].TinkerPath()
	return res, nil
}

// adapterRun is the run an adapter becomes: the local user's, with the
// adapter's rank and the groups of the modules it has.
func adapterRun(a *export.Adapter, baseModel string, now time.Time) (store.Run, error) {
	arch, ok := models.Lookup(baseModel)
	if !ok {
		return store.Run{}, fmt.Errorf("unknown base model %q: use one the server offers (tinker models) or register a directory with --model %s=DIR",
			baseModel, baseModel)
	}
	// DeepSeek's latent family has its own reader (ImportAdapter).
	if err := export.CheckGQAFamily(arch.Name, "imported"); err != nil && arch.Family != models.DeepSeekV3 {
		return store.Run{}, err
	}
	if e := checkInt("r", int64(a.Config.R), 1, maxLoraRank); e != nil {
		return store.Run{}, fmt.Errorf("adapter rank: %s", e.detail)
	}
	owner := OwnerURN(LocalUserKey)
	sess := uuid.NewSHA1(ownerNamespace, fmt.Appendf(nil, "import-adapter/%s/%d", owner, now.UnixNano())).String()
	r := store.Run{ID: sess + ":train:0", SessionID: sess, BaseModel: arch.Name, Owner: owner, IsLora: true,
		LoraRank: a.Config.R, CreatedAt: now, LastRequestTime: now, Seed: uint64(now.UnixNano()) >> 1,
		UserMetadata: map[string]string{"imported_from": filepath.Base(filepath.Clean(a.Dir))}}
	for _, m := range a.Modules {
		switch {
		case m.Path == "lm_head":
			r.TrainUnembed = true
		case strings.Contains(m.Path, ".self_attn."):
			r.TrainAttn = true
		default:
			r.TrainMLP = true
		}
	}
	return r, nil
}

func runTargets(r store.Run) []string {
	var out []string
	for _, g := range []struct {
		on   bool
		name string
	}{{r.TrainAttn, "attn"}, {r.TrainMLP, "mlp"}, {r.TrainUnembed, "unembed"}} {
		if g.on {
			out = append(out, g.name)
		}
	}
	return out
}

// checkImportable refuses modules the run's adapter does not have and
// shapes that differ from the base model's.
func checkImportable(a *export.Adapter, run store.Run) error {
	p, err := importPlan(run, "weights")
	if err != nil {
		return err
	}
	shapes := map[string][]int64{}
	for _, t := range p.Layout.Tensors {
		shapes[t.Name] = t.Shape
	}
	for _, m := range a.Modules {
		for _, h := range []struct {
			half string
			t    *safetensors.Tensor
		}{{"lora_A", m.A}, {"lora_B", m.B}} {
			half, t := h.half, h.t
			want, ok := shapes[loraName(m.Path, half)]
			if !ok {
				return fmt.Errorf("adapter module %s does not exist in %s", m.Path, run.BaseModel)
			}
			if fmt.Sprint(want) != fmt.Sprint(t.Shape) {
				return fmt.Errorf("adapter module %s: %s has shape %v, %s needs %v", m.Path, half, t.Shape, run.BaseModel, want)
			}
		}
	}
	return nil
}

func loraName(path, half string) string { return "base_model.model." + path + "." + half + ".weight" }

func importPlan(run store.Run, kind string) (*peft.Plan, error) {
	return peft.NewPlan(peft.Config{BaseModel: run.BaseModel, Rank: run.LoraRank, TrainAttn: run.TrainAttn,
		TrainMLP: run.TrainMLP, TrainUnembed: run.TrainUnembed, DType: dtypeFor(kind), Seed: run.Seed})
}

// writeImported writes the weights and sampler checkpoints' files.
func writeImported(ctx context.Context, dataDir string, a *export.Adapter, run store.Run, name string) ([]store.Checkpoint, error) {
	mods := map[string]export.Module{}
	for _, m := range a.Modules {
		mods[m.Path] = m
	}
	ratio := float64(a.Scale) / (float64(peft.DefaultAlpha) / float64(run.LoraRank))
	var ckpts []store.Checkpoint
	for _, kind := range []string{"weights", "sampler_weights"} {
		p, err := importPlan(run, kind)
		if err != nil {
			return nil, err
		}
		weights := func(w io.Writer) error {
			_, err := p.Layout.WriteTo(w, func(_ int, t safetensors.TensorInfo, w io.Writer) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				return importedTensor(t, mods, run.Seed, ratio, w)
			})
			return err
		}
		dir := checkpointPath(dataDir, run.ID, kind, name)
		files := []peft.File{{Name: peft.ConfigFile, Write: func(w io.Writer) error { _, err := w.Write(p.ConfigJSON); return err }},
			{Name: peft.WeightsFile, Write: weights}}
		if err := peft.WriteFiles(dir, files); err != nil {
			os.RemoveAll(checkpointPath(dataDir, run.ID, "", ""))
			return nil, fmt.Errorf("write checkpoint: %w", err)
		}
		ckpts = append(ckpts, store.Checkpoint{RunID: run.ID, Kind: kind, Name: name, Owner: run.Owner, Time: run.CreatedAt,
			Seed: run.Seed, SizeBytes: p.Size(), FilesOnly: true})
	}
	return ckpts, nil
}

// importedTensor writes one tensor of the run's adapter: the imported
// values (B rescaled), or a fresh module's for one the adapter lacks.
func importedTensor(t safetensors.TensorInfo, mods map[string]export.Module, seed uint64, ratio float64, w io.Writer) error {
	path, half, _ := strings.Cut(strings.TrimPrefix(t.Name, "base_model.model."), ".lora_")
	m, ok := mods[path]
	var vals []float32
	var err error
	switch {
	case !ok && half == "A.weight":
		vals = make([]float32, t.Bytes()/int64(t.DType.Size()))
		next := peft.InitA(seed, t.Name, int(t.Shape[len(t.Shape)-1])) // in: the last dimension, also of stacked experts
		for i := range vals {
			vals[i] = next()
		}
	case !ok:
		vals = make([]float32, t.Bytes()/int64(t.DType.Size()))
	case half == "A.weight":
		vals, err = m.A.Float32()
	default:
		if vals, err = m.B.Float32(); err == nil {
			for i := range vals {
				vals[i] = float32(float64(vals[i]) * ratio)
			}
		}
	}
	if err != nil {
		return err
	}
	b, err := safetensors.EncodeFloat32(t.DType, vals)
	if err == nil {
		_, err = w.Write(b)
	}
	return err
}

// recordImport adds the session, run and checkpoints in one transaction.
func recordImport(dataDir string, run store.Run, ckpts []store.Checkpoint, now time.Time) error {
	st, err := store.Open(dataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	return st.Import(now, func(im *store.Importer) error {
		im.AddUser(run.Owner, hashKey(LocalUserKey))
		if err := im.AddSession(store.Session{ID: run.SessionID, Owner: run.Owner, CreatedAt: now, LastHeartbeat: now}); err != nil {
			return err
		}
		if err := im.AddRun(run); err != nil {
			return err
		}
		for _, c := range ckpts {
			if err := im.AddCheckpoint(c); err != nil {
				return err
			}
		}
		return nil
	})
}
