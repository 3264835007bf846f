"""What Python code sees as ``env.DB``, ``env.KV`` and ``env.BUCKET`` on Cloudflare, backed by Miniflare.

The objects here forward every call over HTTP to ``tests/miniflare/worker.mjs``, which runs it on
Miniflare's real D1, KV and R2 (workerd, SQLite with FTS5), so SQL, transactions, TTL rules and
R2 metadata behave as deployed. ``miniflare_harness.py`` starts the server; ``CloudflareEnv``
is its ``env``, and carries the Worker's vars and secrets as string attributes and, when given,
an ``AI`` binding (``WorkersAi``) backed by a Workers AI REST endpoint (``tests/fake_whisper.py``).

These calls stand for in-process binding calls, not upstream traffic, so they go through
``HarnessTransport``, which pytest-httpx's ``httpx_mock`` does not intercept: a test mocking
YouTube sees (and asserts on) upstream requests only.

On a Python Worker the bindings are *not* wrapped by the ``workers`` SDK (its ``_EnvWrapper`` only
wraps service, Durable Object and Workflow bindings): Python calls the JavaScript objects through
Pyodide's FFI. What that means, and how faithfully this module reproduces it:

Faithful
    - Call shapes: ``DB.prepare(sql).bind(*args)`` (``bind`` returns a new statement), ``.all()``,
      ``.first(column=None)``, ``.run()``, ``.raw()``, ``DB.batch([...])`` (one transaction: a failing
      statement rolls the whole batch back), ``DB.exec(sql)``; ``KV.get/getWithMetadata/put/delete/
      list`` with options as keyword arguments (Pyodide passes ``**kwargs`` as a trailing JS
      object); ``BUCKET.put/get/head/delete/list``.
    - Results are JS objects, not dicts: properties are attributes (``result.results``,
      ``obj.httpMetadata.contentType``), a missing one raises ``AttributeError``, subscripting
      (``result["results"]``) raises ``TypeError``, and ``.to_py()`` gives plain dicts and lists:
      ``.all()`` is ``{"results": [row dicts], "meta": {...}}`` only after ``.to_py()``. JS
      ``null``/``undefined`` arrive as ``None``; numbers arrive as ``int`` when they are integral,
      else ``float`` (Pyodide's rule, which JSON reproduces), so a REAL column holding ``12.0``
      reads back as ``12``.
    - ``bind()`` argument conversion: Pyodide turns ``None`` into ``undefined``, which D1 rejects
      with ``D1_TYPE_ERROR``; ints beyond 2**53 become ``BigInt`` (rejected); ``bytes``, ``dict``,
      ``list`` arrive as PyProxies (rejected). The same values raise the same error here. Booleans
      become 1/0 as in D1.
    - Errors: a binding that throws raises ``JsException`` (as ``pyodide.ffi.JsException``) with
      ``.name`` and ``.message``, e.g. ``"D1_ERROR: no such table: x: SQLITE_ERROR"``.
    - D1 limits Miniflare does not enforce (100 bound parameters, 100,000-byte statements,
      2 MB values) are enforced by ``worker.mjs`` with D1's messages.
    - KV: ``expirationTtl`` below 60 s is rejected as in production; ``list`` reports each key's
      ``expiration``.

Approximated
    - JS arrays are ``list`` subclasses (with ``to_py()``): indexing, ``len`` and iteration work as
      on a real array proxy, but ``==`` compares values where a ``JsProxy`` compares identity.
    - ``arrayBuffer()`` returns ``bytes`` (a subclass with ``.to_bytes()``, as a JS ``ArrayBuffer``
      proxy has) rather than a ``JsBuffer``.
    - Values that real code must convert with ``pyodide.ffi.to_js`` before handing them to JS
      (``bytes`` for R2 bodies, ``dict`` options such as ``httpMetadata``) are accepted as plain
      Python values, because under CPython that conversion is the identity. A missing ``to_js``
      therefore passes here and fails on Cloudflare; ``cloudflare.py`` routes every such value
      through one helper for this reason.
    - A positional options ``dict`` (``KV.put(k, v, {"expirationTtl": 60})``) raises ``TypeError``
      here; on Cloudflare it arrives as a PyProxy whose fields JS cannot read, so the options are
      silently ignored. Stricter on purpose.
    - Timing: every call is an HTTP round trip to 127.0.0.1 (2 to 10 ms here, through Miniflare's
      entry worker), not an in-process binding call; benchmark figures include it.
    - Not provided: ``DB.withSession``, ``DB.dump``, KV ``getWithMetadata`` of several keys, R2
      multipart uploads, ranges and conditional gets.
    - ``AI.run(model, inputs)`` posts ``inputs`` to a Workers AI REST endpoint and answers its
      ``result``; an error answer raises ``JsException`` as the binding's rejection does. Only the
      call shape is the binding's: limits and errors are whatever that endpoint answers. With
      ``stream: true`` it resolves to a ``ReadableStream`` of the endpoint's event-stream bytes
      (``getReader().read()`` gives ``{done, value}``; a ``Uint8Array`` value is approximated by
      bytes with ``to_bytes()``), as the binding's does.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
from collections.abc import Mapping
from typing import Any

import httpx

__all__ = [
    "CloudflareEnv",
    "D1Database",
    "D1PreparedStatement",
    "HarnessSyncTransport",
    "HarnessTransport",
    "JsArray",
    "JsArrayBuffer",
    "JsException",
    "JsObject",
    "KVNamespace",
    "R2Bucket",
    "R2Object",
    "Queue",
    "R2ObjectBody",
    "ReadableStream",
    "WorkersAi",
]

_MAX_SAFE_INTEGER = 2**53 - 1

# httpx's own request methods, taken before any test runs: pytest-httpx replaces these on the
# classes while ``httpx_mock`` is active, and the harness transports below call the originals.
_SEND_ASYNC = httpx.AsyncHTTPTransport.handle_async_request
_SEND_SYNC = httpx.HTTPTransport.handle_request
if "mock" in _SEND_ASYNC.__qualname__ or "mock" in _SEND_SYNC.__qualname__:
    raise ImportError(
        "tests.cloudflare_bindings must be imported before httpx_mock is active (conftest does)"
    )


class HarnessTransport(httpx.AsyncHTTPTransport):
    """httpx's transport, left alone by ``httpx_mock``: the bindings' calls to the harness."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await _SEND_ASYNC(self, request)


