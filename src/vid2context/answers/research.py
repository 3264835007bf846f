"""Research over a few videos: the passages of each that answer a query, with what is said around them.

``research(runtime, ResearchRequest, ctx) -> ResearchResult`` is the one core behind
``POST /api/v1/research`` and the MCP ``research_videos`` tool::

    check (1 to 10 urls, the query, contextSec, maxExcerpts) ─▶ read the videos (batch.py)
        ─▶ keyword side over the transcripts read ┐
        ─▶ vector side over the index (when set up) ┴─▶ fuse (RRF) ─▶ narrow ─▶ excerpts with context

- **No saved library needed.** The keyword side is the search core's keyword plan
  (``storage.keyword.plan()``: the query language, exact then stemmed tiers, BM25) over the
  transcripts this request read. A video the read took from the library or saved to it (the
  reading rules decide, as for every tool that reads videos) is searched in the library's own
  index, within that video; one that is not there (an upload, a failed save) in an index made for
  the request (``MemoryStorage``, which answers the same plan). Excerpts are ranked within each
  video, so the two rank alike. Building that index costs about 8 ms of CPU per hour of speech
  (``bench/bench_research.py``), the library's own search a fraction of a millisecond: hence the
  library first.
- **Vectors** are the search core's vector side (``engine.vector_hits``) over these videos as the
  index holds them. Reading a video indexes it when embedding on save is set up, so a video read
  just now is usually there; one that is not (no embedder, embedding off, or a failed index) is
  ranked by keyword alone, and ``meta.vector`` says so. Windows are not embedded again per request:
  ten hour-long videos are about 1,200 windows, seconds of local embedding or a metered hosted call
  each time, for what the index already holds.
- **Fusion and narrowing** are the engine's own (``engine.fuse``, ``engine.cite``): each excerpt is
  one segment (its ``[m:ss]`` and link). Its ``context`` is the text said from ``contextSec``
  before it to ``contextSec`` after it, whole segments; a hit inside an earlier excerpt's context
  adds nothing and is left out, so excerpts do not repeat each other.

One video that cannot be read (or has no transcript) never fails the request: it is listed in
``failed``. When none can be read, the first failure is the answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..batch import OnEvent, read_videos
from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..formats.blocks import link_at
from ..models import Base, SearchMeta, VideoContext
from ..runtime import Runtime
from ..search import passages
from ..search.engine import CANDIDATES, cite, fuse, vector_hits
from ..search.query import parse_query
from ..storage.memory import MemoryStorage

__all__ = [
    "DEFAULT_CONTEXT_SEC",
    "DEFAULT_EXCERPTS",
    "MAX_CONTEXT_SEC",
    "MAX_EXCERPTS",
    "MAX_URLS",
    "Excerpt",
    "ResearchFailure",
    "ResearchMeta",
    "ResearchRequest",
    "ResearchResult",
    "VideoExcerpts",
    "check_research",
    "in_library",
    "rank_excerpts",
    "research",
]

MAX_URLS = 10
DEFAULT_CONTEXT_SEC = 30.0
MAX_CONTEXT_SEC = 300.0
DEFAULT_EXCERPTS = 5
MAX_EXCERPTS = 20
_URL_CHARS = 2000


class Excerpt(Base, kw_only=True):
    """One passage: the segment that matched, and what is said around it."""

    start_sec: float
    end_sec: float
    text: str
    """The segment that matched."""
    context: str
    """The words from ``contextSec`` before the segment to ``contextSec`` after it (the segment
    included), whole segments."""
    url: str | None = None
    """A link that opens the video at ``startSec``, where the platform has one."""
    context_start_sec: float = 0.0
    context_end_sec: float = 0.0
    sources: list[str] = []
    """Which sides found it: ``keyword``, ``vector``."""


class VideoExcerpts(Base, kw_only=True):
    video_id: str
    title: str
    url: str | None = None
    excerpts: list[Excerpt] = []
    """Best first."""


class ResearchFailure(Base, kw_only=True):
    """An input that gave no transcript to search, with its error."""

    input: str
    code: str
    message: str
    hint: str | None = None


class ResearchMeta(Base, kw_only=True):
    query: str
    sides: list[str] = []
    """The sides that ran: ``keyword``, and ``vector`` when the index held these videos."""
    vector: str = "off"
    """As ``/search`` says it: ``ok``, ``partial`` (some videos by keyword only), ``disabled``,
    ``failed`` or ``off``."""
    vector_reason: str | None = None


class ResearchResult(Base, kw_only=True):
    results: list[VideoExcerpts]
    """One entry per video read, in input order."""
    failed: list[ResearchFailure] = []
    meta: ResearchMeta


@dataclass
class ResearchRequest:
    urls: list[str]
    query: str
    context_sec: float | None = None
    max_excerpts: int | None = None


@dataclass(frozen=True)
class _Checked:
    urls: list[str]
    query: str
    words: passages.QueryWords
    context_sec: float
    max_excerpts: int


def _bad(message: str, hint: str) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)


def check_research(request: ResearchRequest) -> _Checked:
    """``request`` checked before anything is read: a ``bad-request`` (``too-large`` for more
    than ``MAX_URLS`` urls) with a hint."""
    urls = request.urls
    if not isinstance(urls, list) or not all(isinstance(url, str) for url in urls):
        raise _bad("urls must be a list of video URLs or ids.", 'Give urls as ["https://youtu.be/..."].')
    inputs = [url.strip() for url in urls if url.strip()]
    if not inputs:
        raise _bad("urls is empty.", f"Give 1 to {MAX_URLS} video URLs or ids to research.")
    if len(inputs) > MAX_URLS:
        raise VidError(
            ErrorCode.TOO_LARGE,
            f"{len(inputs)} urls were given; research reads at most {MAX_URLS} videos at once.",
            hint=f"Split them into requests of at most {MAX_URLS} urls each.",
        )
    if any(len(url) > _URL_CHARS for url in inputs):
        raise _bad(f"A url is longer than {_URL_CHARS} characters.", "Give each video as its URL or id.")
    parsed = parse_query(request.query)  # empty, operators only, too long: bad-request with a hint
    context_sec = DEFAULT_CONTEXT_SEC if request.context_sec is None else request.context_sec
    if (
        isinstance(context_sec, bool)
        or not isinstance(context_sec, int | float)
        or not math.isfinite(context_sec)
        or not 0 <= context_sec <= MAX_CONTEXT_SEC
    ):
        raise _bad(
            f"contextSec must be 0 to {MAX_CONTEXT_SEC:g} seconds, not {str(context_sec)[:20]}.",
            f"Give contextSec from 0 to {MAX_CONTEXT_SEC:g} (default {DEFAULT_CONTEXT_SEC:g}).",
        )
    excerpts = DEFAULT_EXCERPTS if request.max_excerpts is None else request.max_excerpts
    if isinstance(excerpts, bool) or not isinstance(excerpts, int) or not 1 <= excerpts <= MAX_EXCERPTS:
        raise _bad(
            f"maxExcerpts must be a whole number from 1 to {MAX_EXCERPTS}, not {str(excerpts)[:20]}.",
            f"Give maxExcerpts from 1 to {MAX_EXCERPTS} (default {DEFAULT_EXCERPTS}).",
        )
    return _Checked(inputs, request.query, passages.query_words(parsed), float(context_sec), excerpts)


def _excerpts(context: VideoContext, entries: list, checked: _Checked) -> list[Excerpt]:
    """The best ``max_excerpts`` passages of ``context``, each with what is said around it."""
    assert context.transcript is not None
    segments = context.transcript.segments
    found: list[Excerpt] = []
    for entry in entries:
        if len(found) >= checked.max_excerpts:
            break
        hit = cite(context, entry, checked.words)
        if hit is None:
            continue
        if any(e.context_start_sec <= hit.start_sec <= e.context_end_sec for e in found):
            continue  # already said in an earlier excerpt's context
        low, high = hit.start_sec - checked.context_sec, hit.end_sec + checked.context_sec
        around = [s for s in segments if s.end_sec > low and s.start_sec < high] or [
            s for s in segments if s.start_sec == hit.start_sec
        ]
        found.append(
            Excerpt(
                start_sec=hit.start_sec,
                end_sec=hit.end_sec,
                text=hit.text,
                context=" ".join(" ".join(s.text.split()) for s in around),
                url=hit.url,
                context_start_sec=around[0].start_sec if around else hit.start_sec,
                context_end_sec=around[-1].end_sec if around else hit.end_sec,
                sources=list(hit.sources),
            )
        )
    return found


def in_library(context: VideoContext) -> bool:
    """Whether ``context`` is the library's copy: read from it, or saved to it by this read."""
    return any(a.stage in ("cache", "save") and a.outcome == "ok" for a in context.attempts)


