"""Public mode's guard at connect time (``egress``): the pinned resolution, the httpx transport
and the filtering proxy, with DNS and the network replaced by stand-ins (``egress_standins``).

The resolver answers from a table (rebinding included: another answer on the next lookup); the
dialer maps public test addresses to stand-in servers on 127.0.0.1, and it maps the private
addresses the attacks aim at to a "secret" stand-in too, so that the only thing between an
attack and the secret is the guard under test. Every test asserts the secret got no request.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from vid2context.addresses import AddressClass
from vid2context.egress import Egress, Refused, Unresolvable, pin
from vid2context.errors import ErrorCode, VidError

from .egress_standins import (
    PUBLIC,
    PUBLIC_6,
    PUBLIC_B,
    MappedDialer,
    MappedResolver,
    Route,
    Site,
    TestCA,
    UpstreamProxy,
)

pytestmark = pytest.mark.anyio

SECRET = b"the contents of an internal service"


@pytest.fixture
def secret() -> Iterator[Site]:
    with Site({"/secret": Route(200, SECRET), "/talk.webm": Route(200, SECRET)}) as site:
        yield site


@pytest.fixture
def public_site() -> Iterator[Site]:
    routes = {
        "/page": Route(200, b"a public page", {"Content-Type": "text/plain"}),
        "/to-internal": Route(302, b"", {"Location": "http://internal.example.com/secret"}),
        "/to-loopback": Route(302, b"", {"Location": "http://127.0.0.1/secret"}),
        "/to-port": Route(302, b"", {"Location": "http://other.example.com:6379/secret"}),
        "/to-public": Route(302, b"", {"Location": "http://other.example.com/page"}),
    }
    with Site(routes) as site:
        yield site


def _dialer(public_site: Site, secret: Site) -> MappedDialer:
    """Public addresses to the public stand-in; the private ones an attack aims at to the secret."""
    return MappedDialer(
        {
            (PUBLIC, 80): public_site.address,
            (PUBLIC_B, 80): public_site.address,
            (PUBLIC_6, 80): public_site.address,
            ("127.0.0.1", 80): secret.address,
            ("10.0.0.7", 80): secret.address,
            ("10.0.0.7", 443): secret.address,
            ("::1", 443): secret.address,
            ("169.254.169.254", 80): secret.address,
        }
    )


RESOLVER_TABLE = {
    "media.example.com": [PUBLIC],
    "other.example.com": [PUBLIC_B],
    "six.example.com": [PUBLIC_6],
    "internal.example.com": ["10.0.0.7"],
    "loopback.example.com": ["127.0.0.1"],
    "mixed.example.com": [PUBLIC, "10.0.0.7"],
    "mapped.example.com": ["::ffff:127.0.0.1"],
    "nat64.example.com": ["64:ff9b::a00:7"],
    "sixtofour.example.com": ["2002:a9fe:a9fe::1"],
    "metadata.example.com": ["169.254.169.254"],
}


def _resolver(**extra: list) -> MappedResolver:
    return MappedResolver({**RESOLVER_TABLE, **extra})


# --- pin: one resolution, every answer checked ------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "port", "found"),
    [
        ("loopback.example.com", 80, AddressClass.LOOPBACK),
        ("internal.example.com", 443, AddressClass.PRIVATE),
        ("mixed.example.com", 80, AddressClass.PRIVATE),
        ("mapped.example.com", 80, AddressClass.LOOPBACK),
        ("nat64.example.com", 80, AddressClass.PRIVATE),
        ("sixtofour.example.com", 80, AddressClass.LINK_LOCAL),
        ("metadata.example.com", 80, AddressClass.LINK_LOCAL),
        ("127.0.0.1", 80, AddressClass.LOOPBACK),
        ("[::1]", 443, AddressClass.LOOPBACK),
        ("::ffff:10.0.0.1", 443, AddressClass.PRIVATE),
        ("0x7f000001", 80, AddressClass.LOCAL_NAME),  # no dot: a local name (and inet_aton's 127.0.0.1)
        ("127.1", 80, None),  # a name to this table, which has no answer; getaddrinfo says 127.0.0.1
    ],
)
async def test_pin_refuses_any_answer_that_is_not_public(
    host: str, port: int, found: AddressClass | None
) -> None:
    resolver = _resolver()
    if found is None:
        with pytest.raises(Unresolvable):
            await pin(host, port, resolver)
        return
    with pytest.raises(Refused) as caught:
        await pin(host, port, resolver)
    assert caught.value.found is found


async def test_pin_returns_the_checked_answer_and_refuses_other_ports() -> None:
    resolver = _resolver()
    assert await pin("Media.Example.COM.", 443, resolver) == [ipaddress.ip_address(PUBLIC)]
    assert resolver.lookups == ["media.example.com"]
    with pytest.raises(Refused) as caught:
        await pin("media.example.com", 6379, resolver)
    assert caught.value.port == 6379 and caught.value.found is None
    assert "port 6379" in caught.value.error("A redirect").message


async def test_local_names_are_refused_without_a_lookup() -> None:
    resolver = _resolver(**{"localhost": [PUBLIC], "printer.local": [PUBLIC]})
    for host, found in [("localhost", AddressClass.LOOPBACK), ("printer.local", AddressClass.LOCAL_NAME)]:
        with pytest.raises(Refused) as caught:
            await pin(host, 80, resolver)
        assert caught.value.found is found
    assert resolver.lookups == []


# --- the httpx transport ---------------------------------------------------------------------------


async def test_httpx_reaches_a_public_name_with_its_own_host_header(public_site: Site, secret: Site) -> None:
    dialer = _dialer(public_site, secret)
    async with Egress(resolver=_resolver(), dialer=dialer).client() as client:
        response = await client.get("http://media.example.com/page")
        six = await client.get("http://six.example.com/page")
    assert response.status_code == 200 and response.content == b"a public page"
    assert six.status_code == 200
    assert dialer.dialed == [(PUBLIC, 80), (PUBLIC_6, 80)]
    assert public_site.requests[0][2]["host"] == "media.example.com"
    assert public_site.requests[1][2]["host"] == "six.example.com"
    assert secret.requests == []


@pytest.mark.parametrize(
    ("url", "word"),
    [
        ("http://loopback.example.com/secret", "loopback"),
        ("http://mixed.example.com/secret", "private network"),
        ("http://mapped.example.com/secret", "loopback"),
        ("http://metadata.example.com/secret", "link-local"),
        ("http://127.0.0.1/secret", "loopback"),
        ("http://[::ffff:7f00:1]/secret", "loopback"),
    ],
)
async def test_httpx_refuses_a_name_or_address_that_is_not_public(
    public_site: Site, secret: Site, url: str, word: str
) -> None:
    dialer = _dialer(public_site, secret)
    async with Egress(resolver=_resolver(), dialer=dialer).client() as client:
        with pytest.raises(VidError) as caught:
            await client.get(url)
    error = caught.value
    assert error.code is ErrorCode.UNSUPPORTED_INPUT
    assert word in (error.hint or "")
    assert "127.0.0.1" not in error.message + (error.hint or "") and "10.0.0.7" not in error.message
    assert dialer.dialed == [] and secret.requests == []


@pytest.mark.parametrize(
    ("path", "word"),
    [("/to-internal", "private network"), ("/to-loopback", "loopback"), ("/to-port", "port 6379")],
)
async def test_httpx_refuses_a_redirect_into_a_private_network_at_its_hop(
    public_site: Site, secret: Site, path: str, word: str
) -> None:
    dialer = _dialer(public_site, secret)
    async with Egress(resolver=_resolver(), dialer=dialer).client() as client:
        with pytest.raises(VidError) as caught:
            await client.get(f"http://media.example.com{path}")
    assert caught.value.code is ErrorCode.UNSUPPORTED_INPUT
    assert word in caught.value.message + (caught.value.hint or "")
    assert public_site.paths() == [path]
    assert dialer.dialed == [(PUBLIC, 80)] and secret.requests == []


async def test_httpx_follows_a_redirect_to_another_public_host(public_site: Site, secret: Site) -> None:
    dialer = _dialer(public_site, secret)
    async with Egress(resolver=_resolver(), dialer=dialer).client() as client:
        response = await client.get("http://media.example.com/to-public")
    assert response.status_code == 200 and response.content == b"a public page"
    assert dialer.dialed == [(PUBLIC, 80), (PUBLIC_B, 80)]


async def test_a_rebinding_answer_cannot_change_the_dialed_address(public_site: Site, secret: Site) -> None:
    """The name is resolved once per connection: the first answer (public) is what is dialed; the
    next lookup answers loopback, and that connection is refused, not made."""
    resolver = _resolver(**{"rebind.example.com": [[PUBLIC], ["127.0.0.1"]]})
    dialer = _dialer(public_site, secret)
    async with Egress(resolver=resolver, dialer=dialer).client() as client:
        first = await client.get("http://rebind.example.com/page")
        with pytest.raises(VidError) as caught:
            await client.get("http://rebind.example.com/secret")  # a new connection: the site closes each
    assert first.status_code == 200
    assert "loopback" in (caught.value.hint or "")
    assert resolver.lookups == ["rebind.example.com", "rebind.example.com"]
    assert dialer.dialed == [(PUBLIC, 80)] and secret.requests == []


async def test_tls_is_verified_for_the_name_not_the_dialed_address(tmp_path: Path) -> None:
    """The connection goes to the checked address, and TLS still sends the name (SNI) and checks
    the certificate against it: a certificate for media.example.com passes for that name and
    fails for another name that leads to the same server."""
    ca = TestCA()
    with Site({"/ok": Route(200, b"over tls")}, tls=ca.server_context("media.example.com", tmp_path)) as site:
        resolver = MappedResolver({"media.example.com": [PUBLIC], "other.example.com": [PUBLIC]})
        dialer = MappedDialer({(PUBLIC, 443): site.address})
        async with Egress(resolver=resolver, dialer=dialer).client(verify=ca.client_context()) as client:
            response = await client.get("https://media.example.com/ok")
            with pytest.raises(httpx.ConnectError, match="(?i)certificate|hostname"):
                await client.get("https://other.example.com/ok")
    assert response.status_code == 200 and response.content == b"over tls"
    assert site.server_names[0] == "media.example.com"
    assert site.requests[0][2]["host"] == "media.example.com"
    assert dialer.dialed == [(PUBLIC, 443), (PUBLIC, 443)]


async def test_an_unresolvable_name_is_a_connect_error() -> None:
    async with Egress(resolver=MappedResolver({}), dialer=MappedDialer()).client() as client:
        with pytest.raises(httpx.ConnectError):
            await client.get("http://nowhere.example.com/")


# --- the filtering proxy ---------------------------------------------------------------------------


def _exchange(port: int, request: bytes) -> bytes:
    """One request to the proxy over a plain socket; everything it answers until it closes."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(request)
        chunks = []
        while data := sock.recv(65536):
            chunks.append(data)
    return b"".join(chunks)