class HarnessSyncTransport(httpx.HTTPTransport):
    """The blocking twin of ``HarnessTransport``, for the harness's admin calls (``reset``)."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return _SEND_SYNC(self, request)


class JsException(Exception):
    """A JavaScript error thrown by a binding, as ``pyodide.ffi.JsException`` presents it."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


class JsObject:
    """A JS object as Pyodide's ``JsProxy`` shows it: properties as attributes, ``to_py()`` for a dict.

    Like the real proxy it is not a mapping: no ``obj["key"]``, no ``len``, no ``in``. A missing
    property raises ``AttributeError``.
    """

    __slots__ = ("_fields",)

    def __init__(self, fields: dict[str, Any]) -> None:
        object.__setattr__(self, "_fields", fields)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self._fields[name] = value

    def __dir__(self) -> list[str]:
        return sorted(self._fields)

    def __repr__(self) -> str:
        return f"JsObject({self.to_py()!r})"

    def to_py(self) -> dict[str, Any]:
        return {key: _to_py(value) for key, value in self._fields.items()}

    def as_object_map(self) -> dict[str, Any]:
        """A mapping view, as ``JsProxy.as_object_map()`` (here a dict of the proxied values)."""
        return dict(self._fields)


class JsArray(list):
    """A JS array: iterable, indexable, ``to_py()``."""

    def to_py(self) -> list[Any]:
        return [_to_py(value) for value in self]


class JsArrayBuffer(bytes):
    """An ``ArrayBuffer``: here it is already bytes; ``to_bytes()`` as on a ``JsBuffer``."""

    def to_bytes(self) -> bytes:
        return bytes(self)


def _to_py(value: Any) -> Any:
    return value.to_py() if isinstance(value, JsObject | JsArray) else value


def _wrap(value: Any, cls: type[JsObject] | None = None) -> Any:
    """JSON from the harness -> what Pyodide hands Python for the same JS value."""
    if isinstance(value, dict):
        return (cls or JsObject)({key: _wrap(item) for key, item in value.items()})
    if isinstance(value, list):
        return JsArray(_wrap(item) for item in value)
    return value


def _d1_type_error(kind: str, shown: str) -> JsException:
    return JsException("Error", f"D1_TYPE_ERROR: Type '{kind}' not supported for value '{shown}'")


def _bind_value(value: Any) -> Any:
    """Check one ``bind()`` argument the way Pyodide's conversion and D1's ``bind`` would."""
    if value is None:
        # Pyodide converts None to undefined when calling a JS function.
        raise _d1_type_error("undefined", "undefined")
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if abs(value) > _MAX_SAFE_INTEGER:
            raise _d1_type_error("bigint", str(value))
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"bind(): {value!r} cannot cross the harness (JSON has no NaN/Infinity)")
        return value
    # bytes, dicts, lists, tuples ... reach JS as PyProxy objects, which D1 refuses.
    raise _d1_type_error("object", f"[object {type(value).__name__}]")


