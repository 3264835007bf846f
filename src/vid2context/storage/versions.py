"""The library's version as this runtime reads it: the one place that knows how.

Whatever is kept between requests because it came from saved videos (rendered answers,
``api/rendered.py``; the decoded videos search cites from, ``search/contexts.py``) is good only
while no saved video changed, whoever changed it. Locally SQLite says so without a round trip
(``Versioned``: ``PRAGMA data_version``); on the Worker an isolate learns of other isolates'
writes only by asking D1, whose ``library_version`` row every write to ``videos`` bumps
(``LibraryVersioned``, ``migrations/0011_leanlist.sql``). ``version_reader`` picks the way once
per storage: a runtime-checkable protocol's ``isinstance`` costs more than the read itself, so it
must not run on every request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .base import LibraryVersioned, Versioned

__all__ = ["VersionNow", "VersionReader", "version_now", "version_reader"]

VersionReader = Callable[[], Awaitable[int | None]]
"""Reads the library's version now: a number that differs from every earlier answer once a saved
video may have changed; ``None`` when it cannot be told (then nothing may be served from a cache)."""

VersionNow = Callable[[], int | None]
"""The same version read without waiting, where the storage can (SQLite: shared memory)."""


def version_now(storage: object) -> VersionNow | None:
    """How to read ``storage``'s version without waiting, or ``None`` where it is a query away."""
    return storage.data_version if isinstance(storage, Versioned) else None


def version_reader(storage: object) -> VersionReader | None:
    """How to read ``storage``'s version, or ``None`` when it has none (then keep nothing)."""
    now = version_now(storage)
    if now is not None:

        async def read() -> int | None:
            return now()

        return read
    if isinstance(storage, LibraryVersioned):
        return storage.library_version
    return None
