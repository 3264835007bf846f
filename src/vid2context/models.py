"""Every public shape, defined once.

The REST API, the MCP ``outputSchema``, the stored rows and the OpenAPI document all come from
these Structs, so a field renamed here is renamed everywhere. On the wire names are camelCase
(``durationSec``); in Python they are snake_case (``duration_sec``).

Schema evolution: every field added after a shape is first stored gets a default, so rows
written by an older version still decode. Shapes carry every field on the wire, ``null``
included, so clients see one predictable shape; only the high-volume ``Segment`` and ``Attempt``
leave out their unset optional fields (``omit_defaults``), which would otherwise repeat
``"speaker": null`` thousands of times in a transcript.

This module imports nothing from the project (it is a leaf, like Starlette's ``types.py``).
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any, Generic, Literal, TypeVar

import msgspec

__all__ = [
    "AnswerSource",
    "AskResult",
    "Attempt",
    "AttemptOutcome",
    "Base",
    "Brief",
    "BriefDisagreement",
    "BriefPoint",
    "CaptionTrack",
    "Chapter",
    "ChatMessage",
    "Citation",
    "Collection",
    "CollectionDefinition",
    "CollectionItem",
    "Comment",
    "EmbeddingSpace",
    "Embeddings",
    "ExtractionResult",
    "FailedInput",
    "FieldCitations",
    "GeneratedChapter",
    "GeneratedChapters",
    "Kind",
    "ModelChoice",
    "Mode",
    "Origin",
    "Page",
    "Platform",
    "Pooling",
    "RefreshSummary",
    "Schedule",
    "SearchHit",
    "SearchMeta",
    "SearchRanks",
    "SearchResult",
    "SearchResultHit",
    "SearchTimings",
    "Segment",
    "Stage",
    "Thumbnail",
    "Timing",
    "Transcript",
    "TranslationTarget",
    "Usage",
    "VideoContext",
    "VideoMetadata",
    "VideoRef",
    "VideoSummary",
    "VisualItem",
    "VisualKind",
]


class Base(msgspec.Struct, kw_only=True, rename="camel"):
    """Wire conventions shared by every shape."""


Platform = Literal["youtube", "web", "local", "upload"]
"""Where a video lives: YouTube (InnerTube), any other page yt-dlp understands, a file, an upload."""

Kind = Literal["video", "playlist", "channel"]

Mode = Literal["auto", "captions", "stt", "video"]
"""How to get a transcript: ``auto`` tries captions then speech-to-text; the others force one side."""

Origin = Literal["captions-manual", "captions-auto", "captions-translated", "asr", "sidecar", "embedded"]
"""Where the words came from: uploaded captions, the platform's automatic captions, a platform
translation, our own speech-to-text (``asr``), a subtitle file next to a local video or a subtitle
stream inside it."""

Timing = Literal["word", "caption", "segment-approx"]
"""How precise the timestamps are: per word, per caption cue, or approximate segment bounds."""

Stage = Literal[
    "input",
    "cache",
    "metadata",
    "captions",
    "audio",
    "stt",
    "items",
    "comments",
    "save",
    "embed",
    "rerank",
    "llm",
    "frames",
    "ocr",
    "vision",
]
"""``audio`` is fetching the sound for speech-to-text; ``stt`` one speech-to-text rung; ``embed`` one
embedding rung; ``rerank`` one reranking rung of a search; ``llm`` one language-model rung (a
translation, an answer); ``frames`` picking the frames of the picture (``mode=video``), ``ocr`` one
rung reading their text, ``vision`` one vision-model rung describing them."""

AttemptOutcome = Literal["ok", "error", "skipped"]


class VideoRef(Base):
    """A parsed input: what to fetch, before anything is fetched.

    ``id`` is ``platform:nativeId`` (``youtube:jNQXAC9IVRw``) and is the key in storage.
    ``start_sec`` keeps a ``t=`` from the input and ``list_id`` the ``list=`` of a watch URL, so a
    caller can honour them without parsing the URL again.
    """

    id: str
    platform: Platform
    kind: Kind
    native_id: str
    url: str | None = None
    start_sec: float | None = None
    list_id: str | None = None


class Thumbnail(Base):
    url: str
    width: int | None = None
    height: int | None = None


class Chapter(Base):
    title: str
    start_sec: float
    end_sec: float | None = None


class VideoMetadata(Base):
    id: str
    platform: Platform
    title: str
    url: str | None = None
    channel: str | None = None
    channel_id: str | None = None
    duration_sec: float | None = None
    published_at: str | None = None
    description: str | None = None
    thumbnails: list[Thumbnail] = []
    tags: list[str] = []
    view_count: int | None = None
    language: str | None = None
    is_live: bool = False
    chapters: list[Chapter] = []


# gc=False: a segment holds numbers and strings only, so it can never be part of a reference cycle,
# and a transcript is thousands of them, which the collector then need not track (a tenth of what
# parsing a caption file costs, bench/bench_formats.py).
class Segment(Base, omit_defaults=True, gc=False):
    start_sec: float
    end_sec: float
    text: str
    speaker: str | None = None


Pooling = Literal["cls", "mean", "server"]
"""How a model's token vectors become one vector: the first (``[CLS]``) token's, or the mean of all
of them; ``server`` when a hosted endpoint decides and does not say (OpenAI-compatible APIs)."""


class EmbeddingSpace(Base, frozen=True):
    """Which vectors may be compared with which: the model, its dimension and its pooling.

    Two vectors are comparable only when their spaces are equal. ``model`` names the model, not
    who runs it: ``BAAI/bge-small-en-v1.5`` with ``cls`` pooling is one space whether fastembed
    ran it on a laptop or Workers AI ran it on the edge, which is what lets a library indexed in
    one place be searched in the other. A model folder nobody named is ``local:<sha256 prefix>``
    of its files (``search/embedders/fastembed_local.py``).
    """

    model: str
    dim: int
    pooling: Pooling

    @property
    def key(self) -> str:
        """One string for the space (``BAAI/bge-small-en-v1.5|cls|384``): the vector index's name
        for it (``vector_spaces.key``)."""
        return f"{self.model}|{self.pooling}|{self.dim}"

    @property
    def tag(self) -> str:
        """A short name for tables, namespaces and id prefixes: 7 characters of ``[a-z2-7]`` from
        a digest of ``key`` (35 bits: no two spaces of one library will share it)."""
        digest = hashlib.sha256(self.key.encode("utf-8", "surrogatepass")).digest()
        return base64.b32encode(digest).decode().lower()[:7]


class Embeddings(Base):
    """Vectors for some texts, in their order, each of unit length, all of one ``space``."""

    space: EmbeddingSpace
    vectors: list[list[float]]
    producer: str
    """The rung that made them, e.g. ``embed/fastembed/BAAI/bge-small-en-v1.5``."""


class Transcript(Base):
    language: str | None
    origin: Origin
    timing: Timing
    producer: str
    """Which rung made it, e.g. ``youtube/innertube`` or ``stt/groq/whisper-large-v3-turbo``."""
    segments: list[Segment]
    note: str | None = None
    """Why this track was chosen (requested language, manual over auto, ...)."""
    requested_language: str | None = None
    """The language the call asked for when no track was in it: the words are in ``language``
    instead (the best track), and ``available_languages`` lists the languages there are."""
    available_languages: list[str] = []
    """The languages of the caption tracks the platform (or the file) offers, when known."""
    translated: bool = False
    """The words are a language model's translation of another track (``translate=1``), each
    segment at its source's times; ``note`` says from which track and by which rung."""


