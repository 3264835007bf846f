"""Who a long run belongs to, set per request without importing the ``mcp`` SDK.

A run (``runs.py``) answers only the caller that started it. Over HTTP that was a digest of the
whole ``Authorization`` header, which an OAuth client changes every hour when it refreshes its
access token, so its runs were lost to it. The ``/mcp`` mount (``http.py``) now sets ``RUN_OWNER``
for each request: ``oauth:<family>`` for an OAuth access token (a grant's family lives through
every refresh, and a new sign-in is a new family). A static token or an account key leaves it
unset: its header does not change, and ``toolkit.caller`` digests the header as before.
"""

from __future__ import annotations

import hashlib
from contextvars import ContextVar

__all__ = ["RUN_OWNER", "digest"]

RUN_OWNER: ContextVar[str | None] = ContextVar("vid2context_mcp_run_owner", default=None)
"""The owner of the runs this request starts and reads; ``None``: the header's digest."""


def digest(text: str) -> str:
    """What is kept of an owner: a digest, so no credential (nor grant family) is ever stored."""
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:32]