def _auth(call_id: str) -> bytes:
    return b"Proxy-Authorization: Basic " + base64.b64encode(f"{call_id}:x".encode()) + b"\r\n"


async def _proxied(egress: Egress, request_for) -> tuple[bytes, object]:  # type: ignore[no-untyped-def]
    async with egress.call() as call:
        port = int(call.proxy_url.rsplit(":", 1)[1])
        answer = await asyncio.to_thread(_exchange, port, request_for(call.id))
    return answer, call


async def test_the_proxy_forwards_a_public_request_in_origin_form(public_site: Site, secret: Site) -> None:
    egress = Egress(resolver=_resolver(), dialer=_dialer(public_site, secret))
    try:
        answer, call = await _proxied(
            egress,
            lambda cid: (
                b"GET http://media.example.com/page?x=1 HTTP/1.1\r\nHost: media.example.com\r\n"
                + _auth(cid)
                + b"Connection: keep-alive\r\n\r\n"
            ),
        )
    finally:
        await egress.aclose()
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"a public page")
    method, path, headers = public_site.requests[0]
    assert (method, path, headers["host"], headers["connection"]) == (
        "GET",
        "/page?x=1",
        "media.example.com",
        "close",
    )
    assert "proxy-authorization" not in headers
    assert call.refused is None and secret.requests == []


