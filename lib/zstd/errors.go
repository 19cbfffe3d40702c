package zstd

import (
	"errors"
	"fmt"
)

var (
	// ErrCorrupt: the input is not a valid zstd stream.
	ErrCorrupt = errors.New("zstd: corrupt input")
	// ErrOutputTooLarge: the decoded content would exceed the caller's bound.
	ErrOutputTooLarge = errors.New("zstd: decoded content larger than allowed")
	// ErrWindowTooLarge: a frame asks for a window beyond the caller's bound.
	ErrWindowTooLarge = errors.New("zstd: frame window larger than allowed")
	// ErrDictionary: the frame needs a dictionary, which this codec lacks.
	ErrDictionary = errors.New("zstd: frame needs a dictionary; compress without one")
	// ErrTooMuchWork: the stream needs more decoding work than its allowed
	// output justifies (tiny blocks that each describe new tables).
	ErrTooMuchWork = errors.New("zstd: stream needs too much decoding work for its size; compress it with a standard encoder (whole blocks)")
	// ErrChecksum: the content does not match the frame's checksum.
	ErrChecksum = errors.New("zstd: content checksum mismatch")
)

// corrupt wraps ErrCorrupt with what was wrong.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}
