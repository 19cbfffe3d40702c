package server

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestManifestDocExample imports the example in MANIFEST.md, so the
// documentation cannot drift from the code.
func TestManifestDocExample(t *testing.T) {
	doc, err := os.ReadFile("MANIFEST.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "```json\n")
	example, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("no json example in MANIFEST.md")
	}
	dir := t.TempDir()
	st, err := Import(t.Context(), dir, strings.NewReader(example), t0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Runs != 101 || st.Checkpoints != 2+100*100 || st.Bytes <= 0 {
		t.Errorf("stats = %+v", st)
	}
	s, err := Open(Options{DataDir: dir, Now: func() time.Time { return t0 }, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bob := OwnerURN("tml-bob")
	v, ok := s.st.Run("7d9f3c1e-0000-5000-8000-000000000001:train:0", t0)
	if !ok || v.Owner != bob || v.LoraRank != 32 || v.UserMetadata["experiment"] != "demo" || v.LastSamplerCheckpoint == nil || !v.LastSamplerCheckpoint.Public {
		t.Errorf("run = %+v", v)
	}
	if exp := v.LastSamplerCheckpoint.ExpiresAt; exp == nil || !exp.Equal(t0.Add(24*time.Hour)) {
		t.Errorf("ttl = %v", exp)
	}
}

func TestImportRejects(t *testing.T) {
	for name, m := range map[string]string{
		"size override": `{"owner_key":"tml-a","runs":[{"base_model":"Qwen/Qwen3-8B","checkpoints":[{"kind":"weights","name":"x","size_bytes":5}]}]}`,
		"unknown model": `{"owner_key":"tml-a","runs":[{"base_model":"x/y"}]}`,
		"bad name":      `{"owner_key":"tml-a","runs":[{"base_model":"Qwen/Qwen3-8B","checkpoints":[{"kind":"weights","name":".."}]}]}`,
		"bad kind":      `{"owner_key":"tml-a","runs":[{"base_model":"Qwen/Qwen3-8B","checkpoints":[{"kind":"w","name":"a"}]}]}`,
		"unknown field": `{"owner_key":"tml-a","runz":[]}`,
		"owner path":    `{"owner":"tml:organization_user:../../x","runs":[{"base_model":"Qwen/Qwen3-8B"}]}`,
		"owner upper":   `{"owner":"tml:organization_user:7D9F3C1E-0000-5000-8000-000000000001","runs":[{"base_model":"Qwen/Qwen3-8B"}]}`,
		"run owner":     `{"runs":[{"owner":"alice","base_model":"Qwen/Qwen3-8B"}]}`,
		"duplicate":     `{"owner_key":"tml-a","runs":[{"base_model":"Qwen/Qwen3-8B","checkpoints":[{"kind":"weights","name":"a"},{"kind":"weights","name":"a"}]}]}`,
	} {
		if _, err := Import(t.Context(), t.TempDir(), strings.NewReader(m), t0); err == nil {
			t.Errorf("%s: import succeeded", name)
		}
	}
}

// TestImportDefaultTimesNotInFuture: checkpoints imported without times are
// never newer than the import, with or without the run's created time, and
// keep their order.
func TestImportDefaultTimesNotInFuture(t *testing.T) {
	const manifest = `{"runs": [
	  {"id": "a0000000-0000-5000-8000-000000000001:train:0", "base_model": "tinker-local/tiny-llama",
	   "checkpoints": [{"kind": "weights", "name": "1"}, {"kind": "sampler_weights", "name": "2"}, {"kind": "weights", "name": "3"}]},
	  {"id": "a0000000-0000-5000-8000-000000000002:train:0", "base_model": "tinker-local/tiny-llama", "created": "2026-07-13T04:59:00Z",
	   "checkpoints": [{"kind": "weights", "name": "1"}, {"kind": "weights", "name": "2"}, {"kind": "weights", "name": "3"}]}]}`
	dir := t.TempDir()
	if _, err := Import(t.Context(), dir, strings.NewReader(manifest), t0); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{DataDir: dir, Now: func() time.Time { return t0 }, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"a0000000-0000-5000-8000-000000000001:train:0", "a0000000-0000-5000-8000-000000000002:train:0"} {
		run, ok := s.st.Run(id, t0)
		if !ok || run.CreatedAt.After(t0) {
			t.Fatalf("%s: run created %v after the import at %v", id, run.CreatedAt, t0)
		}
		var prev time.Time
		for _, name := range []string{"1", "2", "3"} {
			kind := "weights"
			if id[len(id)-9] == '1' && name == "2" {
				kind = "sampler_weights"
			}
			c, ok := s.st.Checkpoint(id, kind, name, t0)
			if !ok {
				t.Fatalf("%s/%s/%s missing", id, kind, name)
			}
			if c.Time.After(t0) || c.Time.Before(prev) {
				t.Errorf("%s checkpoint %s at %v: after the import (%v) or before the previous one", id, name, c.Time, t0)
			}
			prev = c.Time
		}
	}
}
