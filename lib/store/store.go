// Package store persists the local Tinker server's state (users, sessions,
// training runs, checkpoints, samplers, request log, usage) in SQLite
// (modernc.org/sqlite, pure Go) and mirrors the listing data in memory.
//
// Every mutation is one SQLite transaction committed with WAL and
// synchronous=FULL before the call returns, so a write the server
// acknowledged survives kill -9. Reads of users, sessions, runs, checkpoints
// and samplers are served from the in-memory mirror (loaded at Open), which
// keeps list endpoints fast without hitting SQLite. mirror.go states the
// rules that keep the mirror consistent; read them before adding a method.
//
// Files: store.go opens the database, migrate.go holds the schema, mirror.go
// the in-memory copy and cross-process sync, and one file per entity holds
// its type and methods (users, sessions, runs, checkpoints, samplers,
// requestlog, usage); import.go adds many rows in one transaction.
package store

import (
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Errors callers map to HTTP statuses.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
)

// Store is the database plus its in-memory mirror.
type Store struct {
	db     *sql.DB
	secret []byte

	writeMu sync.Mutex // serialises mutations (SQLite has one writer anyway)
	// trainAdded counts training events added per run since the last
	// prune of its old ones (under writeMu).
	trainAdded map[string]int
	mu         sync.RWMutex // guards the mirror below
	runs       map[string]*runEntry
	owners     map[string]*ownerEntry
	sess       map[string]*sessEntry
	samps      map[string]*Sampler
	users      map[string]string // urn -> key hash

	// dataVersion is SQLite's data_version when the mirror was loaded; it
	// changes when another process commits (a second `tinker --local`, an
	// import), and the mirror is then reloaded (see sync).
	dataVersion int64
	lastCheck   atomic.Int64 // unix nanos of the last data_version check
}

// Open opens (creating if needed) DataDir/tinker.db and loads the mirror.
func Open(dataDir string) (*Store, error) {
	if err := private(dataDir); err != nil {
		return nil, err
	}
	path := filepath.Join(dataDir, "tinker.db")
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// One connection: all writes are serialised, and reads come from memory.
	db.SetMaxOpenConns(1)
	s := &Store{db: db}
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.loadSecret(); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.load(); err != nil {
		db.Close()
		return nil, err
	}
	s.dataVersion = s.readDataVersion()
	return s, nil
}

// private makes the data directory 0700 and the database files 0600,
// creating or tightening them: the database holds the URL-signing secret
// and API-key hashes, and checkpoints are private until published. SQLite
// gives its -wal and -shm files the database's mode.
func private(dataDir string) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if err := tighten(dataDir, 0o700); err != nil {
		return err
	}
	db := filepath.Join(dataDir, "tinker.db")
	f, err := os.OpenFile(db, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	f.Close()
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		if err := tighten(p, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// tighten removes permission bits beyond mode from p.
func tighten(p string, mode os.FileMode) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&^mode == 0 {
		return nil
	}
	if err := os.Chmod(p, fi.Mode().Perm()&mode); err != nil {
		return fmt.Errorf("restrict %s to its owner: %w", p, err)
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Secret is a random per-data-dir key (for signing download URLs).
func (s *Store) Secret() []byte { return s.secret }

func (s *Store) loadSecret() error {
	err := s.db.QueryRow(`SELECT value FROM meta WHERE key = 'url_secret'`).Scan(&s.secret)
	if err == nil {
		return nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read url secret: %w", err)
	}
	s.secret = make([]byte, 32)
	rand.Read(s.secret)
	if _, err := s.db.Exec(`INSERT INTO meta(key, value) VALUES ('url_secret', ?)`, s.secret); err != nil {
		return fmt.Errorf("store url secret: %w", err)
	}
	return nil
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func encMeta(m map[string]string) any {
	if m == nil {
		return nil
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func decMeta(s sql.NullString) map[string]string {
	if !s.Valid {
		return nil
	}
	m := map[string]string{}
	json.Unmarshal([]byte(s.String), &m)
	return m
}

// page is list[offset:offset+limit], clipped to the list; limit < 0 means
// no limit. It compares against what is left rather than adding, so huge
// values cannot overflow.
func page[T any](list []T, limit, offset int) []T {
	if offset < 0 || offset >= len(list) {
		return nil
	}
	end := len(list)
	if limit >= 0 && limit < end-offset {
		end = offset + limit
	}
	return list[offset:end]
}
