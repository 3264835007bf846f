"""``SQLiteDatabase.data_version`` with the WAL-index header in front (``storage/wal_header.py``).

A real SQLite file; the writers are other connections in this process and another process. What
must hold: every commit, whoever made it, changes the version the rendered-answer cache sees, a
checkpoint that restarts the log included; while nothing is committed SQLite is not asked again
(its connection's trace callback counts the statements); without a ``-shm`` file to map, SQLite
is asked every time.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from pathlib import Path

from vid2context.storage.sqlite import SQLiteDatabase
from vid2context.storage.wal_header import WalHeader


def _traced(db: SQLiteDatabase) -> list[str]:
    asked: list[str] = []
    db._version.set_trace_callback(asked.append)  # noqa: SLF001 - SQLite's own statement trace
    return asked


def test_every_commit_changes_the_version_and_nothing_else_asks_sqlite(tmp_path: Path) -> None:
    db = SQLiteDatabase(tmp_path / "lib.db")
    other = sqlite3.connect(tmp_path / "lib.db", isolation_level=None)
    try:
        asked = _traced(db)
        seen = [db.data_version()]
        for _ in range(50):
            assert db.data_version() == seen[0]
        assert len(asked) <= 1  # the first call may ask; the unchanged header answers the rest
        other.execute("CREATE TABLE t (x)")
        for n in range(5):
            seen.append(db.data_version())
            other.execute("INSERT INTO t VALUES (?)", (n,))
        seen.append(db.data_version())
        other.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the next write restarts the log
        other.execute("INSERT INTO t VALUES (99)")
        seen.append(db.data_version())
        code = f"import sqlite3; c = sqlite3.connect({str(tmp_path / 'lib.db')!r}); c.execute('INSERT INTO t VALUES (7)'); c.commit()"
        subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
        seen.append(db.data_version())
        assert all(a != b for a, b in zip(seen[1:], seen[2:], strict=False)), seen
        assert None not in seen
    finally:
        other.close()
        asyncio.run(db.close())
    assert db.data_version() is None  # closed


def test_without_a_shared_index_sqlite_is_asked_every_time(tmp_path: Path) -> None:
    assert WalHeader.open(tmp_path / "missing.db") is None
    (tmp_path / "empty.db-shm").write_bytes(b"")
    assert WalHeader.open(tmp_path / "empty.db") is None
    db = SQLiteDatabase(tmp_path / "lib.db")
    try:
        db._wal_header = None  # noqa: SLF001 - as a file without a -shm to map is opened
        asked = _traced(db)
        for _ in range(3):
            db.data_version()
        assert len(asked) == 3
    finally:
        asyncio.run(db.close())
