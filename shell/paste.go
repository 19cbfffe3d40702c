package shell

import (
	"bytes"
	"strings"
)

// Bracketed paste: the terminal wraps pasted text in pasteStart and
// pasteEnd once the shell asks for it (pasteOn). A paste of several lines
// is one input, as if it were a file: a blank line inside a pasted
// function no longer ends the function.
var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
)

const (
	pasteOn  = "\x1b[?2004h"
	pasteOff = "\x1b[?2004l"
)

// deliverPaste hands on the paste at the head of the queue once all of it
// has arrived: a single line as if typed (tabs as spaces, so that they do
// not complete), several lines as their first line typed and Enter, with
// the rest kept for takePaste. It reports false while the paste is incomplete.
// Called with k.mu held.
func (k *keyboard) deliverPaste() bool {
	end := bytes.Index(k.queue, pasteEnd)
	if end < 0 {
		return false
	}
	text := string(k.queue[len(pasteStart):end])
	k.queue = k.queue[end+len(pasteEnd):]
	text = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(text)
	if line := strings.TrimSuffix(text, "\n"); !strings.Contains(line, "\n") {
		typed := strings.ReplaceAll(line, "\t", "    ")
		if line != text { // a trailing newline is Enter
			typed, k.lineSent = typed+"\r", true
		}
		k.send([]byte(typed))
		return true
	}
	// The first line is typed on the prompt's line, as it would show had it
	// been typed; the rest waits for takePaste.
	first, rest, _ := strings.Cut(text, "\n")
	k.pasted = rest
	k.lineSent = true
	k.send([]byte(strings.ReplaceAll(first, "\t", "    ") + "\r"))
	return true
}

// takePaste returns the multi-line paste that ended the last prompt, once.
func (k *keyboard) takePaste() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.pasted
	k.pasted = ""
	return p
}

// Pasted is the error a LineEditor's Prompt returns for a paste of several
// lines: Text is the line the prompt read (what was typed before the paste
// and the paste's first line), then the rest of the paste. The prompt runs
// it as one input.
type Pasted struct{ Text string }

func (p *Pasted) Error() string { return "pasted input" }
