"""Keyword search over segments, one algorithm for every backend: exact words first, then stems,
each ranked by BM25 over a bounded window of candidates.

Two FTS5 indexes over ``segments`` (``migrations/``): ``segments_fts`` holds the words as
``unicode61`` makes them, ``segments_stem`` their Porter stems. A search runs in up to two tiers:

1. **exact**: segments holding every required phrase word for word. They all rank above
2. **stemmed**: segments that match only through stems ("kickstands" for "kickstand"), asked for
   only when the exact tier left the answer short of ``limit``.

Exclusions go by stems in both tiers, so ``-limits`` drops "limit" too. Strict tiers, not one
blended score, because a passage with the very words asked for is what a reader expects first,
and because a common word then costs one index walk, not two.

**Bounded work.** BM25 over every match is what made a common word slow (``bm25()`` counts each
phrase's rows across the whole table and scores every match: 442 ms for a word in 3% of 6 M
segments, 4 s for "the"). Here a tier ranks at most its ``WINDOW`` newest matches (FTS5 walks its
doclists in rowid order and stops at the limit), with BM25 computed in Python from each
candidate's text: term counts and length from the words, rows and average length from FTS5's own
averages record, and each phrase's document frequency counted up to ``WINDOW`` and, past it,
estimated from how many rowids its newest ``WINDOW`` matches span. So a query with fewer matches
than the window is ranked among all of them, exactly as ``bm25()`` ranks them when each phrase
is in fewer than ``WINDOW`` rows (only a commoner phrase's weight is estimated), and a common one
among its most recently saved matches. FTS5 still walks what it needs to find the window: for a
phrase of common words that is rare as a phrase, their whole intersection; within some videos,
every match inside them.

**One algorithm, answered twice.** ``plan()`` is a generator that asks for what it needs in rounds
(``Stats``, ``RowsWith``, ``Window`` requests) and receives the answers; ``sql_statements`` and
``sql_answers`` turn a round into SQL for SQLite and D1 (one ``DB.batch`` per round at the edge),
and the memory store answers the same requests from its own index. So a query means, finds and
ranks the same on every backend, and the conformance suite checks it.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from typing import Any, NamedTuple

from ..errors import ErrorCode, VidError
from ..models import SearchHit
from ..search.query import (
    ParsedQuery,
    Phrase,
    count_phrase,
    fts_expression,
    highlight_spans,
    initials,
    stems,
    tokenize,
)
from .common import ON_SCREEN_IDX

__all__ = [
    "CANDIDATE_COLUMNS",
    "SQL_TITLES",
    "UNTITLED_COLUMNS",
    "WINDOW",
    "Candidate",
    "LibraryStats",
    "Plan",
    "Request",
    "RowsWith",
    "Stats",
    "Window",
    "bm25",
    "drive",
    "drive_async",
    "estimate_rows_with",
    "invalid_query",
    "parse_averages",
    "plan",
    "sql_answers",
    "sql_statements",
]

WINDOW = 1000
"""Candidates one tier ranks, and how far a phrase's rows are counted before they are estimated."""

_EXACT = "segments_fts"
_STEM = "segments_stem"

# FTS5's bm25() constants.
_K1 = 1.2
_B = 0.75


# --- what a plan asks for -------------------------------------------------------------------------


class Stats(NamedTuple):
    """Answered with a ``LibraryStats``."""


class RowsWith(NamedTuple):
    """How many segments hold ``phrase`` (by stems when ``stemmed``), counted newest first up to
    ``WINDOW``: answered with ``(count, lowest rowid counted)``, the rowid ``None`` when none."""

    stemmed: bool
    phrase: Phrase


class Window(NamedTuple):
    """The newest ``WINDOW`` segments holding every ``required`` phrase and no ``excluded`` one
    (both by stems when ``stemmed``, else word for word), within the search's videos: answered
    with a list of ``Candidate``, newest first."""

    stemmed: bool
    required: tuple[Phrase, ...]
    excluded: tuple[Phrase, ...]


Request = Stats | RowsWith | Window


class LibraryStats(NamedTuple):
    rows: int
    """Segments in the index."""
    tokens: int
    """Words in all of them."""
    first_id: int
    last_id: int
    """The lowest and highest segment rowid saved (0 when there are none)."""

    @property
    def average(self) -> float:
        return self.tokens / self.rows if self.rows else 0.0


class Candidate(NamedTuple):
    rowid: int
    video_id: str
    start_sec: float
    end_sec: float
    text: str
    title: str | None
    on_screen: bool = False
    """A stretch of on-screen text (``segments.idx`` from ``common.ON_SCREEN_IDX``)."""


Plan = Generator[list[Request], list[Any], list[SearchHit]]


# --- ranking ----------------------------------------------------------------------------------------