async def test_the_proxy_tunnels_connect_to_a_public_address(public_site: Site, secret: Site) -> None:
    dialer = _dialer(public_site, secret)
    dialer.map(PUBLIC, 443, public_site.address)  # a plain server behind the tunnel is enough here
    egress = Egress(resolver=_resolver(), dialer=dialer)
    try:
        answer, _ = await _proxied(
            egress,
            lambda cid: (
                b"CONNECT media.example.com:443 HTTP/1.0\r\n"
                + _auth(cid)
                + b"\r\nGET /page HTTP/1.1\r\nHost: media.example.com\r\nConnection: close\r\n\r\n"
            ),
        )
    finally:
        await egress.aclose()
    assert answer.startswith(b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200")
    assert answer.endswith(b"a public page")
    assert dialer.dialed == [(PUBLIC, 443)]


@pytest.mark.parametrize(
    ("request_line", "found"),
    [
        (b"CONNECT 10.0.0.7:443 HTTP/1.1", AddressClass.PRIVATE),
        (b"CONNECT [::1]:443 HTTP/1.1", AddressClass.LOOPBACK),
        (b"CONNECT internal.example.com:443 HTTP/1.1", AddressClass.PRIVATE),
        (b"CONNECT mixed.example.com:443 HTTP/1.1", AddressClass.PRIVATE),
        (b"CONNECT localhost:443 HTTP/1.1", AddressClass.LOOPBACK),
        (b"GET http://loopback.example.com/secret HTTP/1.1", AddressClass.LOOPBACK),
        (b"GET http://169.254.169.254/latest/meta-data/ HTTP/1.1", AddressClass.LINK_LOCAL),
        (b"GET http://nat64.example.com/secret HTTP/1.1", AddressClass.PRIVATE),
        (b"CONNECT media.example.com:22 HTTP/1.1", None),
    ],
)
async def test_the_proxy_refuses_and_records_a_private_destination(
    public_site: Site, secret: Site, request_line: bytes, found: AddressClass | None
) -> None:
    dialer = _dialer(public_site, secret)
    egress = Egress(resolver=_resolver(), dialer=dialer)
    try:
        answer, call = await _proxied(
            egress, lambda cid: request_line + b"\r\nHost: x\r\n" + _auth(cid) + b"\r\n"
        )
    finally:
        await egress.aclose()
    assert answer.startswith(b"HTTP/1.1 403")
    assert b"127.0.0.1" not in answer and b"10.0.0.7" not in answer
    assert call.refused is not None and call.refused.found is found  # type: ignore[attr-defined]
    assert dialer.dialed == [] and secret.requests == []


async def test_the_proxy_admits_only_open_runs(public_site: Site, secret: Site) -> None:
    egress = Egress(resolver=_resolver(), dialer=_dialer(public_site, secret))
    try:
        async with egress.call() as call:
            port = int(call.proxy_url.rsplit(":", 1)[1])
            request = b"GET http://media.example.com/page HTTP/1.1\r\nHost: media.example.com\r\n"
            none = await asyncio.to_thread(_exchange, port, request + b"\r\n")
            wrong = await asyncio.to_thread(_exchange, port, request + _auth("not-a-run") + b"\r\n")
        ended = await asyncio.to_thread(_exchange, port, request + _auth(call.id) + b"\r\n")
    finally:
        await egress.aclose()
    for answer in (none, wrong, ended):
        assert (
            answer.startswith(b"HTTP/1.1 407") and b'Proxy-Authenticate: Basic realm="vid2context"' in answer
        )
    assert public_site.requests == []


@pytest.mark.parametrize(
    "request_line",
    [b"GET ftp://media.example.com/x HTTP/1.1", b"GET /page HTTP/1.1", b"GET https://media.example.com/ HTTP/1.1",
     b"CONNECT media.example.com HTTP/1.1", b"not http at all"],
)  # fmt: skip
async def test_the_proxy_refuses_other_request_forms(
    public_site: Site, secret: Site, request_line: bytes
) -> None:
    dialer = _dialer(public_site, secret)
    egress = Egress(resolver=_resolver(), dialer=dialer)
    try:
        answer, _ = await _proxied(egress, lambda cid: request_line + b"\r\n" + _auth(cid) + b"\r\n")
    finally:
        await egress.aclose()
    assert answer.startswith(b"HTTP/1.1 400")
    assert dialer.dialed == []


async def test_through_the_proxy_a_redirect_is_checked_at_its_hop_and_a_rebinding_answer_too(
    public_site: Site, secret: Site
) -> None:
    """A client that follows redirects through the proxy (as yt-dlp does) asks it again for each
    hop; and a name that answered public for one request answers private for the next one."""
    resolver = _resolver(**{"rebind.example.com": [[PUBLIC], ["10.0.0.7"]]})
    dialer = _dialer(public_site, secret)
    egress = Egress(resolver=resolver, dialer=dialer)
    try:
        async with egress.call() as call:
            async with httpx.AsyncClient(
                proxy=call.proxy_url, follow_redirects=True, trust_env=False
            ) as client:
                redirected = await client.get("http://media.example.com/to-internal")
                first = await client.get("http://rebind.example.com/page")
                second = await client.get("http://rebind.example.com/secret")
    finally:
        await egress.aclose()
    assert redirected.status_code == 403 and first.status_code == 200 and second.status_code == 403
    assert [r.found for r in call.refusals] == [AddressClass.PRIVATE, AddressClass.PRIVATE]
    assert dialer.dialed == [(PUBLIC, 80), (PUBLIC, 80)] and secret.requests == []


async def test_the_proxy_answers_502_when_nothing_answers(public_site: Site, secret: Site) -> None:
    egress = Egress(resolver=_resolver(**{"dark.example.com": [PUBLIC]}), dialer=MappedDialer())
    try:
        answer, call = await _proxied(
            egress, lambda cid: b"GET http://dark.example.com/ HTTP/1.1\r\nHost: x\r\n" + _auth(cid) + b"\r\n"
        )
        unknown, _ = await _proxied(
            egress,
            lambda cid: b"GET http://nowhere.example.com/ HTTP/1.1\r\nHost: x\r\n" + _auth(cid) + b"\r\n",
        )
    finally:
        await egress.aclose()
    assert answer.startswith(b"HTTP/1.1 502") and unknown.startswith(b"HTTP/1.1 502")
    assert call.refused is None  # type: ignore[attr-defined]


async def test_the_proxy_runs_in_its_own_thread_and_stops_with_the_egress(
    public_site: Site, secret: Site
) -> None:
    egress = Egress(resolver=_resolver(), dialer=_dialer(public_site, secret))
    names = lambda: {t.name for t in threading.enumerate()}  # noqa: E731
    assert "vid2context-egress-proxy" not in names()  # started on first use only
    async with egress.call() as one:
        async with egress.call() as two:
            assert one.id != two.id and one.proxy_url.rsplit(":", 1)[1] == two.proxy_url.rsplit(":", 1)[1]
            assert "vid2context-egress-proxy" in names()
    port = int(one.proxy_url.rsplit(":", 1)[1])
    await egress.aclose()
    assert "vid2context-egress-proxy" not in names()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port)).close()


