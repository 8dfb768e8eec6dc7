-- The API server's state, in SQLite's dialect (natively go-sqlite3 in WAL
-- mode; on Workers, D1). Tokens keep only the HMAC of their secret.
CREATE TABLE IF NOT EXISTS tokens (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  hash TEXT NOT NULL,
  scopes TEXT NOT NULL,
  daily_requests INTEGER NOT NULL,
  daily_live_calls INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  revoked_at TEXT
);
-- What each token used on each UTC day.
CREATE TABLE IF NOT EXISTS allowance (
  token_id TEXT NOT NULL,
  day TEXT NOT NULL,
  requests INTEGER NOT NULL DEFAULT 0,
  live_calls INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (token_id, day)
);
-- seq orders the queue (FIFO) and the pages of a token's runs.
CREATE TABLE IF NOT EXISTS runs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  token_id TEXT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT,
  spec TEXT NOT NULL,
  report TEXT,
  error TEXT,
  created_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status, token_id);
CREATE INDEX IF NOT EXISTS runs_by_token ON runs (token_id, seq);
-- A run's events in order; seq is the SSE id.
CREATE TABLE IF NOT EXISTS events (
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  data TEXT NOT NULL,
  at TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS recordings (
  run_id TEXT PRIMARY KEY,
  data TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
-- Cancel requests for running runs, read by the process running each (on
-- Workers, a cancel reaches an isolate other than the run's only this way).
CREATE TABLE IF NOT EXISTS cancels (
  run_id TEXT PRIMARY KEY,
  at TEXT NOT NULL
);
-- Experiments (POST /v1/experiments): seq orders a token's list and the
-- queue; done counts the rankings kept in experiment_rankings. Their
-- events share the events table (an experiment's id is never a run's).
CREATE TABLE IF NOT EXISTS experiments (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  token_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  state TEXT NOT NULL,
  spec TEXT NOT NULL,
  done INTEGER NOT NULL DEFAULT 0,
  total INTEGER NOT NULL,
  headline TEXT,
  result TEXT,
  error TEXT,
  created_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT
);
CREATE INDEX IF NOT EXISTS experiments_by_state ON experiments (state, token_id);
CREATE INDEX IF NOT EXISTS experiments_by_token ON experiments (token_id, seq);
-- Each ranking an experiment made, kept as it is made: a restarted
-- server resumes from them, and the key refuses a case ranked twice.
CREATE TABLE IF NOT EXISTS experiment_rankings (
  experiment_id TEXT NOT NULL,
  config INTEGER NOT NULL,
  case_index INTEGER NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (experiment_id, config, case_index)
);
-- Each graded trial an agent experiment ran, kept as it ends (by its
-- index in the plan's order): a restarted server resumes from them, and
-- the key refuses a trial kept twice.
CREATE TABLE IF NOT EXISTS experiment_trials (
  experiment_id TEXT NOT NULL,
  trial_index INTEGER NOT NULL,
  trial_id TEXT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (experiment_id, trial_index)
);
