"""``PRAGMA data_version`` read without letting go of the GIL.

The rendered-answer front (``api/cached_reads.py``) reads the library's version on the event loop
for every hit. Through ``sqlite3`` that is a few µs of SQLite but a release and re-take of the
GIL around ``sqlite3_step``; under load granian's own threads are waiting for the GIL, take it
there, and the loop waits for them: py-spy put a fifth of a worker's loop in that line. Here the
same statement is stepped through ``ctypes.PyDLL``, which keeps the GIL for the call.

The functions are looked up through the handle of the driver's own C extension (``_sqlite3``),
so they are the very SQLite that module runs on: a second copy of SQLite in the process would
keep its own table of POSIX locks, and closing its descriptor of the file would drop the locks
the first copy holds (the hazard that took out reading the ``-shm`` header directly). Where that
handle does not give them (SQLite linked in statically and hidden, another platform),
``open_held`` answers ``None`` and the caller keeps the ``sqlite3`` connection.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from types import ModuleType

__all__ = ["HeldVersion", "open_held"]

_OK, _ROW = 0, 100
_OPEN_READWRITE = 0x2
_OPEN_NOMUTEX = 0x8000  # the connection is only ever used under the GIL (PyDLL keeps it)
_SQL = b"PRAGMA data_version"


def _library(driver: ModuleType) -> ctypes.PyDLL | None:
    """The driver's SQLite as a ``PyDLL``, or ``None`` when its functions cannot be had safely."""
    package = driver.__name__.rpartition(".")[0] if driver.__name__.endswith(".dbapi2") else driver.__name__
    extension = sys.modules.get("_sqlite3" if package == "sqlite3" else f"{package}._sqlite3")
    path = getattr(extension, "__file__", None)
    if path is None or os.name != "posix":
        return None
    try:
        lib = ctypes.PyDLL(path)  # already loaded: dlopen hands back the same handle
        functions = (
            lib.sqlite3_open_v2,
            lib.sqlite3_prepare_v2,
            lib.sqlite3_step,
            lib.sqlite3_column_int64,
            lib.sqlite3_reset,
            lib.sqlite3_finalize,
            lib.sqlite3_close_v2,
            lib.sqlite3_libversion,
        )
    except (OSError, AttributeError):
        return None
    open_v2, prepare, step, column, reset, finalize, close, libversion = functions
    open_v2.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_char_p]
    prepare.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_void_p),
        ctypes.c_void_p,
    ]
    step.argtypes = reset.argtypes = finalize.argtypes = close.argtypes = [ctypes.c_void_p]
    column.argtypes = [ctypes.c_void_p, ctypes.c_int]
    column.restype = ctypes.c_int64
    libversion.restype = ctypes.c_char_p
    if libversion().decode() != driver.sqlite_version:
        return None  # not the SQLite the driver reports: do not mix two
    return lib


class HeldVersion:
    """One connection of its own that never writes, with the pragma prepared once."""

    def __init__(self, lib: ctypes.PyDLL, db: ctypes.c_void_p, stmt: ctypes.c_void_p) -> None:
        self._lib = lib
        self._db = db
        self._stmt = stmt
        self._lock = threading.Lock()  # ``close`` may come from another thread

    def __call__(self) -> int | None:
        """The version now, or ``None`` when the file is busy (no busy handler: never waits) or closed."""
        stmt = self._stmt
        if stmt is None:
            return None
        lib = self._lib
        with self._lock:
            if self._stmt is None:
                return None
            rc = lib.sqlite3_step(stmt)
            version = lib.sqlite3_column_int64(stmt, 0) if rc == _ROW else None
            lib.sqlite3_reset(stmt)
        return version

    def close(self) -> None:
        with self._lock:
            if self._stmt is not None:
                self._lib.sqlite3_finalize(self._stmt)
                self._stmt = None
            if self._db is not None:
                self._lib.sqlite3_close_v2(self._db)
                self._db = None


def open_held(driver: ModuleType, path: str | os.PathLike[str]) -> HeldVersion | None:
    """A ``HeldVersion`` of the database at ``path`` through ``driver``'s own SQLite, or ``None``."""
    lib = _library(driver)
    if lib is None:
        return None
    db = ctypes.c_void_p()
    rc = lib.sqlite3_open_v2(os.fsencode(path), ctypes.byref(db), _OPEN_READWRITE | _OPEN_NOMUTEX, None)
    if rc != _OK:
        lib.sqlite3_close_v2(db)
        return None
    stmt = ctypes.c_void_p()
    if lib.sqlite3_prepare_v2(db, _SQL, -1, ctypes.byref(stmt), None) != _OK:
        lib.sqlite3_close_v2(db)
        return None
    return HeldVersion(lib, db, stmt)