def _reject_positional_options(method: str, options: tuple[Any, ...]) -> None:
    if options:
        raise TypeError(
            f"{method}(): pass options as keyword arguments; a positional dict reaches JS as a "
            "PyProxy whose fields it cannot read, so Cloudflare would silently ignore them"
        )


class _Connection:
    """The HTTP client to the harness, one per running event loop.

    pytest runs each async test in a fresh loop, and a client cannot be closed from another loop:
    whoever uses the bindings in a loop calls ``aclose()`` before that loop ends (the fixtures in
    ``miniflare_harness.py`` do), else its idle keep-alive sockets leak until collected.
    ``keepalive=False`` opens a connection per call instead: slower, nothing to close.
    """

    def __init__(self, base_url: str, *, keepalive: bool = True) -> None:
        self.base_url = base_url
        self._keepalive = keepalive
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _current(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            limits = httpx.Limits(max_connections=32, max_keepalive_connections=16 if self._keepalive else 0)
            self._client = httpx.AsyncClient(
                base_url=self.base_url,
                timeout=httpx.Timeout(120.0, connect=10.0),
                transport=HarnessTransport(limits=limits),
            )
            self._loop = loop
        return self._client

    async def call(self, route: str, body: dict[str, Any]) -> Any:
        response = await self._current().post(f"/{route}", json=body)
        payload = response.json()
        if response.status_code != 200:
            error = payload.get("error") or {}
            raise JsException(error.get("name") or "Error", error.get("message") or response.text)
        return payload["value"]

    async def aclose(self) -> None:
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.aclose()
        self._client = None
        self._loop = None


# --- D1 ---------------------------------------------------------------------------------------


class D1PreparedStatement:
    """``DB.prepare(sql)``: ``bind`` returns a new statement, the rest run it."""

    def __init__(self, connection: _Connection, sql: str, params: tuple[Any, ...] = ()) -> None:
        if not isinstance(sql, str):
            raise TypeError("prepare() takes the SQL text")
        self._connection = connection
        self.sql = sql
        self.params = params

    def bind(self, *values: Any) -> D1PreparedStatement:
        return D1PreparedStatement(self._connection, self.sql, tuple(_bind_value(v) for v in values))

    def _body(self) -> dict[str, Any]:
        return {"sql": self.sql, "params": list(self.params)}

    async def _run(self, method: str, **extra: Any) -> Any:
        return _wrap(await self._connection.call("d1/statement", {**self._body(), "method": method, **extra}))

    async def all(self) -> JsObject:
        """``{"success", "meta", "results": [row objects]}``."""
        return await self._run("all")

    async def run(self) -> JsObject:
        """Same shape as ``all()``; ``meta`` has ``last_row_id`` and ``changes``."""
        return await self._run("run")

    async def first(self, column: str | None = None) -> Any:
        """The first row (or its ``column``), ``None`` when there is none."""
        return await self._run("first", column=column)

    async def raw(self, columnNames: bool = False) -> JsArray:
        return await self._run("raw", columnNames=columnNames)


class D1Database:
    def __init__(self, connection: _Connection) -> None:
        self._connection = connection

    def prepare(self, sql: str) -> D1PreparedStatement:
        return D1PreparedStatement(self._connection, sql)

    async def batch(self, statements: list[D1PreparedStatement]) -> JsArray:
        """Run ``statements`` in one transaction; one result per statement, or nothing when one fails."""
        bodies = [statement._body() for statement in statements]
        return _wrap(await self._connection.call("d1/batch", {"statements": bodies}))

    async def exec(self, sql: str) -> JsObject:
        """Run raw SQL without parameters (D1 splits it into statements); ``{count, duration}``."""
        return _wrap(await self._connection.call("d1/exec", {"sql": sql}))


# --- KV ---------------------------------------------------------------------------------------


class KVNamespace:
    def __init__(self, connection: _Connection) -> None:
        self._connection = connection

    async def get(self, key: str, *options: Any, **kwargs: Any) -> Any:
        """The value as text, or ``None``; ``get(key, "json")`` parses it as JS would."""
        type_ = options[0] if options and isinstance(options[0], str) else kwargs.pop("type", "text")
        _reject_positional_options("KV.get", tuple(o for o in options if not isinstance(o, str)))
        value = await self._connection.call("kv/get", {"key": key, "options": {"type": type_, **kwargs}})
        return _wrap(value)

    async def getWithMetadata(self, key: str, **kwargs: Any) -> JsObject:
        """``{value, metadata}``; both ``None`` when the key is missing."""
        return _wrap(await self._connection.call("kv/getWithMetadata", {"key": key, "options": kwargs}))

    async def put(self, key: str, value: str, *options: Any, **kwargs: Any) -> None:
        """Store ``value``; ``expirationTtl`` (>= 60 s), ``expiration`` (epoch s), ``metadata``."""
        _reject_positional_options("KV.put", options)
        if not isinstance(value, str):
            raise TypeError("KV.put(): store text here (bytes need pyodide.ffi.to_js on Cloudflare)")
        await self._connection.call("kv/put", {"key": key, "value": value, "options": kwargs})

    async def delete(self, key: str) -> None:
        await self._connection.call("kv/delete", {"key": key})

    async def list(self, *options: Any, **kwargs: Any) -> JsObject:
        """``{keys: [{name, expiration?, metadata?}], list_complete, cursor?}``."""
        _reject_positional_options("KV.list", options)
        return _wrap(await self._connection.call("kv/list", {"options": kwargs}))


# --- R2 ---------------------------------------------------------------------------------------


class R2Object(JsObject):
    """Metadata of a stored object: ``key``, ``size``, ``etag``, ``uploaded``, ``httpMetadata``."""

    __slots__ = ()


class R2ObjectBody(R2Object):
    """An object with its body: ``await text()``, ``await arrayBuffer()``, ``await json()``."""

    __slots__ = ("_body",)

    def __init__(self, fields: dict[str, Any], body: bytes) -> None:
        super().__init__(fields)
        object.__setattr__(self, "_body", body)

    async def arrayBuffer(self) -> JsArrayBuffer:
        return JsArrayBuffer(self._body)

    async def text(self) -> str:
        return self._body.decode("utf-8", errors="replace")

    async def json(self) -> Any:
        return _wrap(json.loads(self._body))


class R2Bucket:
    def __init__(self, connection: _Connection) -> None:
        self._connection = connection

    async def put(self, key: str, value: bytes | str, *options: Any, **kwargs: Any) -> R2Object:
        """Store ``value``; ``httpMetadata={"contentType": ...}``, ``customMetadata={...}``."""
        _reject_positional_options("R2.put", options)
        body: dict[str, Any] = {"key": key, "options": kwargs}
        if isinstance(value, str):
            body["text"] = value
        elif isinstance(value, bytes | bytearray | memoryview):
            body["base64"] = base64.b64encode(bytes(value)).decode("ascii")
        else:
            raise TypeError(
                "R2.put(): parameter 2 is not of type 'ReadableStream or ArrayBuffer or "
                "ArrayBufferView or string or Blob'"
            )
        return _wrap(await self._connection.call("r2/put", body), R2Object)

    async def get(self, key: str) -> R2ObjectBody | None:
        value = await self._connection.call("r2/get", {"key": key})
        if value is None:
            return None
        data = base64.b64decode(value.pop("base64"))
        return R2ObjectBody({key: _wrap(item) for key, item in value.items()}, data)

    async def head(self, key: str) -> R2Object | None:
        value = await self._connection.call("r2/head", {"key": key})
        return _wrap(value, R2Object)

    async def delete(self, keys: str | list[str]) -> None:
        if not isinstance(keys, str):
            keys = [str(k) for k in keys]
        await self._connection.call("r2/delete", {"keys": keys})

    async def list(self, *options: Any, **kwargs: Any) -> JsObject:
        """``{objects: [R2Object], truncated, cursor?, delimitedPrefixes}`` (at most 1,000 a page)."""
        _reject_positional_options("R2.list", options)
        listed = await self._connection.call("r2/list", {"options": kwargs})
        objects = JsArray(_wrap(o, R2Object) for o in listed.pop("objects"))
        return JsObject({**{key: _wrap(item) for key, item in listed.items()}, "objects": objects})


# --- Workers AI ---------------------------------------------------------------------------------


class WorkersAi:
    """``env.AI``: ``await AI.run(model, inputs)`` answers the model's result object.

    Backed by a Workers AI REST endpoint at ``base_url`` (``/client/v4/accounts/<account>/ai/run/
    <model>``, as ``tests/fake_whisper.py`` serves it); the REST envelope is unwrapped, as the
    binding does, and an error answer raises ``JsException``.
    """

    def __init__(self, base_url: str, *, account: str = "worker-account") -> None:
        self._base_url = base_url.rstrip("/")
        self._account = account
        self.calls = 0
        self.models: list[str] = []
        """The model of every call, in order (a save embeds through the same binding)."""

    async def run(self, model: str, inputs: Any, *options: Any, **kwargs: Any) -> JsObject | ReadableStream:
        _reject_positional_options("AI.run", options)
        if not isinstance(inputs, dict):
            raise TypeError("AI.run(): inputs must be an object (pyodide.ffi.to_js on Cloudflare)")
        self.calls += 1
        self.models.append(model)
        url = f"{self._base_url}/client/v4/accounts/{self._account}/ai/run/{model}"
        client = httpx.AsyncClient(transport=HarnessTransport(), timeout=120)
        try:
            response = await client.send(client.build_request("POST", url, json=inputs), stream=True)
            if response.status_code == 200 and inputs.get("stream") is True:
                return ReadableStream(client, response)  # the stream now owns the client
            await response.aread()
        except BaseException:
            await client.aclose()
            raise
        await client.aclose()
        try:
            payload = response.json()
        except ValueError:
            payload = {}
        if response.status_code != 200 or not payload.get("success", False):
            errors = payload.get("errors") or [payload.get("error") or {}]
            message = (errors[0] or {}).get("message") or f"status {response.status_code}"
            raise JsException("InferenceUpstreamError", f"{response.status_code}: {message}")
        return _wrap(payload["result"])


class ReadableStream:
    """The ``ReadableStream`` that ``AI.run(model, {..., stream: true})`` resolves to: the REST
    answer's server-sent event bytes, read with ``getReader()``, each ``read()`` a
    ``{done, value}`` whose ``value`` is a ``Uint8Array`` (``to_bytes()``, as on a ``JsBuffer``)."""

    def __init__(self, client: httpx.AsyncClient, response: httpx.Response) -> None:
        self._client = client
        self._response = response
        self._chunks = response.aiter_raw()
        self.canceled = False

    def getReader(self) -> _StreamReader:  # noqa: N802  the JavaScript name
        return _StreamReader(self)

    async def _close(self) -> None:
        await self._response.aclose()
        await self._client.aclose()


class _StreamReader:
    def __init__(self, stream: ReadableStream) -> None:
        self._stream = stream

    async def read(self) -> JsObject:
        try:
            chunk = await anext(self._stream._chunks)
        except StopAsyncIteration:
            await self._stream._close()
            return JsObject({"done": True, "value": None})
        return JsObject({"done": False, "value": JsArrayBuffer(chunk)})

    async def cancel(self) -> None:
        self._stream.canceled = True
        await self._stream._close()


class Queue:
    """A Queue producer binding: ``send(body, delaySeconds=...)``, ``sendBatch([{body}, ...])``,
    on Miniflare's real queue, whose consumer (``worker.mjs``) forwards batches to the test."""

    def __init__(self, connection: _Connection) -> None:
        self._connection = connection

    async def send(self, body: Any, *options: Any, **kwargs: Any) -> None:
        _reject_positional_options("Queue.send", options)
        await self._connection.call("queue/send", {"body": body, "options": kwargs})

    async def sendBatch(self, messages: list[dict[str, Any]], *options: Any, **kwargs: Any) -> None:
        _reject_positional_options("Queue.sendBatch", options)
        await self._connection.call("queue/sendBatch", {"messages": list(messages)})


class CloudflareEnv:
    """``env`` with the three bindings, talking to a running harness at ``base_url``.

    Like a Worker's ``env``, it also carries the Worker's ``vars`` (and secrets) as string
    attributes and, when given, the ``AI`` binding; an attribute the Worker was not given raises
    ``AttributeError``. Connections are kept alive per event loop: ``await env.aclose()`` before
    the loop ends.
    """

    def __init__(
        self,
        base_url: str,
        *,
        keepalive: bool = True,
        vars: Mapping[str, str] | None = None,
        ai: WorkersAi | None = None,
        vectors: Any = None,
        queue: bool = False,
    ) -> None:
        self._connection = _Connection(base_url, keepalive=keepalive)
        if queue:
            self.JOBS = Queue(self._connection)  # the producer of wrangler.toml's [[queues.producers]]
        self.DB = D1Database(self._connection)
        self.KV = KVNamespace(self._connection)
        self.BUCKET = R2Bucket(self._connection)
        if ai is not None:
            self.AI = ai
        if vectors is not None:
            self.VECTORS = vectors  # a Vectorize stand-in (tests/vectorize_standin.py): no offline twin
        for name, value in (vars or {}).items():
            if not isinstance(value, str):
                raise TypeError(f"{name}: vars and secrets are strings on a Worker")
            setattr(self, name, value)

    async def aclose(self) -> None:
        """Close the HTTP client of this event loop (the bindings stay usable: a new one opens on demand)."""
        await self._connection.aclose()
