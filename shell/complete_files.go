package shell

import (
	"os"
	"path/filepath"
	"strings"
)

// File names complete inside strings, so `io.read_jsonl("qa_` ⇥ finds
// qa_train.jsonl. A directory completes with its trailing "/" (the string
// stays open for what is inside); names completion could not type as one
// word of a string literal are skipped (see offerable).

// fileListMax bounds the entries read from one directory.
const fileListMax = 1000

// modelOnly says whether the builtin fn's string arguments name models or
// checkpoints, never files; fileOnly whether they name files, never models.
// Switches rather than maps: a package-level map is built at every start.
func modelOnly(fn string) bool {
	switch fn {
	case "sample", "tokenizer", "save_checkpoint", "training_client", "lr_for", "render":
		return true
	}
	return false
}

func fileOnly(fn string) bool { return fn == "load" }

// fileCandidates are the files and directories whose path starts with
// word, relative to the working directory.
func fileCandidates(word string) []string {
	dir, prefix := filepath.Split(word)
	f, err := os.Open(orDot(dir))
	if err != nil {
		return nil
	}
	defer f.Close()
	entries, _ := f.ReadDir(fileListMax)
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || strings.HasPrefix(name, ".") && !strings.HasPrefix(prefix, ".") || !offerable(name) {
			continue
		}
		if isDir(dir, e) {
			name += "/"
		}
		out = append(out, dir+name)
	}
	return out
}

func orDot(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// isDir follows a symlink to tell whether the entry is a directory.
func isDir(dir string, e os.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&os.ModeSymlink == 0 {
		return false
	}
	st, err := os.Stat(filepath.Join(orDot(dir), e.Name()))
	return err == nil && st.IsDir()
}

// closeQuote ends a lone completion with the string's quote, unless it is
// a directory (more may follow) or the quote is there already.
func closeQuote(completions []string, quote byte, tail string) []string {
	if len(completions) != 1 || strings.HasSuffix(completions[0], "/") || strings.HasPrefix(tail, string(quote)) {
		return completions
	}
	return []string{completions[0] + string(quote)}
}
