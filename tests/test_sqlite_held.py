"""``sqlite_held``'s version is SQLite's ``PRAGMA data_version`` through ``sqlite3``, answer for
answer: it changes exactly when the other reading changes, whoever committed (this database's
writer, another connection, another process), and not on reads; a driver whose SQLite cannot be
reached keeps the ``sqlite3`` connection, with the same answers."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import types
from pathlib import Path

from vid2context.storage.sqlite import SQLiteDatabase
from vid2context.storage.sqlite_held import open_held


def _reference(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=0")
    return conn


def _pragma(conn: sqlite3.Connection) -> int:
    return conn.execute("PRAGMA data_version").fetchone()[0]


def _other_driver() -> types.ModuleType:
    """``sqlite3`` under a name whose C extension is not in ``sys.modules``: no SQLite to hold."""
    other = types.ModuleType("other_sqlite")
    for name in ("connect", "Row", "Error", "sqlite_version"):
        setattr(other, name, getattr(sqlite3, name))
    return other


def _changes(database: SQLiteDatabase, path: Path) -> list[tuple[bool, bool]]:
    """After each event: (did ``database``'s version change, did the reference's)."""
    reference = _reference(path)
    other = sqlite3.connect(path, isolation_level=None)

    async def own_write() -> None:
        await database.write(lambda conn: conn.execute("INSERT INTO kv (key, value) VALUES ('w', 'x')"))

    async def own_read() -> None:
        await database.read(lambda conn: conn.execute("SELECT count(*) FROM kv").fetchone())

    events = [
        lambda: None,
        lambda: asyncio.run(own_write()),
        lambda: asyncio.run(own_read()),
        lambda: other.execute("INSERT INTO kv (key, value) VALUES ('o', 'x')"),
        lambda: other.execute("SELECT count(*) FROM kv").fetchone(),
        lambda: subprocess.run(
            [
                sys.executable,
                "-c",
                "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
                "c.execute(\"INSERT INTO kv (key, value) VALUES ('p', 'x')\")",
                str(path),
            ],
            check=True,
            timeout=60,
        ),
        lambda: other.execute("PRAGMA wal_checkpoint(TRUNCATE)"),  # the log reset: a change too
        lambda: other.execute("DELETE FROM kv"),
        lambda: None,
    ]
    seen = []
    ours, theirs = database.data_version(), _pragma(reference)
    for event in events:
        event()
        now_ours, now_theirs = database.data_version(), _pragma(reference)
        assert now_ours is not None
        seen.append((now_ours != ours, now_theirs != theirs))
        ours, theirs = now_ours, now_theirs
    other.close()
    reference.close()
    return seen


def test_held_version_changes_exactly_when_the_pragma_does(tmp_path: Path) -> None:
    database = SQLiteDatabase(tmp_path / "lib.db", readers=1)
    try:
        assert database._held is not None  # this Python's sqlite3 lends its SQLite
        seen = _changes(database, tmp_path / "lib.db")
    finally:
        asyncio.run(database.close())
    assert [ours for ours, _ in seen] == [theirs for _, theirs in seen]
    assert [ours for ours, _ in seen] == [False, True, False, True, False, True, True, True, False]


def test_a_driver_without_reachable_sqlite_reads_the_pragma_with_the_same_answers(tmp_path: Path) -> None:
    held = SQLiteDatabase(tmp_path / "a.db", readers=1)
    plain = SQLiteDatabase(tmp_path / "b.db", readers=1, driver=_other_driver())
    try:
        assert held._held is not None and plain._held is None
        assert _changes(held, tmp_path / "a.db") == _changes(plain, tmp_path / "b.db")
    finally:
        asyncio.run(held.close())
        asyncio.run(plain.close())


def test_closed_reads_none(tmp_path: Path) -> None:
    database = SQLiteDatabase(tmp_path / "lib.db", readers=1)
    assert isinstance(database.data_version(), int)
    asyncio.run(database.close())
    assert database.data_version() is None


def test_open_held_refuses_a_driver_it_cannot_reach(tmp_path: Path) -> None:
    sqlite3.connect(tmp_path / "x.db").close()
    assert open_held(_other_driver(), tmp_path / "x.db") is None
    held = open_held(sqlite3, tmp_path / "x.db")
    assert held is not None
    held.close()
    held.close()  # twice is harmless
    assert held() is None
