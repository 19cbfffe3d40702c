package tinkerapi

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"
)

// A checkpoint listing is the one large answer a client reads in full
// (10,000 entries of `checkpoint list --limit 0` are ten 1000-entry
// pages), and encoding/json's reflection spent most of that command's
// time on it. fastCheckpoints reads the plain form every server sends
// straight into the checked result: known keys spelled exactly, each
// once, strings without escapes, integers without fraction or exponent,
// every required field present and valid. On anything else it reports
// false and the caller decodes with encoding/json and checks the result
// (checkCheckpoints), so an unusual or invalid answer decodes, or fails
// with its schema error, exactly as before.

// checkpointsWire is a checkpoint listing before its checks.
type checkpointsWire struct {
	Checkpoints *[]checkpointWire `json:"checkpoints"`
	Cursor      *cursorWire       `json:"cursor"`
}

// wireLex reads JSON tokens from b; any surprise clears ok and the rest
// of the reads are no-ops.
type wireLex struct {
	b  []byte
	i  int
	ok bool
	// text is b as one string: the strings read are views into it, and
	// the sizes and expiry times checkpoints point to come from slabs, so
	// a page costs a few allocations rather than several per entry.
	text  string
	sizes []int64
	times []time.Time
	day   lastDay // the date compactEntry's times read last
	// pk, when set, takes each entry as it is read (fastPacked): the
	// entries are not kept.
	pk *packer
}

// fastCheckpoints appends the entries to dst (nil: a slice of their own).
func fastCheckpoints(body []byte, dst []Checkpoint) (*CheckpointsListResponse, bool) {
	return fastList(body, dst, nil)
}

// fastPacked is fastCheckpoints packing each entry into pk as it is read,
// with no []Checkpoint in between; it accepts what fastCheckpoints
// accepts and packs what appendPack would pack of its entries
// (FuzzFastCheckpoints). On false, pk holds a partial pack.
func fastPacked(body []byte, pk *packer) (*Cursor, bool) {
	out, ok := fastList(body, nil, pk)
	if !ok {
		return nil, false
	}
	return out.Cursor, true
}

func fastList(body []byte, dst []Checkpoint, pk *packer) (*CheckpointsListResponse, bool) {
	l := &wireLex{b: body, ok: true, text: bodyText(body), pk: pk}
	var cps []Checkpoint
	var cursor *cursorWire
	seen := 0
	for more := l.open(); more; more = l.next() {
		switch string(l.key()) {
		case "checkpoints":
			seen = l.once(seen, 1)
			cps = l.checkpoints(dst)
		case "cursor":
			seen = l.once(seen, 2)
			cursor = l.cursor()
		default:
			l.ok = false
		}
	}
	l.space()
	if !l.ok || l.i != len(l.b) || seen&1 == 0 {
		return nil, false
	}
	var f fieldErrs
	out := &CheckpointsListResponse{Checkpoints: cps, Cursor: f.cursor(cursor, "cursor")}
	return out, f.err == nil
}

// bodyText is body as a string without a copy: the strings a listing
// decodes to are views into it. Safe because a response body is never
// written after it is read (readBody's buffer goes to the decoder alone),
// and a pooled one is reused only after detachCheckpoints has copied the
// strings out.
func bodyText(body []byte) string {
	if len(body) == 0 {
		return ""
	}
	return unsafe.String(&body[0], len(body))
}

// once marks bit in seen, failing on a key met twice.
func (l *wireLex) once(seen, bit int) int {
	if seen&bit != 0 {
		l.ok = false
	}
	return seen | bit
}

