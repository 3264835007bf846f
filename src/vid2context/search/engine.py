"""Search over the library: the one function REST, MCP and the CLI call.

``search(runtime, SearchRequest, ctx) -> SearchResult``::

    check the request ─▶ scope (collection, videoIds, filters) ─▶ keyword top-N ┐
                                                  └─▶ embed the query ─▶ vector top-N ┴─▶ fuse (RRF, k=60)
        ─▶ narrow each hit to its best segment, cite it ─▶ rerank the top 20 (rerank=1) ─▶ limit

- **Keyword** is ``Storage.search`` (FTS5 locally and on D1; phrases and ``-exclusions``), the
  query language's own checks first, so an empty, operator-only or oversized query is a
  ``bad-request`` with a hint on every surface and every mode, and nothing the user types
  reaches FTS5 as syntax.
- **Vector** embeds the query (its words, exclusions left out) with a rung of the space the
  library is indexed in (``indexing.choose_space``) and asks the vector index for the nearest
  windows; a window holding an excluded word is dropped. Its state is ``meta.vector``: ``ok``,
  ``partial`` (some videos searched are not indexed: they are found by keyword only), ``disabled``
  (no rung for the index's model), ``failed`` (embedding or the index failed: keyword hits are
  answered alone) or ``off`` (no vector index here, or ``mode=keyword``). ``mode=vector`` turns
  a vector side that cannot run into the error that says why.
- **Fusion** is reciprocal rank fusion: ``1 / (60 + rank)`` summed over the sides that found a
  passage. A keyword segment inside a window the vector side found is that window's passage: one
  hit, found by both (a better-ranked keyword segment in the same window stands for it).
- **Narrowing** (``passages.py``): every hit points at one segment (its ``[m:ss]`` and link);
  a vector hit keeps its window's range.
- **Rerank** (``rerank=1``): the top ``RERANK_TOP`` hits go through the reranking ladder
  (``rerankers.py``); a failure keeps the fused order and says why (``meta.rerank``).

Portable: no I/O of its own beyond the runtime's stores, index and rungs.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, get_args

from ..ctx import Ctx
from ..errors import ErrorCode, VidError, per_surface, steps
from ..formats.blocks import chapter_spans, link_at, one_line
from ..models import (
    Origin,
    SearchHit,
    SearchMeta,
    SearchRanks,
    SearchResult,
    SearchResultHit,
    Segment,
    VideoContext,
    VideoSummary,
)
from ..runtime import Runtime
from ..storage.base import CitingReads
from ..storage.common import ON_SCREEN_IDX, on_screen_passage
from . import passages
from .embedders.ladder import embed_texts
from .indexing import choose_space, coverage
from .query import parse_query
from .rerankers import rerank_texts
from .vectors import VectorHit
from .windows import is_on_screen

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MODES",
    "RERANK_TOP",
    "RRF_K",
    "SearchRequest",
    "check_request",
    "cite",
    "cite_rows",
    "fuse",
    "parse_date",
    "search",
    "vector_hits",
    "vector_text",
]

RRF_K = 60
RERANK_TOP = 20
DEFAULT_LIMIT = 10
MAX_LIMIT = 100
CANDIDATES = 50
"""Each side's top-N before fusion (more when the limit is higher, at most ``MAX_LIMIT``)."""
WITHIN_TIMES = 200
"""Keyword candidates when a time range narrows one video (the store's most)."""
MAX_VIDEO_IDS = 500
MAX_CHANNEL_CHARS = 200
MODES: tuple[str, ...] = ("hybrid", "keyword", "vector")
ORIGINS: tuple[str, ...] = get_args(Origin)
Mode = Literal["hybrid", "keyword", "vector"]
_CHUNK = re.compile(r'(-?)(?:"([^"]*)(?:"|$)|([^\s"]+))')
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_EPSILON = 0.001


def _bad(message: str, hint: object) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)  # type: ignore[arg-type]


@dataclass
class SearchRequest:
    """A search, as every surface gives it (the REST names in the comments)."""

    query: str  # q
    collection: str | None = None  # collectionId: an id or a unique name
    video_ids: list[str] | None = None  # videoIds
    limit: int = DEFAULT_LIMIT
    mode: str = "hybrid"
    rerank: bool = False
    channel: str | None = None
    origins: list[str] | None = None  # origin, comma-separated
    published_after: str | None = None
    published_before: str | None = None
    from_sec: float | None = None
    """Only with a single video (MCP ``from``/``to``): hits inside this time range."""
    to_sec: float | None = None


