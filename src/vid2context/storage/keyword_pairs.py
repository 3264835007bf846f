"""A word-pair index beside FTS5 (SQLite only): the phrases that join a very common word to
another, answered without walking the common word's positions.

Why: FTS5 checks a phrase such as "lonemika the" by reading the positions of "the" in every row
that holds "lonemika" (about 2 µs a row; 25-35 ms in a library of 6 M segments, where "the" is in
four rows of five). ``segment_pairs`` indexes, for each segment, the adjacent pairs of word stems
of which one is among ``COMMON`` (the most frequent words of spoken English), as single tokens
("lonemika_the"), without positions (``detail=none``). A phrase holding such a pair finds its
candidates by that token's short list, newest first, and each candidate is checked in Python on
its text, with the same tokens and stems the memory store matches with (``search/query.py``): so
the answer is the one FTS5 gives, row for row (tests compare the two).

The table is made by the store when it opens (no migration: D1 never has it), filled for an
existing library in the background (``backfill``, in chunks on the writer thread, resumable), and
kept in step by every save and delete in the same transaction as ``segments``. ``segment_pairs_state``
records how far it is filled (``built_to`` of the ``target`` that existed when it was made) and
the segments' AUTOINCREMENT value after this code's last write (``seen_seq``): a segment saved by a
process without this code moves the sequence past it, the index is stale, searches go back to
FTS5 alone, and the next backfill starts it again from empty. Rows of segments deleted by such a
process only stay as candidates that no longer exist, which the join drops.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from typing import Any

from ..search.porter import stem
from ..search.query import Phrase, count_phrase, stems, tokenize
from .keyword import UNTITLED_COLUMNS, WINDOW, Request, RowsWith, Window

__all__ = [
    "BATCH",
    "COMMON",
    "CHUNK",
    "answer",
    "backfill_chunk",
    "collect",
    "driving_pairs",
    "ensure",
    "is_ready",
    "matcher",
    "pair_text",
    "register",
    "seq_before",
    "write_delete",
    "write_insert",
]

# The most frequent words of spoken English (transcripts), about a hundred.
_WORDS = (
    "the of and to a in that is it you we for this on with so as be are but have at not what can "
    "all they there about if one like just do more when from or your which would how our an time "
    "really think going know people very some these then way get into first make i he she was "
    "his her them my me no yes up out by were been has had will here now well right go see want "
    "thing things something because other than only also its our us who got say said okay"
)
COMMON: frozenset[str] = frozenset(stem(word) for word in _WORDS.split())
"""Stems whose pairs are indexed."""

CHUNK = 50_000
"""Segment ids one backfill transaction covers."""
BATCH = 1_000
"""Candidates read per round while a phrase's matches are collected (most candidates match)."""

_FUNCTION = "vid2context_pairs"
_STATE_SQL = "SELECT built_to, target, seen_seq FROM segment_pairs_state WHERE id = 1"
_SEQ_SQL = "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'segments'), 0)"


def _pairs(words: list[str]) -> Iterable[str]:
    for a, b in zip(words, words[1:], strict=False):
        if a in COMMON or b in COMMON:
            yield f"{a}_{b}"


def pair_text(text: str) -> str:
    """The pair tokens of one segment's ``text``, space-separated (what ``segment_pairs`` indexes)."""
    return " ".join(dict.fromkeys(_pairs(stems(tokenize(text)))))


def register(conn: sqlite3.Connection) -> None:
    """Make ``pair_text`` callable from SQL on ``conn`` (the writer's inserts and deletes)."""
    conn.create_function(_FUNCTION, 1, pair_text, deterministic=True)


def _seq(conn: sqlite3.Connection) -> int:
    return int(conn.execute(_SEQ_SQL).fetchone()[0])


