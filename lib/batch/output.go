package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// Row is one line of the output file.
type Row struct {
	Model      string    `json:"model"`
	PromptID   string    `json:"prompt_id"`
	Sample     int       `json:"sample"`
	Seed       int64     `json:"seed"`
	Text       string    `json:"text"`
	Tokens     []int     `json:"tokens"`
	Logprobs   []float32 `json:"logprobs"` // null when the server sent none
	StopReason string    `json:"stop_reason"`
}

func (r *Row) key() key { return key{r.Model, r.PromptID, r.Sample} }

// existing is what a previous run left in the output file.
type existing struct {
	rows  map[key]rowStats
	size  int64 // bytes of complete lines; a torn tail beyond is cut off
	torn  int   // bytes of the torn tail
	lines int
}

// rowStats is what the summary needs of a row.
type rowStats struct {
	tokens   int
	logprobs int // how many tokens have a logprob
	sumLP    float64
	stop     string
}

func statsOf(r *Row) rowStats {
	s := rowStats{tokens: len(r.Tokens), stop: r.StopReason}
	for _, lp := range r.Logprobs {
		s.sumLP += float64(lp)
		s.logprobs++
	}
	return s
}

// readExisting parses the output file. Every complete line must be a row;
// bytes after the last newline are a line torn by a crash mid-write.
func readExisting(path string) (*existing, error) {
	ex := &existing{rows: map[key]rowStats{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ex, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	end := bytes.LastIndexByte(data, '\n') + 1
	ex.size, ex.torn = int64(end), len(data)-end
	for rest, line := data[:end], 1; len(rest) > 0; line++ {
		i := bytes.IndexByte(rest, '\n')
		b := rest[:i]
		rest = rest[i+1:]
		var r Row
		if err := json.Unmarshal(b, &r); err != nil || r.Model == "" || r.PromptID == "" {
			return nil, fmt.Errorf("%s line %d is not a result row; give a new output file or repair this one", path, line)
		}
		ex.lines++
		if _, dup := ex.rows[r.key()]; !dup {
			ex.rows[r.key()] = statsOf(&r)
		}
	}
	return ex, nil
}

// appender writes rows to the output file, one write and one fsync per
// row under a mutex, so the file only ever ends in a complete line or in
// the torn tail of the single write a crash interrupted.
type appender struct {
	mu sync.Mutex
	f  *os.File
}

// openAppender cuts a torn tail off and opens the file for appending.
func openAppender(path string, ex *existing) (*appender, error) {
	if ex.torn > 0 {
		if err := os.Truncate(path, ex.size); err != nil {
			return nil, fmt.Errorf("cut the incomplete last line of %s: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &appender{f: f}, nil
}

func (a *appender) write(r *Row) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode row: %w", err)
	}
	b = append(b, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.f.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", a.f.Name(), err)
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", a.f.Name(), err)
	}
	return nil
}

func (a *appender) close() error {
	if err := a.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", a.f.Name(), err)
	}
	return nil
}
