-- vid2context schema, version 2: collection names are unique.
--
-- `name_key` is how names compare: trimmed, ASCII letters in either case alike (storage/common.py
-- `name_key` computes the same for every name it writes; SQL's lower() folds ASCII only, as D1's
-- and SQLite's builds do without ICU). No UNIQUE index: a database made before this version may
-- hold twins, and a migration must never fail on data it cannot fix. The stores enforce it
-- instead, in the one statement that writes a collection (INSERT ... SELECT ... WHERE no other
-- collection holds the key), and a lookup by an ambiguous name lists the twins' ids.
ALTER TABLE collections ADD COLUMN name_key TEXT NOT NULL DEFAULT '';
UPDATE collections SET name_key = lower(trim(name));
CREATE INDEX collections_by_name ON collections (name_key);