def ensure(conn: sqlite3.Connection) -> None:
    """Create the table and its state on the writer (inside a write transaction): an empty
    library is complete at once; an existing one waits for ``backfill_chunk``."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS segment_pairs USING fts5 (pairs, content='', "
        "detail=none, tokenize=\"unicode61 remove_diacritics 2 tokenchars '_'\")"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS segment_pairs_state (id INTEGER PRIMARY KEY CHECK (id = 1), "
        "built_to INTEGER NOT NULL, target INTEGER NOT NULL, seen_seq INTEGER NOT NULL)"
    )
    if conn.execute(_STATE_SQL).fetchone() is None:
        seq = _seq(conn)
        top = conn.execute("SELECT coalesce(max(id), 0) FROM segments").fetchone()[0]
        conn.execute("INSERT INTO segment_pairs_state VALUES (1, 0, ?, ?)", (top, seq))


def is_ready(conn: sqlite3.Connection) -> bool:
    """Whether the index holds every segment (in this read's snapshot)."""
    try:
        state = conn.execute(_STATE_SQL).fetchone()
    except sqlite3.OperationalError:  # not made yet (another process's store opened the file)
        return False
    return state is not None and state[0] >= state[1] and state[2] == _seq(conn)


def write_delete(conn: sqlite3.Connection, video_id: str) -> None:
    """Unindex a video's segments before they are deleted (only rows the index holds: FTS5 must
    be told a contentless row's exact tokens)."""
    conn.execute(
        f"INSERT INTO segment_pairs (segment_pairs, rowid, pairs) SELECT 'delete', s.id, "
        f"{_FUNCTION}(s.text) FROM segments AS s, segment_pairs_state AS p WHERE p.id = 1 "
        "AND s.video_id = ? AND (s.id <= p.built_to OR s.id > p.target)",
        (video_id,),
    )


def seq_before(conn: sqlite3.Connection) -> int:
    """The sequence before a save inserts its segments (for ``write_insert``)."""
    return _seq(conn)


def write_insert(conn: sqlite3.Connection, video_id: str, before: int) -> None:
    """Index a video's new segments; the state follows the sequence only when nothing else had
    moved it since this code's last write."""
    conn.execute(
        f"INSERT INTO segment_pairs (rowid, pairs) SELECT id, {_FUNCTION}(text) FROM segments "
        "WHERE video_id = ?",
        (video_id,),
    )
    conn.execute(
        "UPDATE segment_pairs_state SET seen_seq = ? WHERE id = 1 AND seen_seq = ?", (_seq(conn), before)
    )


def backfill_chunk(conn: sqlite3.Connection, size: int = CHUNK) -> bool:
    """Index the next ``size`` segment ids (inside a write transaction); ``True`` when the
    index is complete. A stale index (``seen_seq`` behind) is emptied and started again."""
    ensure(conn)
    built_to, target, seen = conn.execute(_STATE_SQL).fetchone()
    if seen != _seq(conn):
        conn.execute("INSERT INTO segment_pairs (segment_pairs) VALUES ('delete-all')")
        top = conn.execute("SELECT coalesce(max(id), 0) FROM segments").fetchone()[0]
        conn.execute(
            "UPDATE segment_pairs_state SET built_to = 0, target = ?, seen_seq = ? WHERE id = 1",
            (top, _seq(conn)),
        )
        built_to, target = 0, top
    if built_to >= target:
        return True
    upto = min(target, built_to + size)
    conn.execute(
        f"INSERT INTO segment_pairs (rowid, pairs) SELECT id, {_FUNCTION}(text) FROM segments "
        "WHERE id > ? AND id <= ?",
        (built_to, upto),
    )
    conn.execute("UPDATE segment_pairs_state SET built_to = ? WHERE id = 1", (upto,))
    return upto >= target


# --- answering a plan's requests from the index -------------------------------------------------


def driving_pairs(phrases: tuple[Phrase, ...]) -> list[str]:
    """The indexed pair tokens every match of ``phrases`` must hold, in either tier (empty: the
    index cannot help): pairs of stems, since a word-for-word match holds its stems too."""
    tokens: list[str] = []
    for phrase in phrases:
        tokens.extend(_pairs(stems(list(phrase))))
    return list(dict.fromkeys(tokens))


def matcher(
    required: tuple[Phrase, ...], excluded: tuple[Phrase, ...], *, stemmed: bool
) -> Callable[[str], bool]:
    """Whether a segment's text matches as FTS5 matches ``required NOT excluded`` on the exact
    index (word for word), or on the stemmed one (``stemmed``: text and phrases by their stems,
    as the porter tokenizer reads both)."""
    if stemmed:
        required = tuple(tuple(stems(list(p))) for p in required)
        excluded = tuple(tuple(stems(list(p))) for p in excluded)

    def matches(text: str) -> bool:
        words = tokenize(text)
        if stemmed:
            words = stems(words)
        if not all(count_phrase(words, phrase) for phrase in required):
            return False
        return not any(count_phrase(words, phrase) for phrase in excluded)

    return matches


def collect(
    conn: sqlite3.Connection,
    tokens: list[str],
    matches: Callable[[str], bool],
    columns: str,
    wanted: int,
) -> list[Any]:
    """The newest ``wanted`` segment rows (``columns`` of ``segments AS s``)
    among the candidates holding every pair of ``tokens`` whose text ``matches``, newest first."""
    expression = " AND ".join(f'"{token}"' for token in tokens)
    ids_sql = (
        "SELECT rowid FROM segment_pairs WHERE segment_pairs MATCH ? AND rowid < ? "
        "ORDER BY rowid DESC LIMIT ?"
    )
    rows_sql = (
        f"SELECT {columns} FROM json_each(?) AS j JOIN segments AS s ON s.id = j.value ORDER BY s.id DESC"
    )
    found: list[Any] = []
    below = 2**63 - 1
    while len(found) < wanted:
        ids = [row[0] for row in conn.execute(ids_sql, (expression, below, BATCH))]
        if not ids:
            break
        for row in conn.execute(rows_sql, ("[" + ",".join(map(str, ids)) + "]",)):
            if matches(row["text"]):
                found.append(row)
                if len(found) >= wanted:
                    break
        if len(ids) < BATCH:
            break
        below = ids[-1]
    return found


def answer(conn: sqlite3.Connection, request: Request) -> list[Any] | None:
    """The rows ``keyword.sql_answers`` reads for ``request``, from the pair index; ``None`` when
    the index cannot help (no phrase holds an indexed pair): then FTS5 answers it. Only for the
    whole library (a search within videos walks their rowid ranges in FTS5)."""
    if isinstance(request, RowsWith):
        required, excluded = (request.phrase,), ()
    elif isinstance(request, Window):
        required, excluded = request.required, request.excluded
    else:
        return None
    tokens = driving_pairs(required)
    if not tokens:
        return None
    matches = matcher(required, excluded, stemmed=request.stemmed)
    if isinstance(request, RowsWith):
        rows = collect(conn, tokens, matches, "s.id AS rowid, s.text", WINDOW)
        return [{"n": len(rows), "lowest": rows[-1]["rowid"] if rows else None}]
    return collect(conn, tokens, matches, UNTITLED_COLUMNS, WINDOW)
