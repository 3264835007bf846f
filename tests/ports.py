"""A free TCP port on the loopback address, for a test's server subprocess."""

from __future__ import annotations

import socket

__all__ = ["free_port"]


def free_port() -> int:
    """A port the system had free a moment ago. Another process may take it before the server
    binds it: a fixture that must not fail for that retries with another (``test_push``)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
