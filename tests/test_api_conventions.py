"""The HTTP contract's conventions and hardening, through the real app and its middleware.

Request ids, ``X-Robots-Tag``, the access log, CORS, API keys and scopes, the rate limiter, body
and time limits, hostile input, and how ``vid2context serve`` binds. Everything goes through
``create_app`` (or the same middleware around a small Litestar app where a test needs a route of
its own or a clock it can move), over httpx's ASGI transport or raw ASGI calls for what httpx
refuses to send (CR/LF in headers, undecodable bytes, ``..`` in paths). No test measures time.

What rests on the runtime's stores (the rate limiter's buckets in the KV, uploads under the body
limit) runs on the Worker's runtime too, its KV on Miniflare (``ON_WORKER_TOO``,
``tests/runtimes.py``); the rest is middleware that no store changes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, ClassVar

import httpx
import pytest
from litestar import Litestar, Request, get, post
from litestar.datastructures import State
from litestar.params import FromQuery
from litestar.response import Stream

from vid2context import cli
from vid2context.api import create_app
from vid2context.api.errors import EXCEPTION_HANDLERS
from vid2context.api.health import health
from vid2context.api.middleware import build_middleware, parse_api_keys, request_ctx, wrap
from vid2context.api.middleware.ratelimit import RateLimit
from vid2context.ctx import Ctx
from vid2context.errors import VidError
from vid2context.runtime import Runtime, build_runtime
from vid2context.settings import load_settings

from .runtimes import ON_WORKER_TOO, Runtimes

pytestmark = pytest.mark.anyio

PLAIN_KEY = "sk-plain-0123456789abcdef"
READ_KEY = "reader-secret-key-xyz"
WRITE_KEY = "writer-secret-key-xyz"
KEYS = ",".join(
    [
        PLAIN_KEY,
        f"reader:read:{hashlib.sha256(READ_KEY.encode()).hexdigest()}",
        f"writer:write:{hashlib.sha256(WRITE_KEY.encode()).hexdigest()}",
    ]
)
QUIET = {"VID2CONTEXT_ACCESS_LOG": "0"}


# --- harness -------------------------------------------------------------------------------------


def make_runtime(env: Mapping[str, str] | None = None, *, name: str = "local") -> Runtime:
    return build_runtime(load_settings({**QUIET, **(env or {})}), http=httpx.AsyncClient(), name=name)


@asynccontextmanager
async def client(app: Any, *, ip: str = "127.0.0.1") -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=(ip, 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        yield http


@asynccontextmanager
async def api(
    env: Mapping[str, str] | None = None, *, ip: str = "127.0.0.1"
) -> AsyncIterator[httpx.AsyncClient]:
    runtime = make_runtime(env)
    try:
        async with client(create_app(runtime), ip=ip) as http:
            yield http
    finally:
        await runtime.aclose()


class Clock:
    """Wall time the rate-limit tests move by hand."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@get("/api/v1/test/ping", sync_to_thread=False)
def ping() -> dict:
    return {"pong": True}


@post("/api/v1/test/echo")
async def echo(request: Request) -> dict:
    body = await request.body()
    return {"bytes": len(body)}


@post("/api/v1/test/tiny", request_max_body_size=16)
async def tiny(request: Request) -> dict:
    return {"bytes": len(await request.body())}


def small_app(runtime: Runtime, clock: Clock | None = None, *, innermost: Any = None) -> Litestar:
    """The app's middleware and error handlers around test routes, with a clock the test moves;
    ``innermost``: one more layer under them all."""
    app = Litestar(
        route_handlers=[health, ping, echo, tiny],
        exception_handlers=EXCEPTION_HANDLERS,
        state=State({"runtime": runtime}),
        openapi_config=None,
        logging_config=None,
    )
    layers = build_middleware(runtime, clock=clock or Clock())
    app.asgi_handler = wrap(app.asgi_handler, [*layers, innermost] if innermost else layers)
    return app


async def raw_call(
    app: Any,
    path: str,
    *,
    method: str = "GET",
    query: bytes = b"",
    headers: list[tuple[bytes, bytes]] | None = None,
    body: bytes = b"",
    raw_path: bytes | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """One request as a raw ASGI call: what a server might pass that httpx would refuse to send."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": raw_path if raw_path is not None else path.encode("utf-8", "surrogateescape"),
        "root_path": "",
        "query_string": query,
        "headers": [(b"host", b"testserver"), *(headers or [])],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    sent: list[dict] = []
    chunks = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict:
        return chunks.pop(0) if chunks else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    response_headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in start["headers"]}
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], response_headers, content


def assert_error(response: httpx.Response | tuple[int, dict, bytes], status: int, code: str) -> dict:
    """The contract's error body with ``code`` and ``status``, and nothing of a traceback."""
    if isinstance(response, tuple):
        got_status, headers, content = response
    else:
        got_status, headers, content = response.status_code, response.headers, response.content
    assert got_status == status, content
    assert headers["content-type"].startswith("application/json")
    body = json.loads(content)
    assert set(body) == {"error", "attempts"}
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    assert b"Traceback" not in content and b'File "' not in content
    return body


def log_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith('{"ts"')]


