"""Whether anything was committed to a SQLite file in WAL mode, without asking SQLite.

The rendered-answer cache asks for the file's version on every cached read, on the event loop
(``api/rendered.py``). ``PRAGMA data_version`` is a few µs of work, but Python's ``sqlite3``
lets go of the GIL around every step, and under load the server's other threads (granian's, which
hand requests to the loop) take it each time: over sockets that wait was a sixth of the loop's
time per cached read. This module reads the same fact from memory instead.

SQLite's WAL-index (the ``-shm`` file beside the database, mapped into every connection's
process) begins with a 48-byte header that every committed write transaction rewrites: its
``iChange`` counter goes up by one, and ``mxFrame``, the checksums and (after a checkpoint
restarts the log) the salts change with it (https://www.sqlite.org/walformat.html, "The
WAL-Index Header"). So while those bytes are what they were, nothing was committed, and the
``data_version`` read after them still holds; when they differ (a commit, or a header caught
half-written), the caller asks SQLite again. A false "unchanged" would need the counter to come
back to the same value, which takes 2^32 commits.

The map is read-only and shared; reading a slice of it never releases the GIL. Where there is no
``-shm`` file to map (not WAL mode, an empty file, another platform's quirks), ``WalHeader.open``
gives ``None`` and the caller asks SQLite every time, as before.
"""

from __future__ import annotations

import mmap
from pathlib import Path

__all__ = ["HEADER_BYTES", "WalHeader"]

HEADER_BYTES = 48
"""The first copy of the WAL-index header: all of it changes, some of it, on each commit."""


class WalHeader:
    """The live WAL-index header of one database file, read from a shared map."""

    def __init__(self, mapped: mmap.mmap) -> None:
        self._mapped = mapped

    @classmethod
    def open(cls, database: Path) -> WalHeader | None:
        """The header of ``database``'s ``-shm`` file, or ``None`` when it cannot be mapped. Open
        it while a connection to the file is open, and close it before the last one closes (the
        last connection may delete the file)."""
        try:
            with open(f"{database}-shm", "rb") as file:
                return cls(mmap.mmap(file.fileno(), HEADER_BYTES, access=mmap.ACCESS_READ))
        except (OSError, ValueError):  # missing, empty, or not mappable here
            return None

    def read(self) -> bytes:
        """The header's bytes now (a copy; a writer may be changing them as they are read)."""
        return self._mapped[:HEADER_BYTES]

    def close(self) -> None:
        self._mapped.close()
