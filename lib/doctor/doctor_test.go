package doctor

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/hfhub"
	"github.com/tinkershell/tinker/lib/server"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/tinkerapi/partialtest"
)

const secretKey = "tml-doctor-secret-key"

func check(t *testing.T, base string, hub *hfhub.Hub) *Report {
	t.Helper()
	c, err := tinkerapi.New(tinkerapi.Config{BaseURL: base, APIKey: secretKey})
	if err != nil {
		t.Fatal(err)
	}
	r := Check(context.Background(), c, Options{Backend: base, Hub: hub, Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }})
	if b, _ := json.Marshal(r); strings.Contains(string(b), secretKey) {
		t.Errorf("the report holds the credential: %s", b)
	}
	return r
}

func states(r *Report) map[string]string {
	m := map[string]string{}
	for _, e := range r.Endpoints {
		m[e.Name] = e.State
	}
	return m
}

// TestDoctorPartialBackend (issue 22, item 7): against a backend with part
// of the API, doctor reports it usable, names the credential's source,
// lists its model, and tells the endpoints it answers from those it does
// not offer, which the fixes name in one line; the HF cache is described.
func TestDoctorPartialBackend(t *testing.T) {
	stub := partialtest.New()
	defer stub.Close()
	cache := t.TempDir()
	os.MkdirAll(filepath.Join(cache, "models--org--tok"), 0o755)
	r := check(t, stub.URL(), &hfhub.Hub{CacheDir: cache, Endpoint: "http://hub.invalid"})
	if !r.OK() || r.Credential != "an API key in TINKER_API_KEY" || len(r.Models) != 1 || r.Models[0].ModelName != partialtest.BaseModel {
		t.Fatalf("report %+v", r)
	}
	want := map[string]string{"health": StateAnswers, "capabilities": StateAnswers, "client config": StateNotOffered,
		"training runs": StateAnswers, "all checkpoints": StateNotOffered, "sessions": StateNotOffered,
		"session export": StateNotOffered, "billing": StateNotOffered}
	if got := states(r); len(got) != len(want) {
		t.Errorf("endpoints %v, want %v", got, want)
	} else {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s, want %s", k, got[k], v)
			}
		}
	}
	if len(r.Fixes) != 1 || r.Fixes[0] != "this backend does not offer client config, all checkpoints, sessions, session export, or billing: commands that need them will say so" {
		t.Errorf("fixes %q", r.Fixes)
	}
	if h := r.HFCache; !h.Exists || h.Repos != 1 || h.Dir != cache || h.Endpoint != "http://hub.invalid" {
		t.Errorf("HF cache %+v", h)
	}
}

// Against tinker serve everything answers and the catalog's models without
// weights are marked; a key the server does not accept, and an address
// where nothing listens, make the report unusable with the fix to apply.
func TestDoctorLocalServerAndFailures(t *testing.T) {
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	open := func(keys ...string) string {
		s, err := server.Open(server.Options{DataDir: t.TempDir(), SweepInterval: -1, APIKeys: keys, Engine: nil})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(func() { hs.Close(); s.Close() })
		return hs.URL
	}
	r := check(t, open(), nil)
	for name, st := range states(r) {
		if st != StateAnswers {
			t.Errorf("tinker serve: %s %s", name, st)
		}
	}
	if !r.OK() || len(r.Fixes) != 0 || len(r.Models) < 2 {
		t.Errorf("tinker serve: ok %v, fixes %q, %d models", r.OK(), r.Fixes, len(r.Models))
	}
	r = check(t, open("tml-some-other-key"), nil)
	if r.OK() || len(r.Fixes) != 1 || !strings.Contains(r.Fixes[0], "refused the credential from an API key in TINKER_API_KEY") {
		t.Errorf("refused key: ok %v, fixes %q", r.OK(), r.Fixes)
	}
	dead := httptest.NewServer(nil)
	url := dead.URL
	dead.Close()
	r = check(t, url, nil)
	if r.OK() || len(r.Endpoints) != 1 || len(r.Fixes) != 1 || !strings.HasPrefix(r.Fixes[0], "nothing answers at "+url) {
		t.Errorf("nothing listening: ok %v, endpoints %v, fixes %q", r.OK(), r.Endpoints, r.Fixes)
	}
}