class ChatMessage(Base, frozen=True, forbid_unknown_fields=True):
    """One turn of a conversation with a language model, as every LLM rung takes it."""

    role: Literal["system", "user", "assistant"]
    content: str


class Usage(Base, frozen=True):
    """Tokens a language model counted for one answer, as the service reported them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ModelChoice(Base, frozen=True, forbid_unknown_fields=True):
    """Which language model answers a request: ``{rung, strict?}`` or ``{policy}`` on the wire.

    ``rung`` (an id from ``/models?kind=llm``) starts with that rung and, unless ``strict``, falls
    back along the policy's ladder; ``policy`` (``free``, ``quality``, ``local-only``) orders the
    ladder for this request. One of the two, never both: ``answers.llm.ladder.plan_llm`` checks."""

    rung: str | None = None
    strict: bool = False
    policy: str | None = None


class CaptionTrack(Base):
    """A caption track the platform offers, as listed before any is downloaded."""

    language: str
    name: str
    kind: Literal["manual", "auto"]
    translatable: bool = False


class TranslationTarget(Base):
    """A language the platform translates its captions into (YouTube's translation targets)."""

    language: str
    name: str


class Comment(Base):
    id: str
    text: str
    author: str | None = None
    like_count: int | None = None
    published_at: str | None = None
    parent_id: str | None = None


class Attempt(Base, omit_defaults=True):
    """One rung of a ladder, tried or skipped: what ran, how it ended, how long it took."""

    id: str
    stage: Stage
    outcome: AttemptOutcome
    reason: str | None = None
    """The error code when ``outcome`` is ``error``, or why the rung was skipped."""
    detail: str | None = None
    ms: int = 0


class GeneratedChapter(Base):
    """A chapter we made (``POST /api/v1/chapters``), not the platform's: it always ends."""

    title: str
    start_sec: float
    end_sec: float
    summary: str | None = None
    """A language model's summary of it, when one was asked for and a model wrote it."""


class GeneratedChapters(Base, kw_only=True):
    """Chapters made for a video that has none, kept with the saved video: outlines and sections
    use them when the platform gave none, and say who made them (``producer``, ``rung``)."""

    chapters: list[GeneratedChapter]
    producer: str
    """What cut the transcript: ``chapters/texttiling``."""
    method: Literal["embeddings", "lexical"]
    """What the cuts measured: an embedding model's similarity, or shared words."""
    rung: str | None = None
    """The language-model rung that wrote the titles, ``None`` when they are key phrases."""
    model: str | None = None
    embedder: str | None = None
    """The embedding rung whose vectors were compared (``method`` ``embeddings``)."""
    transcript_producer: str | None = None
    """The transcript they were cut from (``Transcript.producer``)."""
    created_at: str = ""


VisualKind = Literal["on_screen_text", "scene"]
"""``on_screen_text``: words read from the picture (slides, code, captions burnt in); ``scene``: a
vision model's description of what is shown."""


class VisualItem(Base):
    """One stretch of the picture: the same text (or scene) from ``start_sec`` to ``end_sec``."""

    start_sec: float
    end_sec: float
    kind: VisualKind
    text: str


class VideoContext(Base):
    id: str
    metadata: VideoMetadata
    transcript: Transcript | None = None
    comments: list[Comment] | None = None
    attempts: list[Attempt] = []
    fetched_at: str = ""
    generated_chapters: GeneratedChapters | None = None
    """Chapters ``POST /api/v1/chapters`` made; ``metadata.chapters`` are the platform's own."""
    visual: list[VisualItem] | None = None
    """The on-screen layer (``mode=video``), in time order; ``None`` when the picture was not read."""
    visual_note: str | None = None
    """Why ``visual`` holds less than the picture showed (no frame could be read, a frame cap was
    reached), so an empty list never reads as "nothing was shown"."""


class VideoSummary(Base):
    """A saved video in a list: enough to choose what to read, without the transcript."""

    id: str
    title: str
    platform: Platform
    url: str | None = None
    channel: str | None = None
    duration_sec: float | None = None
    published_at: str | None = None
    origin: Origin | None = None
    language: str | None = None
    tokens: int = 0
    fetched_at: str = ""


T = TypeVar("T")


class Page(Base, Generic[T]):
    """One page of a list. ``next_cursor`` is opaque; ``None`` means this is the last page."""

    items: list[T]
    next_cursor: str | None = None


class SearchHit(Base):
    """A transcript passage that matches a keyword query, best first."""

    video_id: str
    start_sec: float
    end_sec: float
    text: str
    score: float
    """BM25, higher is better: exact hits come first, best first, then stemmed ones, best first.
    Comparable only within one answer, and within its exact or its stemmed hits."""
    title: str | None = None
    stemmed: bool = False
    """``True`` when the passage matches only through English stems ("kickstands" for "kickstand",
    "baked" for "baking"); such hits come after every exact one."""
    highlights: list[tuple[int, int]] = []
    """``[start, end)`` character offsets in ``text`` of the words that matched (the stems'
    words for a stemmed hit), in order: what a snippet puts in **bold**."""
    kind: Literal["transcript", "on_screen"] = "transcript"
    """``on_screen``: the passage is text shown in the picture (``mode=video``), one stretch of
    ``visual`` with its lines joined by `` / ``; ``transcript``: words spoken."""


class SearchRanks(Base, omit_defaults=True):
    """Where a hit stood on each side that found it (1 is first), and after reranking."""

    keyword: int | None = None
    vector: int | None = None
    rerank: int | None = None


class SearchResultHit(SearchHit, kw_only=True):
    """A hit of ``GET /api/v1/search``: a ``SearchHit`` narrowed to the segment that best matches
    (its ``startSec``, ``endSec`` and ``text``), with where it is and how it was found.

    ``score`` is the fused score (reciprocal rank fusion over the sides that found it), higher is
    better within one answer. A hit the vector side found keeps its window's range in
    ``windowStartSec``/``windowEndSec`` (about 250 words around the segment)."""

    url: str | None = None
    """Opens the video at ``startSec``."""
    chapter_title: str | None = None
    chapter_index: int | None = None
    channel: str | None = None
    snippet: str = ""
    """The segment's text with the query's words in ``**bold**``."""
    sources: list[Literal["keyword", "vector"]] = []
    ranks: SearchRanks = msgspec.field(default_factory=SearchRanks)
    rerank_score: float | None = None
    window_start_sec: float | None = None
    window_end_sec: float | None = None


class SearchTimings(Base):
    keyword_ms: int = 0
    embed_ms: int = 0
    vector_ms: int = 0
    rerank_ms: int = 0
    total_ms: int = 0


class SearchMeta(Base):
    """What a search did: which sides ran and why a side did not, with what, and how long."""

    query: str
    mode: Literal["hybrid", "keyword", "vector"]
    sides: list[Literal["keyword", "vector"]] = []
    """The sides that ran."""
    keyword: Literal["ok", "off"] = "ok"
    vector: Literal["ok", "partial", "disabled", "failed", "off"] = "off"
    """``ok``: every video searched is indexed; ``partial``: some are not (they are found by
    keyword only); ``disabled``: no embedding rung for the index's model; ``failed``: the query
    could not be embedded or the index not read; ``off``: no vector index here, or not asked."""
    vector_reason: str | None = None
    vector_hint: str | None = None
    embedding: EmbeddingSpace | None = None
    """The space searched: the model, its dimension and pooling."""
    embedder: str | None = None
    index: str | None = None
    rerank: Literal["ok", "off", "failed", "disabled"] = "off"
    rerank_reason: str | None = None
    reranker: str | None = None
    fusion: str = "rrf"
    fusion_k: int = 60
    videos: int = 0
    """Videos searched (after the filters)."""
    indexed: int = 0
    """Of those, how many the vector side holds."""
    timings: SearchTimings = msgspec.field(default_factory=SearchTimings)
    attempts: list[Attempt] = []


class SearchResult(Base):
    hits: list[SearchResultHit]
    meta: SearchMeta


class Schedule(Base):
    """When a collection's sources are checked for new videos."""

    every: Literal["hourly", "daily", "weekly"] | int
    """A named period, or minutes as a whole number."""
    at: str | None = None
    """``HH:MM`` UTC, for daily and weekly schedules."""
    enabled: bool = True


class Collection(Base):
    id: str
    name: str
    description: str | None = None
    sources: list[str] = []
    """Lists (playlists, channels, feeds) whose new videos a refresh adds."""
    schedule: Schedule | None = None
    video_count: int = 0
    created_at: str = ""
    updated_at: str = ""
    checked_at: str | None = None
    """When the sources were last checked for new videos (the last refresh)."""


class CollectionItem(Base):
    """A video's membership in a collection.

    ``state`` is ``saved`` once ingested, ``pending`` for an imported input not ingested yet, and
    ``removed`` for a video the user took out: a refresh never adds a removed video back.
    """

    video_id: str
    state: Literal["saved", "pending", "removed"] = "saved"
    input: str | None = None
    added_at: str = ""


class FailedInput(Base):
    input: str
    code: str
    message: str
    hint: str | None = None
    cause: str | None = None


class RefreshSummary(Base):
    collection_id: str
    added: list[VideoSummary] = []
    skipped: int = 0
    failed: list[FailedInput] = []
    remaining: int = 0
    checked_at: str = ""


class CollectionDefinition(Base, kw_only=True):
    """A collection as a portable file (``vid2context.collection`` v1): no transcripts."""

    format: Literal["vid2context.collection"] = "vid2context.collection"
    version: Literal[1] = 1
    name: str
    description: str | None = None
    sources: list[str] = []
    videos: list[str] = []
    schedule: Schedule | None = None


class Citation(Base, kw_only=True):
    """A moment of a video an answer stands on, checked against the real segments.

    ``n`` is the ``[n]`` in the answer it backs (``/ask``, ``/chat``; ``None`` where a shape has no
    numbered text). ``start_sec`` is the segment that best supports the sentence citing it, not
    merely the start of the passage the model was shown; ``quote`` is that segment's words."""

    n: int | None = None
    video_id: str
    title: str
    start_sec: float
    end_sec: float | None = None
    url: str | None = None
    """A link that opens the video at ``start_sec``, where the platform has one."""
    quote: str | None = None


class AnswerSource(Base):
    """A numbered passage an answer was grounded in, as ``meta.sources`` lists it."""

    n: int
    video_id: str
    title: str
    start_sec: float
    end_sec: float
    url: str | None = None


class AskResult(Base, kw_only=True):
    """``POST /api/v1/ask`` (and the core of MCP ``ask``): the answer with its checked citations.

    ``unverified`` lists the ``[n]`` the model wrote that match no source: they were removed from
    ``answer``. ``context_tokens`` is the answering rung's window, ``prompt_tokens`` our estimate
    of what was sent to it."""

    answer: str
    citations: list[Citation] = []
    unverified: list[int] = []
    sources: list[AnswerSource] = []
    rung: str
    model: str
    usage: Usage | None = None
    attempts: list[Attempt] = []
    context_tokens: int | None = None
    prompt_tokens: int = 0


class BriefPoint(Base, kw_only=True):
    """One claim of a brief, with the moments that back it (each checked: ``Citation``)."""

    text: str
    """The claim, its ``[n]`` kept where they name a source of ``Brief.sources``."""
    citations: list[Citation] = []
    videos: int = 0
    """How many distinct videos back it."""


class BriefDisagreement(Base, kw_only=True):
    """Where the videos part ways: a topic and each position, each from its own videos."""

    topic: str
    positions: list[BriefPoint] = []


class Brief(Base, kw_only=True):
    """``POST /api/v1/briefs`` (a job's result) and MCP ``build_brief``: claims with checked citations.

    ``consensus`` holds only claims backed by two or more videos and ``disagreement`` only topics
    whose positions come from two or more videos; what the model offered as either with less is
    among ``claims``, said in ``notes``. A claim left with no citation that checks is dropped
    (``notes``); the numbers it cited that match no source are in ``unverified``."""

    template: str
    question: str | None = None
    summary: str = ""
    claims: list[BriefPoint] = []
    consensus: list[BriefPoint] = []
    disagreement: list[BriefDisagreement] = []
    open_questions: list[str] = []
    sources: list[AnswerSource] = []
    unverified: list[int] = []
    notes: list[str] = []
    left_out: int = 0
    """Passages found that did not fit the answering model's window."""
    failed: list[FailedInput] = []
    rung: str
    model: str
    usage: Usage | None = None
    attempts: list[Attempt] = []


class FieldCitations(Base, kw_only=True):
    """The moments that back one field of an extraction, by JSON pointer into ``data``."""

    field: str
    citations: list[Citation] = []


class ExtractionResult(Base, kw_only=True):
    """``POST /api/v1/extract`` (a job's result) and MCP ``extract``: ``data`` matches the template's
    or the caller's JSON Schema (checked; an answer that does not is never returned)."""

    template: str | None = None
    data: dict[str, Any]
    citations: list[FieldCitations] = []
    unverified: list[int] = []
    notes: list[str] = []
    sources: list[AnswerSource] = []
    left_out: int = 0
    failed: list[FailedInput] = []
    rung: str
    model: str
    usage: Usage | None = None
    attempts: list[Attempt] = []
