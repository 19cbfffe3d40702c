// Package store persists the local Tinker server's state (users, sessions,
// training runs, checkpoints, samplers, request log, usage) in SQLite
// (modernc.org/sqlite, pure Go) and mirrors the listing data in memory.
//
// Every mutation is one SQLite transaction committed with WAL and
// synchronous=FULL before the call returns, so a write the server
// acknowledged survives kill -9. Reads of runs and checkpoints are served from
// the in-memory mirror (loaded at Open), which keeps list endpoints fast
// without hitting SQLite.
package store

import (
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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

// Session is a client session (create_session).
type Session struct {
	ID            string
	Owner         string
	ProjectID     string
	Tags          []string
	UserMetadata  map[string]string
	SDKVersion    string
	CreatedAt     time.Time
	LastHeartbeat time.Time
}

// Run is a training run (a LoRA model).
type Run struct {
	ID              string
	SessionID       string
	Owner           string
	BaseModel       string
	IsLora          bool
	LoraRank        int
	TrainAttn       bool
	TrainMLP        bool
	TrainUnembed    bool
	Seed            uint64
	Corrupted       bool
	UserMetadata    map[string]string
	CreatedAt       time.Time
	LastRequestTime time.Time
}

// Checkpoint is a saved checkpoint of a run.
type Checkpoint struct {
	RunID     string
	Kind      string // "weights" | "sampler_weights"
	Name      string
	Owner     string
	Time      time.Time
	SizeBytes int64
	Public    bool
	ExpiresAt *time.Time
	Seed      uint64
}

// ID is the checkpoint id, e.g. "weights/0001".
func (c *Checkpoint) ID() string { return c.Kind + "/" + c.Name }

// Type is "training" or "sampler".
func (c *Checkpoint) Type() string {
	if c.Kind == "sampler_weights" {
		return "sampler"
	}
	return "training"
}

// TinkerPath is tinker://<run>/<kind>/<name>.
func (c *Checkpoint) TinkerPath() string { return "tinker://" + c.RunID + "/" + c.Kind + "/" + c.Name }

// Expired reports whether the checkpoint has expired at now.
func (c *Checkpoint) Expired(now time.Time) bool {
	return c.ExpiresAt != nil && !c.ExpiresAt.After(now)
}

// Sampler is a sampling session.
type Sampler struct {
	ID        string
	SessionID string
	Owner     string
	BaseModel string
	ModelPath string
	CreatedAt time.Time
}

// Store is the database plus its in-memory mirror.
type Store struct {
	db     *sql.DB
	secret []byte

	writeMu sync.Mutex   // serialises mutations (SQLite has one writer anyway)
	mu      sync.RWMutex // guards the mirror below
	runs    map[string]*runEntry
	owners  map[string]*ownerEntry
	sess    map[string]*sessEntry
	samps   map[string]*Sampler
	users   map[string]string // urn -> key hash

	// dataVersion is SQLite's data_version when the mirror was loaded; it
	// changes when another process commits (a second `tinker --local`, an
	// import), and the mirror is then reloaded (see sync).
	dataVersion int64
	lastCheck   atomic.Int64 // unix nanos of the last data_version check
}

type runEntry struct {
	run   Run
	ckpts []*Checkpoint // oldest first
}

type ownerEntry struct {
	runs     []*runEntry   // newest first
	ckpts    []*Checkpoint // newest first
	expiring int           // checkpoints with an expiry set
	sessions []string      // newest first
}

type sessEntry struct {
	s        Session
	runs     []string
	samplers []string
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// Open opens (creating if needed) DataDir/tinker.db and loads the mirror.
func Open(dataDir string) (*Store, error) {
	// 0700: the database holds the URL-signing secret and API-key hashes.
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
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

// syncEvery bounds how often the database is asked whether another process
// changed it; within one process every change is visible at once.
const syncEvery = 50 * time.Millisecond

func (s *Store) readDataVersion() int64 {
	var v int64
	_ = s.db.QueryRow(`PRAGMA data_version`).Scan(&v)
	return v
}

// sync reloads the mirror if another process committed since it was loaded.
func (s *Store) sync() {
	now := time.Now().UnixNano()
	if last := s.lastCheck.Load(); now-last < int64(syncEvery) || !s.lastCheck.CompareAndSwap(last, now) {
		return
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.syncLocked()
}

// beginWrite serialises a mutation and first brings the mirror up to date
// with other processes; call as `defer s.beginWrite()()`.
func (s *Store) beginWrite() (end func()) {
	s.writeMu.Lock()
	s.syncLocked()
	return s.writeMu.Unlock
}

// syncLocked is sync for callers holding writeMu; it always checks.
func (s *Store) syncLocked() {
	v := s.readDataVersion()
	if v == s.dataVersion {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	runs, owners, sess, samps, users := s.runs, s.owners, s.sess, s.samps, s.users
	if err := s.load(); err != nil {
		// Keep serving the previous mirror rather than a half-loaded one.
		s.runs, s.owners, s.sess, s.samps, s.users = runs, owners, sess, samps, users
		return
	}
	// Heartbeats and request times are written through lazily (at most once
	// a minute); keep the newer in-memory values the database lacks.
	for id, old := range sess {
		if se := s.sess[id]; se != nil && old.s.LastHeartbeat.After(se.s.LastHeartbeat) {
			se.s.LastHeartbeat = old.s.LastHeartbeat
		}
	}
	for id, old := range runs {
		if re := s.runs[id]; re != nil && old.run.LastRequestTime.After(re.run.LastRequestTime) {
			re.run.LastRequestTime = old.run.LastRequestTime
		}
	}
	s.dataVersion = v
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Secret is a random per-data-dir key (for signing download URLs).
func (s *Store) Secret() []byte { return s.secret }

var migrations = []string{
	`CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
	CREATE TABLE users (urn TEXT PRIMARY KEY, key_hash TEXT NOT NULL, created_at INTEGER NOT NULL);
	CREATE TABLE sessions (id TEXT PRIMARY KEY, owner TEXT NOT NULL, project_id TEXT NOT NULL DEFAULT '',
		tags TEXT NOT NULL DEFAULT '[]', user_metadata TEXT, sdk_version TEXT NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL, last_heartbeat INTEGER NOT NULL);
	CREATE TABLE runs (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, owner TEXT NOT NULL, base_model TEXT NOT NULL,
		is_lora INTEGER NOT NULL, lora_rank INTEGER NOT NULL, train_attn INTEGER NOT NULL, train_mlp INTEGER NOT NULL,
		train_unembed INTEGER NOT NULL, seed INTEGER NOT NULL, corrupted INTEGER NOT NULL DEFAULT 0,
		user_metadata TEXT, created_at INTEGER NOT NULL, last_request_time INTEGER NOT NULL);
	CREATE TABLE checkpoints (run_id TEXT NOT NULL REFERENCES runs(id), kind TEXT NOT NULL, name TEXT NOT NULL,
		owner TEXT NOT NULL, created_at INTEGER NOT NULL, size_bytes INTEGER NOT NULL, public INTEGER NOT NULL DEFAULT 0,
		expires_at INTEGER, seed INTEGER NOT NULL, PRIMARY KEY (run_id, kind, name));
	CREATE INDEX checkpoints_expiry ON checkpoints(expires_at) WHERE expires_at IS NOT NULL;
	CREATE TABLE samplers (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, owner TEXT NOT NULL, base_model TEXT NOT NULL,
		model_path TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL);
	CREATE TABLE request_log (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, name TEXT NOT NULL,
		start_us INTEGER NOT NULL, dur_us INTEGER NOT NULL, status INTEGER NOT NULL, detail TEXT NOT NULL DEFAULT '');
	CREATE INDEX request_log_session ON request_log(session_id, start_us);
	CREATE TABLE usage (id INTEGER PRIMARY KEY, at INTEGER NOT NULL, owner TEXT NOT NULL, session_id TEXT NOT NULL,
		base_model TEXT NOT NULL, type TEXT NOT NULL, token_count INTEGER NOT NULL DEFAULT 0, cached INTEGER NOT NULL DEFAULT 0);
	CREATE INDEX usage_owner_at ON usage(owner, at);`,
}

func (s *Store) migrate() error {
	var v int
	if err := s.db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("database schema version %d is newer than this tinker (%d); upgrade tinker", v, len(migrations))
	}
	for ; v < len(migrations); v++ {
		tx, err := s.db.Begin()
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if _, err := tx.Exec(migrations[v]); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate to schema %d: %w", v+1, err)
		}
		if _, err := tx.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, v+1)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate to schema %d: %w", v+1, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migrate to schema %d: %w", v+1, err)
		}
	}
	return nil
}

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

func (s *Store) load() error {
	s.runs = map[string]*runEntry{}
	s.owners = map[string]*ownerEntry{}
	s.sess = map[string]*sessEntry{}
	s.samps = map[string]*Sampler{}
	s.users = map[string]string{}

	rows, err := s.db.Query(`SELECT urn, key_hash FROM users`)
	if err != nil {
		return fmt.Errorf("load users: %w", err)
	}
	for rows.Next() {
		var u, h string
		if err := rows.Scan(&u, &h); err != nil {
			rows.Close()
			return fmt.Errorf("load users: %w", err)
		}
		s.users[u] = h
	}
	rows.Close()

	rows, err = s.db.Query(`SELECT id, owner, project_id, tags, user_metadata, sdk_version, created_at, last_heartbeat FROM sessions ORDER BY created_at, id`)
	if err != nil {
		return fmt.Errorf("load sessions: %w", err)
	}
	for rows.Next() {
		var se Session
		var tags string
		var meta sql.NullString
		var c, h int64
		if err := rows.Scan(&se.ID, &se.Owner, &se.ProjectID, &tags, &meta, &se.SDKVersion, &c, &h); err != nil {
			rows.Close()
			return fmt.Errorf("load sessions: %w", err)
		}
		json.Unmarshal([]byte(tags), &se.Tags)
		se.UserMetadata, se.CreatedAt, se.LastHeartbeat = decMeta(meta), fromMicros(c), fromMicros(h)
		s.addSession(se)
	}
	rows.Close()

	rows, err = s.db.Query(`SELECT id, session_id, owner, base_model, is_lora, lora_rank, train_attn, train_mlp, train_unembed,
		seed, corrupted, user_metadata, created_at, last_request_time FROM runs ORDER BY created_at, id`)
	if err != nil {
		return fmt.Errorf("load runs: %w", err)
	}
	for rows.Next() {
		var r Run
		var meta sql.NullString
		var c, l, seed int64
		if err := rows.Scan(&r.ID, &r.SessionID, &r.Owner, &r.BaseModel, &r.IsLora, &r.LoraRank, &r.TrainAttn, &r.TrainMLP,
			&r.TrainUnembed, &seed, &r.Corrupted, &meta, &c, &l); err != nil {
			rows.Close()
			return fmt.Errorf("load runs: %w", err)
		}
		r.Seed, r.UserMetadata, r.CreatedAt, r.LastRequestTime = uint64(seed), decMeta(meta), fromMicros(c), fromMicros(l)
		s.addRun(r)
	}
	rows.Close()

	rows, err = s.db.Query(`SELECT run_id, kind, name, owner, created_at, size_bytes, public, expires_at, seed FROM checkpoints`)
	if err != nil {
		return fmt.Errorf("load checkpoints: %w", err)
	}
	var all []*Checkpoint
	for rows.Next() {
		c := &Checkpoint{}
		var t, seed int64
		var exp sql.NullInt64
		if err := rows.Scan(&c.RunID, &c.Kind, &c.Name, &c.Owner, &t, &c.SizeBytes, &c.Public, &exp, &seed); err != nil {
			rows.Close()
			return fmt.Errorf("load checkpoints: %w", err)
		}
		c.Time, c.Seed = fromMicros(t), uint64(seed)
		if exp.Valid {
			e := fromMicros(exp.Int64)
			c.ExpiresAt = &e
		}
		all = append(all, c)
	}
	rows.Close()
	// Bulk build: append, then sort each list once.
	for _, c := range all {
		re := s.runs[c.RunID]
		if re == nil {
			continue
		}
		re.ckpts = append(re.ckpts, c)
		o := s.owner(c.Owner)
		o.ckpts = append(o.ckpts, c)
		if c.ExpiresAt != nil {
			o.expiring++
		}
	}
	for _, re := range s.runs {
		sort.Slice(re.ckpts, func(i, j int) bool { return ckptLess(re.ckpts[j], re.ckpts[i]) })
	}
	for _, o := range s.owners {
		sort.Slice(o.ckpts, func(i, j int) bool { return ckptLess(o.ckpts[i], o.ckpts[j]) })
	}

	rows, err = s.db.Query(`SELECT id, session_id, owner, base_model, model_path, created_at FROM samplers ORDER BY created_at, id`)
	if err != nil {
		return fmt.Errorf("load samplers: %w", err)
	}
	for rows.Next() {
		sp := &Sampler{}
		var c int64
		if err := rows.Scan(&sp.ID, &sp.SessionID, &sp.Owner, &sp.BaseModel, &sp.ModelPath, &c); err != nil {
			rows.Close()
			return fmt.Errorf("load samplers: %w", err)
		}
		sp.CreatedAt = fromMicros(c)
		s.addSampler(sp)
	}
	rows.Close()
	return rows.Err()
}

// ckptLess orders newest first (ties broken by path so order is total).
func ckptLess(a, b *Checkpoint) bool {
	if !a.Time.Equal(b.Time) {
		return a.Time.After(b.Time)
	}
	if a.RunID != b.RunID {
		return a.RunID > b.RunID
	}
	if a.Kind != b.Kind {
		return a.Kind > b.Kind
	}
	return a.Name > b.Name
}

func (s *Store) owner(urn string) *ownerEntry {
	o := s.owners[urn]
	if o == nil {
		o = &ownerEntry{}
		s.owners[urn] = o
	}
	return o
}

func (s *Store) addSession(se Session) {
	s.sess[se.ID] = &sessEntry{s: se}
	o := s.owner(se.Owner)
	o.sessions = append([]string{se.ID}, o.sessions...)
}

func (s *Store) addRun(r Run) {
	re := &runEntry{run: r}
	s.runs[r.ID] = re
	o := s.owner(r.Owner)
	o.runs = append([]*runEntry{re}, o.runs...)
	if se := s.sess[r.SessionID]; se != nil {
		se.runs = append(se.runs, r.ID)
	}
}

func (s *Store) addSampler(sp *Sampler) {
	s.samps[sp.ID] = sp
	if se := s.sess[sp.SessionID]; se != nil {
		se.samplers = append(se.samplers, sp.ID)
	}
}

func (s *Store) insertCkptMem(c *Checkpoint) {
	re := s.runs[c.RunID]
	i := sort.Search(len(re.ckpts), func(i int) bool { return ckptLess(re.ckpts[i], c) })
	re.ckpts = append(re.ckpts, nil)
	copy(re.ckpts[i+1:], re.ckpts[i:])
	re.ckpts[i] = c
	o := s.owner(c.Owner)
	j := sort.Search(len(o.ckpts), func(i int) bool { return !ckptLess(o.ckpts[i], c) })
	o.ckpts = append(o.ckpts, nil)
	copy(o.ckpts[j+1:], o.ckpts[j:])
	o.ckpts[j] = c
	if c.ExpiresAt != nil {
		o.expiring++
	}
}

func (s *Store) removeCkptMem(c *Checkpoint) {
	re := s.runs[c.RunID]
	re.ckpts = removePtr(re.ckpts, c)
	o := s.owner(c.Owner)
	o.ckpts = removePtr(o.ckpts, c)
	if c.ExpiresAt != nil {
		o.expiring--
	}
}

func removePtr(list []*Checkpoint, c *Checkpoint) []*Checkpoint {
	for i, x := range list {
		if x == c {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

// EnsureUser records a user URN and the hash of its API key.
func (s *Store) EnsureUser(urn, keyHash string, now time.Time) error {
	s.sync()
	s.mu.RLock()
	_, ok := s.users[urn]
	s.mu.RUnlock()
	if ok {
		return nil
	}
	defer s.beginWrite()()
	if _, err := s.db.Exec(`INSERT OR IGNORE INTO users(urn, key_hash, created_at) VALUES (?, ?, ?)`, urn, keyHash, micros(now)); err != nil {
		return fmt.Errorf("record user: %w", err)
	}
	s.mu.Lock()
	s.users[urn] = keyHash
	s.mu.Unlock()
	return nil
}

// CreateSession stores a new session.
func (s *Store) CreateSession(se Session) error {
	defer s.beginWrite()()
	tags, _ := json.Marshal(se.Tags)
	if se.Tags == nil {
		tags = []byte("[]")
	}
	if _, err := s.db.Exec(`INSERT INTO sessions(id, owner, project_id, tags, user_metadata, sdk_version, created_at, last_heartbeat)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, se.ID, se.Owner, se.ProjectID, string(tags), encMeta(se.UserMetadata), se.SDKVersion,
		micros(se.CreatedAt), micros(se.LastHeartbeat)); err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	s.mu.Lock()
	s.addSession(se)
	s.mu.Unlock()
	return nil
}

// Session returns a session with its run and sampler ids.
func (s *Store) Session(id string) (Session, []string, []string, bool) {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	se := s.sess[id]
	if se == nil {
		return Session{}, nil, nil, false
	}
	return se.s, append([]string{}, se.runs...), append([]string{}, se.samplers...), true
}

// ListSessions returns the owner's session ids, newest first.
func (s *Store) ListSessions(owner string, limit, offset int) []string {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	o := s.owners[owner]
	if o == nil {
		return []string{}
	}
	return append([]string{}, page(o.sessions, limit, offset)...)
}

func page[T any](list []T, limit, offset int) []T {
	if offset >= len(list) {
		return nil
	}
	end := len(list)
	if limit >= 0 && offset+limit < end {
		end = offset + limit
	}
	return list[offset:end]
}

// Heartbeat records a session heartbeat. It is kept in memory only and
// written through at most once a minute, since it is not user data.
func (s *Store) Heartbeat(id string, now time.Time) error {
	s.mu.Lock()
	se := s.sess[id]
	if se == nil {
		s.mu.Unlock()
		return ErrNotFound
	}
	flush := now.Sub(se.s.LastHeartbeat) > time.Minute
	se.s.LastHeartbeat = now
	s.mu.Unlock()
	if flush {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
		if _, err := s.db.Exec(`UPDATE sessions SET last_heartbeat = ? WHERE id = ?`, micros(now), id); err != nil {
			return fmt.Errorf("heartbeat: %w", err)
		}
	}
	return nil
}

// SetSessionProject moves a session into a project.
func (s *Store) SetSessionProject(id, project string) error {
	defer s.beginWrite()()
	res, err := s.db.Exec(`UPDATE sessions SET project_id = ? WHERE id = ?`, project, id)
	if err != nil {
		return fmt.Errorf("set project: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	s.mu.Lock()
	if se := s.sess[id]; se != nil {
		se.s.ProjectID = project
	}
	s.mu.Unlock()
	return nil
}

const insertRunSQL = `INSERT INTO runs(id, session_id, owner, base_model, is_lora, lora_rank, train_attn, train_mlp, train_unembed,
	seed, corrupted, user_metadata, created_at, last_request_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func runArgs(r *Run) []any {
	return []any{r.ID, r.SessionID, r.Owner, r.BaseModel, b2i(r.IsLora), r.LoraRank, b2i(r.TrainAttn), b2i(r.TrainMLP),
		b2i(r.TrainUnembed), int64(r.Seed), b2i(r.Corrupted), encMeta(r.UserMetadata), micros(r.CreatedAt), micros(r.LastRequestTime)}
}

// CreateRun stores a new training run.
func (s *Store) CreateRun(r Run) error {
	defer s.beginWrite()()
	s.mu.RLock()
	_, dup := s.runs[r.ID]
	s.mu.RUnlock()
	if dup {
		return fmt.Errorf("training run %s: %w", r.ID, ErrExists)
	}
	if _, err := s.db.Exec(insertRunSQL, runArgs(&r)...); err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	s.mu.Lock()
	s.addRun(r)
	s.mu.Unlock()
	return nil
}

// RunView is a run with its latest checkpoints, as listings show it.
type RunView struct {
	Run
	LastCheckpoint        *Checkpoint
	LastSamplerCheckpoint *Checkpoint
}

func (s *Store) view(re *runEntry, now time.Time) RunView {
	v := RunView{Run: re.run}
	for i := len(re.ckpts) - 1; i >= 0 && (v.LastCheckpoint == nil || v.LastSamplerCheckpoint == nil); i-- {
		c := re.ckpts[i]
		if c.Expired(now) {
			continue
		}
		if c.Kind == "weights" && v.LastCheckpoint == nil {
			cc := *c
			v.LastCheckpoint = &cc
		} else if c.Kind == "sampler_weights" && v.LastSamplerCheckpoint == nil {
			cc := *c
			v.LastSamplerCheckpoint = &cc
		}
	}
	return v
}

// Run returns one run.
func (s *Store) Run(id string, now time.Time) (RunView, bool) {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	re := s.runs[id]
	if re == nil {
		return RunView{}, false
	}
	return s.view(re, now), true
}

// RunPublic reports whether a run has at least one live public checkpoint.
func (s *Store) RunPublic(id string, now time.Time) bool {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	re := s.runs[id]
	return re != nil && hasPublic(re, now)
}

func hasPublic(re *runEntry, now time.Time) bool {
	for _, c := range re.ckpts {
		if c.Public && !c.Expired(now) {
			return true
		}
	}
	return false
}

// ListRuns lists the owner's runs newest first; with accessible, runs of
// other owners that have a live public checkpoint are included after them.
func (s *Store) ListRuns(owner string, accessible bool, now time.Time, limit, offset int) ([]RunView, int) {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	var list []*runEntry
	if o := s.owners[owner]; o != nil {
		list = o.runs
	}
	if accessible {
		var others []*runEntry
		for _, re := range s.runs {
			if re.run.Owner != owner && hasPublic(re, now) {
				others = append(others, re)
			}
		}
		sort.Slice(others, func(i, j int) bool {
			if !others[i].run.CreatedAt.Equal(others[j].run.CreatedAt) {
				return others[i].run.CreatedAt.After(others[j].run.CreatedAt)
			}
			return others[i].run.ID < others[j].run.ID
		})
		list = append(append([]*runEntry{}, list...), others...)
	}
	out := []RunView{}
	for _, re := range page(list, limit, offset) {
		out = append(out, s.view(re, now))
	}
	return out, len(list)
}

// TouchRun updates a run's last_request_time (in memory; persisted with the
// next checkpoint write or at most once a minute).
func (s *Store) TouchRun(id string, now time.Time) {
	s.mu.Lock()
	re := s.runs[id]
	if re == nil {
		s.mu.Unlock()
		return
	}
	flush := now.Sub(re.run.LastRequestTime) > time.Minute
	re.run.LastRequestTime = now
	s.mu.Unlock()
	if flush {
		s.writeMu.Lock()
		s.db.Exec(`UPDATE runs SET last_request_time = ? WHERE id = ?`, micros(now), id)
		s.writeMu.Unlock()
	}
}

// RunCheckpoints lists a run's live checkpoints, oldest first (the order the
// service uses for the per-run listing).
func (s *Store) RunCheckpoints(runID string, now time.Time) ([]Checkpoint, bool) {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	re := s.runs[runID]
	if re == nil {
		return nil, false
	}
	out := make([]Checkpoint, 0, len(re.ckpts))
	for _, c := range re.ckpts {
		if !c.Expired(now) {
			out = append(out, *c)
		}
	}
	return out, true
}

// ListCheckpoints pages through the owner's live checkpoints, newest first.
// fn is called for each one under the read lock (so callers can encode
// without copying); it returns the total count.
func (s *Store) ListCheckpoints(owner string, now time.Time, limit, offset int, fn func(*Checkpoint)) int {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	o := s.owners[owner]
	if o == nil {
		return 0
	}
	list := o.ckpts
	if o.expiring > 0 {
		live := make([]*Checkpoint, 0, len(list))
		for _, c := range list {
			if !c.Expired(now) {
				live = append(live, c)
			}
		}
		list = live
	}
	for _, c := range page(list, limit, offset) {
		fn(c)
	}
	return len(list)
}

// Checkpoint returns one live checkpoint.
func (s *Store) Checkpoint(runID, kind, name string, now time.Time) (Checkpoint, bool) {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := s.find(runID, kind, name)
	if c == nil || c.Expired(now) {
		return Checkpoint{}, false
	}
	return *c, true
}

func (s *Store) find(runID, kind, name string) *Checkpoint {
	re := s.runs[runID]
	if re == nil {
		return nil
	}
	for _, c := range re.ckpts {
		if c.Kind == kind && c.Name == name {
			return c
		}
	}
	return nil
}

const insertCkptSQL = `INSERT INTO checkpoints(run_id, kind, name, owner, created_at, size_bytes, public, expires_at, seed)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

func ckptArgs(c *Checkpoint) []any {
	var exp any
	if c.ExpiresAt != nil {
		exp = micros(*c.ExpiresAt)
	}
	return []any{c.RunID, c.Kind, c.Name, c.Owner, micros(c.Time), c.SizeBytes, b2i(c.Public), exp, int64(c.Seed)}
}

// PutCheckpoint stores a new checkpoint. An existing live checkpoint of the
// same name gives ErrExists unless overwrite; an expired one is replaced.
func (s *Store) PutCheckpoint(c Checkpoint, overwrite bool, now time.Time) error {
	defer s.beginWrite()()
	s.mu.RLock()
	re := s.runs[c.RunID]
	old := s.find(c.RunID, c.Kind, c.Name)
	s.mu.RUnlock()
	if re == nil {
		return fmt.Errorf("training run %s: %w", c.RunID, ErrNotFound)
	}
	if old != nil && !overwrite && !old.Expired(now) {
		return fmt.Errorf("checkpoint %s: %w", c.TinkerPath(), ErrExists)
	}
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	defer tx.Rollback()
	if old != nil {
		if _, err := tx.Exec(`DELETE FROM checkpoints WHERE run_id = ? AND kind = ? AND name = ?`, c.RunID, c.Kind, c.Name); err != nil {
			return fmt.Errorf("save checkpoint: %w", err)
		}
	}
	if _, err := tx.Exec(insertCkptSQL, ckptArgs(&c)...); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if _, err := tx.Exec(`UPDATE runs SET last_request_time = ? WHERE id = ?`, micros(now), c.RunID); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	s.mu.Lock()
	if old != nil {
		s.removeCkptMem(old)
	}
	cc := c
	s.insertCkptMem(&cc)
	re.run.LastRequestTime = now
	s.mu.Unlock()
	return nil
}

// DeleteCheckpoint removes a checkpoint row (callers remove files).
func (s *Store) DeleteCheckpoint(runID, kind, name string) error {
	defer s.beginWrite()()
	s.mu.RLock()
	c := s.find(runID, kind, name)
	s.mu.RUnlock()
	if c == nil {
		return ErrNotFound
	}
	if _, err := s.db.Exec(`DELETE FROM checkpoints WHERE run_id = ? AND kind = ? AND name = ?`, runID, kind, name); err != nil {
		return fmt.Errorf("delete checkpoint: %w", err)
	}
	s.mu.Lock()
	s.removeCkptMem(c)
	s.mu.Unlock()
	return nil
}

// SetPublic publishes or unpublishes; it returns ErrExists when the
// checkpoint is already in that state.
func (s *Store) SetPublic(runID, kind, name string, public bool, now time.Time) error {
	defer s.beginWrite()()
	s.mu.RLock()
	c := s.find(runID, kind, name)
	s.mu.RUnlock()
	if c == nil || c.Expired(now) {
		return ErrNotFound
	}
	if c.Public == public {
		return ErrExists
	}
	if _, err := s.db.Exec(`UPDATE checkpoints SET public = ? WHERE run_id = ? AND kind = ? AND name = ?`, b2i(public), runID, kind, name); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	s.mu.Lock()
	c.Public = public
	s.mu.Unlock()
	return nil
}

// SetExpiry sets or clears (nil) a checkpoint's expiry.
func (s *Store) SetExpiry(runID, kind, name string, exp *time.Time, now time.Time) error {
	defer s.beginWrite()()
	s.mu.RLock()
	c := s.find(runID, kind, name)
	s.mu.RUnlock()
	if c == nil || c.Expired(now) {
		return ErrNotFound
	}
	var v any
	if exp != nil {
		v = micros(*exp)
	}
	if _, err := s.db.Exec(`UPDATE checkpoints SET expires_at = ? WHERE run_id = ? AND kind = ? AND name = ?`, v, runID, kind, name); err != nil {
		return fmt.Errorf("set ttl: %w", err)
	}
	s.mu.Lock()
	o := s.owner(c.Owner)
	if c.ExpiresAt != nil {
		o.expiring--
	}
	if exp != nil {
		e := exp.UTC().Truncate(time.Microsecond)
		c.ExpiresAt = &e
		o.expiring++
	} else {
		c.ExpiresAt = nil
	}
	s.mu.Unlock()
	return nil
}

// ExpiredCheckpoints lists checkpoints whose expiry has passed.
func (s *Store) ExpiredCheckpoints(now time.Time) []Checkpoint {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Checkpoint
	for _, o := range s.owners {
		if o.expiring == 0 {
			continue
		}
		for _, c := range o.ckpts {
			if c.Expired(now) {
				out = append(out, *c)
			}
		}
	}
	return out
}

// CreateSampler stores a sampling session.
func (s *Store) CreateSampler(sp Sampler) error {
	defer s.beginWrite()()
	if _, err := s.db.Exec(`INSERT INTO samplers(id, session_id, owner, base_model, model_path, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		sp.ID, sp.SessionID, sp.Owner, sp.BaseModel, sp.ModelPath, micros(sp.CreatedAt)); err != nil {
		return fmt.Errorf("create sampler: %w", err)
	}
	s.mu.Lock()
	s.addSampler(&sp)
	s.mu.Unlock()
	return nil
}

// Sampler returns a sampling session.
func (s *Store) Sampler(id string) (Sampler, bool) {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	sp := s.samps[id]
	if sp == nil {
		return Sampler{}, false
	}
	return *sp, true
}
