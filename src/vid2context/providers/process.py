"""Run a program (yt-dlp, ffmpeg, ffprobe) as an async subprocess that always ends in time.

Local only: the Worker has no subprocesses. The program starts in a new session, so it leads its
own process group; when the call's time is up, the call is aborted (``ctx.abort()``), or the
awaiting task is cancelled, the whole group is stopped (SIGTERM, then SIGKILL after a grace
period), grandchildren included: yt-dlp starts ffmpeg, and neither may outlive the call.

Failures are ``VidError``::

    program not found / not executable ... no-provider (with the caller's install hint)
    ran past ``timeout`` ................. timeout
    ctx deadline passed / ctx aborted .... timeout / canceled (from ``ctx.check()``)

A non-zero exit is not an error here: the caller reads ``stderr`` and says what it means.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass

from ..ctx import Ctx
from ..errors import ErrorCode, VidError

__all__ = ["Completed", "first_line", "run_program"]

_POLL_S = 0.1
_GRACE_S = 2.0
_STDERR_KEEP = 64 * 1024


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: bytes
    stderr: str
    """Decoded as UTF-8 (bad bytes replaced), at most the last 64 KiB."""


def _kill_group(process: asyncio.subprocess.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)  # the session leader's pid is the group id


async def _stop(process: asyncio.subprocess.Process, work: asyncio.Future[tuple[bytes, bytes]]) -> None:
    """SIGTERM to the group, SIGKILL to whatever is left after the grace period, then wait for the
    pipes to close (a grandchild holding them ends with the group), so nothing outlives the call."""
    _kill_group(process, signal.SIGTERM)
    try:
        await asyncio.wait_for(asyncio.shield(process.wait()), _GRACE_S)
    except TimeoutError:
        pass
    _kill_group(process, signal.SIGKILL)  # grandchildren that ignored SIGTERM, or outlived the leader
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    await process.wait()
    await asyncio.wait({work}, timeout=_GRACE_S)
    if not work.done():
        work.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await work


def first_line(stderr: str, default: str = "failed", limit: int = 160) -> str:
    """What a program said first on stderr, short enough for a message."""
    return next((line for line in stderr.splitlines() if line.strip()), default)[:limit]


async def run_program(
    argv: list[str],
    ctx: Ctx,
    *,
    timeout: float,
    what: str,
    missing_hint: str,
    env: dict[str, str] | None = None,
) -> Completed:
    """Run ``argv`` to completion within ``timeout`` seconds (and the call's own deadline).

    ``what`` names the run in messages ("yt-dlp", "ffprobe"); ``missing_hint`` is the next step when
    the program is not installed.
    """
    ctx.check()
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            env=env,
        )
    except (FileNotFoundError, NotADirectoryError):
        raise VidError(
            ErrorCode.NO_PROVIDER, f"{what} is not installed (or not on PATH).", hint=missing_hint
        ) from None
    except PermissionError:
        raise VidError(
            ErrorCode.NO_PROVIDER,
            f"{what} was found but cannot be run (permission denied).",
            hint=missing_hint,
        ) from None
    except OSError as exc:  # an exec format error: a file that is not a program
        raise VidError(
            ErrorCode.NO_PROVIDER,
            f"{what} cannot be run ({exc.strerror or type(exc).__name__}).",
            hint=missing_hint,
        ) from None
    work = asyncio.ensure_future(process.communicate())
    loop = asyncio.get_running_loop()
    ends = loop.time() + timeout
    finished = False
    try:
        while not work.done():
            left = ends - loop.time()
            remaining = ctx.remaining
            if left <= 0 or ctx.aborted or remaining == 0:
                break
            await asyncio.wait(
                {work}, timeout=min(_POLL_S, left, remaining if remaining is not None else left)
            )
        if work.done():
            stdout, stderr = work.result()
            finished = True
            return Completed(
                process.returncode or 0, stdout, stderr[-_STDERR_KEEP:].decode("utf-8", "replace")
            )
    finally:
        if not finished:
            await asyncio.shield(_stop(process, work))
    ctx.check()  # aborted, or the call's deadline: the call's own error
    raise VidError(
        ErrorCode.TIMEOUT,
        f"{what} took longer than {timeout:g} s and was stopped.",
        hint="Repeat the call once; if it runs out of time again, tell the user to raise "
        "VID2CONTEXT_YTDLP_TIMEOUT_S or to check the network and VID2CONTEXT_PROXY, and do not retry.",
    )
