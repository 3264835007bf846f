"""The binary prefilter's Hamming scan in memory, with numpy: the fast path of
``storage/sqlite_vec.py`` past its threshold. Local only.

Why: vec0's KNN over a bit table picks its top k in time that grows with k: some 25 ms for the
150 candidates of a top 50 among 400,000 vectors on two shared cores. numpy computes all
400,000 Hamming distances in about 3 ms and picks the candidates in 1 to 2 ms from a copy of
the bit table (48 bytes a vector at 384 dimensions: 19 MB for 400,000), the words of each
vector's bits stored column by column so each step runs over one long array.

Freshness: every write transaction of the index bumps its space's counter in
``vec_generations`` (a plain table the index makes, like its vec0 tables, not in
``migrations/``: D1 never sees it). A copy remembers the counter it was read at, in the same
read transaction as its bits; a query whose space's counter differs does not use it (it goes
through vec0, exact in its re-scoring and as fresh as the file) and the index loads a new copy
in the background. So a write is visible to the very next query, from any process.

numpy comes with the ``local`` extra (fastembed needs it); without it ``available()`` is false
and every query goes through vec0.
"""

from __future__ import annotations

import sqlite3
from typing import Any, NamedTuple

__all__ = ["BitCopy", "available", "bump", "generation", "load", "nearest"]

_SQL_TABLE = (
    "CREATE TABLE IF NOT EXISTS vec_generations (space TEXT PRIMARY KEY, generation INTEGER NOT NULL)"
)
_SQL_BUMP = (
    "INSERT INTO vec_generations (space, generation) VALUES (?, 1) "
    "ON CONFLICT (space) DO UPDATE SET generation = generation + 1"
)
_SQL_GENERATION = "SELECT generation FROM vec_generations WHERE space = ?"

try:
    import numpy as _np
except ImportError:  # pragma: no cover - the local extra brings numpy
    _np = None  # type: ignore[assignment]


def available() -> bool:
    """Whether numpy is here to scan copies with."""
    return _np is not None


class BitCopy(NamedTuple):
    """A bit table in memory as the counter ``generation`` saw it."""

    generation: int
    rowids: Any
    """int64, one per vector, in rowid order."""
    words: Any
    """uint64, ``(words per vector, vectors)``: word ``j`` of every vector's bits is one row."""


def bump(conn: sqlite3.Connection, space_key: str) -> None:
    """Count a write to the space's vectors; in the writer's transaction."""
    conn.execute(_SQL_TABLE)
    conn.execute(_SQL_BUMP, (space_key,))


def generation(conn: sqlite3.Connection, space_key: str) -> int:
    """The space's counter, 0 before its first counted write (or before the table exists)."""
    if conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vec_generations'"
    ).fetchone():
        row = conn.execute(_SQL_GENERATION, (space_key,)).fetchone()
        return 0 if row is None else int(row[0])
    return 0


def _words(blobs: bytes, count: int) -> Any:
    """``count`` packed bit vectors as uint64 words, column by column (padded with zero bits to
    whole words: a zero on both sides adds nothing to a distance)."""
    assert _np is not None
    width = len(blobs) // count if count else 8
    data = _np.frombuffer(blobs, dtype=_np.uint8).reshape(count, width)
    padded = -(-width // 8) * 8
    if padded != width:
        data = _np.concatenate([data, _np.zeros((count, padded - width), dtype=_np.uint8)], axis=1)
    return _np.ascontiguousarray(data.view(_np.uint64).T)


def load(conn: sqlite3.Connection, bits_table: str, space_key: str) -> BitCopy:
    """The bit table as a copy, read with its counter in the caller's read transaction."""
    assert _np is not None
    seen = generation(conn, space_key)
    rows = conn.execute(f"SELECT rowid, embedding FROM {bits_table} ORDER BY rowid").fetchall()
    rowids = _np.fromiter((row[0] for row in rows), dtype=_np.int64, count=len(rows))
    return BitCopy(seen, rowids, _words(b"".join(row[1] for row in rows), len(rows)))


def nearest(copy: BitCopy, query_bits: bytes, count: int) -> list[int]:
    """The rowids of the ``count`` vectors nearest ``query_bits`` (``vec_quantize_binary`` of the
    query) by Hamming distance, in no particular order."""
    assert _np is not None
    total = len(copy.rowids)
    if total == 0:
        return []
    query = _words(query_bits, 1)[:, 0]
    scratch = _np.empty(total, dtype=_np.uint64)
    counted = _np.empty(total, dtype=_np.uint8)
    distance = _np.zeros(total, dtype=_np.uint16)  # up to the bits of a vector: uint8 could overflow
    for row, word in zip(copy.words, query, strict=True):
        _np.bitwise_xor(row, word, out=scratch)
        _np.bitwise_count(scratch, out=counted)
        distance += counted
    if count >= total:
        return copy.rowids.tolist()
    return copy.rowids[_np.argpartition(distance, count - 1)[:count]].tolist()
