"""Which addresses and host names are public, and what the others are called.

Public mode fetches public addresses only. The same question is asked in three places: by
``inputs`` about a URL's literal host (on the Worker too), and on the local runtime by ``egress``
about every address a name resolves to and every hop a redirect takes. One table answers it here,
and it names the class of what it refuses ("loopback", "a private network") so that an error can
say why without echoing the address itself. Addresses that carry an IPv4 address inside
(IPv4-mapped, 6to4, NAT64) are as public as the address they carry.

Pure functions over ``ipaddress``: no DNS, no sockets; portable.
"""

from __future__ import annotations

import ipaddress
from enum import StrEnum

from .errors import ErrorCode, VidError, per_surface

__all__ = ["AddressClass", "address_class", "host_class", "name_class", "refusal"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class AddressClass(StrEnum):
    """Why an address or a name is not public; the value is how messages name it."""

    LOOPBACK = "loopback"
    PRIVATE = "a private network"
    LINK_LOCAL = "link-local"
    SHARED = "carrier-grade NAT"
    MULTICAST = "multicast"
    UNSPECIFIED = "unspecified"
    DOCUMENTATION = "documentation"
    BENCHMARKING = "benchmarking"
    TEREDO = "a Teredo tunnel"
    RESERVED = "reserved"
    LOCAL_NAME = "a local network name"
    RESERVED_NAME = "a reserved name"
    WILDCARD_NAME = "a wildcard DNS name"

    @property
    def phrase(self) -> str:
        """``is loopback (this machine)``: what follows "the address" or "the host name"."""
        return _PHRASES[self]


_PHRASES = {
    AddressClass.LOOPBACK: "is loopback (this machine)",
    AddressClass.PRIVATE: "is in a private network",
    AddressClass.LINK_LOCAL: "is link-local (where cloud metadata services answer)",
    AddressClass.SHARED: "is in carrier-grade NAT space (shared, not public)",
    AddressClass.MULTICAST: "is multicast",
    AddressClass.UNSPECIFIED: "is unspecified (it means this machine)",
    AddressClass.DOCUMENTATION: "is reserved for documentation",
    AddressClass.BENCHMARKING: "is reserved for benchmarking",
    AddressClass.TEREDO: "is in a Teredo tunnel",
    AddressClass.RESERVED: "is reserved, not public",
    AddressClass.LOCAL_NAME: "is a local network name",
    AddressClass.RESERVED_NAME: "is a reserved name that never names a public host",
    AddressClass.WILDCARD_NAME: "is a wildcard DNS name, which can name any address",
}

_N = ipaddress.ip_network
# Most specific first: the first network that holds the address names its class.
_IPV4 = (
    (_N("0.0.0.0/8"), AddressClass.UNSPECIFIED),
    (_N("127.0.0.0/8"), AddressClass.LOOPBACK),
    (_N("10.0.0.0/8"), AddressClass.PRIVATE),
    (_N("172.16.0.0/12"), AddressClass.PRIVATE),
    (_N("192.168.0.0/16"), AddressClass.PRIVATE),
    (_N("100.64.0.0/10"), AddressClass.SHARED),
    (_N("169.254.0.0/16"), AddressClass.LINK_LOCAL),
    (_N("192.0.2.0/24"), AddressClass.DOCUMENTATION),
    (_N("198.51.100.0/24"), AddressClass.DOCUMENTATION),
    (_N("203.0.113.0/24"), AddressClass.DOCUMENTATION),
    (_N("198.18.0.0/15"), AddressClass.BENCHMARKING),
    (_N("224.0.0.0/4"), AddressClass.MULTICAST),
    (_N("192.0.0.0/24"), AddressClass.RESERVED),  # IETF protocol assignments
    (_N("192.88.99.0/24"), AddressClass.RESERVED),  # the old 6to4 relay anycast
    (_N("240.0.0.0/4"), AddressClass.RESERVED),  # and 255.255.255.255
)
_IPV6 = (
    (_N("::/128"), AddressClass.UNSPECIFIED),
    (_N("::1/128"), AddressClass.LOOPBACK),
    (_N("64:ff9b:1::/48"), AddressClass.PRIVATE),  # local-use NAT64
    (_N("2001::/32"), AddressClass.TEREDO),
    (_N("2001:db8::/32"), AddressClass.DOCUMENTATION),
    (_N("3fff::/20"), AddressClass.DOCUMENTATION),
    (_N("2001:2::/48"), AddressClass.BENCHMARKING),
    (_N("fc00::/7"), AddressClass.PRIVATE),  # unique local
    (_N("fec0::/10"), AddressClass.PRIVATE),  # the old site-local
    (_N("fe80::/10"), AddressClass.LINK_LOCAL),
    (_N("ff00::/8"), AddressClass.MULTICAST),
)
_NAT64 = _N("64:ff9b::/96")

# Names that lead to the machine itself or its network whatever DNS says elsewhere, and the
# wildcard-DNS services that map a name to any address written inside it (127.0.0.1.nip.io).
_LOOPBACK_NAMES = ("localhost", "localtest.me", "lvh.me", "vcap.me")
_WILDCARD_NAMES = ("nip.io", "sslip.io", "xip.io")
_LOCAL_SUFFIXES = (
    "local", "localdomain", "internal", "intranet", "lan", "home", "corp", "private", "arpa",
)  # fmt: skip
_RESERVED_SUFFIXES = ("test", "invalid", "example", "onion")


def address_class(address: IPAddress) -> AddressClass | None:
    """``None`` for a public address; otherwise why it is not one."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id:
            address = ipaddress.IPv6Address(address.compressed.split("%", 1)[0])
        inner = _carried_ipv4(address)
        if inner is not None:
            return address_class(inner)
        table = _IPV6
    else:
        table = _IPV4
    for network, found in table:
        if address in network:
            return found
    if address.is_reserved or address.is_private or not address.is_global:
        return AddressClass.RESERVED
    return None


def name_class(host: str) -> AddressClass | None:
    """``None`` for a name DNS may make public; otherwise the class it belongs to whatever DNS says.

    ``host`` is normalised: lower case, IDNA-encoded, no trailing dot. A name without a dot is a
    local one (search domains make it a machine on this network).
    """
    if "." not in host:
        return AddressClass.LOOPBACK if host == "localhost" else AddressClass.LOCAL_NAME
    if _within(host, _LOOPBACK_NAMES):
        return AddressClass.LOOPBACK
    if _within(host, _WILDCARD_NAMES):
        return AddressClass.WILDCARD_NAME
    last = host.rsplit(".", 1)[1]
    if last == "localhost":
        return AddressClass.LOOPBACK
    if last in _LOCAL_SUFFIXES:
        return AddressClass.LOCAL_NAME
    if last in _RESERVED_SUFFIXES:
        return AddressClass.RESERVED_NAME
    return None


def host_class(host: str) -> AddressClass | None:
    """The class of a URL's host: a literal address by ``address_class``, a name by ``name_class``."""
    try:
        address = ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
    except ValueError:
        return name_class(host)
    return address_class(address)


def refusal(found: AddressClass, *, subject: str) -> VidError:
    """``unsupported-input`` for a fetch public mode refuses: ``subject`` says what led there ("The
    host 'x'", "A redirect"); the class is named, the address never is."""
    if found in _NAME_CLASSES:
        message, what = f"{subject} is not a public host ({found.value}).", "host name"
    else:
        message, what = f"{subject} leads to an address that is not public ({found.value}).", "address"
    return VidError(
        ErrorCode.UNSUPPORTED_INPUT,
        message,
        hint=per_surface(
            rest=f"The {what} {found.phrase}; this server fetches public addresses only. Give a public "
            "http(s) URL, or upload the file with POST /api/v1/uploads.",
            mcp=f"The {what} {found.phrase}; this server fetches public addresses only. Give a public "
            "http(s) URL of the media.",
        ),
    )


_NAME_CLASSES = {AddressClass.LOCAL_NAME, AddressClass.RESERVED_NAME, AddressClass.WILDCARD_NAME}


def _carried_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address inside an IPv4-mapped, 6to4 or NAT64 address, which is where it leads."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _within(host: str, names: tuple[str, ...]) -> bool:
    return any(host == name or host.endswith("." + name) for name in names)
