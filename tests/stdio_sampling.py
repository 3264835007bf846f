"""The stdio server in a subprocess, with a client whose model answers through sampling.

``sampling_stdio(tmp_path, callback)`` starts ``vid2context mcp`` as a client configuration does
(no server language-model rung: every ``VID2CONTEXT_``, ``GROQ_`` and ``CLOUDFLARE_`` variable
left out), its library under ``tmp_path`` and YouTube answered by ``ReplayServer``, and yields the
SDK client speaking 2025-11-25 (where sampling travels mid-call) with ``callback`` as its model.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from .youtube_replay import ReplayServer

__all__ = ["sampling_stdio"]


@asynccontextmanager
async def sampling_stdio(tmp_path: Path, callback: Callable[..., Any]) -> AsyncIterator[Client]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VID2CONTEXT_", "GROQ_", "CLOUDFLARE_"))}
    with ReplayServer() as replay, (tmp_path / "stderr.txt").open("w+", encoding="utf-8") as errors:
        env.update(
            VID2CONTEXT_HOME=str(tmp_path / "home"),
            VID2CONTEXT_YOUTUBE_ORIGIN=replay.origin,
            PYTHONUNBUFFERED="1",
        )
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "vid2context", "mcp"], env=env, cwd=str(tmp_path)
        )
        async with Client(
            stdio_client(params, errlog=errors), mode="legacy", sampling_callback=callback
        ) as client:
            yield client
