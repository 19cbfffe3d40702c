package tinkerproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// This package encodes its messages itself rather than through
// google.golang.org/protobuf: that runtime and its generated descriptors
// initialise at every start of every tinker command (registries, the
// descriptor build, a hash of the executable), a large share of
// `tinker -c '1+1'`. The schema is small and fixed; a test checks every
// message both ways against protoc-gen-go's code for the same .proto
// (internal/pbref), which only tests link.

// Message is a message of this package.
type Message interface {
	appendTo(b []byte) []byte
	merge(b []byte) error
	reset()
}

// Marshal encodes m in the protobuf wire format.
func Marshal(m Message) ([]byte, error) { return m.appendTo(nil), nil }

// Unmarshal replaces m with the message b encodes. Unknown fields are
// skipped; a field of a known number but another wire type counts as
// unknown, as protobuf-go has it.
func Unmarshal(b []byte, m Message) error {
	m.reset()
	if err := m.merge(b); err != nil {
		return fmt.Errorf("proto: %w", err)
	}
	return nil
}

// maxFieldNumber is the largest field number protobuf allows.
const maxFieldNumber = 1<<29 - 1

const (
	wireVarint     = 0
	wireFixed64    = 1
	wireBytes      = 2
	wireStartGroup = 3
	wireEndGroup   = 4
	wireFixed32    = 5
	// maxGroupDepth is protobuf-go's default recursion limit.
	maxGroupDepth = 10000
)

var (
	errTruncated = errors.New("cannot parse invalid wire-format data: truncated")
	errOverflow  = errors.New("cannot parse invalid wire-format data: varint overflow")
	errFieldNum  = errors.New("cannot parse invalid wire-format data: invalid field number")
	errWireType  = errors.New("cannot parse invalid wire-format data: bad wire type")
)

// Encoding.

func appendTag(b []byte, num, typ int) []byte {
	return binary.AppendUvarint(b, uint64(num)<<3|uint64(typ))
}

func appendVarintField(b []byte, num int, v uint64) []byte {
	return binary.AppendUvarint(appendTag(b, num, wireVarint), v)
}

// appendBytesField writes a bytes field, present even when empty.
func appendBytesField(b []byte, num int, v []byte) []byte {
	b = binary.AppendUvarint(appendTag(b, num, wireBytes), uint64(len(v)))
	return append(b, v...)
}

func appendStringField(b []byte, num int, v string) []byte {
	b = binary.AppendUvarint(appendTag(b, num, wireBytes), uint64(len(v)))
	return append(b, v...)
}

func appendDoubleField(b []byte, num int, v float64) []byte {
	return binary.LittleEndian.AppendUint64(appendTag(b, num, wireFixed64), math.Float64bits(v))
}

// appendMessageField writes a length-delimited field whose content enc
// appends: encoded in place, then moved up by its length's size.
func appendMessageField(b []byte, num int, enc func([]byte) []byte) []byte {
	b = appendTag(b, num, wireBytes)
	start := len(b)
	b = enc(b)
	var n [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(n[:], uint64(len(b)-start))
	b = append(b, n[:k]...)
	copy(b[start+k:], b[start:len(b)-k])
	copy(b[start:], n[:k])
	return b
}

// appendPackedInt64 writes a packed repeated int64 field, absent when empty.
func appendPackedInt64(b []byte, num int, v []int64) []byte {
	if len(v) == 0 {
		return b
	}
	return appendMessageField(b, num, func(b []byte) []byte {
		for _, x := range v {
			b = binary.AppendUvarint(b, uint64(x))
		}
		return b
	})
}

// Decoding.

// field is one field read from a message.
type field struct {
	num, typ int
	u        uint64 // varint and fixed values
	b        []byte // length-delimited content, aliasing the input
}

// fields calls f with each field of the message b encodes.
func fields(b []byte, f func(field) error) error {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if err := uvarintErr(n); err != nil {
			return err
		}
		b = b[n:]
		fl := field{num: int(tag >> 3), typ: int(tag & 7)}
		if tag>>3 == 0 || tag>>3 > maxFieldNumber {
			return errFieldNum
		}
		var err error
		if b, err = fl.read(b); err != nil {
			return err
		}
		if err := f(fl); err != nil {
			return err
		}
	}
	return nil
}

