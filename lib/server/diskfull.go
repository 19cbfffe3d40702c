package server

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A full data directory must not lock the store: saves are refused at once
// with 507 (which clients do not retry), and deletes, which are how space is
// freed, must still work. SQLite needs room in its write-ahead log even to
// delete a row, so the server keeps a small spare file in the data
// directory and gives it up when a delete finds the disk full.

// minFreeBytes is the room a save must leave free: the database, its log and
// the spare file need it.
const minFreeBytes = 16 << 20

// reserveBytes is the size of the spare file.
const reserveBytes = 4 << 20

const reserveName = ".space-reserve"

func (s *Server) reservePath() string { return filepath.Join(s.opts.DataDir, reserveName) }

// ensureReserve (re)creates the spare file. On a full disk it cannot, which
// is fine: it is made again once space is freed.
func (s *Server) ensureReserve() {
	p := s.reservePath()
	if fi, err := os.Stat(p); err == nil && fi.Size() == reserveBytes {
		return
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return
	}
	// Real blocks, not a sparse file: the point is to hold space.
	_, werr := f.Write(make([]byte, reserveBytes))
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(p)
	}
}

// releaseReserve deletes the spare file, reporting whether there was one.
func (s *Server) releaseReserve() bool {
	return os.Remove(s.reservePath()) == nil
}

// isDiskFull recognises a full file system in an error from the OS or
// from SQLite.
func isDiskFull(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "database or disk is full") || strings.Contains(msg, "no space left on device")
}

// diskFull is the answer when the data directory has no room.
func diskFull(what string) *errorResponse {
	return errorf(http.StatusInsufficientStorage, "%s: the server's disk is full; delete checkpoints to free space, then try again", what)
}

// checkRoom answers 507 when saving need more bytes would leave less than
// minFreeBytes in the data directory.
func (s *Server) checkRoom(what string, need int64) *errorResponse {
	free, ok := freeBytes(s.opts.DataDir)
	if ok && free < uint64(need)+minFreeBytes {
		return errorf(http.StatusInsufficientStorage, "%s needs %s but the server's disk has %s free; delete checkpoints to free space, then try again",
			what, humanBytes(uint64(need)), humanBytes(free))
	}
	return nil
}

// storeFailure maps a failed store write to 507 when the disk is full and
// to 500 otherwise.
func storeFailure(what string, err error) *errorResponse {
	if isDiskFull(err) {
		return diskFull(what)
	}
	return errorf(http.StatusInternalServerError, "%s: %v", what, err)
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%d KiB", n>>10)
	}
}