# --- X-Request-Id --------------------------------------------------------------------------------


async def test_request_id_is_kept_when_well_formed() -> None:
    async with api() as http:
        for value in ("abc-123", "svc:trace.42_x", "a" * 128):
            response = await http.get("/api/v1/health", headers={"X-Request-Id": value})
            assert response.status_code == 200
            assert response.headers["x-request-id"] == value


@pytest.mark.parametrize(
    "value", ["a" * 129, "a" * 200, "has space", "semi;colon", "ünïcode", "", "<script>"]
)
async def test_request_id_is_replaced_when_not(value: str) -> None:
    async with api() as http:
        response = await http.get("/api/v1/health", headers={"X-Request-Id": value.encode()})
    replaced = response.headers["x-request-id"]
    assert replaced != value
    assert len(replaced) == 36 and replaced.count("-") == 4  # a UUID


async def test_request_id_header_injection_is_not_echoed() -> None:
    app = create_app(make_runtime())
    hostile = b"abc\r\nSet-Cookie: session=stolen"
    status, headers, _ = await raw_call(app, "/api/v1/health", headers=[(b"x-request-id", hostile)])
    assert status == 200
    assert "set-cookie" not in headers
    assert "\r" not in headers["x-request-id"] and "stolen" not in headers["x-request-id"]


async def test_request_id_on_every_response_and_visible_to_handlers() -> None:
    seen: dict[str, Any] = {}

    @get("/api/v1/test/state", sync_to_thread=False)
    def state(request: Request) -> dict:
        seen["id"] = request.state.request_id
        return {}

    runtime = make_runtime({"VID2CONTEXT_API_KEYS": PLAIN_KEY})
    app = create_app(runtime)
    app.register(state)
    async with client(app) as http:
        ok = await http.get(
            "/api/v1/test/state", headers={"X-Request-Id": "mine-1", "Authorization": f"Bearer {PLAIN_KEY}"}
        )
        assert ok.headers["x-request-id"] == "mine-1" and seen["id"] == "mine-1"
        for response in (
            await http.get("/api/v1/nowhere", headers={"Authorization": f"Bearer {PLAIN_KEY}"}),  # 404
            await http.get("/api/v1/formats"),  # 401
            await http.get("/not-api"),  # 404 outside /api
        ):
            assert response.status_code >= 400
            assert response.headers["x-request-id"]


# --- X-Robots-Tag ----------------------------------------------------------------------------------


async def test_robots_tag_on_every_api_response() -> None:
    async with api({"VID2CONTEXT_API_KEYS": PLAIN_KEY}) as http:
        for response in (
            await http.get("/api/v1/health"),
            await http.get("/api/v1/formats"),  # 401
            await http.get("/api/v1/nope", headers={"Authorization": f"Bearer {PLAIN_KEY}"}),  # 404
            await http.get("/api/v1/openapi.json"),
        ):
            assert response.headers["x-robots-tag"] == "noindex"
        assert "x-robots-tag" not in (await http.get("/elsewhere")).headers


# --- access log ------------------------------------------------------------------------------------


