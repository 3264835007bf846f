"""``create_mcp`` follows its runtime's collections (``Runtime.on_added``) only while the server
lives: servers built on one runtime and dropped, as tests build them, leave no listener behind,
and the one still in use is still told what joined a collection."""

from __future__ import annotations

import gc
import warnings
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client

from vid2context import library
from vid2context.mcp import create_mcp

from .duplicate_cases import talk
from .runtimes import Runtimes
from .test_indexing import QUIET

pytestmark = pytest.mark.anyio

WAIT_S = 30  # a bound on a hang, never a measured time


async def test_dropped_servers_leave_no_listener_and_the_kept_one_is_still_told(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)
    before = len(runtime.on_added)
    kept = create_mcp(runtime)
    for _ in range(5):
        create_mcp(runtime)
    gc.collect()
    assert len(runtime.on_added) == before + 1

    uris: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            uris.append(str(message.params.uri))
            arrived.set()

    await runtime.storage.put_context(talk("Followed001", "for"))
    async with Client(kept, mode="legacy", message_handler=on_message) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SDK marks resources/subscribe as 2025-era
            await client.subscribe_resource("vid2context://collection/Followed/latest")
        made = await library.create_collection(runtime, "Followed")
        await library.add_to_collection(runtime, made.id, ["Followed001"])
        with anyio.fail_after(WAIT_S):
            await arrived.wait()
    assert uris == ["vid2context://collection/Followed/latest"]

    del kept, client
    gc.collect()
    assert len(runtime.on_added) == before
    await library.add_to_collection(runtime, made.id, ["Followed001"])  # no listener left to fail