def _idf(rows_with: float, total_rows: int) -> float:
    idf = math.log((total_rows - rows_with + 0.5) / (rows_with + 0.5))
    return idf if idf > 0 else 1e-6  # as FTS5 does for a phrase in more than half the rows


def bm25(
    counts: Sequence[int], rows_with: Sequence[float], total_rows: int, row_tokens: int, average_tokens: float
) -> float:
    """FTS5's ``bm25()`` for one row, negated so that higher is better.

    ``counts[i]`` is how often phrase ``i`` occurs in the row, ``rows_with[i]`` in how many rows of
    the whole table it occurs; ``row_tokens`` is the row's length in tokens.
    """
    return _Bm25(rows_with, total_rows, average_tokens).score(counts, row_tokens)


class _Bm25:
    """``bm25()`` with the per-query parts (each phrase's idf, the length norm) worked out once."""

    def __init__(self, rows_with: Sequence[float], total_rows: int, average_tokens: float) -> None:
        self.idfs = [_idf(hits, total_rows) * (_K1 + 1) for hits in rows_with]
        self.base = _K1 * (1 - _B)
        self.per_token = _K1 * _B / (average_tokens or 1.0)

    def score(self, counts: Sequence[int], row_tokens: int) -> float:
        norm = self.base + self.per_token * row_tokens
        return sum(idf * count / (count + norm) for idf, count in zip(self.idfs, counts, strict=True))


def estimate_rows_with(count: int, lowest: int | None, stats: LibraryStats) -> float:
    """A phrase's document frequency from its capped count: exact below ``WINDOW``; past it, the
    window's share of the rowid range scaled up (matches spread evenly over time)."""
    if count < WINDOW or lowest is None:
        return float(count)
    span = stats.last_id - stats.first_id + 1
    covered = max(1, stats.last_id - lowest + 1)
    return float(min(stats.rows, max(count, WINDOW * span / covered)))


class _Ranked(NamedTuple):
    negated: float
    rowid: int
    candidate: Candidate


def _rank(
    candidates: list[Candidate],
    query: ParsedQuery,
    *,
    stemmed: bool,
    rows_with: list[float],
    stats: LibraryStats,
    wanted: int,
) -> list[_Ranked]:
    """The best ``wanted`` of the ``candidates`` that belong to this tier, best first (ties in
    saving order)."""
    required = query.required_stems if stemmed else query.required
    excluded = query.excluded_stems
    compared = initials(excluded + required) if stemmed else initials(excluded)
    scorer = _Bm25(rows_with, stats.rows, stats.average)
    idfs, base, per_token = scorer.idfs, scorer.base, scorer.per_token
    # The common case, words of the exact tier and nothing excluded, counted with list.count.
    words_only = not stemmed and not excluded and all(len(phrase) == 1 for phrase in required)
    singles = [phrase[0] for phrase in required]
    keys: list[tuple[float, int, int]] = []
    for i, candidate in enumerate(candidates):
        words = tokenize(candidate.text)
        if words_only:
            # The index found every word in it; at least 1 even should Python split one otherwise.
            counts = [max(1, words.count(word)) for word in singles]
        else:
            stemmed_words = stems(words, compared) if (stemmed or excluded) else words
            if excluded and any(count_phrase(stemmed_words, phrase) for phrase in excluded):
                continue  # excluded by a stem the exact index could not see
            if stemmed and all(count_phrase(words, phrase) for phrase in query.required):
                continue  # an exact match: it belongs to the first tier
            own = stemmed_words if stemmed else words
            counts = [max(1, count_phrase(own, phrase)) for phrase in required]
        norm = base + per_token * len(words)  # as _Bm25.score, term for term
        score = sum(idf * count / (count + norm) for idf, count in zip(idfs, counts, strict=True))
        keys.append((-score, candidate.rowid, i))
    return [_Ranked(negated, rowid, candidates[i]) for negated, rowid, i in heapq.nsmallest(wanted, keys)]


def _hit(ranked: _Ranked, query: ParsedQuery, *, stemmed: bool) -> SearchHit:
    c = ranked.candidate
    phrases = query.required_stems if stemmed else query.required
    return SearchHit(
        video_id=c.video_id,
        start_sec=float(c.start_sec),
        end_sec=float(c.end_sec),
        text=c.text,
        score=-ranked.negated,
        title=c.title,
        stemmed=stemmed,
        highlights=highlight_spans(c.text, phrases, stemmed=stemmed),
        kind="on_screen" if c.on_screen else "transcript",
    )


