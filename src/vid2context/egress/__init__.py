"""What the local runtime fetches on a caller's behalf, held to public mode at connect time.

Local only (listed in ``LOCAL_ONLY``): sockets, a thread, subprocess proxies. ``guard.Egress``
is the entry point; the rest is one concern per module::

    resolve.py ..... a name resolved once, every answer checked (``addresses`` names the class)
    dial.py ........ connections to checked addresses: direct, or tunnelled by address through
                     ``VID2CONTEXT_PROXY``
    transport.py ... the httpx transport: every connection and redirect hop pinned
    proxy.py ....... the filtering HTTP proxy (CONNECT and forward) for yt-dlp and ffmpeg
    calls.py ....... one credential per program run, and what the proxy refused for it
"""

from .calls import Call
from .dial import Dialer, DirectDialer, UpstreamDialer
from .guard import Egress
from .resolve import PUBLIC_PORTS, IPAddress, Refused, Resolver, SystemResolver, Unresolvable, pin
from .transport import GuardedTransport

__all__ = [
    "PUBLIC_PORTS",
    "Call",
    "Dialer",
    "DirectDialer",
    "Egress",
    "GuardedTransport",
    "IPAddress",
    "Refused",
    "Resolver",
    "SystemResolver",
    "Unresolvable",
    "UpstreamDialer",
    "pin",
]
