package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tinkershell/tinker/lib/atomicfile"
)

// A log directory holds one run, whatever its loop:
//
//	config.json    the settings that must match for the run to resume
//	metrics.jsonl  one Record per finished step, appended as steps finish
//	state.json     the latest saved State
//
// config.json and state.json are replaced atomically; metrics.jsonl is
// cut back to the saved state's steps when a run resumes, so that the
// steps run again after the resume are not recorded twice.

// State is log_dir/state.json: the latest saved training state.
type State struct {
	Step        int    `json:"step"`
	StatePath   string `json:"state_path"`
	SamplerPath string `json:"sampler_path,omitempty"` // set once the run has finished
}

// logDir is an open log directory of records M.
type logDir[M Record] struct {
	dir     string
	metrics *os.File // open for appending once training starts
}

// openLogDir prepares dir for a run with settings cfg and returns the
// saved state and the metrics of its steps to resume from (zero when
// starting afresh). A directory holding a run with other settings is an
// error naming the settings that differ.
func openLogDir[M Record](dir string, cfg any) (*logDir[M], State, []M, error) {
	l := &logDir[M]{dir: dir}
	want, _ := json.MarshalIndent(cfg, "", "  ")
	got, err := os.ReadFile(l.path("config.json"))
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, State{}, nil, err
		}
		return l, State{}, nil, atomicfile.WriteFile(l.path("config.json"), append(want, '\n'))
	}
	if err != nil {
		return nil, State{}, nil, err
	}
	if diff := configDiff(got, want); diff != "" {
		// Callers prefix "log_dir: ".
		return nil, State{}, nil, fmt.Errorf("%s holds a run with other settings (%s); use another log_dir", dir, diff)
	}
	st, found, err := l.readState()
	if err != nil || !found {
		return l, State{}, nil, err // no step was saved: start again
	}
	kept, err := l.keepMetrics(st.Step)
	return l, st, kept, err
}

func (l *logDir[M]) path(name string) string { return filepath.Join(l.dir, name) }

func (l *logDir[M]) readState() (st State, found bool, err error) {
	b, err := os.ReadFile(l.path("state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return State{}, false, fmt.Errorf("%s: %w", l.path("state.json"), err)
	}
	return st, true, nil
}

// keepMetrics rewrites metrics.jsonl with the records of steps 1..step
// (those the saved state includes) and returns them.
func (l *logDir[M]) keepMetrics(step int) ([]M, error) {
	var kept []M
	if b, err := os.ReadFile(l.path("metrics.jsonl")); err == nil {
		for _, line := range bytes.Split(b, []byte("\n")) {
			var m M
			if json.Unmarshal(line, &m) == nil && m.StepNumber() <= step && m.StepNumber() > len(kept) {
				kept = append(kept, m)
			}
		}
	}
	var buf bytes.Buffer
	for _, m := range kept {
		line, _ := json.Marshal(m)
		buf.Write(append(line, '\n'))
	}
	return kept, atomicfile.WriteFile(l.path("metrics.jsonl"), buf.Bytes())
}

// start opens metrics.jsonl for appending.
func (l *logDir[M]) start() (err error) {
	l.metrics, err = os.OpenFile(l.path("metrics.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	return err
}

// record appends one step's metrics as a line.
func (l *logDir[M]) record(m M) error {
	line, _ := json.Marshal(m)
	_, err := l.metrics.Write(append(line, '\n'))
	return err
}

// saveState replaces state.json.
func (l *logDir[M]) saveState(st State) error {
	b, _ := json.MarshalIndent(st, "", "  ")
	return atomicfile.WriteFile(l.path("state.json"), append(b, '\n'))
}

func (l *logDir[M]) close() {
	if l.metrics != nil {
		l.metrics.Close()
	}
}

// configDiff words the settings of want that got does not share.
func configDiff(got, want []byte) string {
	var a, b map[string]any
	json.Unmarshal(got, &a)
	json.Unmarshal(want, &b)
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var diffs []string
	for _, k := range keys {
		if fmt.Sprint(a[k]) != fmt.Sprint(b[k]) {
			diffs = append(diffs, settingChange(k, a[k], b[k]))
		}
	}
	return strings.Join(diffs, "; ")
}

// settingChange words one changed setting; a changed file is named, not
// shown as two hashes.
func settingChange(key string, was, now any) string {
	if what, ok := strings.CutSuffix(key, "_sha256"); ok {
		switch what {
		case "data":
			what = "training data"
		case "eval":
			what = "eval data"
		}
		return fmt.Sprintf("the %s changed", what)
	}
	return fmt.Sprintf("%s was %v, now %v", key, was, now)
}
