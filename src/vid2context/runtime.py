"""The runtime: settings, storage and the provider ladders, chosen once per process or isolate.

``create_app(runtime)`` and the CLI take a ``Runtime`` and hold no global state of their own.
Adding a provider is one module plus one line in the builder below that puts it in its ladder.
The local builder imports the local-only modules inside the function, so importing this module on
the Worker never pulls in subprocess or sqlite3.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import httpx

from . import __version__
from .chunking import SttPlan
from .jobs import JobQueue
from .models import VideoContext
from .providers.base import SourceProvider
from .providers.speech import SpeechToText
from .providers.stt import hosted_rungs, ordered, stt_plan
from .providers.upload import UploadProvider
from .providers.youtube import YouTubeProvider
from .settings import Settings, load_settings
from .singleflight import SingleFlight
from .storage.base import BlobStore, KvStore, Storage
from .storage.memory import MemoryBlobs, MemoryKv, MemoryStorage

__all__ = ["Runtime", "build_local_runtime", "build_runtime", "make_http_client"]


@dataclass
class Runtime:
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

    async def aclose(self) -> None:
        await self.jobs.aclose()  # first: a stopping job still writes its state
        await self.storage.close()
        await self.http.aclose()


def make_http_client(settings: Settings, transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
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
) -> Runtime:
    """A runtime with the portable providers only: what every platform can run."""
    client = http or make_http_client(settings)
    sources: list[SourceProvider] = [
        YouTubeProvider(client, origin=settings.youtube_origin, max_items=settings.max_playlist_items),
    ]
    runtime = Runtime(
        settings=settings,
        storage=storage or MemoryStorage(),
        kv=kv or MemoryKv(),
        blobs=blobs or MemoryBlobs(),
        http=client,
        sources=sources,
        name=name,
        stt=ordered(hosted_rungs(settings, client)),
        stt_plan=stt_plan(settings),
    )
    runtime.sources.append(UploadProvider(runtime))
    return runtime


def build_local_runtime(
    environ: Mapping[str, str] | None = None,
    *,
    http: httpx.AsyncClient | None = None,
) -> Runtime:
    """The runtime for a laptop or server: settings from the environment, the SQLite library,
    KV and blobs under ``$VID2CONTEXT_HOME``.

    Local-only modules are imported here, inside the function, so the Worker never loads them.
    """
    from .storage.sqlite import open_local_stores

    settings = load_settings(os.environ if environ is None else environ)
    stores = open_local_stores(settings.home)
    runtime = build_runtime(
        settings, storage=stores.storage, kv=stores.kv, blobs=stores.blobs, http=http, name="local"
    )
    _add_local_stt(runtime)
    _add_local_sources(runtime)
    return runtime


def _add_local_sources(runtime: Runtime) -> None:
    """The local source rungs, after the portable ones, cheapest and most faithful first.

    YouTube: InnerTube (portable, async, one round trip shared by metadata and captions), then
    youtube-transcript-api (the same flow maintained upstream, so an upgrade fixes it when YouTube
    changes; captions only, in a thread), then yt-dlp (a subprocess: slowest to start, but other
    clients, cookies and PO tokens, so it gets through when the others are blocked). Other pages:
    yt-dlp alone. Files: ffprobe/ffmpeg. yt-dlp cannot be pointed at VID2CONTEXT_YOUTUBE_ORIGIN, so
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
    local.append(YtDlpProvider.from_settings(settings, platforms=("web",) if replaying else ("web", "youtube")))
    local.append(LocalFileProvider.from_settings(settings))
    runtime.sources.extend(local)


def _add_local_stt(runtime: Runtime) -> None:
    """The local model first in the speech-to-text ladder (when faster-whisper is installed), and
    ffmpeg to split long audio for the hosted rungs."""
    from .providers import whisper_local
    from .providers.audio_local import FfmpegPrep

    if whisper_local.is_installed():
        model = whisper_local.find_model(runtime.settings.whisper_model)
        runtime.stt = ordered([whisper_local.LocalWhisper(model), *runtime.stt])
    runtime.stt_plan.prep = FfmpegPrep()
