package tinkerapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestArchiveURL(t *testing.T) {
	expires := time.Date(2026, 5, 27, 20, 0, 0, 0, time.UTC)
	var storageURL string
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		base := "/api/v1/training_runs/run-1:train:0/checkpoints/sampler_weights/"
		switch r.URL.Path {
		case base + "redirect/archive":
			w.Header().Set("Location", storageURL+"?X-Goog-Signature=abc")
			w.Header().Set("Expires", expires.Format(http.TimeFormat))
			w.WriteHeader(302)
		case base + "relative/archive":
			w.Header().Set("Location", "/storage/rel.tar")
			w.WriteHeader(307)
		case base + "json/archive":
			writeJSON(w, 200, `{"url": "https://storage.example/a.tar", "expires": "2026-05-27T20:00:00Z"}`)
		case base + "html/archive":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(200)
		case base + "slow/archive":
			if n <= 2 {
				writeJSON(w, 503, `{"detail":"Archive is being generated"}`)
				return true
			}
			w.Header().Set("Location", storageURL)
			w.WriteHeader(302)
		case base + "never/archive":
			writeJSON(w, 503, `{"detail":"Archive is being generated"}`)
		case "/storage/a.tar", "/storage/rel.tar":
			t.Errorf("client followed the redirect to storage (X-API-Key %q)", r.Header.Get("X-API-Key"))
			w.WriteHeader(200)
		default:
			return false
		}
		return true
	})
	storageURL = f.srv.URL + "/storage/a.tar"
	c, logs := testClient(t, f, func(c *Config) { c.MaxRetries = 2 })
	ctx := ctxT(t)
	run := "run-1:train:0"

	got, err := c.ArchiveURL(ctx, run, "sampler_weights/redirect")
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != storageURL+"?X-Goog-Signature=abc" || !got.Expires.Equal(expires) {
		t.Errorf("302: got %+v", got)
	}
	r := f.requests("/api/v1/training_runs/run-1:train:0/checkpoints/sampler_weights/redirect/archive")
	if len(r) != 1 || r[0].Header.Get("Accept") != "application/json" || r[0].Method != "GET" {
		t.Errorf("archive request %+v", r)
	}

	before := time.Now()
	got, err = c.ArchiveURL(ctx, run, "sampler_weights/relative")
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != f.srv.URL+"/storage/rel.tar" {
		t.Errorf("relative Location resolved to %q", got.URL)
	}
	if got.Expires.Before(before.Add(14*time.Minute)) || got.Expires.After(time.Now().Add(16*time.Minute)) {
		t.Errorf("missing Expires should default to now+15min, got %v", got.Expires)
	}

	got, err = c.ArchiveURL(ctx, run, "sampler_weights/json")
	if err != nil || got.URL != "https://storage.example/a.tar" || !got.Expires.Equal(expires) {
		t.Errorf("200 JSON: %+v, %v", got, err)
	}

	_, err = c.ArchiveURL(ctx, run, "sampler_weights/html")
	if !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("200 non-JSON: err %v, want schema error", err)
	}

	got, err = c.ArchiveURL(ctx, run, "sampler_weights/slow")
	if err != nil || got.URL != storageURL {
		t.Fatalf("503 then 302: %+v, %v", got, err)
	}
	if n := f.count("/api/v1/training_runs/run-1:train:0/checkpoints/sampler_weights/slow/archive"); n != 3 {
		t.Errorf("slow archive: %d attempts, want 3", n)
	}
	if !strings.Contains(logs.String(), "archive: Error code: 503") {
		t.Errorf("503 waits not logged:\n%s", logs)
	}

	_, err = c.ArchiveURL(ctx, run, "sampler_weights/never")
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 503 {
		t.Fatalf("never ready: err %v", err)
	}
	if n := f.count("/api/v1/training_runs/run-1:train:0/checkpoints/sampler_weights/never/archive"); n != 3 {
		t.Errorf("never ready: %d attempts, want 1 + MaxRetries = 3", n)
	}
}

// Redirects from ordinary endpoints are not followed either: X-API-Key
// would go wherever the Location points.
func TestRedirectsNeverFollowed(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		switch r.URL.Path {
		case "/api/v1/healthz":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case "/elsewhere":
			t.Errorf("redirect followed with X-API-Key %q", r.Header.Get("X-API-Key"))
			writeJSON(w, 200, `{"status":"ok"}`)
		default:
			return false
		}
		return true
	})
	c, _ := testClient(t, f, func(c *Config) { c.HTTPClient = &http.Client{} })
	err := c.Healthz(ctxT(t))
	if msg, _ := CLIError(err); msg != "API error (status 302)" {
		t.Errorf("err %v → %q", err, msg)
	}
}
