package tinkerapi

import (
	"bytes"
	"time"

	"github.com/tinkershell/tinker/lib/jsonscan"
)

// compactEntry reads one checkpoint in the exact layout servers write it
// (the local server and FastAPI alike): compact JSON, the fields in their
// declared order, training_run_id absent. It matches literal key runs and
// scans each string once, where the general lexer peeks past whitespace
// and looks each key up. On any other layout it restores the position
// and reports false, and the entry is read by checkpoint, which accepts
// and rejects exactly as before; what it accepts, it decodes to the same
// value (FuzzFastCheckpoints holds the two paths together).
func (l *wireLex) compactEntry(c *Checkpoint) bool {
	start := l.i
	ok := l.lit(`{"checkpoint_id":"`) && l.plain(&c.CheckpointID) &&
		l.lit(`,"checkpoint_type":"`) && l.knownType(&c.CheckpointType) &&
		l.lit(`,"time":"`) && l.utcTime(&c.Time) &&
		l.lit(`,"tinker_path":"`) && l.plain(&c.TinkerPath) &&
		l.lit(`,"size_bytes":`) && l.compactSize(c) &&
		l.lit(`,"public":`) && l.compactBool(&c.Public) &&
		l.lit(`,"expires_at":`) && l.compactExpiry(c) && l.lit("}")
	if !ok {
		l.i = start
		*c = Checkpoint{}
	}
	return ok
}

// lit consumes s if the body continues with it.
func (l *wireLex) lit(s string) bool {
	if len(l.b)-l.i < len(s) || string(l.b[l.i:l.i+len(s)]) != s {
		return false
	}
	l.i += len(s)
	return true
}

// plain reads the rest of a string whose opening quote is consumed,
// accepting what strSpan accepts (no escape, no control character, valid
// UTF-8). A string of plain ASCII, as servers' IDs and paths are, is
// found by jsonscan (vector code) up to its quote; one that stops the
// scan earlier (non-ASCII, DEL, an escape) is checked by plainString.
func (l *wireLex) plain(dst *string) bool {
	n := jsonscan.PlainPrefix(l.text[l.i:])
	if l.i+n >= len(l.b) || l.b[l.i+n] != '"' {
		n = bytes.IndexByte(l.b[l.i:], '"')
		if n < 0 || !plainString(l.b[l.i:l.i+n]) {
			return false
		}
	}
	*dst = l.text[l.i : l.i+n]
	l.i += n + 1
	return true
}

// knownType reads the rest of a checkpoint type, which must be one of
// the two known ones, as their constants: matching the literal with its
// closing quote is what plain and the comparison after it found.
func (l *wireLex) knownType(dst *string) bool {
	switch {
	case l.lit(`sampler"`):
		*dst = "sampler"
	case l.lit(`training"`):
		*dst = "training"
	default:
		return false
	}
	return true
}

// utcTime reads the rest of a datetime string in the servers' form.
func (l *wireLex) utcTime(dst *time.Time) bool {
	n := bytes.IndexByte(l.b[l.i:min(len(l.b), l.i+32)], '"')
	if n < 0 {
		return false
	}
	t, ok := parseUTCDatetimeDay(l.text[l.i:l.i+n], &l.day)
	*dst = t
	l.i += n + 1
	return ok
}

// compactSize reads size_bytes: null, or an integer as optInt takes it
// (no fraction or exponent: the literal that must follow rules them out).
func (l *wireLex) compactSize(c *Checkpoint) bool {
	if l.lit("null") {
		return true
	}
	neg := l.lit("-")
	// The digits from a local slice: with l.i in the loop, each digit
	// stored and reloaded it.
	digits := l.b[l.i:]
	n := 0
	var v int64
	for n < len(digits) && digits[n]-'0' <= 9 {
		v = v*10 + int64(digits[n]-'0')
		n++
	}
	if n == 0 || n > 18 || (n > 1 && digits[0] == '0') {
		return false
	}
	l.i += n
	if neg {
		v = -v
	}
	c.SizeBytes = slot(&l.sizes)
	*c.SizeBytes = v
	return true
}

// compactBool reads public: true, false or null (false), as optBool does.
func (l *wireLex) compactBool(dst *bool) bool {
	if l.lit("true") {
		*dst = true
		return true
	}
	return l.lit("false") || l.lit("null")
}

// compactExpiry reads expires_at: null or a datetime string.
func (l *wireLex) compactExpiry(c *Checkpoint) bool {
	if l.lit("null") {
		return true
	}
	if !l.lit(`"`) {
		return false
	}
	c.ExpiresAt = slot(&l.times)
	return l.utcTime(c.ExpiresAt)
}
