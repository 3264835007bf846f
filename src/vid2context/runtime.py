"""The runtime: settings, storage and the provider ladders, chosen once per process or isolate.

``create_app(runtime)`` and the CLI take a ``Runtime`` and hold no global state of their own.
Adding a provider is one module plus one line in the builder below that puts it in its ladder.
Three builders: ``build_runtime`` (the portable parts, in memory), ``build_local_runtime`` (a laptop
or server: SQLite, yt-dlp, ffmpeg, the local model) and ``build_worker_runtime`` (a Cloudflare
Python Worker: D1, KV, R2 and Workers AI from its ``env``). Each platform builder imports its own
modules inside the function, so importing this module on the Worker never pulls in subprocess or
sqlite3, and the local runtime never loads the Cloudflare bindings.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from . import __version__
from .answers.llm.base import LanguageModel, LlmPlan
from .answers.llm.rungs import hosted_llms
from .auth.store import MemoryOAuthStore, OAuthStore
from .chunking import SttPlan
from .errors import ErrorCode, VidError
from .integrations.webhooks import Webhooks, build_webhooks
from .jobs import JobQueue
from .models import VideoContext
from .providers.base import SourceProvider
from .providers.speech import SpeechToText
from .providers.stt import hosted_rungs, ordered, stt_plan
from .providers.supadata import SupadataProvider
from .providers.upload import UploadProvider
from .providers.youtube import YouTubeProvider
from .refusals import Where
from .search.contexts import MAX_CARDS, ContextCache
from .search.embedders.base import Embedder, EmbedPlan
from .search.embedders.rungs import hosted_embedders
from .search.embedders.rungs import ordered as ordered_embedders
from .search.rerankers import WorkersAIBindingReranker, WorkersAIReranker
from .search.vectors import VectorIndex
from .search.vectors_memory import MemoryVectorIndex
from .settings import SETTINGS, Settings, load_settings
from .singleflight import SingleFlight
from .storage.base import BlobStore, KvStore, Storage
from .storage.memory import MemoryBlobs, MemoryKv, MemoryStorage

__all__ = [
    "KeepAlive",
    "Runtime",
    "build_local_runtime",
    "build_runtime",
    "build_worker_runtime",
    "make_http_client",
]

KeepAlive = Callable[[Awaitable[Any]], None]
"""Hands a background task to the platform so it may outlive the request that started it."""


class Closeable(Protocol):
    async def aclose(self) -> None: ...


@dataclass
class Runtime:
    """Everything a request or a job needs, built once per process (locally) or isolate (Worker).

    Background work (``jobs``, MCP's long runs) starts asyncio tasks that outlive the request that
    started them. A local server keeps its event loop running, so nothing more is needed there; a
    Cloudflare Worker only keeps such a task alive when it is passed to ``waitUntil``. So every
    such task goes through ``hand_off``, which gives it to ``keep_alive`` when the platform set
    one (the Worker entry sets ``workers.wait_until``) and does nothing otherwise.
    """

    settings: Settings
    storage: Storage
    http: httpx.AsyncClient
    sources: list[SourceProvider]
    kv: KvStore = field(default_factory=MemoryKv)
    """Small shared values with a TTL: rate-limit buckets, upload details, job state."""
    blobs: BlobStore = field(default_factory=MemoryBlobs)
    """Bytes: uploads and large transcripts."""
    name: str = "local"
    """Where this runs: ``local`` or ``worker``; shown by health."""
    flights: SingleFlight[VideoContext] = field(default_factory=SingleFlight)
    jobs: JobQueue = field(default_factory=JobQueue)
    """Background jobs of this process (``POST /api/v1/jobs``, collection ingests)."""
    stt: list[SpeechToText] = field(default_factory=list)
    """The speech-to-text ladder in order, disabled rungs included (``providers/stt.py``)."""
    stt_plan: SttPlan = field(default_factory=SttPlan)
    """How hosted rungs get long audio: piece size, concurrency, retries, the audio splitter."""
    embed: list[Embedder] = field(default_factory=list)
    """The embedding ladder in order, disabled rungs included (``search/embedders/rungs.py``);
    ``search.embedders.ladder.pick_embedder`` chooses from it."""
    embed_plan: EmbedPlan = field(default_factory=EmbedPlan)
    """How embedding rungs are fed: batch size and retries."""
    rerank: list[Any] = field(default_factory=list)
    """The reranking ladder in order (``search/rerankers.py``): search with ``rerank=1`` walks it."""
    llm: list[LanguageModel] = field(default_factory=list)
    """The language-model rungs, disabled ones included, in their order within a tier
    (``answers/llm/rungs.py``); ``answers.llm.ladder.plan_llm`` orders them by policy per request
    and adds the calling MCP client's model when there is one."""
    llm_plan: LlmPlan = field(default_factory=LlmPlan)
    """How language-model rungs are retried."""
    visual: list[Any] = field(default_factory=list)
    """The on-screen ladder of ``mode=video`` in order, disabled rungs included
    (``visual/base.py``'s ``VisualReader``): Tesseract on ffmpeg's frames locally, none on the Worker."""
    keep_alive: KeepAlive | None = None
    """The platform's way to keep a background task alive past its request (``waitUntil`` on the
    Worker); ``None`` when the process outlives its requests anyway."""
    contexts: ContextCache = field(default_factory=ContextCache)
    """Decoded videos search cites from, while nothing is written (``search/contexts.py``)."""
    cards: ContextCache = field(default_factory=lambda: ContextCache(max_items=MAX_CARDS))
    """The same for a storage with ``CitingReads``: videos' cards (metadata only)."""
    vectors: VectorIndex | None = None
    """The vector index (``search/vectors.py``): sqlite-vec locally, Vectorize on a Worker with a
    ``VECTORS`` binding, memory in ``build_runtime``; ``None`` where there is none (a Worker without
    ``VECTORS``, a Python that cannot load sqlite-vec), and then search is keyword only."""
    mcp_runs: Any = None
    """MCP long runs on the Worker's ``JOBS`` queue (``mcp/queued.QueuedRuns``); ``None``: they are
    tasks of this process (``mcp/runs.py``)."""
    claims: Any = None
    """Who may refresh a due watch list (``watch.WatchClaims``): D1 on the Worker; ``None`` for
    the KV's atomic counter (``watch.KvClaims``), which the local SQLite KV makes safe across
    processes."""
    sql: Any = None
    """The library's database for tables beside the library's own (hosted mode's accounts): a
    ``rows``/``run`` executor, ``storage.sqlite.SQLiteSql`` locally and ``storage.cloudflare.D1Sql``
    on a Worker; ``None`` with memory storage, where accounts live in memory."""
    oauth: OAuthStore | None = None
    """The OAuth server's clients, codes and tokens (``auth/store.py``): SQLite locally, D1 and
    KV on the Worker, memory in ``build_runtime``."""
    webhooks: Webhooks | None = None
    """Where events are sent (``integrations/webhooks.py``): in the library's database, sent
    through the egress rules of the platform; built by each builder."""
    on_added: list[Callable[[str, list[Any]], Awaitable[None]]] = field(default_factory=list)
    """Called with a collection's id and the ``VideoSummary`` list each time videos join it in
    this process (a refresh, a watch list's included, or an add): how the MCP server tells its
    subscribers (``mcp/updates.py``). Nothing crosses processes or isolates this way."""
    live: Any = None
    """The live-stream reader (``live.core.LiveSource``): ffmpeg on the local runtime
    (``live/ffmpeg_live.py``); ``None`` on the Worker, which has no subprocesses."""
    egress: Closeable | None = None
    """Public mode's guard on the local runtime (``egress.Egress``: the filtering proxy that yt-dlp
    and ffmpeg fetch through), closed with the runtime; ``None`` elsewhere. The Worker has none:
    its ``fetch`` has no route into the server's own network."""

    def hand_off(self, task: Awaitable[Any]) -> bool:
        """Give a background ``task`` to ``keep_alive``; whether the platform now holds it (and so
        whether it may outlive the app's lifespan, which on the Worker ends after each request)."""
        if self.keep_alive is None:
            return False
        self.keep_alive(task)
        return True

    async def aclose(self) -> None:
        await self.jobs.aclose()  # first: a stopping job still writes its state
        if self.webhooks is not None:
            await self.webhooks.aclose()  # before the client its sender may use
        await self.storage.close()
        if self.vectors is not None:
            await self.vectors.close()
        await self.http.aclose()
        if self.egress is not None:
            await self.egress.aclose()


def make_http_client(
    settings: Settings, transport: httpx.AsyncBaseTransport | None = None
) -> httpx.AsyncClient:
    """The one outbound client: proxy, timeouts and a user agent, set in one place."""
    return httpx.AsyncClient(
        proxy=settings.proxy,
        transport=transport,
        timeout=httpx.Timeout(settings.http_timeout_s),
        follow_redirects=True,
        headers={"User-Agent": f"vid2context/{__version__} (+https://github.com/vid2context)"},
    )


def build_runtime(
    settings: Settings,
    *,
    storage: Storage | None = None,
    kv: KvStore | None = None,
    blobs: BlobStore | None = None,
    http: httpx.AsyncClient | None = None,
    name: str = "local",
    vectors: VectorIndex | None = None,
) -> Runtime:
    """A runtime with the portable providers only: what every platform can run (a memory vector
    index unless ``vectors`` is given; the platform builders set their own, or none)."""
    client = http or make_http_client(settings)
    where = Where(edge=name == "worker", files=name != "worker" and not settings.public)
    sources: list[SourceProvider] = [
        YouTubeProvider(
            client, origin=settings.youtube_origin, max_items=settings.max_playlist_items, where=where
        ),
        SupadataProvider.from_settings(settings, client, where),  # hosted, optional: after InnerTube
    ]
    runtime = Runtime(
        settings=settings,
        storage=storage or MemoryStorage(),
        kv=kv or MemoryKv(),
        blobs=blobs or MemoryBlobs(),
        vectors=vectors if vectors is not None else MemoryVectorIndex(),
        http=client,
        sources=sources,
        name=name,
        stt=ordered(hosted_rungs(settings, client)),
        stt_plan=stt_plan(settings),
        embed=ordered_embedders(hosted_embedders(settings, client)),
        rerank=[
            WorkersAIReranker(
                client,
                account_id=settings.cloudflare_account_id,
                api_token=settings.cloudflare_api_token,
                base_url=settings.cloudflare_base_url,
            )
        ],
        llm=hosted_llms(settings, client),
    )
    runtime.sources.append(UploadProvider(runtime))
    runtime.oauth = MemoryOAuthStore(runtime.kv)
    runtime.webhooks = build_webhooks(runtime)
    return runtime


def build_local_runtime(
    environ: Mapping[str, str] | None = None,
    *,
    http: httpx.AsyncClient | None = None,
    resolver: Any = None,
    dialer: Any = None,
) -> Runtime:
    """The runtime for a laptop or server: settings from the environment, the SQLite library,
    KV and blobs under ``$VID2CONTEXT_HOME``; in public mode, the guard every fetch made on a
    caller's behalf goes through (``egress``), whose ``resolver`` and ``dialer`` (an
    ``egress.Resolver`` and ``egress.Dialer``) tests inject.

    Local-only modules are imported here, inside the function, so the Worker never loads them.
    """
    from .auth.store_sql import SqlOAuthStore
    from .storage.sqlite import SQLiteSql, open_local_stores
    from .storage.sqlite_vec import open_vector_index

    settings = load_settings(os.environ if environ is None else environ)
    egress = None
    if settings.public:
        from .egress import Egress

        egress = Egress.from_settings(settings, resolver=resolver, dialer=dialer)
    stores = open_local_stores(settings.home)
    runtime = build_runtime(
        settings, storage=stores.storage, kv=stores.kv, blobs=stores.blobs, http=http, name="local"
    )
    runtime.egress = egress
    runtime.sql = SQLiteSql(stores.storage.database)
    runtime.vectors = open_vector_index(stores.storage.database.path)
    runtime.oauth = SqlOAuthStore(SQLiteSql(stores.storage.database), stores.kv)
    from .integrations.webhook_egress import GuardedSender

    sender = GuardedSender(public=settings.public, resolver=resolver, dialer=dialer, proxy=settings.proxy)
    runtime.webhooks = build_webhooks(runtime, sender=sender)
    _add_local_stt(runtime)
    _add_local_embed(runtime)
    _add_local_sources(runtime, egress)
    from .live.ffmpeg_live import FfmpegLive
    from .providers.ytdlp import YtDlpProvider

    pages = next((p for p in runtime.sources if isinstance(p, YtDlpProvider)), None)
    runtime.live = FfmpegLive(runtime.http, egress=egress, pages=pages)
    return runtime


def _add_local_embed(runtime: Runtime) -> None:
    """The local embedding model first in its ladder, when fastembed (the ``local`` extra) is
    installed; its settings are checked now, so a wrong folder stops start-up with its name."""
    from .search.embedders import fastembed_local

    if not fastembed_local.is_installed():
        return
    settings = runtime.settings
    local = fastembed_local.FastEmbedder(
        model=settings.embed_model,
        folder=settings.embed_model_dir,
        pooling=settings.embed_pooling,
        cache_dir=os.path.join(os.path.expanduser(settings.home), "models", "fastembed"),
    )
    runtime.embed = ordered_embedders([local, *runtime.embed])
    from .search.rerank_local import LocalReranker

    cache = os.path.join(os.path.expanduser(settings.home), "models", "fastembed")
    runtime.rerank = [LocalReranker(model=settings.rerank_model, cache_dir=cache), *runtime.rerank]


def _add_local_sources(runtime: Runtime, egress: Any) -> None:
    """The local source rungs, after the portable ones, cheapest and most faithful first.

    YouTube: InnerTube (portable, async, one round trip shared by metadata and captions), then
    youtube-transcript-api (the same flow maintained upstream, so an upgrade fixes it when YouTube
    changes; captions only, in a thread), then yt-dlp (a subprocess: slowest to start, but other
    clients, cookies and PO tokens, so it gets through when the others are blocked). Other pages:
    yt-dlp alone. Files: ffprobe/ffmpeg. Supadata, the hosted rung, comes after all of them here (it
    spends credits; on the Worker it follows InnerTube directly). yt-dlp cannot be pointed at VID2CONTEXT_YOUTUBE_ORIGIN, so
    while that replays recorded traffic it is left out of the YouTube ladder.
    """
    from .providers.localfile import LocalFileProvider
    from .providers.ytdlp import YtDlpProvider

    settings = runtime.settings
    replaying = settings.youtube_origin.rstrip("/") != "https://www.youtube.com"
    local: list[SourceProvider] = []
    try:
        from .providers.transcript_api import TranscriptApiProvider
    except ImportError:  # the `local` extra is not installed
        pass
    else:
        local.append(TranscriptApiProvider.from_settings(settings))
    ytdlp = YtDlpProvider.from_settings(
        settings, platforms=("web",) if replaying else ("web", "youtube"), egress=egress
    )
    local.append(ytdlp)
    files = LocalFileProvider.from_settings(settings)
    local.append(files)
    from .visual.local_ocr import LocalOcr

    uploads = next((p for p in runtime.sources if isinstance(p, UploadProvider)), None)
    from .visual.vision_openai import OpenAIVision

    vision = OpenAIVision(
        runtime.http, url=settings.vision_url, key=settings.vision_key, model=settings.vision_model
    )
    ocr = LocalOcr.from_settings(settings, files=files, uploads=uploads, vision=vision, web=ytdlp)
    runtime.visual = [ocr, *runtime.visual]
    # The hosted rung spends credits, and the user's own address usually works: it goes last.
    hosted = [p for p in runtime.sources if isinstance(p, SupadataProvider)]
    runtime.sources = [p for p in runtime.sources if p not in hosted] + local + hosted


def _add_local_stt(runtime: Runtime) -> None:
    """The local model first in the speech-to-text ladder (when faster-whisper is installed), and
    ffmpeg to split long audio for the hosted rungs."""
    from .providers import whisper_local
    from .providers.audio_local import FfmpegPrep

    if whisper_local.is_installed():
        model = whisper_local.find_model(runtime.settings.whisper_model)
        local = whisper_local.LocalWhisper(model, public=runtime.settings.public)
        runtime.stt = ordered([local, *runtime.stt])
    runtime.stt_plan.prep = FfmpegPrep(public=runtime.settings.public)


def build_worker_runtime(env: Any) -> Runtime:
    """The runtime of a Cloudflare Python Worker, from its ``env``: settings from its vars and
    secrets, the library in D1 (``DB``), small values in KV (``KV``), bytes in R2 (``BUCKET``),
    window vectors in Vectorize (``VECTORS``, optional: without it there is no vector index),
    speech-to-text, embeddings and the language model through Workers AI (``AI``, optional) in
    place of its REST rungs.

    Built once per isolate (the Worker runs the app's lifespan around every request, so this must
    not be redone per request): one httpx client, and the app is made with ``owns_runtime=False``.
    There is no ffmpeg here: long WAV, MP3 and Ogg are cut in pure Python (``chunking_portable``,
    the plan's default), and other audio too large for one speech-to-text request is refused
    with ``too-large`` and a hint.
    """
    from .answers.llm.workers_ai import WorkersAIBindingLlm, WorkersAILlm
    from .auth.store_sql import EdgeOAuthStore
    from .providers.whisper_workers_ai import WorkersAIBindingWhisper, WorkersAIWhisper
    from .search.embedders.workers_ai import WorkersAIBindingEmbedder, WorkersAIEmbedder
    from .storage.cloudflare import CloudflareAi, CloudflareKv, CloudflareStorage, D1Sql, R2Blobs
    from .storage.vectorize import VectorizeIndex

    settings = load_settings(_worker_environ(env))
    runtime = build_runtime(
        settings,
        storage=CloudflareStorage(env.DB, bucket=env.BUCKET),
        kv=CloudflareKv(env.KV),
        blobs=R2Blobs(env.BUCKET),
        name="worker",
    )
    runtime.sql = D1Sql(env.DB)
    runtime.oauth = EdgeOAuthStore(D1Sql(env.DB), runtime.kv)
    vectors = getattr(env, "VECTORS", None)
    runtime.vectors = None if vectors is None else VectorizeIndex(vectors, env.DB)
    _add_worker_queue(runtime, env)
    ai = getattr(env, "AI", None)
    binding_ai = None if ai is None else CloudflareAi(ai)
    binding = WorkersAIBindingWhisper(binding_ai)
    # The binding replaces the REST rung (same model and id): the Worker has no cloudflare SDK and
    # needs no API token for its own account.
    hosted = [rung for rung in runtime.stt if not isinstance(rung, WorkersAIWhisper)]
    runtime.stt = ordered([*hosted, binding])
    embedders = [rung for rung in runtime.embed if not isinstance(rung, WorkersAIEmbedder)]
    runtime.embed = ordered_embedders([WorkersAIBindingEmbedder(binding_ai), *embedders])
    runtime.rerank = [WorkersAIBindingReranker(binding_ai)]  # in place of the REST rung, as above
    # Groq over plain httpx, as the Worker's bundle (no groq SDK) would pick anyway; the binding in
    # place of the REST rung, as for speech-to-text and embeddings.
    runtime.llm = [
        WorkersAIBindingLlm(binding_ai) if isinstance(rung, WorkersAILlm) else rung
        for rung in hosted_llms(settings, runtime.http, groq_sdk=False)
    ]
    return runtime


def _add_worker_queue(runtime: Runtime, env: Any) -> None:
    """Jobs and MCP long runs on Cloudflare Queues when the Worker has a ``JOBS`` producer
    (``jobs_queued.py``, ``mcp/queued.py``), and watch-list claims in D1; without it both run in
    the isolate on ``waitUntil``."""
    from .storage.cloudflare_queue import D1JobLedger, D1WatchClaims, QueueProducer

    runtime.claims = D1WatchClaims(env.DB)
    queue = getattr(env, "JOBS", None)
    if queue is not None:
        from .jobs_queued import QueuedJobs
        from .mcp.queued import QueuedRuns
        from .storage.cloudflare_runs import D1RunLedger

        producer = QueueProducer(queue)
        retry_s = runtime.settings.job_retry_s
        runtime.jobs = QueuedJobs(D1JobLedger(env.DB), producer, retry_s=retry_s)  # type: ignore[assignment]
        runtime.mcp_runs = QueuedRuns(D1RunLedger(env.DB), producer, retry_s=retry_s)
    # Webhooks in D1; on the queue, one message per delivery attempt, when there is one.
    runtime.webhooks = build_webhooks(runtime, queue=None if queue is None else QueueProducer(queue))
    if queue is not None:
        runtime.jobs.on_end = runtime.webhooks.job_ended  # type: ignore[attr-defined]


def _worker_environ(env: Any) -> dict[str, str]:
    """The Worker's vars and secrets that name a setting, as ``load_settings`` reads them.

    wrangler.toml may give a var as a JSON number or boolean (``VID2CONTEXT_PUBLIC = true``); those
    are turned into the text a shell variable would hold. Anything else (an object) is refused with
    the variable's name, never its value.
    """
    environ: dict[str, str] = {}
    for setting in SETTINGS:
        value = getattr(env, setting.env, None)
        if value is None:
            continue
        if isinstance(value, bool):
            environ[setting.env] = "1" if value else "0"
        elif isinstance(value, str | int | float):
            environ[setting.env] = str(value)
        else:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"{setting.env} is not text: the Worker's vars and secrets must be strings.",
                hint=f"Tell the user to set {setting.env} as a string in wrangler.toml [vars] or with "
                "`wrangler secret put`; do not retry until then.",
            )
    return environ