// read takes the field's value from the front of b and returns the rest.
func (fl *field) read(b []byte) ([]byte, error) {
	switch fl.typ {
	case wireVarint:
		v, n := binary.Uvarint(b)
		if err := uvarintErr(n); err != nil {
			return nil, err
		}
		fl.u = v
		return b[n:], nil
	case wireFixed64:
		if len(b) < 8 {
			return nil, errTruncated
		}
		fl.u = binary.LittleEndian.Uint64(b)
		return b[8:], nil
	case wireFixed32:
		if len(b) < 4 {
			return nil, errTruncated
		}
		fl.u = uint64(binary.LittleEndian.Uint32(b))
		return b[4:], nil
	case wireBytes:
		l, n := binary.Uvarint(b)
		if err := uvarintErr(n); err != nil {
			return nil, err
		}
		if l > uint64(len(b)-n) {
			return nil, errTruncated
		}
		fl.b = b[n : n+int(l)]
		return b[n+int(l):], nil
	case wireStartGroup: // proto2's groups: skipped whole, as protobuf-go skips them
		return skipGroup(b, fl.num, 0)
	}
	return nil, errWireType
}

// skipGroup skips the rest of group num, nested groups included, and
// returns what follows its end-group tag.
func skipGroup(b []byte, num, depth int) ([]byte, error) {
	if depth > maxGroupDepth {
		return nil, errors.New("exceeded maximum recursion depth")
	}
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if err := uvarintErr(n); err != nil {
			return nil, err
		}
		b = b[n:]
		fl := field{num: int(tag >> 3), typ: int(tag & 7)}
		if tag>>3 == 0 || tag>>3 > maxFieldNumber {
			return nil, errFieldNum
		}
		var err error
		switch fl.typ {
		case wireEndGroup:
			if fl.num != num {
				return nil, errWireType
			}
			return b, nil
		case wireStartGroup:
			b, err = skipGroup(b, fl.num, depth+1)
		default:
			b, err = fl.read(b)
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, errTruncated
}

func uvarintErr(n int) error {
	switch {
	case n == 0:
		return errTruncated
	case n < 0:
		return errOverflow
	}
	return nil
}

// is reports whether the field has number num and wire type typ; a field
// of the right number but another type is skipped as unknown.
func (fl field) is(num, typ int) bool { return fl.num == num && fl.typ == typ }

// bytes is a copy of the field's content, never nil: decoded messages do
// not alias the buffer they came from, which callers may reuse.
func (fl field) bytes() []byte { return append([]byte{}, fl.b...) }

func (fl field) str(name string) (string, error) {
	if !utf8.Valid(fl.b) {
		return "", fmt.Errorf("field %s contains invalid UTF-8", name)
	}
	return string(fl.b), nil
}

// int64s appends a repeated int64 field's values, packed or not.
func (fl field) int64s(dst []int64) ([]int64, error) {
	if fl.typ == wireVarint {
		return append(dst, int64(fl.u)), nil
	}
	for b := fl.b; len(b) > 0; {
		v, n := binary.Uvarint(b)
		if err := uvarintErr(n); err != nil {
			return nil, err
		}
		dst, b = append(dst, int64(v)), b[n:]
	}
	return dst, nil
}

func (fl field) isInt64s(num int) bool {
	return fl.num == num && (fl.typ == wireVarint || fl.typ == wireBytes)
}

// mapEntry reads a map entry's key (a string) and its value field, of
// wire type valTyp (ok false when the entry has none: the zero value).
func mapEntry(b []byte, name string, valTyp int) (key string, val field, ok bool, err error) {
	err = fields(b, func(fl field) error {
		switch {
		case fl.is(1, wireBytes):
			var e error
			key, e = fl.str(name)
			return e
		case fl.is(2, valTyp):
			val, ok = fl, true
		}
		return nil
	})
	return key, val, ok, err
}
