package tinkerapi

import (
	"context"
	"encoding/binary"
	"iter"
	"math/bits"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unsafe"
)

// A listing printed as JSON (`checkpoint list -f json --limit 0`) is held
// whole until it is printed (all or nothing), and the memory it is held
// in is touched for the first time: as []Checkpoint (112 bytes an entry,
// plus its strings and sizes, ~210 bytes) 10,000 checkpoints took ~470
// page faults, a third of the command's. A CheckpointPack holds a page in
// ~25 bytes an entry: each path as the bytes it does not share with the
// one before it or the one before that (a run's checkpoints share its
// prefix, and training loops save weights/0042 and sampler_weights/0042
// by turns), the ID as a length where it is the path's tail, times as
// varint deltas.
//
// An entry is: a flags byte; the path (uvarint length of the prefix it
// shares with the path before, or with the one before that when
// packTwoBack, uvarint suffix length, suffix); the ID (uvarint length, its bytes
// unless packIDTail); the type's bytes unless one of the two known; the
// run ID (uvarint length, bytes); the time (varint seconds since the
// entry before's, uvarint nanoseconds); size_bytes (varint) and
// expires_at (varint seconds since the time, uvarint nanoseconds) when
// set. A time keeps its instant, not its zone: the JSON prints UTC.
type CheckpointPack struct {
	b []byte
	n int
}

const (
	packSize     = 1 << iota // SizeBytes is set
	packExpires              // ExpiresAt is set
	packPublic               // Public
	packIDTail               // the ID is the path's tail
	packTraining             // the type is "training"
	packSampler              // the type is "sampler"
	packTwoBack              // the path's prefix is the one before last's
)

// Len is the number of checkpoints in p.
func (p *CheckpointPack) Len() int { return p.n }

func appendPack(b []byte, cps []Checkpoint) []byte {
	p := packer{b: b}
	for i := range cps {
		p.add(&cps[i])
	}
	return p.b
}

// packer appends entries to a pack one at a time, as the reader decodes
// them (fastPacked) or from a decoded page (appendPack): the same bytes
// either way.
type packer struct {
	b        []byte
	n        int
	prevPath string // the entry before's path: a view that must outlive the page's packing
	twoBack  string // the path before that
	backs    int    // the length of the prefix prevPath shares with twoBack
	prevSec  int64
}

func (p *packer) add(c *Checkpoint) {
	b := p.b
	var flags byte
	if c.SizeBytes != nil {
		flags |= packSize
	}
	if c.ExpiresAt != nil {
		flags |= packExpires
	}
	if c.Public {
		flags |= packPublic
	}
	if len(c.CheckpointID) <= len(c.TinkerPath) && c.TinkerPath[len(c.TinkerPath)-len(c.CheckpointID):] == c.CheckpointID {
		flags |= packIDTail
	}
	switch c.CheckpointType {
	case "training":
		flags |= packTraining
	case "sampler":
		flags |= packSampler
	}
	shared := commonPrefix(p.prevPath, c.TinkerPath)
	backs := shared
	// The path before last can share more only where both it and this
	// path part from the path before at the same byte: it agrees with
	// this path up to there, and is compared from there on.
	if shared == p.backs && shared < len(p.twoBack) && shared < len(c.TinkerPath) {
		if more := commonPrefix(p.twoBack[shared:], c.TinkerPath[shared:]); more > 0 {
			shared += more
			flags |= packTwoBack
		}
	}
	b = append(b, flags)
	b = appendUvarint(b, uint64(shared))
	b = appendPackString(b, c.TinkerPath[shared:])
	p.twoBack, p.prevPath, p.backs = p.prevPath, c.TinkerPath, backs
	if flags&packIDTail != 0 {
		b = appendUvarint(b, uint64(len(c.CheckpointID)))
	} else {
		b = appendPackString(b, c.CheckpointID)
	}
	if flags&(packTraining|packSampler) == 0 {
		b = appendPackString(b, c.CheckpointType)
	}
	b = appendPackString(b, c.TrainingRunID)
	// Deltas wrap around like the int64s they are, so any time
	// comes back exact.
	sec := c.Time.Unix()
	b = appendVarint(b, sec-p.prevSec)
	b = appendUvarint(b, uint64(c.Time.Nanosecond()))
	p.prevSec = sec
	if c.SizeBytes != nil {
		b = appendVarint(b, *c.SizeBytes)
	}
	if c.ExpiresAt != nil {
		b = appendVarint(b, c.ExpiresAt.Unix()-sec)
		b = appendUvarint(b, uint64(c.ExpiresAt.Nanosecond()))
	}
	p.b = b
	p.n++
}

// appendUvarint is binary.AppendUvarint with the one-byte case, nearly
// every value packed, inlined.
func appendUvarint(b []byte, v uint64) []byte {
	if v < 0x80 {
		return append(b, byte(v))
	}
	return binary.AppendUvarint(b, v)
}

// appendVarint is binary.AppendVarint (zig-zag) by way of appendUvarint.
func appendVarint(b []byte, v int64) []byte {
	u := uint64(v) << 1
	if v < 0 {
		u = ^u
	}
	return appendUvarint(b, u)
}

func appendPackString(b []byte, s string) []byte {
	b = appendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// commonPrefix is the length of a and b's common prefix, compared eight
// bytes at a time: a byte loop over the ~50 shared bytes of each path was
// a visible part of packing, and so was slicing a[i:] in the word loop
// (its bounds checks took 30 instructions a word).
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	pa, pb := unsafe.Pointer(unsafe.StringData(a)), unsafe.Pointer(unsafe.StringData(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		// In bounds: i+8 <= n. binary.LittleEndian reads the eight
		// bytes as one load where the architecture allows it.
		x := binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(pa, i))[:]) ^
			binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(pb, i))[:])
		if x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// All yields p's checkpoints in order. Each is valid until the next one
