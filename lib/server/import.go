package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/store"
)

// Manifest is the JSON document `tinker serve import` reads (see MANIFEST.md).
type Manifest struct {
	OwnerKey string            `json:"owner_key"`
	Owner    string            `json:"owner"`
	Runs     []ManifestRun     `json:"runs"`
	Generate *ManifestGenerate `json:"generate"`
}

// ManifestRun is one training run with its checkpoints.
type ManifestRun struct {
	ID              string               `json:"id"`
	BaseModel       string               `json:"base_model"`
	LoraRank        int                  `json:"lora_rank"`
	TrainAttn       *bool                `json:"train_attn"`
	TrainMLP        *bool                `json:"train_mlp"`
	TrainUnembed    *bool                `json:"train_unembed"`
	OwnerKey        string               `json:"owner_key"`
	Owner           string               `json:"owner"`
	UserMetadata    map[string]string    `json:"user_metadata"`
	Created         *time.Time           `json:"created"`
	LastRequestTime *time.Time           `json:"last_request_time"`
	Corrupted       bool                 `json:"corrupted"`
	Seed            uint64               `json:"seed"`
	Checkpoints     []ManifestCheckpoint `json:"checkpoints"`
}

// ManifestCheckpoint is one checkpoint. Sizes are never given: they follow
// from the run's base model, rank and targets.
type ManifestCheckpoint struct {
	Kind       string     `json:"kind"`
	Name       string     `json:"name"`
	Time       *time.Time `json:"time"`
	Public     bool       `json:"public"`
	ExpiresAt  *time.Time `json:"expires_at"`
	TTLSeconds *int64     `json:"ttl_seconds"`
	Seed       *uint64    `json:"seed"`
	SizeBytes  *int64     `json:"size_bytes"` // rejected: sizes come from the real files
}

// ManifestGenerate describes synthetic runs (benchmarks, demos).
type ManifestGenerate struct {
	Runs              int        `json:"runs"`
	CheckpointsPerRun int        `json:"checkpoints_per_run"`
	BaseModels        []string   `json:"base_models"`
	LoraRanks         []int      `json:"lora_ranks"`
	Start             *time.Time `json:"start"`
	IntervalSeconds   int        `json:"interval_seconds"`
	PublicEvery       int        `json:"public_every"`
	Seed              uint64     `json:"seed"`
}

// ImportStats summarises an import.
type ImportStats struct {
	Runs        int
	Checkpoints int
	Bytes       int64 // total size_bytes of the imported checkpoints
}

