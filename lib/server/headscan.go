package server

import (
	"bytes"

	"github.com/tinkershell/tinker/lib/lazyre"
)

// headScanner watches the bytes of a connection for a request head that
// carries both Content-Length and Transfer-Encoding. net/http accepts such
// a request (Transfer-Encoding wins and Content-Length is dropped before a
// handler could see it), but two parties that disagree on which wins are
// how requests are smuggled past a proxy, so the server refuses it (guard
// in connlimit.go answers 400 and closes the connection). Heads are found
// as they are by a reader of the stream: from the start, and after a body
// at a line that is a request line; only the start and end of each line
// are kept, so its memory is fixed.
type headScanner struct {
	inBody   bool
	cl, te   bool
	head     [32]byte // the line's first bytes
	tail     [16]byte // and its last
	n        int      // bytes in the current line
	started  bool
	smuggled bool
}

var requestLine = lazyre.New(`^[A-Z]+ \S`)

// feed scans b and reports whether a smuggling head has been seen.
func (h *headScanner) feed(b []byte) bool {
	for len(b) > 0 && !h.smuggled {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			h.add(b)
			return h.smuggled
		}
		h.add(b[:i])
		h.line()
		b = b[i+1:]
	}
	return h.smuggled
}

func (h *headScanner) add(b []byte) {
	if h.n < len(h.head) {
		copy(h.head[h.n:], b)
	}
	if len(b) >= len(h.tail) {
		copy(h.tail[:], b[len(b)-len(h.tail):])
	} else {
		copy(h.tail[:], h.tail[len(b):])
		copy(h.tail[len(h.tail)-len(b):], b)
	}
	h.n += len(b)
}

// line handles the end of a line.
func (h *headScanner) line() {
	n := min(h.n, len(h.head))
	first := bytes.TrimSuffix(h.head[:n], []byte("\r"))
	last := h.tail[len(h.tail)-min(h.n, len(h.tail)):]
	last = bytes.TrimSuffix(last, []byte("\r"))
	blank := h.n == 0 || (h.n == 1 && h.head[0] == '\r')
	h.n = 0
	switch {
	case h.inBody || !h.started:
		if requestLine.Match(first) && bytes.Contains(last, []byte("HTTP/1.")) {
			h.inBody, h.started, h.cl, h.te = false, true, false, false
		}
	case blank: // the blank line ending the head
		h.smuggled = h.cl && h.te
		h.inBody = true
	default:
		lower := bytes.ToLower(first)
		h.cl = h.cl || bytes.HasPrefix(lower, []byte("content-length:"))
		h.te = h.te || bytes.HasPrefix(lower, []byte("transfer-encoding:"))
	}
}