async def rank_excerpts(
    runtime: Runtime, contexts: list[VideoContext], checked: _Checked, ctx: Ctx
) -> tuple[list[VideoExcerpts], ResearchMeta]:
    """Each video's excerpts, best first, and which sides ran (module docstring)."""
    index: MemoryStorage | None = None
    for context in contexts:
        if not in_library(context):
            index = index or MemoryStorage()
            await index.put_context(context)
    meta = SearchMeta(query=checked.query, mode="hybrid")
    wanted = max(CANDIDATES, 4 * checked.max_excerpts)
    vectors = await vector_hits(runtime, checked.query, [c.id for c in contexts], meta, ctx, top_k=wanted)
    results: list[VideoExcerpts] = []
    for context in contexts:
        store = runtime.storage if index is None or in_library(context) else index
        keyword = await store.search(checked.query, video_ids=[context.id], limit=wanted)
        entries = fuse(keyword, [hit for hit in vectors if hit.video_id == context.id])
        results.append(
            VideoExcerpts(
                video_id=context.id,
                title=context.metadata.title,
                url=context.metadata.url or link_at(context, 0),
                excerpts=_excerpts(context, entries, checked),
            )
        )
    sides = ["keyword", *(side for side in meta.sides if side == "vector")]
    return results, ResearchMeta(
        query=checked.query, sides=sides, vector=meta.vector, vector_reason=meta.vector_reason
    )


