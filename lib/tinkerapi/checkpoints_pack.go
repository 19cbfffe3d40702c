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
// ~40 bytes an entry: each path as the bytes it does not share with the
// one before it (a run's checkpoints share its prefix), the ID as a
// length where it is the path's tail, times as varint deltas.
//
// An entry is: a flags byte; the path (uvarint shared prefix length,
// uvarint suffix length, suffix); the ID (uvarint length, its bytes
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
)

// Len is the number of checkpoints in p.
func (p *CheckpointPack) Len() int { return p.n }

func appendPack(b []byte, cps []Checkpoint) []byte {
	prevPath, prevSec := "", int64(0)
	for i := range cps {
		c := &cps[i]
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
		b = append(b, flags)
		shared := commonPrefix(prevPath, c.TinkerPath)
		b = appendUvarint(b, uint64(shared))
		b = appendPackString(b, c.TinkerPath[shared:])
		prevPath = c.TinkerPath
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
		b = appendVarint(b, sec-prevSec)
		b = appendUvarint(b, uint64(c.Time.Nanosecond()))
		prevSec = sec
		if c.SizeBytes != nil {
			b = appendVarint(b, *c.SizeBytes)
		}
		if c.ExpiresAt != nil {
			b = appendVarint(b, c.ExpiresAt.Unix()-sec)
			b = appendUvarint(b, uint64(c.ExpiresAt.Nanosecond()))
		}
	}
	return b
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
// a visible part of packing.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		x := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(a[i:]), 8)) ^
			binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(b[i:]), 8))
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
// is yielded (its path is rebuilt in a buffer the next one overwrites);
// the ID, when the path's tail, is the path's tail in memory, as the
// decoder leaves it.
func (p *CheckpointPack) All() iter.Seq[*Checkpoint] {
	return func(yield func(*Checkpoint) bool) {
		r := packReader{b: p.b}
		var c Checkpoint
		var size int64
		var expires time.Time
		var path []byte
		sec := int64(0)
		for range p.n {
			flags := r.b[r.i]
			r.i++
			shared := int(r.uvarint())
			path = append(path[:shared], r.str()...)
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

// packBufs is the scratch of a page being packed: its decoded entries
// (views into the page body) and the pack before its exact copy. Pooled,
// so 10,000 checkpoints touch one page's worth of each.
type packBufs struct {
	cps []Checkpoint
	b   []byte
}

var packScratch = sync.Pool{New: func() any { return new(packBufs) }}

// ListUserCheckpointsPacked is ListUserCheckpoints with the page packed:
// for a listing held whole until it is printed, the entries are decoded
// into a reused scratch and only the pack is kept.
func (c *Client) ListUserCheckpointsPacked(ctx context.Context, limit, offset int) (CheckpointPack, *Cursor, error) {
	const p = "/api/v1/checkpoints"
	resp, err := c.DoRaw(ctx, http.MethodGet, p, nil,
		WithQuery("limit", strconv.Itoa(limit), "offset", strconv.Itoa(offset)), withPooledBody())
	if err != nil {
		return CheckpointPack{}, nil, notOffered(err, "listing all checkpoints")
	}
	s := packScratch.Get().(*packBufs)
	defer packScratch.Put(s)
	dst := s.cps[:0]
	if cap(dst) == 0 {
		dst = nil // the decoder sizes a slice of its own from the page
	}
	out, err := decodeCheckpoints(resp.Body, dst)
	if err != nil {
		return CheckpointPack{}, nil, c.schemaErr(err, p)
	}
	s.b = appendPack(s.b[:0], out.Checkpoints)
	// An exact copy: the scratch grew to the largest page.
	pack := CheckpointPack{b: append([]byte(nil), s.b...), n: len(out.Checkpoints)}
	// The scratch's entries still view the body, which is reused: they
	// are overwritten before they are read again (the decoder appends).
	s.cps = out.Checkpoints[:0]
	resp.recycle()
	return pack, out.Cursor, nil
}
