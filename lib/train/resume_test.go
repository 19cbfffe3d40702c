package train

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// adapterBytes is the adapter weights file of a sampler checkpoint, read
// from its archive.
func adapterBytes(t *testing.T, sess *tinkerapi.Session, path string) []byte {
	t.Helper()
	p, err := tinkerapi.ParsePath(path)
	if err != nil {
		t.Fatal(err)
	}
	au, err := sess.Client().ArchiveURL(t.Context(), p.RunID, p.CheckpointID)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(au.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	tr := tar.NewReader(resp.Body)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s has no adapter weights: %v", path, err)
		}
		if strings.HasSuffix(h.Name, ".safetensors") {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

// interruptAt is a context cancelled when step n finishes, and the OnStep
// that does it.
func interruptAt(t *testing.T, n int) (context.Context, func(Record, int)) {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	return ctx, func(m Record, _ int) {
		if m.StepNumber() == n {
			cancel()
		}
	}
}

// resumeMatches runs a loop whole, then interrupted after step 1 and
// resumed, and compares the final adapters byte for byte.
func resumeMatches[M Record](t *testing.T, sess *tinkerapi.Session, run func(ctx context.Context, logDir string, onStep func(Record, int)) (*Result[M], error)) {
	dir := t.TempDir()
	whole, err := run(t.Context(), filepath.Join(dir, "whole"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, onStep := interruptAt(t, 1)
	part, err := run(ctx, filepath.Join(dir, "cut"), onStep)
	var ie *InterruptedError
	if !errors.As(err, &ie) || ie.Step >= whole.Total || part.SamplerPath != "" {
		t.Fatalf("interrupted call: %v", err)
	}
	rest, err := run(t.Context(), filepath.Join(dir, "cut"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest.Steps) != whole.Total {
		t.Fatalf("resumed run has %d steps, want %d", len(rest.Steps), whole.Total)
	}
	a, b := adapterBytes(t, sess, whole.SamplerPath), adapterBytes(t, sess, rest.SamplerPath)
	if !bytes.Equal(a, b) {
		t.Errorf("resumed adapter (%d bytes) differs from the uninterrupted one (%d bytes)", len(b), len(a))
	}
}

func TestDPOInterruptAndResume(t *testing.T) {
	sess := localSession(t, 0)
	resumeMatches(t, sess, func(ctx context.Context, logDir string, onStep func(Record, int)) (*DPOResult, error) {
		o := dpoOptions(logDir)
		o.Epochs, o.BatchSize, o.OnStep = 3, 2, onStep
		return DPO(ctx, sess, o)
	})
}

func TestRLInterruptAndResume(t *testing.T) {
	sess := localSession(t, 0)
	resumeMatches(t, sess, func(ctx context.Context, logDir string, onStep func(Record, int)) (*RLResult, error) {
		o := rlOptions(logDir, 3)
		o.GroupSize, o.OnStep = 4, onStep
		return RL(ctx, sess, o)
	})
}

func TestSFTInterruptAndResumeBytes(t *testing.T) {
	sess := localSession(t, 0)
	resumeMatches(t, sess, func(ctx context.Context, logDir string, onStep func(Record, int)) (*SFTResult, error) {
		o := resumeOptions(logDir)
		o.Epochs, o.OnStep = 1, onStep
		return SFT(ctx, sess, o)
	})
}