@dataclass
class _Checked:
    request: SearchRequest
    mode: Mode
    parsed: object
    words: passages.QueryWords
    after: datetime | None
    before: datetime | None
    video_ids: list[str] | None


def parse_date(value: str, name: str) -> datetime:
    """An ISO 8601 date (``2024-05-01``) or date and time (``2024-05-01T12:00:00Z``), in UTC."""
    text = value.strip() if isinstance(value, str) else ""
    try:
        if _DATE.fullmatch(text):
            return datetime.fromisoformat(text).replace(tzinfo=UTC)
        if len(text) > 40 or not _DATE.match(text):
            raise ValueError
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise _bad(
            f"{name} {text[:40]!r} is not a date.",
            f"Give {name} as YYYY-MM-DD (2024-05-01) or an ISO 8601 date and time (2024-05-01T12:00:00Z).",
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _published(summary: VideoSummary) -> datetime | None:
    if not summary.published_at:
        return None
    try:
        return parse_date(summary.published_at, "publishedAt")
    except VidError:
        return None


def check_request(request: SearchRequest) -> _Checked:
    """``request`` checked before anything is read: every refusal a ``bad-request`` with a hint."""
    mode = request.mode.strip().lower() if isinstance(request.mode, str) else ""
    if mode not in MODES:
        raise _bad(
            f"Unknown mode {str(request.mode)[:20]!r}.",
            "Use one of: " + ", ".join(MODES) + " (default hybrid).",
        )
    parsed = parse_query(request.query)  # empty, operators only, too long: bad-request with a hint
    limit = request.limit
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise _bad(
            f"limit must be a whole number from 1 to {MAX_LIMIT}, not {str(limit)[:20]}.",
            f"Pass 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT}).",
        )
    after = parse_date(request.published_after, "publishedAfter") if request.published_after else None
    before = parse_date(request.published_before, "publishedBefore") if request.published_before else None
    if after and before and after > before:
        raise _bad(
            "publishedAfter is later than publishedBefore: no video can match.",
            "Give publishedAfter before publishedBefore: swap the two dates.",
        )
    for origin in request.origins or []:
        if origin not in ORIGINS:
            raise _bad(f"Unknown origin {origin[:40]!r}.", "Use one or more of: " + ", ".join(ORIGINS) + ".")
    channel = request.channel
    if channel is not None and (not channel.strip() or len(channel) > MAX_CHANNEL_CHARS):
        raise _bad(
            f"channel must be a channel's name of 1 to {MAX_CHANNEL_CHARS} characters.",
            per_surface(
                rest="Give channel as the library lists it, e.g. channel=Veritasium.",
                mcp="Give the channel as the library lists it.",
            ),
        )
    video_ids = None
    if request.video_ids is not None:
        from ..library import normalize_video_id

        if not request.video_ids or len(request.video_ids) > MAX_VIDEO_IDS:
            raise _bad(
                f"videoIds must name 1 to {MAX_VIDEO_IDS} saved videos.",
                "Give ids such as youtube:jNQXAC9IVRw, comma-separated.",
            )
        video_ids = list(dict.fromkeys(normalize_video_id(v) for v in request.video_ids))
    if request.from_sec is not None or request.to_sec is not None:
        if video_ids is None or len(video_ids) != 1 or request.collection:
            raise _bad(
                "from and to narrow a search within one video.",
                "Give a single video with them, or leave them out.",
            )
        low = request.from_sec if request.from_sec is not None else 0.0
        high = request.to_sec if request.to_sec is not None else math.inf
        if not (math.isfinite(low) and low >= 0 and high > low):
            raise _bad(
                "The time range is empty: to must be after from.",
                "Give from before to, e.g. from 1:00 to 5:00.",
            )
    return _Checked(request, mode, parsed, passages.query_words(parsed), after, before, video_ids)  # type: ignore[arg-type]


def vector_text(query: str) -> str:
    """The query as the embedder reads it: its words and phrases, without quotes or exclusions."""
    parts: list[str] = []
    for match in _CHUNK.finditer(query):
        negate, quoted, bare = match.groups()
        if not negate:
            parts.append(quoted if quoted is not None else bare)
    return " ".join(" ".join(parts).split())


# --- scope ------------------------------------------------------------------------------------------


_NOT_SAVED = steps("Read the video first (it is saved when read), or list saved videos with {library}.")


async def _scope(runtime: Runtime, checked: _Checked) -> list[str] | None:
    """The videos to search: ``None`` for the whole library, else their ids (maybe none)."""
    from .. import library

    request = checked.request
    ids: list[str] | None = None
    if request.collection is not None:
        view = await library.get_collection_view(runtime, request.collection)
        ids = [video.id for video in view.videos]
    if checked.video_ids is not None:
        found = {s.id for s in await runtime.storage.get_summaries(checked.video_ids)}
        missing = [v for v in checked.video_ids if v not in found]
        if missing:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise VidError(
                ErrorCode.NOT_FOUND, f"{missing[0][:80]} is not in the library{more}.", hint=_NOT_SAVED
            )
        ids = checked.video_ids if ids is None else [v for v in ids if v in set(checked.video_ids)]
    if not (request.channel or request.origins or checked.after or checked.before):
        return ids
    summaries = await runtime.storage.get_summaries(ids) if ids is not None else await _every_summary(runtime)
    channel = request.channel.strip().casefold() if request.channel else None
    origins = set(request.origins or [])
    kept = []
    for summary in summaries:
        if channel is not None and (summary.channel or "").strip().casefold() != channel:
            continue
        if origins and summary.origin not in origins:
            continue
        if checked.after or checked.before:
            when = _published(summary)
            if (
                when is None
                or (checked.after and when < checked.after)
                or (checked.before and when > checked.before)
            ):
                continue
        kept.append(summary.id)
    return kept


async def _every_summary(runtime: Runtime) -> list[VideoSummary]:
    out: list[VideoSummary] = []
    cursor = None
    while True:
        page = await runtime.storage.list_videos(limit=200, cursor=cursor)
        out.extend(page.items)
        if page.next_cursor is None:
            return out
        cursor = page.next_cursor


# --- fusion -----------------------------------------------------------------------------------------


@dataclass
class _Entry:
    video_id: str
    keyword: SearchHit | None = None
    keyword_rank: int | None = None
    window: VectorHit | None = None
    vector_rank: int | None = None

    @property
    def score(self) -> float:
        return sum(1.0 / (RRF_K + rank) for rank in (self.keyword_rank, self.vector_rank) if rank is not None)

    @property
    def start(self) -> float:
        return self.keyword.start_sec if self.keyword else self.window.start_sec if self.window else 0.0


def fuse(keyword: Sequence[SearchHit], vector: Sequence[VectorHit]) -> list[_Entry]:
    """Both sides' hits as passages, best first by reciprocal rank fusion."""
    entries: list[_Entry] = []
    windows: dict[str, list[_Entry]] = {}
    for rank, window in enumerate(vector, 1):
        entry = _Entry(window.video_id, window=window, vector_rank=rank)
        entries.append(entry)
        windows.setdefault(window.video_id, []).append(entry)
    for rank, hit in enumerate(keyword, 1):
        # Spoken words and on-screen text at the same time are passages of their own: a transcript
        # segment joins the speech window it falls in, a stretch of on-screen text its own window.
        shown = hit.kind == "on_screen"
        inside = next(
            (
                e
                for e in windows.get(hit.video_id, [])
                if e.window is not None
                and is_on_screen(e.window) == shown
                and e.window.start_sec - _EPSILON <= hit.start_sec <= e.window.end_sec + _EPSILON
                and (not shown or abs(e.window.start_sec - hit.start_sec) <= _EPSILON)
            ),
            None,
        )
        if inside is None:
            entries.append(_Entry(hit.video_id, keyword=hit, keyword_rank=rank))
        elif inside.keyword is None:
            inside.keyword, inside.keyword_rank = hit, rank
    best = {id(e): min(r for r in (e.keyword_rank, e.vector_rank) if r is not None) for e in entries}
    entries.sort(key=lambda e: (-e.score, best[id(e)], e.video_id, e.start))
    return entries


# --- the search ---------------------------------------------------------------------------------------


@dataclass
class _Clock:
    started: float = field(default_factory=time.perf_counter)

    def ms(self, since: float | None = None) -> int:
        return int((time.perf_counter() - (since if since is not None else self.started)) * 1000)


async def search(runtime: Runtime, request: SearchRequest, ctx: Ctx | None = None) -> SearchResult:
    """Hits for ``request``, best first, with what ran (``meta``); see the module docstring.

    Raises ``VidError``: ``bad-request`` for the request (before anything is read),
    ``not-found`` for an unknown collection or a video that is not saved, and for ``mode=vector``
    the reason the vector side cannot run.
    """
    clock = _Clock()
    ctx = ctx or Ctx(timeout=runtime.settings.request_timeout_ms / 1000)
    checked = check_request(request)
    mode = checked.mode
    meta = SearchMeta(query=request.query, mode=mode, keyword="off" if mode == "vector" else "ok")
    scope = await _scope(runtime, checked)
    within_time = request.from_sec is not None or request.to_sec is not None
    wanted = max(request.limit, RERANK_TOP if request.rerank else 0)
    per_side = min(MAX_LIMIT, max(CANDIDATES, 2 * wanted))

    # Keyword mode answers its first ``wanted`` hits: the store's best ``wanted`` are the first of
    # its best ``per_side`` (each tier is ranked alone, exact before stemmed), and asking for
    # fewer saves ranking and marking candidates and, often, the stemmed tier altogether.
    keyword_limit = WITHIN_TIMES if within_time else wanted if mode == "keyword" else per_side

    async def keyword_side(limit: int = keyword_limit) -> list[SearchHit]:
        if mode == "vector" or scope == []:
            return []
        started = time.perf_counter()
        found = await runtime.storage.search(request.query, video_ids=scope, limit=limit)
        meta.timings.keyword_ms = clock.ms(started)
        if "keyword" not in meta.sides:
            meta.sides.append("keyword")
        return found

    # The two sides at once: the keyword side's read overlaps the query's embedding and vector scan.
    keyword_task = asyncio.ensure_future(keyword_side())
    try:
        vector = await _vector_side(
            runtime, checked, scope, meta, clock, ctx, per_side if not within_time else MAX_LIMIT
        )
    except BaseException:
        keyword_task.cancel()
        raise
    keyword = await keyword_task
    meta.sides.sort(key=("keyword", "vector").index)  # as they are named, whichever ended first
    entries = fuse(keyword, vector)
    hits = await _materialize(runtime, checked, entries, wanted)
    if len(hits) < wanted and len(keyword) == keyword_limit < per_side:
        # A hit could not be cited (its video deleted since): the next ones, as before.
        keyword = await keyword_side(per_side)
        hits = await _materialize(runtime, checked, fuse(keyword, vector), wanted)
    if request.rerank and hits:
        hits = await _rerank(runtime, checked, hits, meta, clock, ctx)
    meta.timings.total_ms = clock.ms()
    return SearchResult(hits=hits[: request.limit], meta=meta)


async def _vector_side(
    runtime: Runtime,
    checked: _Checked,
    scope: list[str] | None,
    meta: SearchMeta,
    clock: _Clock,
    ctx: Ctx,
    top_k: int,
) -> list[VectorHit]:
    """The vector side's hits, and its state in ``meta``; ``mode=vector`` raises what stops it."""
    mode = checked.mode
    if mode == "keyword":
        meta.vector, meta.vector_reason = "off", "mode=keyword searches by keyword only."
        meta.videos = len(scope) if scope is not None else await runtime.storage.count_videos()
        return []
    choice = await choose_space(runtime) if runtime.vectors is not None else None
    status = await coverage(runtime, choice, scope)
    meta.videos, meta.indexed = status.videos, status.indexed
    meta.index, meta.embedding, meta.embedder = status.index, status.space, status.embedder
    meta.vector, meta.vector_reason, meta.vector_hint = status.state, status.reason, status.hint
    if status.state in ("off", "disabled"):
        if mode == "vector":
            if choice is not None and choice.pick.reason is not None:
                raise choice.pick.reason
            raise VidError(
                ErrorCode.NO_PROVIDER, status.reason or "Vector search is off here.", hint=status.hint
            )
        return []
    assert choice is not None and runtime.vectors is not None
    if scope == [] or choice.space is None or choice.count is None or not status.indexed:
        return []  # nothing indexed to search: keyword hits only (partial says why)
    started = time.perf_counter()
    try:
        made = await embed_texts(
            runtime, [vector_text(checked.request.query)], space=choice.space, ctx=ctx, attempts=meta.attempts
        )
        meta.timings.embed_ms = clock.ms(started)
        started = time.perf_counter()
        found = await runtime.vectors.query(choice.space, made.vectors[0], top_k=top_k, video_ids=scope)
        meta.timings.vector_ms = clock.ms(started)
    except VidError as error:
        if mode == "vector":
            raise
        meta.vector, meta.vector_reason, meta.vector_hint = "failed", error.message, error.hint
        meta.attempts = [a for a in meta.attempts if a.outcome != "skipped"]
        return []
    meta.attempts = [a for a in meta.attempts if a.outcome != "skipped"]
    meta.embedder = made.producer
    meta.sides.append("vector")
    return found


async def vector_hits(
    runtime: Runtime, query: str, video_ids: list[str], meta: SearchMeta, ctx: Ctx, *, top_k: int = CANDIDATES
) -> list[VectorHit]:
    """The vector side alone, over ``video_ids`` as the index holds them, for a caller that ranks
    passages of its own (``answers/research.py``); its state goes in ``meta`` as a hybrid search
    says it, and a side that cannot run answers no hits."""
    checked = check_request(SearchRequest(query=query, video_ids=video_ids))
    return await _vector_side(runtime, checked, checked.video_ids, meta, _Clock(), ctx, top_k)


async def _materialize(
    runtime: Runtime, checked: _Checked, entries: list[_Entry], wanted: int
) -> list[SearchResultHit]:
    """The first ``wanted`` passages as cited hits, each video read once (its card and its
    vector windows' rows where the storage has ``CitingReads``, else the whole video)."""
    request = checked.request
    low = request.from_sec if request.from_sec is not None else -math.inf
    high = request.to_sec if request.to_sec is not None else math.inf
    storage = runtime.storage
    citing = isinstance(storage, CitingReads)
    contexts: dict[str, VideoContext | None] = {}
    passages_of: dict[int, list[Segment] | None] = {}
    hits: list[SearchResultHit] = []
    for i, entry in enumerate(entries):
        if len(hits) >= wanted:
            break
        upcoming = entries[i : i + wanted - len(hits)]
        if entry.video_id not in contexts:  # this video and those of the next hits, read at once
            ahead = list(dict.fromkeys(e.video_id for e in upcoming if e.video_id not in contexts))
            if citing:
                found = await runtime.cards.get_many(storage, ahead, storage.get_cards)  # type: ignore[attr-defined]
            else:
                found = await runtime.contexts.get_many(storage, ahead)
            contexts.update(zip(ahead, found, strict=True))
        if citing and entry.keyword is None and id(entry) not in passages_of:  # windows, likewise
            windows = [e for e in upcoming if e.keyword is None and e.window and id(e) not in passages_of]
            spans = [(e.video_id, e.window.first_segment, e.window.last_segment) for e in windows]  # type: ignore[union-attr]
            passages_of.update(zip(map(id, windows), await storage.get_passages(spans), strict=True))  # type: ignore[attr-defined]
        context = contexts[entry.video_id]
        if context is None:
            continue  # deleted since it was found
        if citing:
            rows = passages_of.get(id(entry)) if entry.keyword is None else None
            hit = cite_rows(context, entry, checked.words, rows)
        else:
            readable = entry.keyword is not None or (entry.window is not None and is_on_screen(entry.window))
            if context.transcript is None and not readable:
                continue  # an on-screen hit needs no transcript
            hit = cite(context, entry, checked.words)
        if hit is None:
            continue
        end = hit.window_end_sec if hit.window_end_sec is not None else hit.end_sec
        begin = hit.window_start_sec if hit.window_start_sec is not None else hit.start_sec
        if end < low or begin > high:
            continue
        hits.append(hit)
    return hits


def cite(context: VideoContext, entry: _Entry, words: passages.QueryWords) -> SearchResultHit | None:
    """``entry`` (a fused passage of ``context``) as a hit narrowed to one segment; ``None`` when
    its window no longer fits the transcript or holds an excluded word."""
    return cite_rows(context, entry, words, _window_rows(context, entry))


def _window_rows(context: VideoContext, entry: _Entry) -> list[Segment] | None:
    """A vector hit's rows from the decoded video, as ``CitingReads.get_passages`` reads them."""
    window = entry.window
    if entry.keyword is not None or window is None:
        return None
    if is_on_screen(window):
        found = _on_screen_text(context, window)
        return None if found is None else [Segment(start_sec=found[0], end_sec=found[1], text=found[2])]
    segments = context.transcript.segments if context.transcript is not None else []
    if window.last_segment >= len(segments):
        return None  # the transcript changed under the vectors: skip until re-indexed
    return segments[window.first_segment : window.last_segment + 1]


def cite_rows(
    card: VideoContext, entry: _Entry, words: passages.QueryWords, rows: list[Segment] | None
) -> SearchResultHit | None:
    """``cite`` from the video's card (its ``id`` and ``metadata``) and, for a vector hit, its
    window's rows (``None``: they no longer fit the video, and the hit is skipped)."""
    window = entry.window
    spans: list[tuple[int, int]] | None = None
    stemmed = False
    if entry.keyword is not None:
        start, end, text = entry.keyword.start_sec, entry.keyword.end_sec, entry.keyword.text
        spans, stemmed = [tuple(s) for s in entry.keyword.highlights] or None, entry.keyword.stemmed  # type: ignore[misc]
    elif rows is None:
        return None
    elif window is not None and is_on_screen(window):
        start, end, text = rows[0].start_sec, rows[0].end_sec, rows[0].text
        if passages.excluded(text, words):
            return None
    else:
        assert window is not None
        if passages.excluded(" ".join(s.text for s in rows), words):
            return None
        segment = rows[passages.best_segment(rows, 0, len(rows) - 1, words)]
        start, end, text = segment.start_sec, segment.end_sec, segment.text
    chapter_index, chapter_title = _chapter(card, start, window)
    sources: list[Literal["keyword", "vector"]] = []
    if entry.keyword is not None:
        sources.append("keyword")
    if window is not None:
        sources.append("vector")
    return SearchResultHit(
        video_id=card.id,
        start_sec=start,
        end_sec=end,
        text=text,
        score=entry.score,
        title=card.metadata.title,
        url=link_at(card, start),
        chapter_title=chapter_title,
        chapter_index=chapter_index,
        channel=card.metadata.channel,
        snippet=passages.snippet(text, words, spans),
        stemmed=stemmed,
        highlights=spans if spans is not None else passages.match_spans(text, words),
        sources=sources,
        ranks=SearchRanks(keyword=entry.keyword_rank, vector=entry.vector_rank),
        window_start_sec=window.start_sec if window is not None else None,
        window_end_sec=window.end_sec if window is not None else None,
        kind=entry.keyword.kind
        if entry.keyword is not None
        else "on_screen"
        if window is not None and is_on_screen(window)
        else "transcript",
    )


def _on_screen_text(context: VideoContext, window: VectorHit) -> tuple[float, float, str] | None:
    """The stretch of on-screen text an on-screen window points at, as keyword search shows it;
    ``None`` when the reading changed under the vectors (skipped until re-indexed)."""
    visual = context.visual or []
    j = window.first_segment - ON_SCREEN_IDX
    if not 0 <= j < len(visual):
        return None
    item = visual[j]
    text = on_screen_passage(item)
    return (item.start_sec, item.end_sec, text) if text else None


def _chapter(
    context: VideoContext, seconds: float, window: VectorHit | None
) -> tuple[int | None, str | None]:
    if window is not None and window.chapter_index is not None:
        return window.chapter_index, window.chapter_title
    spans = chapter_spans(context)
    index = None
    for i, span in enumerate(spans):
        if span.start_sec <= seconds + _EPSILON:
            index = i
    if index is None and spans:
        index = 0
    if index is None:
        return None, None
    return index, one_line(spans[index].title) or f"Chapter {index + 1}"


async def _rerank(
    runtime: Runtime,
    checked: _Checked,
    hits: list[SearchResultHit],
    meta: SearchMeta,
    clock: _Clock,
    ctx: Ctx,
) -> list[SearchResultHit]:
    """The top ``RERANK_TOP`` hits in the reranker's order (the rest after them, as fused)."""
    top, rest = hits[:RERANK_TOP], hits[RERANK_TOP:]
    texts = [hit.text for hit in top]
    started = time.perf_counter()
    tried: list = []
    try:
        scores, rung = await rerank_texts(
            runtime.rerank,
            vector_text(checked.request.query),
            texts,
            ctx,
            tried,
            keyless=runtime.settings.keyless,
        )
    except VidError as error:
        meta.rerank = (
            "disabled"
            if error.code is ErrorCode.NO_PROVIDER and not any(a.outcome == "error" for a in tried)
            else "failed"
        )
        meta.rerank_reason = error.message
        meta.attempts.extend(a for a in tried if a.outcome != "skipped")
        return hits
    meta.attempts.extend(a for a in tried if a.outcome != "skipped")
    meta.timings.rerank_ms = clock.ms(started)
    meta.rerank, meta.reranker = "ok", rung
    order = sorted(range(len(top)), key=lambda i: (-scores[i], i))
    reranked = []
    for position, i in enumerate(order, 1):
        hit = top[i]
        hit.ranks.rerank = position
        hit.rerank_score = scores[i] if math.isfinite(scores[i]) else None
        reranked.append(hit)
    return [*reranked, *rest]
