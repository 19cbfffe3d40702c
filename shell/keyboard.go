package shell

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

const (
	ctrlC = 0x03
	ctrlD = 0x04
)

// keyboard reads the terminal for the whole interactive session and hands
// the line editor its input one line at a time, so that what is typed while
// a statement runs waits for the next prompt, and a Ctrl-C typed right after
// Enter interrupts the statement that Enter starts.
//
// The line editor (liner) reads os.Stdin through its own buffered reader,
// which reads ahead whatever is available, and it turns the terminal's
// signal keys off while it prompts and on again between prompts: a Ctrl-C
// typed just after Enter was a plain byte left in its buffer (the statement
// ran on, uninterruptible) or a SIGINT arriving before any handler was
// installed (the shell died). liner cannot be given another reader, so the
// keyboard puts a pipe in os.Stdin before liner opens and feeds it; liner
// still sets the terminal modes on descriptor 0, and the signal keys stay
// off for the session (keysAsInput).
type keyboard struct {
	wake   [2]int   // a pipe: a byte in it stops the reader (see Close)
	r, w   *os.File // the pipe the line editor reads
	stdin  *os.File // the os.Stdin the pipe replaced
	done   chan struct{}
	pauses chan pauseRequest // see pause

	mu        sync.Mutex
	queue     []byte // typed, not yet handed on
	prompting bool   // the editor is reading a line
	lineSent  bool   // a line ending was handed on during this prompt
	lineMode  bool   // the editor reads plain lines (see cook)
	aborted   bool   // a Ctrl-C ended the line handed on (see cook)
	midLine   bool   // part of a line was handed on during this prompt
	cancel    func() // set while an evaluation watches for Ctrl-C
	tabCancel func() // set while completion fetches names (see watchPrompt)
	eof       bool   // the terminal reported end of input
	closedW   bool
	pasted    string // a multi-line paste, handed on as one input (see takePaste)
}

