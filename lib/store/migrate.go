package store

import "fmt"

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
	// Schema 2: a checkpoint whose files hold trained or imported weights,
	// which its seed cannot make again (Checkpoint.FilesOnly).
	`ALTER TABLE checkpoints ADD COLUMN files_only INTEGER NOT NULL DEFAULT 0;`,
	// Schema 3: training events (the web console's curves), so they outlive
	// a restart of the server.
	`CREATE TABLE train_events (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, op TEXT NOT NULL, step INTEGER NOT NULL,
		loss_sum REAL NOT NULL, weight REAL NOT NULL, lr REAL NOT NULL, grad_norm REAL NOT NULL, at INTEGER NOT NULL);
	CREATE INDEX train_events_run ON train_events(run_id, id);`,
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
