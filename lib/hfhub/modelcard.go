package hfhub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/tinkershell/tinker/lib/lazyre"
)

// SanitizeRepoName makes s usable as a Hub repo name: characters other
// than letters, digits, '-', '_' and '.' become '-', runs of "--" shrink to
// one '-', and '-', '_', '.' and spaces are trimmed from both ends.
func SanitizeRepoName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteRune('-')
		}
	}
	name := b.String()
	for strings.Contains(name, "--") {
		name = strings.ReplaceAll(name, "--", "-")
	}
	return strings.Trim(name, "-_ .")
}

// DefaultRepoID names the repo of a checkpoint pushed without one:
// tinker-<last segment of the base model>-<run id>, "adapter" standing in
// for an unknown base model. It has no namespace: the Hub account gives it.
func DefaultRepoID(baseModel, runID string) string {
	short := "adapter"
	if baseModel != "" && baseModel != "unknown" {
		short = baseModel[strings.LastIndex(baseModel, "/")+1:]
	}
	return SanitizeRepoName("tinker-" + short + "-" + runID)
}

// DefaultRevision names the branch of a checkpoint pushed without a repo
// id: its checkpoint id with '/' as '-', e.g. sampler_weights-0001.
func DefaultRevision(checkpointID string) string {
	return SanitizeRepoName(strings.ReplaceAll(checkpointID, "/", "-"))
}

// splitTinkerPath splits tinker://<run>/<kind>/<name> into the run id and
// the checkpoint id <kind>/<name>.
func splitTinkerPath(p string) (runID, checkpointID string, ok bool) {
	rest, ok := strings.CutPrefix(p, "tinker://")
	if !ok {
		return "", "", false
	}
	runID, checkpointID, ok = strings.Cut(rest, "/")
	return runID, checkpointID, ok && runID != "" && strings.Count(checkpointID, "/") == 1
}

var tinkerPathRE = lazyre.New("tinker://[^\\s`]+")

// FindTinkerPath returns the first tinker:// path in a model card, or "".
func FindTinkerPath(readme string) string {
	return tinkerPathRE.FindString(readme)
}

// plainYAML matches values that YAML reads back unchanged without quotes.
var plainYAML = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._/@+:-]*$`)

func yamlValue(s string) string {
	if plainYAML.MatchString(s) && !strings.HasSuffix(s, ":") {
		return s
	}
	b, _ := json.Marshal(s) // a JSON string is a YAML double-quoted scalar
	return string(b)
}

// ModelCard renders README.md for the adapter repo repoID: front matter
// the Hub indexes (base model, PEFT library, tags, the tinker:// path),
// usage, the source checkpoint and what is known about the training
// (unknown facts are left out). It ends with exactly one newline.
func ModelCard(repoID, tinkerPath string, c AdapterInfo) string {
	base := c.BaseModel
	if base == "" {
		base = "unknown"
	}
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("---")
	line("base_model: %s", yamlValue(base))
	line("library_name: peft")
	line("tags:")
	for _, tag := range []string{"tinker", "peft", "lora"} {
		line("- %s", tag)
	}
	if base != "unknown" {
		line("- %s", yamlValue("base_model:adapter:"+base))
	}
	line("tinker_path: %s", yamlValue(tinkerPath))
	line("---")
	line("")
	line("# Tinker LoRA adapter")
	line("")
	line("A LoRA adapter trained with Tinker, stored in the PEFT format.")
	line("")
	line("## Usage")
	line("")
	line("```python")
	line("from peft import PeftModel")
	line("from transformers import AutoModelForCausalLM")
	line("")
	line("model = AutoModelForCausalLM.from_pretrained(%q, device_map=\"auto\")", base)
	line("model = PeftModel.from_pretrained(model, %q)", repoID)
	line("```")
	line("")
	line("## Source")
	line("")
	line("The Tinker checkpoint these weights were exported from:")
	line("")
	line("```")
	line("%s", tinkerPath)
	line("```")
	line("")
	line("## Details")
	line("")
	line("- Base model: %s", base)
	if c.LoraRank != nil {
		line("- LoRA rank: %d", *c.LoraRank)
	}
	if c.TrainAttn != nil || c.TrainMLP != nil || c.TrainUnembed != nil {
		line("- Trained modules: attention %s, MLP %s, unembedding %s", yesNo(c.TrainAttn), yesNo(c.TrainMLP), yesNo(c.TrainUnembed))
	}
	return b.String()
}

func yesNo(p *bool) string {
	switch {
	case p == nil:
		return "unknown"
	case *p:
		return "yes"
	}
	return "no"
}

// fillBaseModel sets base_model_name_or_path in dir/adapter_config.json
// when it is not a string, so PEFT can find the base model, and rewrites
// the file with sorted keys and two-space indentation.
func fillBaseModel(dir, baseModel string) error {
	path := filepath.Join(dir, "adapter_config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // keep numbers as written
	var cfg map[string]any
	if err := dec.Decode(&cfg); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, ok := cfg["base_model_name_or_path"].(string); ok {
		return nil
	}
	cfg["base_model_name_or_path"] = baseModel
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(cfg); err != nil { // Encode ends with the newline
		return err
	}
	return writeAtomic(path, out.Bytes())
}
