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

	_, st, kept, err = openLogDir[SFTMetrics](dir, cfg)
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