def plan(query: ParsedQuery, *, limit: int, within: bool, stems_later: bool = False) -> Plan:
    """The search as rounds of requests (see the module docstring); returns the hits.

    Round one counts the phrases' rows and takes the exact window; round two the stemmed window,
    only when the exact hits fall short of ``limit``. When every phrase is one word, round one
    also counts their rows by stems (cheap for a word, unlike a phrase walk), and round two is
    skipped when each word has as many rows by its stem as by itself, below ``WINDOW``: the same
    rows, so the stems could add nothing. ``within`` says the backend restricts windows to some
    videos: then a window says nothing of the whole library, so phrases' rows are counted apart.
    ``stems_later``, for a backend where a round costs nothing (SQLite, not D1's batches): the
    words' stem counts are asked in a round of their own, only when the exact hits fall short,
    so a query answered by its exact tier never walks its words' stems (the same answers).
    """
    # One phrase and no exclusion: its window is the count of its rows, so it is not asked twice.
    counted_by_window = len(query.required) == 1 and not query.excluded and not within
    words_only = all(len(phrase) == 1 for phrase in query.required)
    phrases = len(query.required)
    requests: list[Request] = [Stats()]
    if not counted_by_window:
        requests += [RowsWith(False, phrase) for phrase in query.required]
    if words_only and not stems_later:
        requests += [RowsWith(True, phrase) for phrase in query.required]
    requests.append(Window(False, query.required, query.excluded))
    answers = yield requests
    stats: LibraryStats = answers[0]
    window: list[Candidate] = answers[-1]
    counts: list[tuple[int, int | None]] = answers[1:-1]
    if counted_by_window:
        counts = [(len(window), window[-1].rowid if window else None), *counts]
    exact_counts, stem_counts = counts[:phrases], counts[phrases:]
    rows_with = [estimate_rows_with(count, lowest, stats) for count, lowest in exact_counts]
    ranked = _rank(window, query, stemmed=False, rows_with=rows_with, stats=stats, wanted=limit)
    hits = [_hit(r, query, stemmed=False) for r in ranked]
    if len(hits) >= limit:
        return hits
    if words_only and stems_later:
        stem_counts = yield [RowsWith(True, phrase) for phrase in query.required]
    if words_only:
        if all(exact[0] == stem[0] < WINDOW for exact, stem in zip(exact_counts, stem_counts, strict=True)):
            return hits
        answers = yield [Window(True, query.required, query.excluded)]
    else:
        answers = yield [
            *(RowsWith(True, phrase) for phrase in query.required),
            Window(True, query.required, query.excluded),
        ]
        stem_counts = answers[:-1]
    window = answers[-1]
    rows_with = [estimate_rows_with(count, lowest, stats) for count, lowest in stem_counts]
    ranked = _rank(window, query, stemmed=True, rows_with=rows_with, stats=stats, wanted=limit - len(hits))
    return hits + [_hit(r, query, stemmed=True) for r in ranked]


def invalid_query() -> VidError:
    """What a backend answers should FTS5 ever refuse an expression (none is known to): the user's
    problem to rephrase, never FTS5's message."""
    return VidError(
        ErrorCode.BAD_REQUEST,
        "The search query could not be run.",
        hint='Give plain words to search for; "quotes" keep words together and -word leaves one out.',
    )


def drive(steps: Plan, answer: Callable[[list[Request]], list[Any]]) -> list[SearchHit]:
    """Run ``steps`` to its hits, answering each round with ``answer``."""
    try:
        requests = next(steps)
        while True:
            requests = steps.send(answer(requests))
    except StopIteration as done:
        return done.value


async def drive_async(
    steps: Plan, answer: Callable[[list[Request]], Awaitable[list[Any]]]
) -> list[SearchHit]:
    """``drive`` for a backend whose answers are awaited (D1: one batch a round)."""
    try:
        requests = next(steps)
        while True:
            requests = steps.send(await answer(requests))
    except StopIteration as done:
        return done.value


# --- the SQL that SQLite and D1 answer a plan with --------------------------------------------------

_SQL_STATS = (
    "SELECT (SELECT hex(block) FROM segments_fts_data WHERE id = 1) AS averages, "
    "(SELECT min(id) FROM segments) AS first_id, (SELECT max(id) FROM segments) AS last_id"
)
"""FTS5's averages record (what ``bm25()`` reads: rows, then tokens per column) and the rowid range."""

CANDIDATE_COLUMNS = "s.id AS rowid, s.video_id, s.start_sec, s.end_sec, s.text, v.title, s.idx"
UNTITLED_COLUMNS = "s.id AS rowid, s.video_id, s.start_sec, s.end_sec, s.text, NULL AS title, s.idx"
"""Without the videos join (a B-tree lookup a candidate): the store names the few hits' videos
after ranking (``SQL_TITLES``). D1 keeps the join: one round fewer."""
SQL_TITLES = "SELECT id, title FROM videos WHERE id IN (SELECT value FROM json_each(?))"


def _sql_rows_with(table: str) -> str:
    return (
        f"SELECT count(*) AS n, min(rowid) AS lowest FROM (SELECT rowid FROM {table} "
        f"WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT {WINDOW})"
    )


