package shell

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/peterh/liner"
	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/lazyre"
	"golang.org/x/sys/unix"
	xterm "golang.org/x/term"
)

// ErrAborted is returned by a LineEditor when the user presses Ctrl-C while
// typing: the input is discarded and the prompt starts over.
var ErrAborted = errors.New("input aborted")

// LineEditor is the small interface the prompt needs from a line editor.
// Prompt returns io.EOF on Ctrl-D at an empty line and ErrAborted on Ctrl-C;
// its text holds several lines separated by "\n" when the user recalled a
// statement typed over several lines. AppendHistory takes a whole statement,
// its lines separated by "\n".
type LineEditor interface {
	Prompt(prompt string) (string, error)
	AppendHistory(line string)
	Close() error
}

// Completer proposes completions for the text before the cursor.
type Completer func(line string, pos int) (head string, completions []string, tail string)

// keyWatcher is implemented by editors that read the keyboard while
// statements run (see keyboard).
type keyWatcher interface {
	// watch routes Ctrl-C to cancel until stop is called.
	watch(cancel func()) (stop func())
	// watchPrompt calls cancel as well on a Ctrl-C typed while the editor
	// waits for the completer, until stop is called.
	watchPrompt(cancel func()) (stop func())
	// interrupt acts on SIGINT as on a typed Ctrl-C; false if the editor
	// does not read the keyboard.
	interrupt() bool
}

// linerEditor adapts github.com/peterh/liner.
type linerEditor struct {
	st          *liner.State
	kb          *keyboard // nil when standard input is not a terminal
	pasteOn     bool      // bracketed paste was turned on
	historyPath string
	cols        int // the terminal width liner last read (see lineMode)
}

// NewLinerEditor opens the terminal line editor with history in historyPath
// (created with mode 0600; empty disables history).
func NewLinerEditor(historyPath string, complete Completer) LineEditor {
	e := &linerEditor{historyPath: historyPath}
	if xterm.IsTerminal(0) {
		// Without it liner reads the terminal itself: the prompt works, but a
		// Ctrl-C typed right after Enter waits for the next prompt.
		e.kb, _ = openKeyboard()
	}
	st := liner.NewLiner()
	e.st, e.cols = st, termColumns()
	if e.kb != nil {
		// If this fails the keys keep their usual meaning between prompts:
		// Ctrl-C there is a SIGINT, which REPL handles as well.
		_ = keysAsInput()
		if liner.TerminalSupported() && xterm.IsTerminal(1) {
			os.Stdout.WriteString(pasteOn)
			e.pasteOn = true
		}
	}
	st.SetCtrlCAborts(true)
	st.SetMultiLineMode(true)
	st.SetTabCompletionStyle(liner.TabPrints)
	if complete != nil {
		st.SetWordCompleter(liner.WordCompleter(complete))
	}
	if historyPath != "" {
		if f, err := os.Open(historyPath); err == nil {
			_, _ = st.ReadHistory(f)
			f.Close()
		}
	}
	return e
}

func (e *linerEditor) Prompt(p string) (string, error) {
	if e.kb != nil {
		lineMode := e.lineMode(p)
		e.kb.beginPrompt(lineMode)
		defer e.kb.endPrompt()
		if !lineMode {
			defer func() { e.cols = termColumns() }()
		}
	}
	line, err := e.st.Prompt(p)
	if e.kb != nil && err == nil && e.kb.takeAbort() {
		return "", ErrAborted // Ctrl-C ended a plain line (see keyboard.cook)
	}
	if e.kb != nil && err == nil {
		if paste := e.kb.takePaste(); paste != "" {
			return "", &Pasted{Text: line + "\n" + paste}
		}
	}
	switch {
	case errors.Is(err, liner.ErrPromptAborted):
		return "", ErrAborted
	case err != nil:
		return "", err
	}
	return strings.Join(splitRecalled(line), "\n"), nil
}

// lineMode says whether liner will read this prompt as a plain line, which
// it does when the terminal is narrower than the prompt plus 10 columns (a
// 0×0 window reports 0). It judges by the width it read when it opened or
// during its last full prompt, which e.cols follows.
func (e *linerEditor) lineMode(prompt string) bool {
	return e.cols < utf8.RuneCountInString(prompt)+10
}

// termColumns is standard output's terminal width, 0 if unknown.
func termColumns() int {
	ws, err := unix.IoctlGetWinsize(1, unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// secretLike matches API keys and JWTs so they never reach the history
// file; compiled on first use to keep start-up fast.
var secretLike = lazyre.New(`tml-[A-Za-z0-9_-]{6,}|eyJ[A-Za-z0-9_-]{10,}`)

func (e *linerEditor) AppendHistory(stmt string) {
	if strings.TrimSpace(stmt) == "" || secretLike.MatchString(stmt) {
		return
	}
	lines := strings.Split(stmt, "\n")
	if entry, ok := joinStatement(lines); ok {
		e.st.AppendHistory(entry)
	} else {
		for _, l := range lines {
			if strings.TrimSpace(l) != "" {
				e.st.AppendHistory(l)
			}
		}
	}
	e.save()
}

// save rewrites the history file atomically with mode 0600.
func (e *linerEditor) save() {
	if e.historyPath == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(e.historyPath), 0o700); err != nil {
		return
	}
	// History is a convenience: a failed save keeps the old file.
	_ = atomicfile.Write(e.historyPath, 0o600, func(w io.Writer) error {
		_, err := e.st.WriteHistory(w)
		return err
	})
}

func (e *linerEditor) watch(cancel func()) (stop func()) {
	if e.kb == nil {
		return func() {}
	}
	return e.kb.watch(cancel)
}

func (e *linerEditor) watchPrompt(cancel func()) (stop func()) {
	if e.kb == nil {
		return func() {}
	}
	return e.kb.watchPrompt(cancel)
}

// pause stops reading the keyboard while a pager runs.
func (e *linerEditor) pause() (resume func()) {
	if e.kb == nil {
		return func() {}
	}
	return e.kb.pause()
}

func (e *linerEditor) interrupt() bool {
	if e.kb == nil {
		return false
	}
	e.kb.interrupt()
	return true
}

func (e *linerEditor) Close() error {
	if e.pasteOn {
		os.Stdout.WriteString(pasteOff)
	}
	err := e.st.Close()
	if e.kb != nil {
		if kerr := e.kb.Close(); err == nil {
			err = kerr
		}
	}
	return err
}

// HistoryPath is $XDG_STATE_HOME/tinker/history (default ~/.local/state).
func HistoryPath() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "tinker", "history")
}

var _ io.Closer = (*linerEditor)(nil)