async def test_access_log_one_json_line_per_request_naming_the_key(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with api({"VID2CONTEXT_ACCESS_LOG": "1", "VID2CONTEXT_API_KEYS": KEYS}, ip="198.51.100.7") as http:
        await http.get(
            "/api/v1/formats?secret=q",
            headers={"Authorization": f"Bearer {PLAIN_KEY}", "X-Request-Id": "r-1"},
        )
        await http.get("/api/v1/formats", headers={"Authorization": f"Bearer {READ_KEY}"})
        await http.get("/api/v1/formats", headers={"Authorization": "Bearer wrong-key-123"})
        await http.get("/api/v1/health")
    err = capsys.readouterr().err
    lines = log_lines(err)
    assert len(lines) == 4
    first = lines[0]
    assert set(first) == {"ts", "method", "path", "status", "ms", "requestId", "key", "ip"}
    assert first["method"] == "GET" and first["path"] == "/api/v1/formats" and first["status"] == 200
    assert first["requestId"] == "r-1" and first["key"] == "key-1" and first["ip"] == "198.51.100.7"
    assert first["ts"].endswith("Z") and isinstance(first["ms"], (int, float))
    assert [line["key"] for line in lines] == ["key-1", "reader", None, None]
    assert [line["status"] for line in lines] == [200, 200, 401, 200]
    for secret in (PLAIN_KEY, READ_KEY, "wrong-key-123", "secret=q"):
        assert secret not in err


async def test_access_log_off(capsys: pytest.CaptureFixture[str]) -> None:
    async with api({"VID2CONTEXT_ACCESS_LOG": "0"}) as http:
        await http.get("/api/v1/health")
    assert log_lines(capsys.readouterr().err) == []


async def test_access_log_survives_undecodable_paths(capsys: pytest.CaptureFixture[str]) -> None:
    app = create_app(make_runtime({"VID2CONTEXT_ACCESS_LOG": "1"}))
    status, _, _ = await raw_call(app, "/api/v1/\udcff\udcfe", raw_path=b"/api/v1/%ff%fe")
    assert status == 404
    (line,) = log_lines(capsys.readouterr().err)
    assert line["status"] == 404 and line["path"].startswith("/api/v1/")


# --- CORS ----------------------------------------------------------------------------------------


CORS = {"VID2CONTEXT_CORS_ORIGINS": "https://app.example, chrome-extension://abcdef"}


async def test_cors_allowed_origin_gets_its_headers() -> None:
    async with api(CORS) as http:
        response = await http.get("/api/v1/health", headers={"Origin": "https://app.example"})
    assert response.headers["access-control-allow-origin"] == "https://app.example"
    exposed = response.headers["access-control-expose-headers"]
    for name in (
        "X-Request-Id",
        "Retry-After",
        "ETag",
        "Content-Disposition",
        "X-Data-Attribution",
        "X-RateLimit-Remaining",
    ):
        assert name in exposed
    assert "Origin" in response.headers["vary"]
    assert "access-control-allow-credentials" not in response.headers


async def test_cors_other_origin_gets_none() -> None:
    async with api(CORS) as http:
        response = await http.get("/api/v1/health", headers={"Origin": "https://evil.example"})
        assert response.status_code == 200
        assert "access-control-allow-origin" not in response.headers
        assert "Origin" in response.headers["vary"]
        preflight = await http.options(
            "/api/v1/formats",
            headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"},
        )
    assert_error(preflight, 403, "forbidden")
    assert "access-control-allow-origin" not in preflight.headers


async def test_cors_preflight_is_answered_before_auth() -> None:
    async with api({**CORS, "VID2CONTEXT_API_KEYS": PLAIN_KEY}) as http:
        response = await http.options(
            "/api/v1/library/x",
            headers={
                "Origin": "chrome-extension://abcdef",
                "Access-Control-Request-Method": "DELETE",
                "Access-Control-Request-Headers": "authorization, content-type",
            },
        )
        assert response.status_code == 204
        assert response.headers["access-control-allow-origin"] == "chrome-extension://abcdef"
        assert "DELETE" in response.headers["access-control-allow-methods"]
        allowed = response.headers["access-control-allow-headers"]
        for name in ("Authorization", "Content-Type", "X-Request-Id", "If-None-Match"):
            assert name in allowed
        assert "x-ratelimit-remaining" not in response.headers  # preflights are not limited
        # The real request still needs a key, and a browser can read the refusal.
        refused = await http.get("/api/v1/formats", headers={"Origin": "chrome-extension://abcdef"})
        assert_error(refused, 401, "unauthorized")
        assert refused.headers["access-control-allow-origin"] == "chrome-extension://abcdef"


async def test_cors_wildcard_and_off() -> None:
    async with api({"VID2CONTEXT_CORS_ORIGINS": "*"}) as http:
        response = await http.get("/api/v1/health", headers={"Origin": "https://any.example"})
        assert response.headers["access-control-allow-origin"] == "*"
    async with api() as http:
        response = await http.get("/api/v1/health", headers={"Origin": "https://any.example"})
        assert "access-control-allow-origin" not in response.headers


# --- API keys and scopes ---------------------------------------------------------------------------


async def test_missing_key_is_401_with_www_authenticate() -> None:
    async with api({"VID2CONTEXT_API_KEYS": KEYS}) as http:
        response = await http.get("/api/v1/formats")
    assert_error(response, 401, "unauthorized")
    assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer wrong",
        f"Bearer {PLAIN_KEY}x",
        f"Basic {PLAIN_KEY}",
        PLAIN_KEY,
        "Bearer ",
        f"Bearer {hashlib.sha256(READ_KEY.encode()).hexdigest()}",  # the hash is not the key
    ],
)
async def test_wrong_key_is_401(authorization: str) -> None:
    async with api({"VID2CONTEXT_API_KEYS": KEYS}) as http:
        response = await http.get("/api/v1/formats", headers={"Authorization": authorization})
    body = assert_error(response, 401, "unauthorized")
    assert response.headers["www-authenticate"] == "Bearer"
    assert PLAIN_KEY not in json.dumps(body)


