-- vid2context schema, version 1.
--
-- Plain SQLite that Cloudflare D1 also accepts: D1 applies this file with
-- `wrangler d1 migrations apply`, and the SQLite store applies it at open (each file in one
-- transaction, recorded in its own `_vid2context_migrations` table). So: no PRAGMA, no
-- BEGIN/COMMIT, no triggers; FTS5 is fine on both.

-- Counters that only ever grow. `videos` hands out `videos.seq`: taken once, at a video's first
-- save, never reused after a delete, so a keyset cursor ("older than seq N") stays exact.
CREATE TABLE sequences (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
INSERT INTO sequences (name, value) VALUES ('videos', 0);

-- One row per saved video: the `VideoSummary` columns (so a library page reads no JSON), and the
-- whole `VideoContext` as JSON in `context`, or in a blob named by `blob_key` when it is too large
-- for a row (the Cloudflare store keeps those in R2).
CREATE TABLE videos (
  id TEXT PRIMARY KEY,
  seq INTEGER NOT NULL UNIQUE,
  title TEXT NOT NULL,
  platform TEXT NOT NULL,
  url TEXT,
  channel TEXT,
  duration_sec REAL,
  published_at TEXT,
  origin TEXT,
  language TEXT,
  tokens INTEGER NOT NULL DEFAULT 0,
  fetched_at TEXT NOT NULL DEFAULT '',
  updated_at TEXT NOT NULL DEFAULT '',
  context TEXT,
  blob_key TEXT,
  CHECK (context IS NOT NULL OR blob_key IS NOT NULL)
);

-- The transcript's segments, for search hits and time ranges. `id` is also the rowid of the
-- segment in `segments_fts`; AUTOINCREMENT so an id is never reused, and equal search scores go
-- in saving order. No ON DELETE CASCADE: deleting a video whose segments are still there fails,
-- rather than leaving their entries in the search index.
CREATE TABLE segments (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  video_id TEXT NOT NULL REFERENCES videos (id),
  idx INTEGER NOT NULL,
  start_sec REAL NOT NULL,
  end_sec REAL NOT NULL,
  text TEXT NOT NULL,
  UNIQUE (video_id, idx)
);

-- Keyword search over segment text, ranked with bm25(segments_fts). An external-content FTS5
-- index over `segments` (rowid = segments.id): the text is stored once, in `segments`. No
-- triggers: the code keeps the index in step, in the same transaction as `segments`:
--   after inserting a video's segments:
--     INSERT INTO segments_fts (rowid, text, video_id, idx)
--       SELECT id, text, video_id, idx FROM segments WHERE video_id = ?
--   before deleting them (FTS5 reads the old text from `segments` to unindex it):
--     DELETE FROM segments_fts WHERE rowid IN (SELECT id FROM segments WHERE video_id = ?)
-- Segment rows are never updated in place, only deleted and inserted again. Should the index ever
-- drift, `INSERT INTO segments_fts (segments_fts) VALUES ('rebuild')` remakes it from `segments`.
CREATE VIRTUAL TABLE segments_fts USING fts5 (
  text,
  video_id UNINDEXED,
  idx UNINDEXED,
  content = 'segments',
  content_rowid = 'id',
  tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TABLE collections (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  description TEXT,
  sources TEXT NOT NULL DEFAULT '[]',   -- JSON list of strings
  schedule TEXT,                        -- JSON `Schedule`, or NULL
  created_at TEXT NOT NULL DEFAULT '',
  updated_at TEXT NOT NULL DEFAULT '',
  extra TEXT NOT NULL DEFAULT '{}'      -- JSON object: `Collection` fields added after this table
);
CREATE INDEX collections_by_updated ON collections (updated_at DESC, id);

-- Replace a collection with INSERT ... ON CONFLICT (id) DO UPDATE, never INSERT OR REPLACE:
-- a REPLACE deletes the row first, and the cascade would take its items with it.
CREATE TABLE collection_items (
  collection_id TEXT NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
  video_id TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'saved' CHECK (state IN ('saved', 'pending', 'removed')),
  input TEXT,
  added_at TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (collection_id, video_id)
);

-- The SQLite KvStore (on Cloudflare, KV itself). `expires_at` is Unix seconds, NULL for never.
CREATE TABLE kv (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  expires_at REAL
);
CREATE INDEX kv_by_expiry ON kv (expires_at) WHERE expires_at IS NOT NULL;
