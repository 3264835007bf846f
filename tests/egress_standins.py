"""Stand-ins for DNS, the network and web servers, for the public-mode guard (``egress``) tests.

Every real server a test can run is on loopback, which public mode refuses. So the tests inject
the two things the guard stands on: a resolver (a mapping of names to answers, one answer per
lookup, which is how a rebinding DNS server behaves) and a dialer that maps a few public test
addresses (``PUBLIC``, ``PUBLIC_6``) to stand-in servers on 127.0.0.1, and refuses everything else
without touching the network. The guard's own logic then runs for real: what it lets through
reaches a stand-in, what it refuses never does.

``Site`` is a stdlib ``http.server`` on 127.0.0.1 in a thread (plain, or TLS with a certificate
from ``TestCA``) that answers from a table of paths and records every request it gets.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .standin_http import QuietHandler, StandinServer

__all__ = [
    "PUBLIC",
    "PUBLIC_6",
    "PUBLIC_B",
    "MappedDialer",
    "MappedResolver",
    "Route",
    "Site",
    "TestCA",
    "UpstreamProxy",
]

PUBLIC = "93.184.216.34"
"""A public address (it was example.com's) that the dialer maps to a stand-in server."""
PUBLIC_B = "198.41.0.4"
PUBLIC_6 = "2606:2800:220:1:248:1893:25c8:1946"


class MappedResolver:
    """DNS from a table: ``{"name": [answers, ...]}``; each lookup takes the next answer (the last
    one repeats), so ``[["93.184.216.34"], ["127.0.0.1"]]`` rebinds on the second lookup. A plain
    list of addresses is one answer. Unknown names have no address."""

    def __init__(self, table: Mapping[str, Sequence[str] | Sequence[Sequence[str]]]) -> None:
        self._answers: dict[str, list[list[str]]] = {}
        for name, answers in table.items():
            lists = (
                [list(a) for a in answers] if answers and not isinstance(answers[0], str) else [list(answers)]
            )
            self._answers[name] = lists  # type: ignore[assignment]
        self.lookups: list[str] = []

    async def resolve(self, host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        from vid2context.egress import Unresolvable

        self.lookups.append(host)
        answers = self._answers.get(host)
        if not answers:
            raise Unresolvable(host)
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        return [ipaddress.ip_address(a) for a in answer]


class MappedDialer:
    """Connects ``(address, port)`` pairs from a table to ``(host, port)`` on 127.0.0.1; records
    what it was asked to dial; refuses anything else with ``ConnectionRefusedError``."""

    def __init__(self, table: Mapping[tuple[str, int], tuple[str, int]] | None = None) -> None:
        self.table = {(str(ipaddress.ip_address(a)), p): to for (a, p), to in (table or {}).items()}
        self.dialed: list[tuple[str, int]] = []

    def map(self, address: str, port: int, to: tuple[str, int]) -> None:
        self.table[(str(ipaddress.ip_address(address)), port)] = to

    async def dial(self, address, port: int):  # type: ignore[no-untyped-def]
        key = (str(address), port)
        self.dialed.append(key)
        if key not in self.table:
            raise ConnectionRefusedError(f"the test network has nothing at {key}")
        host, real_port = self.table[key]
        return await asyncio.open_connection(host, real_port)


@dataclass
class Route:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    file: Path | None = None


class Site:
    """A web server on 127.0.0.1 answering ``routes`` (path -> ``Route``); 404 elsewhere."""

    def __init__(self, routes: Mapping[str, Route], *, tls: ssl.SSLContext | None = None) -> None:
        self.routes = dict(routes)
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.server_names: list[str | None] = []
        site = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_HEAD(self) -> None:
                self._answer(body=False)

            def do_GET(self) -> None:
                self._answer(body=True)

            def _answer(self, *, body: bool) -> None:
                site.requests.append(
                    (self.command, self.path, {k.lower(): v for k, v in self.headers.items()})
                )
                route = site.routes.get(self.path.split("?", 1)[0])
                if route is None:
                    route = Route(404, b"not here")
                data = route.file.read_bytes() if route.file is not None else route.body
                self.send_response(route.status)
                for name, value in route.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                if body:
                    self.wfile.write(data)
                self.close_connection = True

        self._server = StandinServer(Handler, poll_sec=0.02)
        if tls is not None:
            tls.sni_callback = lambda sock, name, ctx: self.server_names.append(name)  # type: ignore[assignment]
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]

    def __enter__(self) -> Site:
        self._server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.__exit__()

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    def paths(self) -> list[str]:
        return [path for _, path, _ in self.requests]


class TestCA:
    """A certificate authority made for one test, and server certificates it signs."""

    __test__ = False  # not a test class, whatever its name

    def __init__(self) -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        self._x509, self._hashes, self._ec, self._oid = x509, hashes, ec, NameOID
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vid2context test CA")])
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts this CA only, checking host names as httpx does."""
        from cryptography.hazmat.primitives.serialization import Encoding

        context = ssl.create_default_context(cadata=self.cert.public_bytes(Encoding.PEM).decode())
        return context

    def server_context(self, name: str, folder: Path) -> ssl.SSLContext:
        """A server context with a certificate for ``name`` signed by this CA."""
        from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

        x509, oid = self._x509, self._oid
        key = self._ec.generate_private_key(self._ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(oid.COMMON_NAME, name)]))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .sign(self.key, self._hashes.SHA256())
        )
        cert_file, key_file = folder / f"{name}.crt", folder / f"{name}.key"
        cert_file.write_bytes(cert.public_bytes(Encoding.PEM))
        key_file.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        return context


class UpstreamProxy:
    """An operator's HTTP proxy as a stand-in: answers ``CONNECT target`` by connecting to where
    ``table`` maps the target (nothing else is reachable), and records each target and its
    ``Proxy-Authorization``. Runs in the test's event loop (``async with``)."""

    def __init__(self, table: Mapping[str, tuple[str, int]]) -> None:
        self.table = dict(table)
        self.targets: list[tuple[str, str | None]] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> UpstreamProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        target = head[0].split(" ")[1]
        auth = next(
            (
                line.split(":", 1)[1].strip()
                for line in head
                if line.lower().startswith("proxy-authorization:")
            ),
            None,
        )
        self.targets.append((target, auth))
        if target not in self.table:
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection(*self.table[target])
        writer.write(b"HTTP/1.1 200 OK\r\n\r\n")

        async def pipe(source: asyncio.StreamReader, target_writer: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    target_writer.write(data)
                    await target_writer.drain()
            except OSError:
                pass
            finally:
                target_writer.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
