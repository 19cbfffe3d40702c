package tokenizer

import (
	"unicode/utf8"
)

// ValidUTF8 converts bytes to a string, replacing each maximal ill-formed
// subsequence with one U+FFFD, the W3C/Unicode practice that Rust's
// String::from_utf8_lossy and JavaScript's TextDecoder both follow (Go's
// strings.ToValidUTF8 collapses whole runs instead, so it would disagree).
func ValidUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			out = append(out, b[i])
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || n > 1 {
			out = append(out, b[i:i+n]...)
			i += n
			continue
		}
		out = append(out, "\uFFFD"...)
		i += maximalPrefix(b[i:])
	}
	return string(out)
}

// maximalPrefix returns the length of the maximal prefix of b that could
// start a well-formed sequence (at least 1), given that b does not start
// with one.
func maximalPrefix(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	i := 1
	for ; i <= need && i < len(b); i++ {
		if b[i] < lo || b[i] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return i
}

// Stream decodes ids one at a time for incremental display: text is
// returned as soon as its UTF-8 sequences are complete, so a character split
// across tokens is never shown as U+FFFD halves.
type Stream struct {
	tok         *Tokenizer
	skipSpecial bool
	pending     []byte
}

// NewStream returns an incremental decoder.
func (t *Tokenizer) NewStream(skipSpecial bool) *Stream {
	return &Stream{tok: t, skipSpecial: skipSpecial}
}

// Add decodes one more id and returns the text that is now complete.
func (s *Stream) Add(id int) string {
	s.pending = s.tok.appendBytes(s.pending, id, s.skipSpecial)
	// Keep back an incomplete sequence at the end (at most 3 bytes).
	cut := len(s.pending)
	for k := 1; k <= 3 && k <= len(s.pending); k++ {
		c := s.pending[len(s.pending)-k]
		if c < utf8.RuneSelf {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(s.pending[len(s.pending)-k:]) {
				cut = len(s.pending) - k
			}
			break
		}
	}
	out := ValidUTF8(s.pending[:cut])
	s.pending = append(s.pending[:0], s.pending[cut:]...)
	return out
}

// Flush returns whatever is held back, with U+FFFD for an incomplete tail.
func (s *Stream) Flush() string {
	out := ValidUTF8(s.pending)
	s.pending = s.pending[:0]
	return out
}