def _sql_window(table: str, within: bool, titled: bool = True) -> str:
    columns, videos = (
        (CANDIDATE_COLUMNS, "JOIN videos AS v ON v.id = s.video_id ") if titled else (UNTITLED_COLUMNS, "")
    )
    if not within:
        return (
            f"SELECT {columns} FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? "
            f"ORDER BY rowid DESC LIMIT {WINDOW}) AS f JOIN segments AS s ON s.id = f.rowid "
            f"{videos}ORDER BY s.id DESC"
        )
    # A video's segments are saved in one transaction, in order, so their rowids are one range,
    # from its first segment's to its last's: FTS5 walks just those ranges (r drives the join;
    # MATERIALIZED, or SQLite re-evaluates r and sorts slowly). The video_id check after the cut
    # keeps out anything a broken range could let in. Costs about the matches in those videos.
    return (
        "WITH r AS MATERIALIZED (SELECT "
        "(SELECT id FROM segments WHERE video_id = w.value ORDER BY idx LIMIT 1) AS lo, "
        "(SELECT id FROM segments WHERE video_id = w.value ORDER BY idx DESC LIMIT 1) AS hi "
        "FROM json_each(?) AS w), "
        f"m AS MATERIALIZED (SELECT f.rowid AS id FROM r CROSS JOIN {table} AS f "
        f"WHERE f.{table} MATCH ? AND f.rowid BETWEEN r.lo AND r.hi) "
        f"SELECT {columns} FROM (SELECT id FROM m ORDER BY id DESC LIMIT {WINDOW}) AS top "
        f"JOIN segments AS s ON s.id = top.id {videos}"
        "WHERE s.video_id IN (SELECT value FROM json_each(?)) ORDER BY s.id DESC"
    )


def sql_statements(
    requests: list[Request], within_json: str | None, *, titled: bool = True
) -> list[tuple[str, tuple[Any, ...]]]:
    """The statements (SQL, parameters) that answer ``requests``, one each, in order.

    ``within_json`` is the searched video ids as a JSON list, or ``None`` for the whole library;
    ``titled=False`` leaves candidates' titles ``None`` (the caller names them, ``SQL_TITLES``).
    """
    statements: list[tuple[str, tuple[Any, ...]]] = []
    for request in requests:
        if isinstance(request, Stats):
            statements.append((_SQL_STATS, ()))
        elif isinstance(request, RowsWith):
            table = _STEM if request.stemmed else _EXACT
            statements.append((_sql_rows_with(table), (fts_expression((request.phrase,)),)))
        else:
            table = _STEM if request.stemmed else _EXACT
            match = fts_expression(request.required, request.excluded)
            params = (match,) if within_json is None else (within_json, match, within_json)
            statements.append((_sql_window(table, within_json is not None, titled), params))
    return statements


def sql_answers(
    requests: list[Request], results: list[list[Mapping[str, Any]]], *, positional: bool = False
) -> list[Any]:
    """The answers to ``requests`` from the rows of their ``sql_statements``; ``positional``: the
    rows are also sequences in their columns' order (``sqlite3.Row``: a quarter faster to read a
    window of 1,000 candidates by position than by name)."""
    answers: list[Any] = []
    for request, rows in zip(requests, results, strict=True):
        if isinstance(request, Stats):
            row = rows[0]
            total_rows, tokens = parse_averages(row["averages"])
            answers.append(
                LibraryStats(total_rows, tokens, int(row["first_id"] or 0), int(row["last_id"] or 0))
            )
        elif isinstance(request, RowsWith):
            row = rows[0]
            answers.append((int(row["n"]), None if row["lowest"] is None else int(row["lowest"])))
        elif positional:
            answers.append([Candidate(*r[:6], r[6] >= ON_SCREEN_IDX) for r in rows])  # type: ignore[misc]
        else:
            answers.append(
                [
                    Candidate(
                        int(r["rowid"]),
                        r["video_id"],
                        r["start_sec"],
                        r["end_sec"],
                        r["text"],
                        r["title"],
                        int(r["idx"]) >= ON_SCREEN_IDX,
                    )
                    for r in rows
                ]
            )
    return answers


def parse_averages(hex_text: str | None) -> tuple[int, int]:
    """(rows, tokens of the first column) from FTS5's averages record as ``hex()`` gives it:
    SQLite varints, the row count and then each column's token total. ``(0, 0)`` before any row."""
    if not hex_text:
        return 0, 0
    data = bytes.fromhex(hex_text)
    values: list[int] = []
    position = 0
    while position < len(data) and len(values) < 2:
        value = 0
        for i in range(9):
            byte = data[position]
            position += 1
            if i == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return (values + [0, 0])[0], (values + [0, 0])[1]