// Import loads a manifest into the data directory in one transaction. A
// server serving the same directory sees the rows once its store notices
// the database changed (lib/store reloads its mirror).
func Import(ctx context.Context, dataDir string, manifest io.Reader, now time.Time) (ImportStats, error) {
	var m Manifest
	dec := json.NewDecoder(manifest)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return ImportStats{}, fmt.Errorf("read manifest: %w", err)
	}
	now = now.UTC()
	runs := m.Runs
	if g := m.Generate; g != nil {
		gen, err := generateRuns(g, now)
		if err != nil {
			return ImportStats{}, err
		}
		runs = append(runs, gen...)
	}
	st, err := store.Open(dataDir)
	if err != nil {
		return ImportStats{}, err
	}
	defer st.Close()
	mi := &manifestImport{m: &m, now: now}
	err = st.Import(now, func(im *store.Importer) error {
		mi.im = im
		for i := range runs {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := mi.addRun(&runs[i], i); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return ImportStats{}, err
	}
	return mi.stats, nil
}

// manifestImport is one Import in progress.
type manifestImport struct {
	im    *store.Importer
	m     *Manifest
	now   time.Time
	plans planCache // checkpoint sizes come from the adapter plan
	stats ImportStats
}

func (mi *manifestImport) addRun(mr *ManifestRun, i int) error {
	im, m, now := mi.im, mi.m, mi.now
	where := fmt.Sprintf("run %d", i+1)
	if mr.ID != "" {
		where = "run " + mr.ID
	}
	owner := firstNonEmpty(mr.Owner, m.Owner)
	key := firstNonEmpty(mr.OwnerKey, m.OwnerKey)
	if key == "" && owner == "" {
		key = LocalUserKey
	}
	if key != "" {
		owner = OwnerURN(key)
		im.AddUser(owner, hashKey(key))
	} else if err := checkOwnerURN(owner); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	arch, ok := models.Lookup(mr.BaseModel)
	if !ok {
		return fmt.Errorf("%s: unknown base_model %q (known: %s)", where, mr.BaseModel, strings.Join(models.Names(), ", "))
	}
	// Without times, a run and its checkpoints are placed a minute apart
	// ending at the import time: none is ever newer than the import.
	created := now.Add(-time.Duration(len(mr.Checkpoints)) * time.Minute)
	if mr.Created != nil {
		created = mr.Created.UTC()
	}
	run := store.Run{ID: mr.ID, BaseModel: arch.Name, Owner: owner, IsLora: true, LoraRank: mr.LoraRank,
		TrainAttn: boolOr(mr.TrainAttn, true), TrainMLP: boolOr(mr.TrainMLP, true), TrainUnembed: boolOr(mr.TrainUnembed, true),
		Seed: mr.Seed >> 1, Corrupted: mr.Corrupted, UserMetadata: mr.UserMetadata, CreatedAt: created}
	if run.LoraRank == 0 {
		run.LoraRank = 32
	}
	if e := checkInt("lora_rank", int64(run.LoraRank), 1, maxLoraRank); e != nil {
		return fmt.Errorf("%s: %s", where, e.detail)
	}
	if e := checkMetadata("user_metadata", run.UserMetadata); e != nil {
		return fmt.Errorf("%s: %s", where, e.detail)
	}
	if e := checkText("id", run.ID, maxIDLen); e != nil {
		return fmt.Errorf("%s: %s", where, e.detail)
	}
	if run.ID == "" {
		sess := uuid.NewSHA1(ownerNamespace, fmt.Appendf(nil, "import/%s/%d/%d", owner, created.UnixNano(), i)).String()
		run.ID = sess + ":train:0"
	}
	sess, _, ok := strings.Cut(run.ID, ":train:")
	if !ok || sess == "" || strings.Contains(run.ID, "/") {
		return fmt.Errorf("%s: id must look like <session-id>:train:<n>", where)
	}
	run.SessionID = sess
	if err := im.AddSession(store.Session{ID: sess, Owner: owner, CreatedAt: created, LastHeartbeat: created}); err != nil {
		// Several runs may share a session; a duplicate insert is expected.
		if !strings.Contains(err.Error(), "UNIQUE") {
			return err
		}
	}
	last := created
	var ckpts []store.Checkpoint
	for j, mc := range mr.Checkpoints {
		c, err := mi.checkpoint(run, mc, j, fmt.Sprintf("%s checkpoint %d", where, j+1))
		if err != nil {
			return err
		}
		if c.Time.After(last) {
			last = c.Time
		}
		ckpts = append(ckpts, c)
	}
	run.LastRequestTime = last
	if mr.LastRequestTime != nil {
		run.LastRequestTime = mr.LastRequestTime.UTC()
	}
	if err := im.AddRun(run); err != nil {
		if errors.Is(err, store.ErrExists) {
			return fmt.Errorf("%s: a run with this id already exists", where)
		}
		return err
	}
	for _, c := range ckpts {
		if err := im.AddCheckpoint(c); err != nil {
			return err
		}
		mi.stats.Checkpoints++
		mi.stats.Bytes += c.SizeBytes
	}
	mi.stats.Runs++
	return nil
}

// checkpoint builds the j-th checkpoint mc of run; cw names it in errors.
func (mi *manifestImport) checkpoint(run store.Run, mc ManifestCheckpoint, j int, cw string) (c store.Checkpoint, err error) {
	if mc.SizeBytes != nil {
		return c, fmt.Errorf("%s: size_bytes cannot be set; it is computed from the checkpoint's real files", cw)
	}
	if mc.Kind != "weights" && mc.Kind != "sampler_weights" {
		return c, fmt.Errorf("%s: kind must be weights or sampler_weights, got %q", cw, mc.Kind)
	}
	if err := validName(mc.Name); err != nil {
		return c, fmt.Errorf("%s: %w", cw, err)
	}
	t := run.CreatedAt.Add(time.Duration(j+1) * time.Minute)
	if t.After(mi.now) {
		t = mi.now
	}
	if mc.Time != nil {
		t = mc.Time.UTC()
	}
	c = store.Checkpoint{RunID: run.ID, Kind: mc.Kind, Name: mc.Name, Owner: run.Owner, Time: t, Public: mc.Public, Seed: run.Seed}
	if mc.Seed != nil {
		c.Seed = *mc.Seed >> 1
	}
	switch {
	case mc.ExpiresAt != nil && mc.TTLSeconds != nil:
		return c, fmt.Errorf("%s: give expires_at or ttl_seconds, not both", cw)
	case mc.ExpiresAt != nil:
		e := mc.ExpiresAt.UTC()
		c.ExpiresAt = &e
	case mc.TTLSeconds != nil:
		exp, e := checkTTL("ttl_seconds", mc.TTLSeconds, mi.now)
		if e != nil {
			return c, fmt.Errorf("%s: %s", cw, e.detail)
		}
		c.ExpiresAt = exp
	}
	p, err := mi.plans.get(run, mc.Kind, 0)
	if err != nil {
		return c, fmt.Errorf("%s: %w", cw, err)
	}
	c.SizeBytes = p.Size()
	return c, nil
}

func generateRuns(g *ManifestGenerate, now time.Time) ([]ManifestRun, error) {
	// Each bound alone keeps the products below from overflowing.
	const maxGenerated = 10_000_000
	if g.Runs <= 0 || g.Runs > maxGenerated || g.CheckpointsPerRun < 0 || g.CheckpointsPerRun > maxGenerated {
		return nil, fmt.Errorf("generate: runs must be between 1 and %d and checkpoints_per_run between 0 and %d", maxGenerated, maxGenerated)
	}
	if g.Runs*g.CheckpointsPerRun > maxGenerated {
		return nil, fmt.Errorf("generate: at most %d checkpoints", maxGenerated)
	}
	for _, r := range g.LoraRanks {
		if e := checkInt("generate.lora_ranks", int64(r), 1, maxLoraRank); e != nil {
			return nil, errors.New(e.detail)
		}
	}
	if g.IntervalSeconds < 0 || g.IntervalSeconds > maxTTLSeconds {
		return nil, fmt.Errorf("generate: interval_seconds must be between 0 and %d", maxTTLSeconds)
	}
	bases := g.BaseModels
	if len(bases) == 0 {
		bases = []string{"meta-llama/Llama-3.2-1B", "Qwen/Qwen3-8B", "Qwen/Qwen3-30B-A3B", "openai/gpt-oss-20b"}
	}
	ranks := g.LoraRanks
	if len(ranks) == 0 {
		ranks = []int{8, 16, 32}
	}
	step := time.Duration(g.IntervalSeconds) * time.Second
	if step <= 0 {
		step = time.Minute
	}
	total := g.Runs * (g.CheckpointsPerRun + 1)
	start := now.Add(-time.Duration(total) * step).Truncate(time.Second)
	if g.Start != nil {
		start = g.Start.UTC()
	}
	out := make([]ManifestRun, g.Runs)
	n := 0
	for r := range out {
		created := start.Add(time.Duration(n) * step)
		n++
		mr := ManifestRun{BaseModel: bases[r%len(bases)], LoraRank: ranks[r%len(ranks)], Created: &created,
			Seed: g.Seed + uint64(r)*7919, UserMetadata: map[string]string{"generated": "true", "index": fmt.Sprint(r)}}
		for i := 0; i < g.CheckpointsPerRun; i++ {
			t := start.Add(time.Duration(n) * step)
			n++
			kind := "weights"
			if i%2 == 1 {
				kind = "sampler_weights"
			}
			mc := ManifestCheckpoint{Kind: kind, Name: fmt.Sprintf("%04d", i/2), Time: &t}
			if i == g.CheckpointsPerRun-1 {
				mc.Name = "final"
			}
			if g.PublicEvery > 0 && (i+1)%g.PublicEvery == 0 {
				mc.Public = true
			}
			mr.Checkpoints = append(mr.Checkpoints, mc)
		}
		out[r] = mr
	}
	return out, nil
}

// ownerURNPrefix starts every URN OwnerURN makes.
const ownerURNPrefix = "tml:organization_user:"

// checkOwnerURN accepts only the URNs OwnerURN makes: the owner ends up in
// the store and in every listing, so it must be exactly that form.
func checkOwnerURN(owner string) error {
	id, ok := strings.CutPrefix(owner, ownerURNPrefix)
	if u, err := uuid.Parse(id); !ok || err != nil || u.String() != id {
		return fmt.Errorf("owner %q is not a %s<uuid> URN: give owner_key (an API key) instead, or the URN the server shows as model_owner", owner, ownerURNPrefix)
	}
	return nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}