func (l *wireLex) space() {
	for l.i < len(l.b) {
		switch l.b[l.i] {
		case ' ', '\t', '\n', '\r':
			l.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end or after a failure).
func (l *wireLex) peek() byte {
	l.space()
	if !l.ok || l.i >= len(l.b) {
		return 0
	}
	return l.b[l.i]
}

func (l *wireLex) expect(c byte) {
	if l.peek() != c {
		l.ok = false
		return
	}
	l.i++
}

// literal consumes word (null, true, false) if it comes next.
func (l *wireLex) literal(word string) bool {
	if l.peek() == word[0] && len(l.b)-l.i >= len(word) && string(l.b[l.i:l.i+len(word)]) == word {
		l.i += len(word)
		return true
	}
	return false
}

// open reads an object's '{' and says whether a member follows; key
// reads a member's key and ':', next the ',' before another member or
// the closing '}':
//
//	for more := l.open(); more; more = l.next() { switch string(l.key()) ... }
func (l *wireLex) open() bool {
	l.expect('{')
	if l.peek() == '}' {
		l.i++
		return false
	}
	return l.ok
}

// key needs no check of its bytes: it is compared with the known keys,
// and one with an escape or a control character matches none and fails.
func (l *wireLex) key() []byte {
	l.expect('"')
	n := -1
	if l.ok {
		n = bytes.IndexByte(l.b[l.i:], '"')
	}
	if n < 0 {
		l.ok = false
		return nil
	}
	k := l.b[l.i : l.i+n]
	l.i += n + 1
	l.expect(':')
	return k
}

func (l *wireLex) next() bool {
	switch l.peek() {
	case ',':
		l.i++
		return l.ok
	case '}':
		l.i++
	default:
		l.ok = false
	}
	return false
}

// strSpan reads a string without escapes or control characters and
// returns where its bytes are in the body.
func (l *wireLex) strSpan() (start, end int) {
	l.expect('"')
	if !l.ok {
		return 0, 0
	}
	start = l.i
	n := bytes.IndexByte(l.b[start:], '"')
	if n < 0 {
		l.ok = false
		return 0, 0
	}
	end = start + n
	if !plainString(l.b[start:end]) {
		l.ok = false
		return 0, 0
	}
	l.i = end + 1
	return start, end
}

// plainString reports whether s (a string's bytes) holds no escape or
// control character and is valid UTF-8. Eight bytes at a time: the test
// for a byte below 0x20, a backslash or a high bit is exact for "any" in
// a word, and a word that has one is looked at byte by byte.
func plainString(s []byte) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	all, ascii := s, true
	for len(s) >= 8 {
		x := binary.LittleEndian.Uint64(s)
		bs := x ^ (0x5c * lo) // zero where a byte is '\\'
		if ((x-0x20*lo)&^x|(bs-lo)&^bs|x)&hi != 0 {
			if !plainBytes(s[:8], &ascii) {
				return false
			}
		}
		s = s[8:]
	}
	return plainBytes(s, &ascii) && (ascii || utf8.Valid(all))
}

// plainBytes is plainString's byte-by-byte test; it clears *ascii at a
// byte with the high bit set.
func plainBytes(s []byte, ascii *bool) bool {
	for _, c := range s {
		if c == '\\' || c < 0x20 {
			return false
		}
		if c >= 0x80 {
			*ascii = false
		}
	}
	return true
}

// str reads a string that may not be null.
func (l *wireLex) str() string {
	if l.literal("null") {
		l.ok = false
		return ""
	}
	start, end := l.strSpan()
	return l.text[start:end]
}

// optStr reads a string, null giving "".
func (l *wireLex) optStr() string {
	if l.literal("null") {
		return ""
	}
	return l.str()
}

// slot returns fresh storage for one value from *slab.
func slot[T any](slab *[]T) *T {
	if len(*slab) == 0 {
		*slab = make([]T, 256)
	}
	v := &(*slab)[0]
	*slab = (*slab)[1:]
	return v
}

// optInt reads an integer (no fraction, exponent or leading zero, at most
// 18 digits so it cannot overflow) or null into *dst, returning dst or nil.
func (l *wireLex) optInt(dst *int64) *int64 {
	if l.literal("null") {
		return nil
	}
	start := l.i
	if l.peek() == '-' {
		l.i++
	}
	digits := l.i
	for l.i < len(l.b) && l.b[l.i] >= '0' && l.b[l.i] <= '9' {
		l.i++
	}
	n := l.i - digits
	if n == 0 || n > 18 || (n > 1 && l.b[digits] == '0') {
		l.ok = false
		return nil
	}
	if c := l.peek(); c == '.' || c == 'e' || c == 'E' {
		l.ok = false
		return nil
	}
	v, err := strconv.ParseInt(l.text[start:digits+n], 10, 64)
	if err != nil {
		l.ok = false
	}
	*dst = v
	return dst
}

// optBool reads a boolean, null giving false.
func (l *wireLex) optBool() bool {
	switch {
	case l.literal("null"), l.literal("false"):
		return false
	case l.literal("true"):
		return true
	}
	l.ok = false
	return false
}

// time reads a datetime string that may not be null, as
// wireTime.UnmarshalJSON and fieldErrs.time accept it.
func (l *wireLex) time(dst *time.Time) {
	s := l.str()
	if l.ok && parseDatetime(s, dst) != nil {
		l.ok = false
	}
}

func (l *wireLex) checkpoints(dst []Checkpoint) []Checkpoint {
	if l.pk != nil {
		l.packEntries()
		return nil
	}
	out := dst
	if out == nil {
		// Room for the entries a page holds (one '{' each, an upper
		// bound) up to a full page of 1000; appending to a growing
		// slice copied them several times.
		out = make([]Checkpoint, 0, min(bytes.Count(l.b[l.i:], []byte{'{'}), 1024))
	}
	l.expect('[')
	if l.peek() == ']' {
		l.i++
		return out
	}
	for l.ok {
		out = append(out, Checkpoint{})
		if c := &out[len(out)-1]; !l.compactEntry(c) {
			l.checkpoint(c)
		}
		switch l.peek() {
		case ',':
			l.i++
		case ']':
			l.i++
			return out
		default:
			l.ok = false
		}
	}
	return nil
}

// packEntries is checkpoints for a packer: each entry is read into one
// reused Checkpoint, whose size and expiry point into locals rather than
// slabs, and packed.
func (l *wireLex) packEntries() {
	l.expect('[')
	if l.peek() == ']' {
		l.i++
		return
	}
	var size [1]int64
	var expires [1]time.Time
	for l.ok {
		c := Checkpoint{}
		l.sizes, l.times = size[:], expires[:]
		if !l.compactEntry(&c) {
			l.checkpoint(&c)
		}
		if !l.ok {
			return
		}
		l.pk.add(&c)
		switch l.peek() {
		case ',':
			l.i++
		case ']':
			l.i++
			return
		default:
			l.ok = false
		}
	}
}

// checkpoint reads one entry, failing where checkCheckpoints would.
func (l *wireLex) checkpoint(c *Checkpoint) {
	seen := 0
	for more := l.open(); more; more = l.next() {
		switch string(l.key()) {
		case "checkpoint_id":
			seen = l.once(seen, 1)
			c.CheckpointID = l.str()
		case "checkpoint_type":
			seen = l.once(seen, 2)
			c.CheckpointType = l.str()
		case "time":
			seen = l.once(seen, 4)
			l.time(&c.Time)
		case "tinker_path":
			seen = l.once(seen, 8)
			c.TinkerPath = l.str()
		case "size_bytes":
			seen = l.once(seen, 16)
			if !l.literal("null") {
				c.SizeBytes = l.optInt(slot(&l.sizes))
			}
		case "public":
			seen = l.once(seen, 32)
			c.Public = l.optBool()
		case "expires_at":
			seen = l.once(seen, 64)
			if !l.literal("null") {
				c.ExpiresAt = slot(&l.times)
				l.time(c.ExpiresAt)
			}
		case "training_run_id":
			seen = l.once(seen, 128)
			c.TrainingRunID = l.optStr()
		default:
			l.ok = false
		}
	}
	const required = 1 | 2 | 4 | 8
	if seen&required != required || (c.CheckpointType != "training" && c.CheckpointType != "sampler") {
		l.ok = false
	}
}

func (l *wireLex) cursor() *cursorWire {
	if l.literal("null") {
		return nil
	}
	w := &cursorWire{}
	seen := 0
	for more := l.open(); more; more = l.next() {
		var p **int
		switch string(l.key()) {
		case "offset":
			seen, p = l.once(seen, 1), &w.Offset
		case "limit":
			seen, p = l.once(seen, 2), &w.Limit
		case "total_count":
			seen, p = l.once(seen, 4), &w.TotalCount
		default:
			l.ok = false
			return w
		}
		var v int64
		if l.optInt(&v) != nil {
			n := int(v)
			*p = &n
		} else {
			*p = nil
		}
	}
	return w
}
