"""Where a webhook may be sent: the URL's form, and which addresses are refused.

Two rules, from the issue that brought webhooks (#18): link-local and cloud-metadata addresses
are always refused (169.254.169.254 answers with a cloud machine's credentials); private and
loopback ones, and every other address that is not public, are refused in public mode, as any
fetch is there (``addresses``). They are applied to the URL when a hook is created and again
at every delivery, to each address its name resolves to then (on the local runtime: DNS can
change after the hook was made), by ``webhook_egress``; on the Worker, whose ``fetch`` has no
route into the server's own network, to the URL's literal host and name.

Pure functions over ``ipaddress`` and ``urllib``: portable.
"""

from __future__ import annotations

import ipaddress
from typing import NamedTuple
from urllib.parse import urlsplit

from ..addresses import AddressClass, address_class, name_class
from ..errors import ErrorCode, VidError
from ..inputs import legacy_ipv4  # how browsers and inet_aton read 2852039166 or 0xa9.254.169.254

__all__ = [
    "MAX_URL_CHARS",
    "PUBLIC_PORTS",
    "Target",
    "address_refusal",
    "name_refusal",
    "parse_target",
    "refused_error",
]

MAX_URL_CHARS = 2048
PUBLIC_PORTS = frozenset({80, 443})
"""As public mode fetches (``egress.resolve.PUBLIC_PORTS``, which the Worker does not load)."""
_ALWAYS = frozenset({AddressClass.LINK_LOCAL, AddressClass.UNSPECIFIED, AddressClass.MULTICAST})
_METADATA_ADDRESSES = frozenset(
    {
        ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, DigitalOcean, OpenStack
        ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
        ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
        ipaddress.ip_address("169.254.170.2"),  # AWS ECS task credentials
    }
)
_METADATA_NAMES = ("metadata.google.internal", "metadata.goog", "metadata", "instance-data")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class Target(NamedTuple):
    """A checked URL's parts: what a delivery connects to."""

    url: str
    host: str
    port: int
    literal: IPAddress | None


def address_refusal(address: IPAddress, *, public: bool) -> AddressClass | None:
    """Why a webhook may not go to ``address``; ``None`` when it may."""
    found = address_class(address)
    if address in _METADATA_ADDRESSES or (
        isinstance(address, ipaddress.IPv6Address)
        and address.ipv4_mapped is not None
        and address.ipv4_mapped in _METADATA_ADDRESSES
    ):
        return found or AddressClass.LINK_LOCAL
    if found in _ALWAYS or (public and found is not None):
        return found
    return None


def name_refusal(host: str, *, public: bool) -> AddressClass | None:
    """Why a webhook may not go to the host name ``host`` (lower case, no trailing dot),
    whatever it resolves to; ``None`` when only its addresses can say."""
    if any(host == name or host.endswith("." + name) for name in _METADATA_NAMES):
        return AddressClass.LINK_LOCAL
    return name_class(host) if public else None


def _bad(message: str) -> VidError:
    return VidError(
        ErrorCode.BAD_REQUEST,
        message,
        hint="Give url as an absolute http(s) URL of the receiver, such as https://example.com/hooks/vid2context.",
    )


def refused_error(found: AddressClass | None, *, public: bool, port: int | None = None) -> VidError:
    """``unsupported-input`` for a URL whose host (or port) a webhook may not go to; the class is
    named, the address never is."""
    if found is None:
        return VidError(
            ErrorCode.UNSUPPORTED_INPUT,
            f"The webhook URL's port {port} is not one this server sends to.",
            hint="In public mode webhooks go to ports 80 and 443 only: give url on one of them.",
        )
    rule = (
        "this server sends webhooks to public addresses only"
        if public
        else "link-local and cloud-metadata addresses are never sent to"
    )
    return VidError(
        ErrorCode.UNSUPPORTED_INPUT,
        f"The webhook URL leads to an address that is refused ({found.value}).",
        hint=f"The address {found.phrase}; {rule}. Give url on a host that is public.",
    )


def parse_target(url: object, *, public: bool) -> Target:
    """The checked parts of ``url``: ``bad-request`` for one that is not an absolute http(s) URL
    (credentials in it included: they would travel with every delivery), ``unsupported-input``
    for a literal address, name or port that ``address_refusal``, ``name_refusal`` or public
    mode refuses. Names are resolved later, by the sender."""
    if not isinstance(url, str) or not url.strip():
        raise _bad("url is required: the address deliveries are sent to.")
    if len(url) > MAX_URL_CHARS:
        raise _bad(f"url has {len(url)} characters; at most {MAX_URL_CHARS} are accepted.")
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise _bad("url contains spaces or control characters.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise _bad("url is not a valid URL (its host or port cannot be read).") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        shown = scheme[:20] or "none"
        raise _bad(f"url has the scheme {shown!r}; webhooks are sent over http or https only.")
    if parts.username is not None or parts.password is not None:
        raise _bad("url carries a user name or password; give it without them (deliveries are signed).")
    host = (parts.hostname or "").removesuffix(".")
    if not host:
        raise _bad("url has no host.")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise _bad("url has a host name that cannot be encoded for DNS.") from None
    port = port or (443 if scheme == "https" else 80)
    if public and port not in PUBLIC_PORTS:
        raise refused_error(None, public=public, port=port)
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        legacy = legacy_ipv4(host)
        if legacy is False:
            raise _bad("url has a host that looks like a number but is no address.") from None
        literal = legacy or None
    found = (
        address_refusal(literal, public=public) if literal is not None else name_refusal(host, public=public)
    )
    if found is not None:
        raise refused_error(found, public=public)
    return Target(url=url, host=host, port=port, literal=literal)
