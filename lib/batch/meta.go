package batch

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/chat"
)

// The meta file next to the output records what its rows were sampled
// with. Models and num_samples are not part of it: rows are keyed by model
// and sample index, so a later run may add models or samples to a file.
type meta struct {
	Format  int        `json:"format"`
	Params  metaParams `json:"params"`
	Prompts struct {
		Count  int    `json:"count"`
		SHA256 string `json:"sha256"`
	} `json:"prompts"`
}

const metaFormat = 1

type metaParams struct {
	MaxTokens   int      `json:"max_tokens"`
	Temperature float64  `json:"temperature"`
	TopP        float64  `json:"top_p"`
	TopK        int      `json:"top_k"`
	StopStrings []string `json:"stop_strings"`
	StopTokens  []int    `json:"stop_tokens"`
	Seed        int64    `json:"seed"`
	Renderer    string   `json:"renderer"`
}

// MetaPath is where the parameters of output's rows are kept.
func MetaPath(output string) string { return output + ".meta.json" }

func newMeta(j *Job, seed int64) meta {
	p := j.Params
	m := meta{Format: metaFormat, Params: metaParams{MaxTokens: p.MaxTokens, Temperature: p.Temperature, TopP: p.TopP,
		TopK: p.TopK, Seed: seed, Renderer: p.Renderer}}
	if len(p.StopStrings) > 0 {
		m.Params.StopStrings = p.StopStrings
	}
	if len(p.StopTokens) > 0 {
		m.Params.StopTokens = p.StopTokens
	}
	m.Prompts.Count = len(j.Prompts)
	m.Prompts.SHA256 = promptsHash(j.Prompts)
	return m
}

// promptsHash covers every prompt's id and content, in order.
func promptsHash(ps []Prompt) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, p := range ps {
		// Encoding into a hash cannot fail.
		_ = enc.Encode(struct {
			ID       string         `json:"id"`
			Text     *string        `json:"text"`
			Tokens   []int          `json:"tokens"`
			Messages []chat.Message `json:"messages"`
		}{p.ID, p.Text, p.Tokens, p.Messages})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// resolveSeed checks the job against the meta file of its output and
// returns the base seed to use: the job's, or for a job without one the
// seed recorded by the run that started the file (a new random one for a
// new file). A file with rows from other parameters is refused; the meta
// file is (re)written when the output has no rows yet.
func resolveSeed(j *Job, ex *existing) (int64, error) {
	path := MetaPath(j.Output)
	old, err := readMeta(path)
	if err != nil {
		return 0, err
	}
	if ex.lines > 0 && old == nil {
		return 0, fmt.Errorf("%s has rows but no %s, so the parameters they were sampled with are unknown; use a new output file",
			j.Output, filepath.Base(path))
	}
	var seed int64
	switch {
	case j.Params.Seed != nil:
		seed = *j.Params.Seed
	case old != nil && ex.lines > 0:
		seed = old.Params.Seed
	default:
		seed = randomSeed()
	}
	want := newMeta(j, seed)
	if old != nil && ex.lines > 0 {
		if diff := metaDiff(old, &want); diff != "" {
			return 0, fmt.Errorf("%s was sampled with different parameters (%s); to resume it use the same ones, or give a new output file", j.Output, diff)
		}
		return seed, nil
	}
	if err := writeMeta(path, &want); err != nil {
		return 0, err
	}
	return seed, nil
}

func randomSeed() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	return int64(binary.LittleEndian.Uint64(b[:]) & (1<<53 - 1))
}

// metaDiff lists the parameters that differ, as "name was X, now Y".
func metaDiff(old, now *meta) string {
	var diffs []string
	if old.Format != now.Format {
		diffs = append(diffs, fmt.Sprintf("format %d, this version writes %d", old.Format, now.Format))
	}
	a, b := fields(old.Params), fields(now.Params)
	for _, k := range []string{"max_tokens", "temperature", "top_p", "top_k", "stop_strings", "stop_tokens", "seed", "renderer"} {
		if !bytes.Equal(a[k], b[k]) {
			diffs = append(diffs, fmt.Sprintf("%s was %s, now %s", k, a[k], b[k]))
		}
	}
	if old.Prompts != now.Prompts {
		diffs = append(diffs, fmt.Sprintf("the prompts differ (%d then, %d now)", old.Prompts.Count, now.Prompts.Count))
	}
	return strings.Join(diffs, "; ")
}

func fields(p metaParams) map[string]json.RawMessage {
	b, _ := json.Marshal(p) // plain fields: cannot fail
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	return m
}

// readMeta returns nil when the file does not exist.
func readMeta(path string) (*meta, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var m meta
	if err := json.Unmarshal(b, &m); err != nil || m.Format == 0 {
		return nil, fmt.Errorf("%s is not a batch parameters file; remove it or give a new output file", path)
	}
	return &m, nil
}

// writeMeta replaces path through a synced temporary sibling, so the file
// is always either the old or the new version.
func writeMeta(path string, m *meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, append(b, '\n'))
}
