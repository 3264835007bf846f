"""Loopback ports for the servers tests start, without losing a run to a port another process took.

A port found free and then given to a server can be taken in between by any process on the
machine (an outgoing connection's ephemeral port comes from the same range). An in-process
server is given a socket bound here instead (``bound_socket``), so there is nothing in between;
``vid2context serve`` in a subprocess binds its own, so ``start_serve`` tries another port when
the server exits because its port was taken.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import httpx

__all__ = ["bound_socket", "free_port", "healthy", "start_serve"]

TRIES = 3


def free_port() -> int:
    """A port the system had free a moment ago (see the module docstring for what that risks)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def bound_socket() -> socket.socket:
    """A socket bound to a free loopback port, for ``uvicorn.Server.serve(sockets=[...])``."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def start_serve(
    env: Mapping[str, str],
    log: Path,
    ready: Callable[[str, subprocess.Popen[bytes]], bool],
    *,
    args: Sequence[str] = (),
    within_s: float = 90,
) -> tuple[subprocess.Popen[bytes], str]:
    """``vid2context serve`` on a free port, its output in ``log``, once ``ready(url, process)``.

    Polling for readiness, not timing anything: ``within_s`` is far beyond a start on a busy
    machine. A server that exits because its port was taken is started again on another one;
    any other exit, or no readiness in time, fails with what the server wrote.
    """
    for _ in range(TRIES):
        port = free_port()
        with log.open("wb") as output:  # the child keeps its own copy of the descriptor
            process = subprocess.Popen(
                [sys.executable, "-m", "vid2context", "serve", "--port", str(port), *args],
                env=dict(env),
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        url = f"http://127.0.0.1:{port}"
        ready_by = time.monotonic() + within_s
        while process.poll() is None and time.monotonic() < ready_by:
            if ready(url, process):
                return process, url
            time.sleep(0.2)
        if process.poll() is None:
            process.kill()
            process.wait()
            raise AssertionError(f"the server was not ready within {within_s} s: {log.read_text()}")
        written = log.read_text()
        if "Address already in use" not in written:
            raise AssertionError(written or f"the server exited with {process.returncode}")
    raise AssertionError(f"no free port after {TRIES} tries: {log.read_text()}")


def healthy(url: str, process: subprocess.Popen[bytes]) -> bool:
    """Whether the server at ``url`` answers its health route (a ``ready`` for ``start_serve``)."""
    try:
        return httpx.get(url + "/api/v1/health", timeout=10).status_code == 200
    except httpx.TransportError:
        return False