// is yielded (its path is rebuilt in one of two buffers taken in turn);
// the ID, when the path's tail, is the path's tail in memory, as the
// decoder leaves it.
func (p *CheckpointPack) All() iter.Seq[*Checkpoint] {
	return func(yield func(*Checkpoint) bool) {
		r := packReader{b: p.b}
		var c Checkpoint
		var size int64
		var expires time.Time
		// The last two paths. The next is built in the older one's
		// buffer: in place when it shares that one's prefix.
		var prev, twoBack []byte
		sec := int64(0)
		for range p.n {
			flags := r.b[r.i]
			r.i++
			shared := int(r.uvarint())
			path := twoBack[:0]
			if flags&packTwoBack != 0 {
				path = twoBack[:shared]
			} else {
				path = append(path, prev[:shared]...)
			}
			path = append(path, r.str()...)
			twoBack, prev = prev, path
			c.TinkerPath = bytesText(path)
			if flags&packIDTail != 0 {
				c.CheckpointID = c.TinkerPath[len(c.TinkerPath)-int(r.uvarint()):]
			} else {
				c.CheckpointID = r.str()
			}
			switch {
			case flags&packTraining != 0:
				c.CheckpointType = "training"
			case flags&packSampler != 0:
				c.CheckpointType = "sampler"
			default:
				c.CheckpointType = r.str()
			}
			c.TrainingRunID = r.str()
			sec += r.varint()
			c.Time = time.Unix(sec, int64(r.uvarint())).UTC()
			c.SizeBytes = nil
			if flags&packSize != 0 {
				size = r.varint()
				c.SizeBytes = &size
			}
			c.Public = flags&packPublic != 0
			c.ExpiresAt = nil
			if flags&packExpires != 0 {
				s := sec + r.varint()
				expires = time.Unix(s, int64(r.uvarint())).UTC()
				c.ExpiresAt = &expires
			}
			if !yield(&c) {
				return
			}
		}
	}
}

// packReader reads what appendPack wrote; strings are views into b,
// which is never written once packed.
type packReader struct {
	b []byte
	i int
}

func (r *packReader) uvarint() uint64 {
	if c := r.b[r.i]; c < 0x80 {
		r.i++
		return uint64(c)
	}
	return r.uvarintLong()
}

// uvarintLong is uvarint's longer case, out of line so uvarint inlines.
func (r *packReader) uvarintLong() uint64 {
	v, n := binary.Uvarint(r.b[r.i:])
	r.i += n
	return v
}

func (r *packReader) varint() int64 {
	u := r.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (r *packReader) str() string {
	n := int(r.uvarint())
	s := bytesText(r.b[r.i : r.i+n])
	r.i += n
	return s
}

func bytesText(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// PackArena holds one listing's packs back to back in chunks of
// packChunk bytes, so a page is packed straight into where it is kept:
// no scratch slice of entries, no scratch pack and no copy of it. Each
// page reserves its body's length (a pack is shorter than the JSON it
// comes from) and keeps what it wrote; the rest of a chunk is never
// written, and memory never written costs no page faults.
type PackArena struct {
	mu  sync.Mutex // a page is packed under it, start to end
	buf []byte     // the chunk: packs up to len, free capacity after
}

// packChunk is the size of an arena's chunks: about 25 pages of 1000
// entries packed, the reservation of 4 page bodies.
const packChunk = 1 << 20

// pack decodes a checkpoint page and packs it into the arena.
func (a *PackArena) pack(body []byte) (CheckpointPack, *Cursor, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cap(a.buf)-len(a.buf) < len(body) {
		a.buf = make([]byte, 0, max(packChunk, len(body)))
	}
	free := a.buf[len(a.buf):len(a.buf)]
	pk := packer{b: free}
	cursor, ok := fastPacked(body, &pk)
	if !ok {
		// Anything the fast reader does not take: decoded and checked as
		// ListUserCheckpoints decodes it (or failing as it fails), then
		// packed from the entries.
		out, err := decodeCheckpoints(body, nil)
		if err != nil {
			return CheckpointPack{}, nil, err
		}
		pk = packer{b: free}
		for i := range out.Checkpoints {
			pk.add(&out.Checkpoints[i])
		}
		cursor = out.Cursor
	}
	if cap(pk.b) == cap(free) {
		a.buf = a.buf[:len(a.buf)+len(pk.b)] // packed in place (append never moved it)
	}
	return CheckpointPack{b: pk.b[:len(pk.b):len(pk.b)], n: pk.n}, cursor, nil
}

// ListUserCheckpointsPacked is ListUserCheckpoints with the page packed
// into arena (nil: one of its own), for a listing held whole until it is
// printed: the entries are packed as they are read, and only the pack is
// kept.
func (c *Client) ListUserCheckpointsPacked(ctx context.Context, limit, offset int, arena *PackArena) (CheckpointPack, *Cursor, error) {
	const p = "/api/v1/checkpoints"
	resp, err := c.DoRaw(ctx, http.MethodGet, p, nil,
		WithQuery("limit", strconv.Itoa(limit), "offset", strconv.Itoa(offset)), withPooledBody())
	if err != nil {
		return CheckpointPack{}, nil, notOffered(err, "listing all checkpoints")
	}
	if arena == nil {
		arena = new(PackArena)
	}
	pack, cursor, err := arena.pack(resp.Body)
	if err != nil {
		return CheckpointPack{}, nil, c.schemaErr(err, p)
	}
	// The pack holds copies: the body goes back to the pool.
	resp.recycle()
	return pack, cursor, nil
}