# --- through the operator's proxy (VID2CONTEXT_PROXY) ------------------------------------------------


async def test_the_operators_proxy_is_given_the_checked_address_never_the_name(public_site: Site) -> None:
    from vid2context.egress import UpstreamDialer

    async with UpstreamProxy({f"{PUBLIC}:80": public_site.address}) as upstream:
        dialer = UpstreamDialer(f"http://me:s3cret@127.0.0.1:{upstream.port}")
        egress = Egress(resolver=_resolver(), dialer=dialer)
        async with egress.client() as client:
            response = await client.get("http://media.example.com/page")
            with pytest.raises(VidError):
                await client.get("http://internal.example.com/secret")
        try:  # the filtering proxy tunnels through it the same way
            answer, _ = await _proxied(
                egress,
                lambda cid: (
                    b"GET http://media.example.com/page HTTP/1.1\r\nHost: media.example.com\r\n"
                    + _auth(cid)
                    + b"\r\n"
                ),
            )
            refused, _ = await _proxied(
                egress,
                lambda cid: (
                    b"GET http://other.example.com/page HTTP/1.1\r\nHost: x\r\n" + _auth(cid) + b"\r\n"
                ),
            )
        finally:
            await egress.aclose()
    assert response.status_code == 200 and answer.endswith(b"a public page")
    assert refused.startswith(b"HTTP/1.1 502")  # the operator's proxy refused the tunnel
    expected = "Basic " + base64.b64encode(b"me:s3cret").decode()
    assert upstream.targets == [
        (f"{PUBLIC}:80", expected),
        (f"{PUBLIC}:80", expected),
        (f"{PUBLIC_B}:80", expected),
    ]
    assert public_site.requests[0][2]["host"] == "media.example.com"


def test_public_mode_takes_an_http_proxy_only() -> None:
    from vid2context.egress import UpstreamDialer

    for url in ("socks5://127.0.0.1:1080", "ftp://proxy.example:21", "http://"):
        with pytest.raises(VidError) as caught:
            UpstreamDialer(url)
        assert caught.value.code is ErrorCode.BAD_REQUEST


async def test_check_url_fails_fast_and_says_why() -> None:
    egress = Egress(resolver=_resolver(), dialer=MappedDialer())
    await egress.check_url("https://media.example.com/v", subject="the page")
    with pytest.raises(VidError) as caught:
        await egress.check_url("http://mixed.example.com/v", subject="the page")
    assert caught.value.code is ErrorCode.UNSUPPORTED_INPUT and "private network" in (caught.value.hint or "")
    with pytest.raises(VidError) as caught:
        await egress.check_url("http://nowhere.example.com/v", subject="the page")
    assert caught.value.code is ErrorCode.UPSTREAM
