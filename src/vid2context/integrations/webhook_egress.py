"""The local runtime's webhook sender: every name resolved at delivery, every address checked.

A hook's URL was checked when it was made, but DNS can change: a name that resolved to a public
address then may resolve to 169.254.169.254 now. So each attempt connects through the egress
transport (``egress.transport.GuardedTransport``) with a pin of the webhook rules
(``webhook_targets.address_refusal``): the name is resolved once, every answer checked, and the
connection goes to one of exactly those addresses. Outside public mode only link-local and
metadata addresses are refused, so a receiver on this machine or this network still works.

Local only (listed in ``LOCAL_ONLY``): sockets, through the egress package.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

import httpx

from ..egress.dial import Dialer, DirectDialer, UpstreamDialer
from ..egress.resolve import IPAddress, Refused, Resolver, SystemResolver, Unresolvable, normal_host
from ..egress.transport import GuardedTransport
from ..errors import ErrorCode, VidError
from .webhook_senders import DELIVERY_TIMEOUT_S
from .webhook_targets import address_refusal, name_refusal, parse_target, refused_error

__all__ = ["GuardedSender"]


class GuardedSender:
    """``webhook_senders.Sender`` with resolution and connections checked (``resolver`` and
    ``dialer`` are injected in tests; by default the system's, or a tunnel through ``proxy``)."""

    def __init__(
        self,
        *,
        public: bool,
        resolver: Resolver | None = None,
        dialer: Dialer | None = None,
        proxy: str | None = None,
        user_agent: str = "vid2context",
    ) -> None:
        self._public = public
        self._resolver = resolver or SystemResolver()
        dialer = dialer or (UpstreamDialer(proxy) if proxy else DirectDialer())
        self._client = httpx.AsyncClient(
            transport=GuardedTransport(self._pin, dialer),
            follow_redirects=False,
            trust_env=False,
            timeout=httpx.Timeout(DELIVERY_TIMEOUT_S),
            headers={"User-Agent": user_agent},
        )

    async def _pin(self, host: str, port: int) -> list[IPAddress]:
        """The checked addresses for ``host:port``; raises ``Refused`` or ``Unresolvable``."""
        host = normal_host(host)
        try:
            answers: list[IPAddress] = [ipaddress.ip_address(host)]
        except ValueError:
            found = name_refusal(host, public=self._public)
            if found is not None:
                raise Refused(found) from None
            answers = list(await self._resolver.resolve(host, port))
        if not answers:
            raise Unresolvable(host)
        for address in answers:
            found = address_refusal(address, public=self._public)
            if found is not None:
                raise Refused(found)
        return answers

    async def check(self, url: str) -> None:
        target = parse_target(url, public=self._public)
        try:
            await self._pin(target.host, target.port)
        except Refused as refused:
            raise refused_error(refused.found, public=self._public, port=refused.port) from None
        except Unresolvable:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                "The webhook URL's host has no address (DNS found none).",
                hint="Check url's host name for a typo, and give url again once the name resolves.",
            ) from None

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> int:
        parse_target(url, public=self._public)
        response = await self._client.post(url, content=body, headers=dict(headers))
        return response.status_code

    async def aclose(self) -> None:
        await self._client.aclose()