async def test_keys_and_scopes() -> None:
    def bearer(key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    async with api({"VID2CONTEXT_API_KEYS": KEYS}) as http:
        # Every key may read; "bearer" is case-insensitive.
        for key in (PLAIN_KEY, READ_KEY, WRITE_KEY):
            assert (await http.get("/api/v1/formats", headers=bearer(key))).status_code == 200
        assert (
            await http.get("/api/v1/formats", headers={"Authorization": f"bearer {READ_KEY}"})
        ).status_code == 200
        # A read key may not change anything ...
        response = await http.delete("/api/v1/library/youtube%3AjNQXAC9IVRw", headers=bearer(READ_KEY))
        body = assert_error(response, 403, "forbidden")
        assert "reader" in body["error"]["message"] and READ_KEY not in body["error"]["message"]
        assert_error(
            await http.post("/api/v1/collections", json={}, headers=bearer(READ_KEY)), 403, "forbidden"
        )
        assert_error(
            await http.patch("/api/v1/collections/x", json={}, headers=bearer(READ_KEY)), 403, "forbidden"
        )
        # ... but may call the POST routes that only compute.
        for route in ("pack", "bundle", "ask", "chat", "research", "duplicates", "exports/obsidian"):
            response = await http.post(f"/api/v1/{route}", json={}, headers=bearer(READ_KEY))
            assert response.status_code not in (401, 403), route
        # A write key may change things; a plain key may do everything.
        for key in (WRITE_KEY, PLAIN_KEY):
            response = await http.delete("/api/v1/library/youtube%3AjNQXAC9IVRw", headers=bearer(key))
            assert response.status_code not in (401, 403)


async def test_health_and_openapi_are_open_and_paths_cannot_dodge_auth() -> None:
    app = create_app(make_runtime({"VID2CONTEXT_API_KEYS": KEYS}))
    async with client(app) as http:
        assert (await http.get("/api/v1/health")).status_code == 200
        assert (await http.get("/api/v1/openapi.json")).status_code == 200
        assert (await http.head("/api/v1/formats")).status_code == 401
    for path in ("//api/v1/formats", "/api/v1/./formats", "/api/v1/health/../formats", "/api//v1/formats/"):
        status, headers, _ = await raw_call(app, path)
        assert status == 401, path
        assert headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(
    ("raw", "position"),
    [
        ("good-key,name:read", 2),
        ("a:superuser:" + "0" * 64, 1),
        ("ok,a:read:" + "z" * 64, 2),
        ("k1,k2,has space", 3),
        ("x:read:" + "1" * 64 + ",x:write:" + "2" * 64, 2),
    ],
)
async def test_malformed_key_entry_fails_app_creation(raw: str, position: int) -> None:
    with pytest.raises(VidError) as caught:
        create_app(make_runtime({"VID2CONTEXT_API_KEYS": raw}))
    message = caught.value.message
    assert f"entry {position} of" in message
    for part in raw.split(","):
        assert part not in message


def test_key_names() -> None:
    keys = parse_api_keys(KEYS + ",second-plain, ")
    assert [(k.name, k.scope) for k in keys] == [
        ("key-1", "admin"),
        ("reader", "read"),
        ("writer", "write"),
        ("key-2", "admin"),
    ]
    assert parse_api_keys(None) == ()
    with pytest.raises(VidError):
        parse_api_keys(" , ")


# --- rate limit ----------------------------------------------------------------------------------


@ON_WORKER_TOO
async def test_burst_then_429_with_retry_after_and_countdown(runtimes: Runtimes) -> None:
    clock = Clock()
    limits = {"VID2CONTEXT_RATE_LIMIT": "6", "VID2CONTEXT_RATE_BURST": "3"}  # 0.1 token/s
    runtime = await runtimes.build({**QUIET, **limits})
    async with client(small_app(runtime, clock)) as http:
        remaining = []
        for _ in range(3):
            response = await http.get("/api/v1/test/ping")
            assert response.status_code == 200
            assert response.headers["x-ratelimit-limit"] == "3"
            remaining.append(response.headers["x-ratelimit-remaining"])
        assert remaining == ["2", "1", "0"]
        refused = await http.get("/api/v1/test/ping")
        assert_error(refused, 429, "rate-limited")
        assert refused.headers["retry-after"] == "10"  # one token at 0.1/s
        assert refused.headers["x-ratelimit-remaining"] == "0"
        clock.now += 4.5  # 0.45 token: 5.5 s to go
        assert (await http.get("/api/v1/test/ping")).headers["retry-after"] == "6"
        clock.now += 5.5
        again = await http.get("/api/v1/test/ping")
        assert again.status_code == 200 and again.headers["x-ratelimit-remaining"] == "0"
        clock.now += 3600  # a full bucket, never more than the burst
        assert (await http.get("/api/v1/test/ping")).headers["x-ratelimit-remaining"] == "2"
        # Health is never limited and carries no counters.
        for _ in range(5):
            health_response = await http.get("/api/v1/health")
            assert (
                health_response.status_code == 200 and "x-ratelimit-remaining" not in health_response.headers
            )
    stored = await runtimes.kv_keys(runtime, "ratelimit:")
    if runtime.name != "worker":
        assert stored == []  # one process: the buckets live in it, no storage on the request's path
        return
    assert stored == ["ratelimit:ip:127.0.0.1"]
    bucket = json.loads(await runtime.kv.get(stored[0]))
    assert set(bucket) == {"tokens", "at"}


@ON_WORKER_TOO
async def test_default_burst_is_half_the_rate(runtimes: Runtimes) -> None:
    runtime = await runtimes.build({**QUIET, "VID2CONTEXT_RATE_LIMIT": "10"})
    async with client(create_app(runtime)) as http:
        response = await http.get("/api/v1/formats")
    assert response.headers["x-ratelimit-limit"] == "5"
    assert response.headers["x-ratelimit-remaining"] == "4"


async def test_rate_limit_off() -> None:
    async with api({"VID2CONTEXT_RATE_LIMIT": "0"}) as http:
        response = await http.get("/api/v1/formats")
    assert response.status_code == 200 and "x-ratelimit-limit" not in response.headers


async def _exhaust(http: httpx.AsyncClient, headers: dict[str, str] | None = None) -> None:
    assert (await http.get("/api/v1/test/ping", headers=headers)).status_code == 200
    assert (await http.get("/api/v1/test/ping", headers=headers)).status_code == 429


LIMIT_ONE = {"VID2CONTEXT_RATE_LIMIT": "1", "VID2CONTEXT_RATE_BURST": "1"}


@ON_WORKER_TOO
async def test_open_mode_buckets_per_client_ip(runtimes: Runtimes) -> None:
    app = small_app(await runtimes.build({**QUIET, **LIMIT_ONE}))
    async with client(app, ip="203.0.113.1") as first, client(app, ip="203.0.113.2") as second:
        await _exhaust(first)
        assert (await second.get("/api/v1/test/ping")).status_code == 200
    # IPv6 clients share their /64.
    async with client(app, ip="2001:db8::1") as a, client(app, ip="2001:db8::ffff") as b:
        await _exhaust(a)
        assert (await b.get("/api/v1/test/ping")).status_code == 429


@ON_WORKER_TOO
async def test_keyed_mode_buckets_per_key_name(runtimes: Runtimes) -> None:
    app = small_app(await runtimes.build({**QUIET, **LIMIT_ONE, "VID2CONTEXT_API_KEYS": KEYS}))
    async with client(app, ip="203.0.113.1") as one, client(app, ip="203.0.113.2") as other:
        await _exhaust(one, {"Authorization": f"Bearer {READ_KEY}"})
        # The same key from elsewhere is the same bucket; another key is not.
        assert (
            await other.get("/api/v1/test/ping", headers={"Authorization": f"Bearer {READ_KEY}"})
        ).status_code == 429
        assert (
            await other.get("/api/v1/test/ping", headers={"Authorization": f"Bearer {WRITE_KEY}"})
        ).status_code == 200


async def test_forwarded_headers_count_only_with_trust_proxy() -> None:
    untrusted = small_app(make_runtime(LIMIT_ONE))
    async with client(untrusted) as http:
        await _exhaust(http, {"X-Forwarded-For": "198.51.100.1"})
        for spoof in (
            {"X-Forwarded-For": "198.51.100.2"},
            {"X-Real-IP": "198.51.100.3"},
            {"CF-Connecting-IP": "198.51.100.4"},
        ):
            assert (await http.get("/api/v1/test/ping", headers=spoof)).status_code == 429

    trusted = small_app(make_runtime({**LIMIT_ONE, "VID2CONTEXT_TRUST_PROXY": "1"}))
    async with client(trusted) as http:
        await _exhaust(http, {"X-Forwarded-For": "10.0.0.9, 198.51.100.1"})
        # The proxy's own entry (the last) counts, not what the client put before it.
        assert (
            await http.get("/api/v1/test/ping", headers={"X-Forwarded-For": "1.2.3.4, 198.51.100.1"})
        ).status_code == 429
        assert (
            await http.get("/api/v1/test/ping", headers={"X-Forwarded-For": "198.51.100.2"})
        ).status_code == 200
        assert (await http.get("/api/v1/test/ping", headers={"X-Real-IP": "198.51.100.3"})).status_code == 200
        # Garbage falls back to the socket address (already used above: limited).
        assert (
            await http.get("/api/v1/test/ping", headers={"X-Forwarded-For": "not-an-ip"})
        ).status_code == 200
        assert (
            await http.get("/api/v1/test/ping", headers={"X-Forwarded-For": "not-an-ip"})
        ).status_code == 429


@pytest.mark.parametrize("runtime_kind", ["worker"], indirect=True)
async def test_worker_uses_cf_connecting_ip(runtimes: Runtimes) -> None:
    runtime = await runtimes.build({**QUIET, **LIMIT_ONE})
    async with client(small_app(runtime)) as http:
        await _exhaust(http, {"CF-Connecting-IP": "198.51.100.1"})
        assert (
            await http.get("/api/v1/test/ping", headers={"CF-Connecting-IP": "198.51.100.2"})
        ).status_code == 200


async def test_rate_limiter_fails_open_when_kv_fails() -> None:
    class BrokenKv:
        async def get(self, key: str) -> str | None:
            raise OSError("kv down")

    # The Worker's buckets are in KV: a KV outage lets requests through.
    limiter = partial(RateLimit, kv=BrokenKv(), rate=1, burst=1)
    async with client(small_app(make_runtime({"VID2CONTEXT_RATE_LIMIT": "0"}), innermost=limiter)) as http:
        for _ in range(3):
            assert (await http.get("/api/v1/test/ping")).status_code == 200
    # The local runtime's buckets are in the process: its KV failing changes nothing.
    runtime = make_runtime(LIMIT_ONE)
    runtime.kv = BrokenKv()  # type: ignore[assignment]
    async with client(small_app(runtime)) as http:
        await _exhaust(http)


# --- body limit ----------------------------------------------------------------------------------


SMALL_BODY = {"VID2CONTEXT_MAX_BODY_KB": "1"}


async def test_declared_body_over_the_limit_is_413_unread() -> None:
    async with client(small_app(make_runtime(SMALL_BODY))) as http:
        assert (await http.post("/api/v1/test/echo", content=b"x" * 1024)).json() == {"bytes": 1024}
        response = await http.post("/api/v1/test/echo", content=b"x" * 1025)
    assert_error(response, 413, "too-large")


async def test_streamed_body_over_the_limit_is_413_before_the_end() -> None:
    sent = 0

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal sent
        for _ in range(100):
            sent += 1
            yield b"y" * 512

    async with client(small_app(make_runtime(SMALL_BODY))) as http:
        response = await http.post("/api/v1/test/echo", content=chunks())
    assert "content-length" not in response.request.headers
    assert_error(response, 413, "too-large")
    assert sent < 100  # stopped reading at the chunk that crossed the limit


@ON_WORKER_TOO
async def test_uploads_multipart_is_left_to_its_own_cap(runtimes: Runtimes) -> None:
    runtime = await runtimes.build({**QUIET, **SMALL_BODY})
    async with client(create_app(runtime)) as http:
        response = await http.post("/api/v1/uploads", files={"file": ("a.mp3", b"z" * 4096, "audio/mpeg")})
        assert response.status_code != 413
        json_body = await http.post(
            "/api/v1/uploads", content=b"z" * 4096, headers={"Content-Type": "application/json"}
        )
        assert_error(json_body, 413, "too-large")


async def test_framework_body_limit_and_bad_content_length_use_our_body() -> None:
    app = small_app(make_runtime())
    async with client(app) as http:
        assert_error(await http.post("/api/v1/test/tiny", content=b"q" * 64), 413, "too-large")
    status, headers, content = await raw_call(
        app, "/api/v1/test/echo", method="POST", headers=[(b"content-length", b"12abc")], body=b"x"
    )
    assert_error((status, headers, content), 400, "bad-request")


# --- timeout -------------------------------------------------------------------------------------


async def test_slow_request_is_504_and_its_work_is_cancelled_and_aborted() -> None:
    seen: dict[str, Any] = {}

    @get("/api/v1/test/slow")
    async def slow(request: Request) -> dict:
        seen["ctx"] = request_ctx(request, runtime)
        seen["deadline"] = request.state.deadline
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            seen["cancelled"] = True
            raise
        return {}

    runtime = make_runtime({"VID2CONTEXT_REQUEST_TIMEOUT_MS": "50"})
    app = create_app(runtime)
    app.register(slow)
    async with client(app) as http:
        response = await http.get("/api/v1/test/slow", headers={"X-Request-Id": "slow-1"})
    body = assert_error(response, 504, "timeout")
    assert body["error"]["hint"]
    assert response.headers["x-request-id"] == "slow-1"
    assert seen["cancelled"] is True
    ctx: Ctx = seen["ctx"]
    assert ctx.aborted and ctx.request_id == "slow-1" and ctx.deadline == seen["deadline"]
    with pytest.raises(VidError) as caught:
        ctx.check()
    assert caught.value.code == "timeout"


async def test_a_started_stream_is_not_cut_by_the_timeout() -> None:
    @get("/api/v1/test/stream")
    async def stream() -> Stream:
        async def body() -> AsyncIterator[bytes]:
            yield b"first,"
            await asyncio.sleep(0.1)
            yield b"second"

        return Stream(body(), media_type="text/plain")

    app = create_app(make_runtime({"VID2CONTEXT_REQUEST_TIMEOUT_MS": "20"}))
    app.register(stream)
    async with client(app) as http:
        response = await http.get("/api/v1/test/stream")
    assert response.status_code == 200 and response.text == "first,second"


async def test_a_server_cancellation_is_not_mistaken_for_a_timeout() -> None:
    entered = asyncio.Event()

    @get("/api/v1/test/hang")
    async def hang() -> dict:
        entered.set()
        await asyncio.sleep(3600)
        return {}

    app = create_app(make_runtime({"VID2CONTEXT_REQUEST_TIMEOUT_MS": "60000"}))
    app.register(hang)
    request = asyncio.ensure_future(raw_call(app, "/api/v1/test/hang"))
    await entered.wait()
    request.cancel()  # what a server does when the client goes away
    with pytest.raises(asyncio.CancelledError):
        await request


async def test_body_limit_without_a_timeout() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(10):
            yield b"z" * 512

    runtime = make_runtime({**SMALL_BODY, "VID2CONTEXT_REQUEST_TIMEOUT_MS": "0"})
    async with client(small_app(runtime)) as http:
        assert_error(await http.post("/api/v1/test/echo", content=chunks()), 413, "too-large")
        assert (await http.post("/api/v1/test/echo", content=b"ok")).json() == {"bytes": 2}


async def test_fast_requests_are_untouched_by_the_timeout() -> None:
    async with api({"VID2CONTEXT_REQUEST_TIMEOUT_MS": "60000"}) as http:
        assert (await http.get("/api/v1/health")).status_code == 200


# --- hostile input -------------------------------------------------------------------------------


async def test_ten_kb_query_strings() -> None:
    long = "a" * 10_240
    async with api() as http:
        for path in (f"/api/v1/formats?x={long}", f"/api/v1/context?url={long}", f"/api/v1/nope?{long}"):
            response = await http.get(path)
            assert response.status_code < 500
            assert long not in response.text  # never reflected whole
            if response.status_code >= 400:
                assert_error(response, response.status_code, response.json()["error"]["code"])


@pytest.mark.parametrize(
    ("path", "raw_path", "query"),
    [
        ("/api/v1/\udcff", b"/api/v1/%ff", b""),
        ("/api/v1/context", b"/api/v1/context", b"url=%ff%fe%fd"),
        ("/api/v1/context", b"/api/v1/context", b"url=\xff\xfe&mode=\xc3"),
        ("/api/v1/library/\udcc3\udca9", b"/api/v1/library/%c3%a9%ff", b""),
    ],
)
async def test_invalid_utf8_answers_our_error_body(path: str, raw_path: bytes, query: bytes) -> None:
    app = create_app(make_runtime())
    status, headers, content = await raw_call(app, path, raw_path=raw_path, query=query)
    assert 400 <= status < 500
    assert_error((status, headers, content), status, json.loads(content)["error"]["code"])
    assert headers["x-request-id"]


@pytest.mark.parametrize(
    "path", ["/api/v1/../../etc/passwd", "/api/v1/%2e%2e/%2e%2e/etc/passwd", "/../../etc/passwd"]
)
async def test_path_traversal_is_a_plain_404(path: str) -> None:
    app = create_app(make_runtime())
    status, headers, content = await raw_call(app, path)
    body = assert_error((status, headers, content), 404, "not-found")
    assert "root:" not in json.dumps(body)


async def test_validation_errors_name_the_parameter() -> None:
    @get("/api/v1/test/typed", sync_to_thread=False)
    def typed(limit: FromQuery[int]) -> dict:
        return {"limit": limit}

    app = create_app(make_runtime())
    app.register(typed)
    async with client(app) as http:
        bad = await http.get("/api/v1/test/typed?limit=" + "x" * 500)
        missing = await http.get("/api/v1/test/typed")
        wrong_method = await http.put("/api/v1/test/typed")
    body = assert_error(bad, 400, "bad-request")
    assert "`limit`" in body["error"]["message"] and "`limit`" in body["error"]["hint"]
    assert "xxxxxxxxxx" not in bad.text
    assert "limit" in assert_error(missing, 400, "bad-request")["error"]["hint"]
    assert_error(wrong_method, 405, "bad-request")
    assert "GET" in wrong_method.headers["allow"]


async def test_a_failing_kv_write_is_ignored() -> None:
    class ReadOnlyKv:
        async def get(self, key: str) -> str | None:
            return '{"tokens": 5, "at": 0}'

        async def put(self, key: str, value: str, *, ttl: int | None = None) -> None:
            raise OSError("read-only")

    runtime = make_runtime()
    runtime.kv = ReadOnlyKv()  # type: ignore[assignment]
    async with client(small_app(runtime)) as http:
        assert (await http.get("/api/v1/test/ping")).status_code == 200


async def test_an_exception_escaping_every_layer_still_gets_our_body() -> None:
    class GarbageKv:
        async def get(self, key: str) -> Any:
            return 12345  # not a str: the limiter's decoder raises TypeError, a bug no layer expects

    # The KV limiter (the Worker's) innermost, under every layer of the app.
    limiter = partial(RateLimit, kv=GarbageKv(), rate=120)
    async with client(small_app(make_runtime({"VID2CONTEXT_RATE_LIMIT": "0"}), innermost=limiter)) as http:
        response = await http.get("/api/v1/test/ping", headers={"X-Request-Id": "boom-1"})
    body = assert_error(response, 500, "internal")
    assert body["error"]["message"] == "Internal error."
    assert response.headers["x-request-id"] == "boom-1"
    assert response.headers["x-robots-tag"] == "noindex"


# --- vid2context serve ---------------------------------------------------------------------------


class FakeGranian:
    calls: ClassVar[list[dict]] = []

    def __init__(self, target: str, **kwargs: Any) -> None:
        FakeGranian.calls.append({"target": target, **kwargs})

    def serve(self) -> None:
        return None


@pytest.fixture
def fake_granian(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    import granian

    FakeGranian.calls = []
    monkeypatch.setattr(granian, "Granian", FakeGranian)
    for name in ("VID2CONTEXT_API_KEYS", "VID2CONTEXT_SHUTDOWN_TIMEOUT_MS", "VID2CONTEXT_HOSTED"):
        monkeypatch.delenv(name, raising=False)
    return FakeGranian.calls


def test_serve_binds_loopback_when_open(fake_granian: list[dict], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve"]) == 0
    (call,) = fake_granian
    assert call["address"] == "127.0.0.1" and call["port"] == 8787
    assert call["workers_kill_timeout"] == 10  # VID2CONTEXT_SHUTDOWN_TIMEOUT_MS default, in seconds


def test_serve_refuses_an_open_public_bind(
    fake_granian: list[dict], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["serve", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "refusing" in err and "--allow-open" in err and "VID2CONTEXT_API_KEYS" in err
    assert fake_granian == []
    assert cli.main(["serve", "--host", "0.0.0.0", "--allow-open"]) == 0
    assert fake_granian[-1]["address"] == "0.0.0.0"
    assert "warning" in capsys.readouterr().err
    assert cli.main(["serve", "--host", "::1"]) == 0 and cli.main(["serve", "--host", "localhost"]) == 0


def test_serve_with_keys_binds_everywhere(
    fake_granian: list[dict], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VID2CONTEXT_API_KEYS", PLAIN_KEY)
    monkeypatch.setenv("VID2CONTEXT_SHUTDOWN_TIMEOUT_MS", "2500")
    assert cli.main(["serve"]) == 0
    assert fake_granian[-1]["address"] == "0.0.0.0"
    assert fake_granian[-1]["workers_kill_timeout"] == 3
    assert cli.main(["serve", "--host", "127.0.0.1"]) == 0
    assert fake_granian[-1]["address"] == "127.0.0.1"
    assert PLAIN_KEY not in capsys.readouterr().err


def test_serve_in_hosted_mode_binds_everywhere_without_keys(
    fake_granian: list[dict], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VID2CONTEXT_HOSTED", "1")  # nothing is open but sign-in
    assert cli.main(["serve"]) == 0
    assert fake_granian[-1]["address"] == "0.0.0.0"
    assert "warning" not in capsys.readouterr().err


def test_serve_refuses_malformed_keys(
    fake_granian: list[dict], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VID2CONTEXT_API_KEYS", "fine-key,secret-ish:admin")
    assert cli.main(["serve"]) == 1
    err = capsys.readouterr().err
    assert "entry 2 of 2" in err and "secret-ish" not in err
    assert fake_granian == []


@pytest.mark.slow
def test_serve_drains_in_flight_requests_on_sigterm(tmp_path: Any) -> None:
    """SIGTERM: new connections are refused at once, the request in flight still gets its answer,
    and the server exits cleanly. The upstream holds the request until the test lets it go, so
    nothing here depends on timing."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    arrived, release = threading.Event(), threading.Event()

    class HeldUpstream(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def do_GET(self) -> None:
            arrived.set()
            release.wait(60)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), HeldUpstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("VID2CONTEXT_")}
    env.update(
        VID2CONTEXT_HOME=str(tmp_path),
        VID2CONTEXT_YOUTUBE_ORIGIN=f"http://127.0.0.1:{upstream.server_address[1]}",
        VID2CONTEXT_SHUTDOWN_TIMEOUT_MS="60000",
    )
    server = subprocess.Popen(
        # One worker: health answered means it is up (a worker still starting when SIGTERM comes
        # is granian's to kill at the timeout; test_serve_workers.py waits for every worker).
        [sys.executable, "-m", "vid2context", "serve", "--port", str(port), "--workers", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    answer: dict[str, Any] = {}

    def in_flight() -> None:
        try:
            answer["response"] = httpx.get(f"{base}/api/v1/metadata?url=jNQXAC9IVRw", timeout=60)
        except httpx.HTTPError as error:
            answer["error"] = error

    try:
        ready_by = time.monotonic() + 60  # polling for readiness, not timing anything
        while True:
            try:
                httpx.get(f"{base}/api/v1/health", timeout=10)
                break
            except httpx.TransportError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < ready_by, "the server did not answer within 60 s"
                time.sleep(0.1)
        caller = threading.Thread(target=in_flight)
        caller.start()
        assert arrived.wait(60), "the request never reached the upstream"
        server.send_signal(signal.SIGTERM)
        closed_by = time.monotonic() + 60
        while True:  # until a connection is refused: a slow answer is not a closed socket
            try:
                httpx.get(f"{base}/api/v1/health", timeout=10)
            except httpx.ConnectError:
                break
            except httpx.TransportError:
                pass
            assert time.monotonic() < closed_by, "still accepting connections 60 s after SIGTERM"
            time.sleep(0.1)
        release.set()
        caller.join(60)
        assert "response" in answer, answer.get("error")
        response = answer["response"]  # the held upstream's 404, answered in full
        assert_error(response, response.status_code, response.json()["error"]["code"])
        assert server.wait(timeout=60) == 0
    finally:
        release.set()
        if server.poll() is None:
            server.kill()
            server.wait()
        upstream.shutdown()
        upstream.server_close()


async def test_local_buckets_stay_bounded_idle_ones_first(monkeypatch: pytest.MonkeyPatch) -> None:
    from vid2context.api.middleware import ratelimit

    monkeypatch.setattr(ratelimit, "MAX_LOCAL", 3)
    clock = Clock()
    limiter = RateLimit(small_app(make_runtime(QUIET)), kv=None, rate=1, burst=1, clock=clock)
    assert await limiter.take("ip:a") == (True, 0, 0)
    clock.now += limiter.ttl + 1  # a is idle past the TTL: full again, the first to go
    for who in ("b", "c", "d"):
        assert (await limiter.take(f"ip:{who}"))[0]
    assert (await limiter.take("ip:b"))[0] is False  # b's spent bucket was kept
    clock.now += 1
    for who in ("e", "f"):
        await limiter.take(f"ip:{who}")
    # Past the bound the least recently used go (c, then d; b was used after them).
    assert list(limiter._local) == ["ratelimit:ip:b", "ratelimit:ip:e", "ratelimit:ip:f"]
