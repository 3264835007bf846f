"""Who a long run belongs to, set per request without importing the ``mcp`` SDK.

A run (``runs.py``) answers only the caller that started it. Over HTTP that was a digest of the
whole ``Authorization`` header, which an OAuth client changes every hour when it refreshes its
access token, so its runs were lost to it. The ``/mcp`` mount (``http.py``) now sets ``RUN_OWNER``
for each request to the digest of ``oauth:<family>`` for an OAuth access token (a grant's family
lives through every refresh, and a new sign-in is a new family), or of the header for a static
token or an account key, whose header does not change. The queue's consumer sets it to the owner
it read from the run (``queued.py``). Unset (stdio, in process), ``toolkit.caller`` is ``""``.
"""

from __future__ import annotations

import hashlib
from contextvars import ContextVar

__all__ = ["RUN_OWNER", "digest"]

RUN_OWNER: ContextVar[str | None] = ContextVar("vid2context_mcp_run_owner", default=None)
"""The digest of the owner of the runs this request starts and reads; ``None``: not over HTTP."""


def digest(text: str) -> str:
    """What is kept of an owner: a digest, so no credential (nor grant family) is ever stored."""
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:32]
