package console

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

const (
	maxMetricsBytes = 32 << 20 // metrics.jsonl beyond this is read up to it
	maxLogDirs      = 200      // log directories listed under one folder
)

// metricsOrder is the order of the figures the training loops write
// (lib/train: SFT, DPO, RL); other numeric fields follow by name.
var metricsOrder = []string{"loss", "eval_nll", "mean_reward", "accuracy", "margin", "chosen_reward", "rejected_reward", "learning_rate"}

// skipMetric says whether a field is bookkeeping, not a curve.
func skipMetric(k string) bool { return k == "step" || k == "epoch" || k == "time" }

// logDirs lists the log directories the console shows: each configured
// directory that holds a metrics.jsonl, and the subdirectories holding one
// of each that does not. Read on every request, so new runs appear.
func (c *Console) logDirs() []string {
	var out []string
	for _, d := range c.opts.LogDirs {
		if isFile(filepath.Join(d, "metrics.jsonl")) {
			out = append(out, d)
			continue
		}
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			sub := filepath.Join(d, e.Name())
			if e.IsDir() && isFile(filepath.Join(sub, "metrics.jsonl")) && len(out) < maxLogDirs {
				out = append(out, sub)
			}
		}
	}
	return out
}

// isFile reports whether p is a regular file (not a FIFO or device, which
// the console never opens).
func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// Metrics is a metrics.jsonl read into curves, with its last records.
type Metrics struct {
	Curves  []Named
	Columns []string
	Rows    [][]string // the newest records, newest first
	Lines   int
	Bad     int // lines that were not a JSON object
}

// readMetrics reads dir/metrics.jsonl (up to maxMetricsBytes).
func readMetrics(dir string) (*Metrics, error) {
	p := filepath.Join(dir, "metrics.jsonl")
	if !isFile(p) {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMetrics(io.LimitReader(f, maxMetricsBytes))
}

// parseMetrics reads one JSON object a line: each numeric field becomes a
// curve by "step" (or by line number where a record has none).
func parseMetrics(r io.Reader) (*Metrics, error) {
	m := &Metrics{}
	byName := map[string]*series{}
	var recs []map[string]any
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		m.Lines++
		var rec map[string]any
		if json.Unmarshal(line, &rec) != nil || rec == nil {
			m.Bad++
			continue
		}
		x := float64(m.Lines)
		if s, ok := rec["step"].(float64); ok {
			x = s
		}
		for k, v := range rec {
			if f, ok := v.(float64); ok && !skipMetric(k) {
				if byName[k] == nil {
					byName[k] = &series{}
				}
				byName[k].add(x, f)
			}
		}
		recs = append(recs, rec)
		if len(recs) > 2*maxTableRows {
			recs = recs[maxTableRows:]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("metrics.jsonl line %d: %w", m.Lines+1, err)
	}
	m.Curves = orderCurves(byName)
	m.Columns, m.Rows = table(recs)
	return m, nil
}

// maxTableRows is how many of the newest records the page lists.
const maxTableRows = 20

// orderCurves puts the known figures first, then the others by name.
func orderCurves(byName map[string]*series) []Named {
	var out []Named
	for _, k := range metricsOrder {
		if s := byName[k]; s != nil {
			out = append(out, Named{k, *s})
			delete(byName, k)
		}
	}
	rest := make([]string, 0, len(byName))
	for k := range byName {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	for _, k := range rest {
		out = append(out, Named{k, *byName[k]})
	}
	return out
}

// table lists the newest records' fields, newest first.
func table(recs []map[string]any) ([]string, [][]string) {
	if len(recs) > maxTableRows {
		recs = recs[len(recs)-maxTableRows:]
	}
	seen := map[string]bool{}
	var cols []string
	for _, r := range recs {
		for k := range r {
			if !seen[k] {
				seen[k] = true
				cols = append(cols, k)
			}
		}
	}
	sort.SliceStable(cols, func(i, j int) bool {
		return colRank(cols[i]) < colRank(cols[j]) || colRank(cols[i]) == colRank(cols[j]) && cols[i] < cols[j]
	})
	rows := make([][]string, 0, len(recs))
	for i := len(recs) - 1; i >= 0; i-- {
		row := make([]string, len(cols))
		for j, k := range cols {
			row[j] = cell(recs[i][k])
		}
		rows = append(rows, row)
	}
	return cols, rows
}

// colRank puts step first, the known figures next, the rest after.
func colRank(k string) int {
	if k == "step" {
		return 0
	}
	for i, o := range metricsOrder {
		if o == k {
			return 1 + i
		}
	}
	return 100
}

func cell(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case float64:
		return num(v)
	case string:
		return v
	}
	b, _ := json.Marshal(v)
	return string(b)
}
