"""A host name resolved once, every answer checked: the addresses a connection is pinned to.

Public mode must hold at connect time, not only when a URL is read: a name can resolve to
127.0.0.1, to a mix of public and private addresses, or to a public address when checked and a
private one a moment later (DNS rebinding). So a name is resolved once per connection, every
address it answers is classified (``addresses.address_class``), one that is not public refuses
the whole answer (a client that tries the next address on failure would reach it), and the
connection then goes to one of exactly these addresses. Nothing resolves the name again.

Failures are exceptions of this module, which each path turns into its own answer (an httpx
error, a proxy status, a ``VidError``)::

    Refused ........ an address, a name or a port that public mode does not fetch
    Unresolvable ... the name has no address (NXDOMAIN, no network, a malformed name)
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from ..addresses import AddressClass, address_class, name_class, refusal
from ..errors import ErrorCode, VidError, per_surface

__all__ = [
    "PUBLIC_PORTS",
    "IPAddress",
    "Pin",
    "Refused",
    "Resolver",
    "SystemResolver",
    "Unresolvable",
    "normal_host",
    "pin",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Pin = Callable[[str, int], Awaitable[list["IPAddress"]]]
"""``pin`` with its resolver bound: ``(host, port)`` to the checked addresses."""
PUBLIC_PORTS = frozenset({80, 443})
"""The ports public mode fetches, at every hop as for the input URL: services a machine keeps to
itself (databases, caches, admin consoles) listen elsewhere, and may answer on its own public
address."""


class Resolver(Protocol):
    """Name resolution, injected so tests can answer as any DNS would (rebinding included)."""

    async def resolve(self, host: str, port: int) -> Sequence[IPAddress]:
        """Every address ``host`` has, in the order to try them; raises ``Unresolvable`` when it
        has none. ``host`` is a name, never a literal address."""
        ...


class Unresolvable(Exception):
    """The name has no address."""


class Refused(Exception):
    """A destination public mode does not fetch: ``found`` names the class, or ``port`` the port."""

    def __init__(self, found: AddressClass | None = None, *, port: int | None = None) -> None:
        super().__init__(found.value if found is not None else f"port {port}")
        self.found = found
        self.port = port

    def error(self, subject: str) -> VidError:
        """``unsupported-input`` naming the class (never the address); ``subject`` says what led
        there ("The host 'x'", "A redirect from 'x'")."""
        if self.found is not None:
            return refusal(self.found, subject=subject)
        return VidError(
            ErrorCode.UNSUPPORTED_INPUT,
            f"{subject} leads to port {self.port}, which this server does not fetch.",
            hint=per_surface(
                rest="In public mode only the standard http and https ports (80 and 443) are fetched. "
                "Give a public http(s) URL on one of them, or upload the file with POST /api/v1/uploads.",
                mcp="In public mode only the standard http and https ports (80 and 443) are fetched. "
                "Give a public http(s) URL on one of them.",
            ),
        )


class SystemResolver:
    """The operating system's resolver (``getaddrinfo``), run by the event loop off its thread."""

    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        loop = asyncio.get_running_loop()
        try:
            answers = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:  # socket.gaierror is an OSError
            raise Unresolvable(host) from exc
        found: list[IPAddress] = []
        for _family, _type, _proto, _name, sockaddr in answers:
            try:
                address = ipaddress.ip_address(str(sockaddr[0]))
            except ValueError:
                continue
            if address not in found:
                found.append(address)
        if not found:
            raise Unresolvable(host)
        return found


def normal_host(host: str) -> str:
    """A host as DNS and ``addresses`` read it: no brackets, lower case, IDNA, no trailing dot."""
    host = host.strip().removeprefix("[").removesuffix("]")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise Unresolvable(host) from None
    return host.lower().removesuffix(".")


async def pin(
    host: str, port: int, resolver: Resolver, *, ports: frozenset[int] = PUBLIC_PORTS
) -> list[IPAddress]:
    """The addresses to connect to for ``host:port``, every one of them public.

    A literal address is checked as it is; a name is checked by its kind (``localhost``,
    ``.internal``) and then resolved once, and every answer is checked. Raises ``Refused`` or
    ``Unresolvable``.
    """
    if port not in ports:
        raise Refused(port=port)
    host = normal_host(host)
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        answers: Sequence[IPAddress] = [literal]
    else:
        if not host:
            raise Unresolvable(host)
        found = name_class(host)
        if found is not None:
            raise Refused(found)
        answers = await resolver.resolve(host, port)
        if not answers:
            raise Unresolvable(host)
    for address in answers:
        found = address_class(address)
        if found is not None:
            raise Refused(found)
    return list(answers)
