-- Embedding spaces carry their pooling, and the vector index keeps a ledger of indexed videos.
--
-- A space is a model, its dimension and its pooling (`models.EmbeddingSpace`): vectors of one
-- model pooled two ways are not comparable, so the pooling is part of the space's `key`
-- (`<model>|<pooling>|<dim>`) and has a column of its own, from which the space is read back.
-- Spaces written before this migration (keys `<model>|<dim>`) keep `pooling = ''`: nothing can
-- tell their pooling, so they are never searched again, but their rows stay readable and are
-- deleted with their videos as before.
ALTER TABLE vector_spaces ADD COLUMN pooling TEXT NOT NULL DEFAULT '';

-- One row per video per space whose windows the index holds as of its last write: `windows` is
-- how many (0 for a video with nothing to embed, which is indexed all the same). What search
-- reads to say whether the vector side covered every video it searched (`partial`), and what
-- health counts, without counting `vector_windows` rows.
CREATE TABLE vector_videos (
  space TEXT NOT NULL,
  video_id TEXT NOT NULL,
  windows INTEGER NOT NULL,
  indexed_at TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (space, video_id)
);

CREATE INDEX vector_videos_video ON vector_videos (video_id);

INSERT INTO vector_videos (space, video_id, windows)
SELECT space, video_id, COUNT(*) FROM vector_windows GROUP BY space, video_id;
