"""``include``: the layers a call adds to the transcript it asks for, checked one way everywhere.

``mode`` says where the transcript comes from; ``include`` adds a layer beside it, whatever the
mode. The one layer today is ``on_screen``: the picture read as ``mode=video`` reads it
(``visual.layer``), so ``mode=stt`` with ``include=on_screen`` is the speech-to-text transcript
and the slides. REST takes it comma-separated (``include=on_screen``), MCP as a list; an unknown
value is a ``bad-request`` naming the ones there are, before anything is fetched.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import ErrorCode, VidError

__all__ = ["INCLUDES", "MAX_INCLUDE_CHARS", "parse_include"]

INCLUDES: tuple[str, ...] = ("on_screen",)
"""The layers ``include`` names."""
MAX_INCLUDE_CHARS = 200
"""More than every name and separator there is, with room for spaces."""


def _bad(message: str) -> VidError:
    return VidError(
        ErrorCode.BAD_REQUEST,
        message,
        hint="Give include as a list of: "
        + ", ".join(INCLUDES)
        + " (REST: include=on_screen), or leave it out.",
    )


def parse_include(value: str | Iterable[object] | None) -> frozenset[str]:
    """The layers named by ``value``: a comma-separated string (REST) or a list of strings
    (MCP); ``None`` or empty names none. ``bad-request`` for anything else."""
    if value is None:
        return frozenset()
    if isinstance(value, str):
        if len(value) > MAX_INCLUDE_CHARS:
            raise _bad(f"include is {len(value)} characters long; it names at most {len(INCLUDES)} layers.")
        names: list[object] = value.split(",")
    elif isinstance(value, (list, tuple)):
        if len(value) > len(INCLUDES) * 4:
            raise _bad(f"include lists {len(value)} values; there are {len(INCLUDES)} layers.")
        names = list(value)
    else:
        raise _bad("include must be a list of layer names.")
    found: set[str] = set()
    for name in names:
        if not isinstance(name, str):
            raise _bad("include must be a list of layer names (strings).")
        checked = name.strip().lower().replace("-", "_")
        if not checked:
            continue
        if checked not in INCLUDES:
            shown = name.strip()[:30]
            raise _bad(f"Unknown include {shown!r}.")
        found.add(checked)
    return frozenset(found)
