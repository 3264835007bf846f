"""``Egress``: public mode's guard over what the local runtime fetches on a caller's behalf.

The URL check in ``inputs`` reads names and literal addresses only, so a name that resolves to
127.0.0.1, a redirect into a private network, or a DNS answer that changes after the check would
all get through. Here every connection is held to the rule at the moment it is made, on each
path the local runtime fetches by:

    httpx ........... ``client()``: a transport that resolves, checks and dials the checked
                      address for every connection and every redirect hop (``transport.py``)
    yt-dlp, ffmpeg .. ``call()``: a per-run credential for the filtering proxy on 127.0.0.1
                      (``proxy.py``) that they are pointed at, and what it refused for that run
    before a run .... ``check_url()``: the input URL's host, resolved and checked, so the common
                      case fails fast with a clear error before any program starts

The runtime builds one in public mode only (``build_local_runtime``) and closes it with itself;
the proxy starts on first use. With public mode off nothing here runs. The Worker never imports
this package: on Cloudflare, ``fetch`` has no route into the server's own network.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import httpx

from ..errors import ErrorCode, VidError
from ..settings import Settings
from .calls import Call, Calls
from .dial import Dialer, DirectDialer, UpstreamDialer
from .proxy import FilteringProxy
from .resolve import PUBLIC_PORTS, IPAddress, Refused, Resolver, SystemResolver, Unresolvable, pin
from .transport import GuardedTransport

__all__ = ["Egress"]


class Egress:
    """The resolver and dialer public mode connects with, and the filtering proxy over them.

    ``resolver`` and ``dialer`` are injected in tests (a mapping of names to addresses; public
    test addresses mapped to stand-in servers on 127.0.0.1); by default the system's resolver
    and direct connections, or a tunnel through ``VID2CONTEXT_PROXY`` (``from_settings``).
    """

    def __init__(
        self,
        *,
        resolver: Resolver | None = None,
        dialer: Dialer | None = None,
        ports: frozenset[int] = PUBLIC_PORTS,
    ) -> None:
        self.resolver = resolver or SystemResolver()
        self.dialer = dialer or DirectDialer()
        self._ports = ports
        self._calls = Calls()
        self._proxy = FilteringProxy(pin=self.pin, dialer=self.dialer, calls=self._calls)

    @classmethod
    def from_settings(
        cls, settings: Settings, *, resolver: Resolver | None = None, dialer: Dialer | None = None
    ) -> Egress:
        """The runtime's guard: through ``VID2CONTEXT_PROXY`` when it is set (an HTTP(S) proxy,
        else ``bad-request`` at start-up)."""
        if dialer is None and settings.proxy:
            dialer = UpstreamDialer(settings.proxy)
        return cls(resolver=resolver, dialer=dialer)

    async def pin(self, host: str, port: int) -> list[IPAddress]:
        """The checked addresses for ``host:port``; raises ``Refused`` or ``Unresolvable``."""
        return await pin(host, port, self.resolver, ports=self._ports)

    async def check_url(self, url: str, *, subject: str) -> None:
        """Refuse, before anything starts, an http(s) URL whose host is not public now.

        The check that holds is the one at connect time; this one makes the common case fail
        fast with the class in its hint, where a program would only say "HTTP Error 403".
        """
        parts = urlsplit(url)
        try:
            port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
        except ValueError:
            raise VidError(ErrorCode.UNSUPPORTED_INPUT, f"{subject} has no valid port.") from None
        try:
            await self.pin(parts.hostname or "", port)
        except Refused as refused:
            raise refused.error(subject) from None
        except Unresolvable:
            raise VidError(
                ErrorCode.UPSTREAM,
                f"The host of {subject} has no address (DNS found none).",
                hint="Check the url's host name for a typo; if it is right, tell the user the host has no "
                "address, and do not retry.",
            ) from None

    @asynccontextmanager
    async def call(self) -> AsyncIterator[Call]:
        """A credential for one program run: ``call.proxy_url`` while the block runs, and
        ``call.refused`` afterwards. Starts the proxy when it is not running."""
        port = await asyncio.to_thread(self._proxy.start)
        call = self._calls.open()
        call.proxy_url = f"http://{call.id}:x@127.0.0.1:{port}"
        try:
            yield call
        finally:
            self._calls.close(call)

    def client(
        self,
        *,
        verify: ssl.SSLContext | bool = True,
        timeout: float = 30.0,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.AsyncClient:
        """An httpx client for URLs a caller chose: redirects followed, each hop checked.

        Not the runtime's own client, which talks to the services the operator configured
        (YouTube's origin, the speech-to-text endpoints) and may point at a local one.
        """
        return httpx.AsyncClient(
            transport=GuardedTransport(self.pin, self.dialer, verify=verify),
            follow_redirects=True,
            trust_env=False,
            timeout=httpx.Timeout(timeout),
            headers=headers,
        )

    async def aclose(self) -> None:
        """Stop the proxy and close the connections it holds."""
        await asyncio.to_thread(self._proxy.stop)
