-- What the vector index holds: one row per window vector per embedding space.
--
-- On the Worker the vectors live in Vectorize, which cannot list what it holds by video and makes
-- a write queryable only seconds later; this table, in D1, is the strongly consistent record of
-- what was written, so a video's vectors can be found to delete, a query's matches can be checked
-- against what is still there, and `window_ids` reads what was just written. Locally the vectors
-- live in sqlite-vec `vec0` tables of the same file, one per space, created by the SQLite vector
-- index itself at first use (D1 cannot load sqlite-vec, so no vec0 table may appear here); a
-- vector's rowid there is its row's `id` here.

-- One row per embedding space ever written: `key` is `<model>|<dim>`, `tag` its short digest
-- (the vec0 table is `vec_windows_<tag>`; on Vectorize, the namespace and the id prefix).
CREATE TABLE vector_spaces (
  key TEXT PRIMARY KEY,
  tag TEXT NOT NULL UNIQUE,
  model TEXT NOT NULL,
  dim INTEGER NOT NULL,
  created_at TEXT NOT NULL DEFAULT ''
);

-- One row per window vector: where the window is (search/windows.py, WindowRef).
CREATE TABLE vector_windows (
  id INTEGER PRIMARY KEY,
  space TEXT NOT NULL,
  window_id TEXT NOT NULL,
  video_id TEXT NOT NULL,
  start_sec REAL NOT NULL,
  end_sec REAL NOT NULL,
  first_segment INTEGER NOT NULL,
  last_segment INTEGER NOT NULL,
  part INTEGER,
  chapter_index INTEGER,
  chapter_title TEXT,
  UNIQUE (space, window_id)
);

CREATE INDEX vector_windows_video ON vector_windows (video_id, space);
