package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A resumed log directory keeps the metrics of the steps its saved state
// includes, drops the later ones (they run again), and refuses a run with
// other settings by naming them.
func TestLogDirResume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cfg := sftConfig{BaseModel: "m", BatchSize: 4}
	l, st, kept, err := openLogDir[SFTMetrics](dir, cfg)
	if err != nil || st.Step != 0 || kept != nil {
		t.Fatalf("fresh: %v, %+v, %v", err, st, kept)
	}
	if err := l.start(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		l.record(SFTMetrics{Step: i, Loss: float64(i)})
	}
	l.saveState(State{Step: 2, StatePath: "tinker://x/weights/sft-000002"})
	l.close()

	l, st, kept, err = openLogDir[SFTMetrics](dir, cfg)
	if err == nil {
		l.close()
	}
	if err != nil || st.Step != 2 || st.StatePath != "tinker://x/weights/sft-000002" || len(kept) != 2 || kept[1].Loss != 2 {
		t.Fatalf("resume: %v, %+v, %+v", err, st, kept)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Errorf("metrics.jsonl has %d lines after resuming at step 2:\n%s", n, b)
	}
	cfg.BatchSize = 8
	if _, _, _, err := openLogDir[SFTMetrics](dir, cfg); err == nil || !strings.Contains(err.Error(), "batch_size was 4, now 8") {
		t.Errorf("other settings: %v", err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 3 {
		t.Errorf("log_dir holds %d entries, want config, metrics and state only", len(es))
	}
}

// logDirWithRun leaves in a new log_dir the files of a run saved at step 2
// of 3 recorded, and returns the directory and its settings.
func logDirWithRun(t *testing.T) (string, sftConfig) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	cfg := sftConfig{BaseModel: "m", BatchSize: 4}
	l, _, _, err := openLogDir[SFTMetrics](dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	if err := l.start(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		l.record(SFTMetrics{Step: i, Loss: float64(i)})
	}
	l.saveState(State{Step: 2, StatePath: "tinker://x/weights/sft-000002"})
	return dir, cfg
}

// TestLogDirInUse: a second run on a log_dir in use is refused, and
// admitted once the first has closed it.
func TestLogDirInUse(t *testing.T) {
	dir, cfg := logDirWithRun(t)
	l, _, _, err := openLogDir[SFTMetrics](dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := openLogDir[SFTMetrics](dir, cfg); err == nil || !strings.Contains(err.Error(), "in use by another run") {
		t.Errorf("second run: %v", err)
	}
	l.close()
	l, _, _, err = openLogDir[SFTMetrics](dir, cfg)
	if err != nil {
		t.Errorf("after the first run closed: %v", err)
	} else {
		l.close()
	}
}

// TestLogDirInconsistent: files that disagree are refused in one line and
// left as they were, never resumed from or restarted over.
func TestLogDirInconsistent(t *testing.T) {
	for _, c := range []struct {
		name, file, content, want string // content "" removes the file
	}{
		{"no config", "config.json", "", "holds state.json but no config.json"},
		{"step far ahead", "state.json", `{"step": 1000000, "state_path": "tinker://x/weights/a"}`, "state.json is at step 1000000 but metrics.jsonl holds 3 steps"},
		{"negative step", "state.json", `{"step": -5, "state_path": "tinker://x/weights/a"}`, "state.json is at step -5"},
		{"no saved state", "state.json", `{"step": 2}`, "names no saved state"},
	} {
		dir, cfg := logDirWithRun(t)
		p := filepath.Join(dir, c.file)
		if c.content == "" {
			os.Remove(p)
		} else {
			os.WriteFile(p, []byte(c.content), 0o644)
		}
		metrics, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
		_, _, _, err := openLogDir[SFTMetrics](dir, cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want one line with %q", c.name, err, c.want)
		}
		if after, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl")); string(after) != string(metrics) {
			t.Errorf("%s: metrics.jsonl was rewritten", c.name)
		}
	}
}
