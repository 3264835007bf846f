"""A keyword window of several phrases read in FTS5's own order when it is small (SQLite only).

Why: a tier's window is its newest ``keyword.WINDOW`` matches, so FTS5 is asked for them
``ORDER BY rowid DESC``, and FTS5 walks a doclist backwards more slowly than forwards (on the
6 M-segment benchmark library, two mid-frequency words: 5.9 ms against 4.5 ms median by words,
up to twice as slow by stems). Several phrases ANDed rarely match more than a window's worth, and
then their whole intersection is walked either way. So such a window is first read forwards,
up to one row past the window: when that is all of it, the same rows are the answer, newest
first; when it is more, the forward walk stopped early (at the window's size) and the window is
read backwards as before. A single phrase (a common word: thousands of matches) keeps the
backward walk alone.

Only for the whole library: a search within videos walks their rowid ranges
(``keyword._sql_window``). The rows are those of ``keyword.UNTITLED_COLUMNS``, as the store reads
a window.
"""

from __future__ import annotations

from typing import Any

from ..search.query import fts_expression
from .keyword import UNTITLED_COLUMNS, WINDOW, Request, Window

__all__ = ["answer"]

_TABLES = {False: "segments_fts", True: "segments_stem"}


def answer(conn: Any, request: Request) -> list[Any] | None:
    """The window ``request`` asks for, read forwards first; ``None`` when it is not a window of
    several phrases or holds more than ``WINDOW`` matches (then the store reads it backwards)."""
    if not isinstance(request, Window) or len(request.required) + len(request.excluded) < 2:
        return None
    table = _TABLES[request.stemmed]
    match = fts_expression(request.required, request.excluded)
    ids = [
        row[0]
        for row in conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid LIMIT {WINDOW + 1}", (match,)
        )
    ]
    if len(ids) > WINDOW:
        return None
    if not ids:
        return []
    return conn.execute(
        f"SELECT {UNTITLED_COLUMNS} FROM json_each(?) AS j JOIN segments AS s ON s.id = j.value "
        "ORDER BY s.id DESC",
        ("[" + ",".join(map(str, ids)) + "]",),
    ).fetchall()
