-- vid2context schema: English stemming for keyword search.
--
-- Plain SQLite that D1 also accepts (see 0001_init.sql). A second external-content FTS5 index
-- over `segments`, tokenized as `segments_fts` is and then Porter-stemmed, so "kickstands" finds
-- "kickstand" and "baking" finds "baked". `segments_fts` keeps the exact words: search asks it
-- first and ranks what it finds above what only the stems match (storage/keyword.py).
--
-- The code keeps it in step with `segments` exactly as it keeps `segments_fts` (same statements,
-- same transaction). The last statement fills it from the segments already saved, so a library
-- made before this migration is searchable by stems as soon as the migration is applied.
CREATE VIRTUAL TABLE segments_stem USING fts5 (
  text,
  video_id UNINDEXED,
  content = 'segments',
  content_rowid = 'id',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO segments_stem (segments_stem) VALUES ('rebuild');
