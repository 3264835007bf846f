"""Resource subscriptions: a collection's resources are updated when videos join it.

A client that follows a watch list subscribes to ``vid2context://collection/{id}/latest`` (or to
``vid2context://collection/{id}``) and reads it again when told. Who is told depends on the
protocol version of the connection:

- **up to 2025-11-25** ``resources/subscribe`` and ``resources/unsubscribe``, kept here per
  connection (stdio: the one session; HTTP: a session of session mode, ``http.py``): each gets
  ``notifications/resources/updated`` with the URI it subscribed to. A connection that ends is
  forgotten with it (weak references). Stateless HTTP has no connection that outlives a request,
  so nothing can be sent there.
- **2026-07-28** has no ``resources/subscribe``: a ``subscriptions/listen`` stream asks for the
  URIs, and the SDK's bus delivers the event (published here with the id and the name forms).

A collection may be named by its id or its unique name in the URI, so a client can subscribe
before a list it is about to create has an id. Only what joins a collection in this process is
seen (``Runtime.on_added``): the refresh of ``vid2context serve`` (its scheduler, REST, MCP) for
HTTP, the calls of this stdio server for stdio; a refresh another process runs is not.
"""

from __future__ import annotations

import logging
import re
import weakref
from typing import Any
from urllib.parse import quote, unquote

from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams

from ..runtime import Runtime
from ..storage.base import Storage

__all__ = ["Subscriptions", "collection_uris", "register"]

log = logging.getLogger("vid2context.mcp")

_COLLECTION = re.compile(r"^vid2context://collection/([^/?#]+)(/latest)?$")
_Key = tuple[str, str]
"""A subscription: the collection as named in the URI (decoded), and ``""`` or ``"/latest"``."""


def _key(uri: str) -> _Key:
    match = _COLLECTION.match(uri.strip())
    if match is None:
        raise MCPError(
            INVALID_PARAMS,
            f"{uri[:200]!r} cannot be subscribed to: only collections change. Subscribe to "
            "vid2context://collection/{id}/latest (or vid2context://collection/{id}), by id or name.",
        )
    return unquote(match.group(1)), match.group(2) or ""


def collection_uris(key: str) -> list[str]:
    """The URIs of a collection named ``key``: the collection itself and its latest items."""
    base = f"vid2context://collection/{quote(key, safe='')}"
    return [base + "/latest", base]


class Subscriptions:
    """Who subscribed to what, per connection, and the sending of updates."""

    def __init__(self, server: MCPServer, storage: Storage) -> None:
        self._server = server
        self._storage = storage
        self._by_connection: weakref.WeakKeyDictionary[Any, dict[_Key, str]] = weakref.WeakKeyDictionary()

    def subscribe(self, connection: Any, uri: str) -> None:
        self._by_connection.setdefault(connection, {})[_key(uri)] = uri

    def unsubscribe(self, connection: Any, uri: str) -> None:
        self._by_connection.get(connection, {}).pop(_key(uri), None)

    async def added(self, collection_id: str, added: list[Any]) -> None:
        """Videos joined the collection: tell each connection subscribed to it, by id or name,
        and publish the event for ``subscriptions/listen`` streams."""
        if not added:
            return
        names = {collection_id}
        collection = await self._storage.get_collection(collection_id)
        if collection is not None:
            names.add(collection.name)
        for connection, keys in list(self._by_connection.items()):
            for (name, _), uri in list(keys.items()):
                if name in names:
                    try:
                        await connection.send_resource_updated(uri)
                    except Exception:  # noqa: BLE001 - a gone client must not fail the refresh
                        log.debug("resources/updated for %s not sent", uri, exc_info=True)
        bus = self._server._subscriptions
        for name in sorted(names):
            for uri in collection_uris(name):
                await bus.publish(ResourceUpdated(uri=uri))


def _connection_of(ctx: Any) -> Any:
    session = ctx.session
    return getattr(session, "_connection", session)


def register(server: MCPServer, runtime: Runtime) -> Subscriptions:
    """Serve ``resources/subscribe`` and ``resources/unsubscribe``, and follow ``runtime``'s
    collections."""
    subscriptions = Subscriptions(server, runtime.storage)

    async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        subscriptions.subscribe(_connection_of(ctx), str(params.uri))
        return EmptyResult()

    async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        subscriptions.unsubscribe(_connection_of(ctx), str(params.uri))
        return EmptyResult()

    low = server._lowlevel_server
    low.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
    low.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)
    _follow(runtime, subscriptions)
    return subscriptions


def _follow(runtime: Runtime, subscriptions: Subscriptions) -> None:
    """Tell ``subscriptions`` of ``runtime``'s additions for as long as its server lives.

    The runtime holds the listener, and the listener only a weak reference to ``subscriptions``
    (which the server holds): a server that is dropped (tests build many on one runtime) is
    collected, and its listener leaves ``runtime.on_added`` with it."""
    added = weakref.WeakMethod(subscriptions.added)
    listeners = runtime.on_added

    async def listener(collection_id: str, videos: list[Any]) -> None:
        method = added()
        if method is not None:
            await method(collection_id, videos)

    def drop() -> None:
        if listener in listeners:
            listeners.remove(listener)

    listeners.append(listener)
    weakref.finalize(subscriptions, drop)
