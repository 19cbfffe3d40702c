package store

import (
	"database/sql"
	"fmt"
	"sort"
	"time"
)

// The mirror and the rules that keep it consistent.
//
// Users, sessions, runs, checkpoints and samplers live twice: as rows in
// SQLite and as the maps on Store (users, sess, runs, owners, samps). Every
// read of them is served from the maps; the request log and usage tables
// are not mirrored and are read from SQLite when asked for.
//
// Reading. Call s.sync() first (it picks up other processes' commits, see
// below), then hold s.mu.RLock while reading the maps and return copies,
// never a pointer into the mirror. The one exception is a callback that
// runs under the read lock (ListCheckpoints); such a callback must not call
// back into the Store or keep the pointer.
//
// Writing a mirrored row. Start with `defer s.beginWrite()()`: it takes
// writeMu (one writer at a time in this process) and first reloads the
// mirror if another process committed, so checks such as "is this id
// taken" see that process's rows. Check against the mirror under
// s.mu.RLock, commit the SQL (one statement, or one transaction for several),
// and only after the commit succeeds apply the same change to the mirror
// under s.mu.Lock. A failed commit leaves the mirror as it was. Writes to
// tables that are not mirrored (request_log, usage) only take writeMu.
//
// Other processes. A second `tinker --local` on the same data directory,
// or `tinker serve import`, commits to the same database. SQLite's
// PRAGMA data_version changes when another connection commits; sync checks
// it at most every syncEvery, beginWrite always, and a change reloads the
// whole mirror (load). If a reload fails the previous mirror stays.
//
// Only in memory. Session heartbeats (Heartbeat) and runs' last request
// times (TouchRun) change on almost every call and are not user data, so
// they are written to SQLite at most once a minute per row (PutCheckpoint
// and SetRunWeights write a run's time too). A reload keeps the newer
// in-memory values; after a crash they can be up to a minute old. These lazy
// writes take writeMu only, without reloading.
//
// Callers (lib/server handlers) see none of this: they call the exported
// methods, get snapshots back, and change state only through methods; a
// value they hold does not follow later changes. Times are stored in
// microseconds (micros), so a value read back is truncated to that.

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

// load rebuilds the whole mirror from the database, sessions before the
// runs and samplers that list themselves on them, runs before checkpoints.
func (s *Store) load() error {
	s.runs = map[string]*runEntry{}
	s.owners = map[string]*ownerEntry{}
	s.sess = map[string]*sessEntry{}
	s.samps = map[string]*Sampler{}
	s.users = map[string]string{}
	for _, step := range []func() error{s.loadUsers, s.loadSessions, s.loadRuns, s.loadCheckpoints, s.loadSamplers} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// scanRows runs a query and calls scan for each row; errors name what was
// being loaded.
func (s *Store) scanRows(what, query string, scan func(*sql.Rows) error) error {
	rows, err := s.db.Query(query)
	if err != nil {
		return fmt.Errorf("load %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("load %s: %w", what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load %s: %w", what, err)
	}
	return nil
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
