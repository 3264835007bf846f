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
from .models import VideoContext
from .providers.base import SourceProvider
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

    async def aclose(self) -> None:
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
    return Runtime(
        settings=settings,
        storage=storage or MemoryStorage(),
        kv=kv or MemoryKv(),
        blobs=blobs or MemoryBlobs(),
        http=client,
        sources=sources,
        name=name,
    )


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
    return build_runtime(
        settings, storage=stores.storage, kv=stores.kv, blobs=stores.blobs, http=http, name="local"
    )
