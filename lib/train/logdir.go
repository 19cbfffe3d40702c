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

// logDir is an open log directory of records M, locked against a second
// run in the same directory until close.
type logDir[M Record] struct {
	dir     string
	lock    *os.File
	metrics *os.File // open for appending once training starts
}

// openLogDir prepares dir for a run with settings cfg and returns the
// saved state and the metrics of its steps to resume from (zero when
// starting afresh). A directory another run is using, holding a run with
// other settings, or whose files disagree is an error saying what to do.
func openLogDir[M Record](dir string, cfg any) (*logDir[M], State, []M, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, State{}, nil, err
	}
	lock, err := atomicfile.ExclusiveDir(dir)
	if err != nil {
		return nil, State{}, nil, fmt.Errorf("lock log_dir %s: %w", dir, err)
	}
	if lock == nil {
		return nil, State{}, nil, fmt.Errorf("log_dir %s is in use by another run: wait for it to finish, or use another log_dir", dir)
	}
	l := &logDir[M]{dir: dir, lock: lock}
	st, kept, err := l.load(cfg)
	if err != nil {
		l.close()
		return nil, State{}, nil, err
	}
	return l, st, kept, nil
}

// load checks the directory against cfg and reads what it holds.
func (l *logDir[M]) load(cfg any) (State, []M, error) {
	want, _ := json.MarshalIndent(cfg, "", "  ")
	got, err := os.ReadFile(l.path("config.json"))
	if errors.Is(err, os.ErrNotExist) {
		if err := l.checkEmpty(); err != nil {
			return State{}, nil, err
		}
		return State{}, nil, atomicfile.WriteFile(l.path("config.json"), append(want, '\n'))
	}
	if err != nil {
		return State{}, nil, err
	}
	if diff := configDiff(got, want); diff != "" {
		return State{}, nil, fmt.Errorf("log_dir %s holds a run with other settings (%s); use another log_dir", l.dir, diff)
	}
	st, found, err := l.readState()
	if err != nil || !found {
		return State{}, nil, err // no step was saved: start again
	}
	if st.Step > 0 && st.StatePath == "" {
		return State{}, nil, fmt.Errorf("log_dir %s is inconsistent: state.json is at step %d but names no saved state; use a new log_dir (or restore its files)", l.dir, st.Step)
	}
	kept, err := l.keepMetrics(st.Step)
	return st, kept, err
}

// checkEmpty refuses a run's files without the config.json that says
// which run they belong to: starting afresh would mix two runs.
func (l *logDir[M]) checkEmpty() error {
	for _, name := range []string{"state.json", "metrics.jsonl"} {
		if _, err := os.Lstat(l.path(name)); err == nil {
			return fmt.Errorf("log_dir %s holds %s but no config.json: restore config.json to resume, or use a new log_dir", l.dir, name)
		}
	}
	return nil
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
// (those the saved state includes) and returns them. A state whose steps
// the metrics do not all record (a step of 10^6 or -5 written by hand, a
// truncated metrics.jsonl) is refused before anything is rewritten.
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
	if len(kept) != step {
		return nil, fmt.Errorf("log_dir %s is inconsistent: state.json is at step %d but metrics.jsonl holds %d steps; use a new log_dir (or restore its files)",
			l.dir, step, len(kept))
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
	if l.lock != nil {
		l.lock.Close()
		l.lock = nil
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

// logDirErr is a log_dir failure as the one line a user sees: prefixed
// "log_dir: " unless it names the log_dir already.
func logDirErr(err error) error {
	msg := err.Error()
	if !strings.HasPrefix(msg, "log_dir") {
		msg = "log_dir: " + msg
	}
	return userErr(msg)
}
