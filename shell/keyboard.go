package shell

import (
	"bytes"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

const ctrlC = 0x03

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
	tty   *os.File // a non-blocking duplicate of descriptor 0
	r, w  *os.File // the pipe the line editor reads
	stdin *os.File // the os.Stdin the pipe replaced
	wasNB bool     // descriptor 0 was non-blocking before
	done  chan struct{}

	mu        sync.Mutex
	queue     []byte // typed, not yet handed on
	prompting bool   // the editor is reading a line
	lineSent  bool   // a line ending was handed on during this prompt
	cancel    func() // set while an evaluation watches for Ctrl-C
	eof       bool   // the terminal reported end of input
	closedW   bool
}

// openKeyboard takes over standard input, which must be a terminal. Call
// it before the line editor is created.
func openKeyboard() (*keyboard, error) {
	flags, err := unix.FcntlInt(0, unix.F_GETFL, 0)
	if err != nil {
		return nil, fmt.Errorf("keyboard: %w", err)
	}
	wasNB := flags&unix.O_NONBLOCK != 0
	fd, err := unix.Dup(0)
	if err != nil {
		return nil, fmt.Errorf("keyboard: %w", err)
	}
	// Non-blocking (the flag is shared with descriptor 0 until Close), so
	// that Close can stop the reader: the runtime's poller wakes it.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("keyboard: %w", err)
	}
	tty := os.NewFile(uintptr(fd), "/dev/stdin")
	r, w, err := os.Pipe()
	if err != nil {
		tty.Close()
		unix.SetNonblock(0, wasNB)
		return nil, fmt.Errorf("keyboard: %w", err)
	}
	k := &keyboard{tty: tty, r: r, w: w, stdin: os.Stdin, wasNB: wasNB, done: make(chan struct{})}
	os.Stdin = r
	go k.read()
	return k, nil
}

func (k *keyboard) read() {
	defer close(k.done)
	buf := make([]byte, 4096)
	for {
		n, err := k.tty.Read(buf)
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
	if k.prompting && !k.lineSent && len(k.queue) > 0 {
		n := len(k.queue)
		if i := bytes.IndexAny(k.queue, "\r\n\x03"); i >= 0 {
			n, k.lineSent = i+1, true
		}
		if _, err := k.w.Write(k.queue[:n]); err != nil {
			k.eof = true
		}
		k.queue = k.queue[n:]
	}
	if k.eof && len(k.queue) == 0 && !k.closedW {
		k.closedW = true
		k.w.Close()
	}
}

// beginPrompt lets the next line through; endPrompt holds input back again.
func (k *keyboard) beginPrompt() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.prompting, k.lineSent = true, false
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

// Close stops reading and gives os.Stdin back.
func (k *keyboard) Close() error {
	k.tty.Close()
	<-k.done
	os.Stdin = k.stdin
	k.r.Close()
	k.mu.Lock()
	if !k.closedW {
		k.closedW = true
		k.w.Close()
	}
	k.mu.Unlock()
	return unix.SetNonblock(0, k.wasNB)
}
