-- The library's version (#17): one row, bumped by every write to a saved video (insert, upsert,
-- delete), whichever code or isolate made it. A Worker isolate reads it with one tiny query
-- before it reads a saved video, and keeps a rendered answer only under the version it read
-- (api/rendered.py), so no isolate serves a video's old transcript after a push. Triggers, not
-- the storage's code, so that no write can forget it.
CREATE TABLE library_version (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  version INTEGER NOT NULL
);

INSERT INTO library_version (id, version) VALUES (1, 0);

CREATE TRIGGER library_version_after_insert AFTER INSERT ON videos BEGIN
  UPDATE library_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER library_version_after_update AFTER UPDATE ON videos BEGIN
  UPDATE library_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER library_version_after_delete AFTER DELETE ON videos BEGIN
  UPDATE library_version SET version = version + 1 WHERE id = 1;
END;