async def research(
    runtime: Runtime, request: ResearchRequest, ctx: Ctx | None = None, *, on_progress: OnEvent | None = None
) -> ResearchResult:
    """Ranked excerpts per video for ``request`` (module docstring).

    Raises ``VidError``: ``bad-request``/``too-large`` for the request (before anything is read),
    else the first video's own error when no video could be read.
    """
    checked = check_research(request)
    ctx = ctx or Ctx(timeout=runtime.settings.request_timeout_ms / 1000)
    batch = await read_videos(runtime, checked.urls, ctx=ctx, limit=MAX_URLS, on_progress=on_progress)
    failed = [
        ResearchFailure(input=label[:200], code=e.code.value, message=e.message, hint=e.hint)
        for label, e in batch.failed
    ]
    readable: list[VideoContext] = []
    for context in batch.contexts:
        if context.transcript is None or not context.transcript.segments:
            failed.append(
                ResearchFailure(
                    input=context.id,
                    code=ErrorCode.NO_TRANSCRIPT.value,
                    message=f"{context.id} has no transcript to search.",
                    hint="Tell the user this video has no words to search; do not retry with it.",
                )
            )
        else:
            readable.append(context)
    if not readable:
        batch.raise_if_empty(f"Give 1 to {MAX_URLS} video URLs or ids.")
        raise VidError(
            ErrorCode.NO_TRANSCRIPT,
            "None of the videos has a transcript to search.",
            hint="Tell the user none of these videos has words to search; do not retry with them.",
        )
    results, meta = await rank_excerpts(runtime, readable, checked, ctx)
    return ResearchResult(results=results, failed=failed, meta=meta)
