"""The frame a CLI command that works on the library runs in: a local runtime, closed however the
command ends, and an error we can explain printed to stderr as exit status 1.

``get``, ``search``, ``index``, ``refresh`` and ``push``/``pull``/``sync`` each carried these lines.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TextIO

from .errors import VidError
from .runtime import Runtime, build_local_runtime

__all__ = ["on_local_runtime", "print_error"]


def print_error(error: VidError, err: TextIO, *, attempts: bool = True) -> None:
    """``error: <code>: <message>``, its hint, and (with ``attempts``) each rung it tried."""
    print(f"error: {error.code.value}: {error.message}", file=err)
    if error.hint:
        print(f"hint: {error.hint}", file=err)
    for attempt in error.attempts if attempts else ():
        reason = f" ({attempt.reason})" if attempt.reason else ""
        print(f"  tried {attempt.id} [{attempt.stage}] {attempt.outcome}{reason}, {attempt.ms} ms", file=err)


async def on_local_runtime(
    work: Callable[[Runtime], Awaitable[int]], err: TextIO, *, attempts: bool = True
) -> int:
    """``work``'s exit status on a new local runtime; a ``VidError`` is printed (``print_error``)
    and is 1. The runtime is closed after, whatever happened."""
    runtime = build_local_runtime()
    try:
        return await work(runtime)
    except VidError as error:
        print_error(error, err, attempts=attempts)
        return 1
    finally:
        await runtime.aclose()