// openKeyboard takes over standard input, which must be a terminal. Call
// it before the line editor is created.
//
// Descriptor 0 stays blocking: on a terminal, descriptors 0, 1 and 2 share
// one open file description and so one O_NONBLOCK flag, and a non-blocking
// stdout drops output (EAGAIN) whenever the terminal reads more slowly than
// the shell writes. The reader waits in poll(2) on descriptor 0 and on a
// wake-up pipe instead, and reads only what poll says is there.
func openKeyboard() (*keyboard, error) {
	var wake [2]int
	if err := unix.Pipe2(wake[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("keyboard: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		unix.Close(wake[0])
		unix.Close(wake[1])
		return nil, fmt.Errorf("keyboard: %w", err)
	}
	k := &keyboard{wake: wake, r: r, w: w, stdin: os.Stdin, done: make(chan struct{}), pauses: make(chan pauseRequest, 1)}
	os.Stdin = r
	go k.read()
	return k, nil
}

// readTTY waits until descriptor 0 has input (or ends) and reads it; it
// returns io.EOF at end of input and errStopped once Close wakes it.
func (k *keyboard) readTTY(buf []byte) (int, error) {
	fds := []unix.PollFd{{Fd: 0, Events: unix.POLLIN}, {Fd: int32(k.wake[0]), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, err
		case fds[1].Revents != 0:
			if !k.paused() {
				return 0, errStopped
			}
			continue
		case fds[0].Revents == 0:
			continue
		}
		n, err := unix.Read(0, buf)
		switch {
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

var errStopped = errors.New("keyboard closed")

func (k *keyboard) read() {
	defer close(k.done)
	buf := make([]byte, 4096)
	for {
		n, err := k.readTTY(buf)
		k.mu.Lock()
		typed := buf[:n]
		if k.cancel != nil && !k.prompting {
			if i := bytes.LastIndexByte(typed, ctrlC); i >= 0 {
				// Ctrl-C while a statement runs stops it and, as a
				// terminal's interrupt key does, discards what was typed
				// before it.
				k.queue, typed = k.queue[:0], typed[i+1:]
				k.cancel()
			}
		}
		if k.tabCancel != nil && k.prompting && bytes.IndexByte(typed, ctrlC) >= 0 {
			k.tabCancel() // the Ctrl-C still reaches the editor
		}
		k.queue = append(k.queue, typed...)
		if err != nil {
			// End of input (Ctrl-D on a terminal in line mode, hang-up):
			// the editor sees EOF after what was typed before it.
			k.eof = true
		}
		k.deliver()
		k.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// deliver hands queued input to the editor while it prompts, up to the end
// of one line (Enter or Ctrl-C): the rest waits, so that a Ctrl-C typed
// right after Enter is still queued when the statement starts (see watch).
// Called with k.mu held.
func (k *keyboard) deliver() {
	for k.prompting && !k.lineSent && len(k.queue) > 0 {
		if bytes.HasPrefix(k.queue, pasteStart) {
			if !k.deliverPaste() {
				break // the rest of the paste is on its way
			}
			continue
		}
		n := len(k.queue)
		if i := bytes.Index(k.queue, pasteStart); i >= 0 {
			n = i // a paste waits until what was typed before it is through
		}
		if k.lineMode && k.cook(&n) {
			continue
		}
		if i := bytes.IndexAny(k.queue[:n], "\r\n\x03"); i >= 0 {
			n, k.lineSent = i+1, true
		}
		k.send(k.queue[:n])
		k.midLine = !k.lineSent
		k.queue = k.queue[n:]
	}
	if k.eof && len(k.queue) == 0 && !k.closedW {
		k.closedW = true
		k.w.Close()
	}
}

// cook does for an editor in line mode what a cooked terminal does with
// Ctrl-D and Ctrl-C. liner falls back to reading plain lines when the
// terminal is too narrow (a 0×0 window), in the terminal's cooked mode; a
// key the keyboard read as a byte (typed while a statement ran, or a
// SIGINT at the prompt, see interrupt) would otherwise be a character of
// the line: a Ctrl-D never ended the input, and after a Ctrl-C the line
// never ended, so the next one typed was lost. Ctrl-D at the start of a
// line ends the input and elsewhere is dropped; Ctrl-C ends the line,
// which the editor then reports as aborted (takeAbort). It reports whether
// it took the queue's first byte; otherwise *n stops before the next such
// key. Called with k.mu held.
func (k *keyboard) cook(n *int) bool {
	i := bytes.IndexAny(k.queue[:*n], "\x03\x04")
	switch {
	case i < 0:
		return false
	case i > 0:
		*n = i
		return false
	case k.queue[0] == ctrlC:
		k.queue, k.aborted, k.lineSent = k.queue[1:], true, true
		k.send([]byte("\n"))
	case k.midLine:
		k.queue = k.queue[1:]
	default:
		k.queue, k.eof = nil, true
	}
	return true
}

// takeAbort reports, once, that the line just read ended with Ctrl-C.
func (k *keyboard) takeAbort() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	a := k.aborted
	k.aborted = false
	return a
}

func (k *keyboard) send(b []byte) {
	if _, err := k.w.Write(b); err != nil {
		k.eof = true
	}
}

// beginPrompt lets the next line through, to an editor that reads plain
// lines if lineMode; endPrompt holds input back again.
func (k *keyboard) beginPrompt(lineMode bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.prompting, k.lineSent, k.lineMode, k.midLine, k.aborted = true, false, lineMode, false, false
	k.deliver()
}

func (k *keyboard) endPrompt() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.prompting = false
}

// watch routes Ctrl-C to cancel until the returned function is called.
// A Ctrl-C queued with no complete line before it was typed after the
// Enter that started this statement, so it cancels it at once.
func (k *keyboard) watch(cancel func()) (stop func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cancel = cancel
	if i := bytes.IndexByte(k.queue, ctrlC); i >= 0 && bytes.IndexAny(k.queue[:i], "\r\n") < 0 {
		k.queue = k.queue[i+1:]
		cancel()
	}
	return func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.cancel = nil
	}
}

// watchPrompt calls cancel on a Ctrl-C typed while the editor prompts (it
// waits for the completer then, and reads the Ctrl-C only after), until
// the returned function is called.
func (k *keyboard) watchPrompt(cancel func()) (stop func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.tabCancel = cancel
	return func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.tabCancel = nil
	}
}

// interrupt handles SIGINT (sent by another process: the terminal's
// interrupt key is read as a byte). It cancels the running statement, or
// else acts as a Ctrl-C typed now: it clears the line being edited, or
// waits for whichever prompt or statement comes next.
func (k *keyboard) interrupt() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cancel != nil && !k.prompting {
		k.cancel()
		return
	}
	if k.tabCancel != nil && k.prompting {
		k.tabCancel()
	}
	k.queue = append(k.queue, ctrlC)
	k.deliver()
}

// keysAsInput turns off the terminal's signal keys (ISIG) for the session,
// so that Ctrl-C is always read, in order with the other keys, and never
// makes the terminal discard type-ahead. The line editor keeps the mode
// it finds between prompts and restores the original one when it closes.
func keysAsInput() error {
	t, err := unix.IoctlGetTermios(0, unix.TCGETS)
	if err != nil {
		return fmt.Errorf("keyboard: %w", err)
	}
	t.Lflag &^= unix.ISIG
	if err := unix.IoctlSetTermios(0, unix.TCSETS, t); err != nil {
		return fmt.Errorf("keyboard: %w", err)
	}
	return nil
}

// Bytes on the wake-up pipe.
const (
	wakeStop  = 0
	wakePause = 1
)

type pauseRequest struct{ paused, resume chan struct{} }

// pause stops reading the terminal until the returned function is called,
// so that a program run in the foreground (the pager) gets the keys.
func (k *keyboard) pause() (resume func()) {
	req := pauseRequest{make(chan struct{}), make(chan struct{})}
	k.pauses <- req
	if _, err := unix.Write(k.wake[1], []byte{wakePause}); err != nil {
		<-k.pauses
		return func() {}
	}
	select {
	case <-req.paused:
		return func() { close(req.resume) }
	case <-k.done: // the reader has stopped already
		return func() {}
	}
}

// paused consumes a wake-up byte: for a pause it waits until resumed and
// reports true; for Close it reports false.
func (k *keyboard) paused() bool {
	var b [1]byte
	if n, _ := unix.Read(k.wake[0], b[:]); n != 1 || b[0] != wakePause {
		return false
	}
	req := <-k.pauses
	close(req.paused)
	<-req.resume
	return true
}

// Close stops reading and gives os.Stdin back.
func (k *keyboard) Close() error {
	_, err := unix.Write(k.wake[1], []byte{wakeStop})
	<-k.done
	unix.Close(k.wake[0])
	unix.Close(k.wake[1])
	os.Stdin = k.stdin
	k.r.Close()
	k.mu.Lock()
	if !k.closedW {
		k.closedW = true
		k.w.Close()
	}
	k.mu.Unlock()
	if err != nil {
		return fmt.Errorf("keyboard: %w", err)
	}
	return nil
}
