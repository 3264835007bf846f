"""Stand-in for the Worker's ``ASSETS`` binding, as wrangler.toml configures it.

``html_handling = "none"`` and ``not_found_handling = "none"``: a ``fetch`` of a URL answers the
file at exactly that path with 200, or 404; files matched by ``site/.assetsignore`` (``_*``) are
not uploaded, so they answer 404 too. The response is what the SDK's fetcher wrapper returns: an
object with ``status`` and ``await bytes()``.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from urllib.parse import unquote, urlsplit


class AssetResponse:
    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self._body = body

    async def bytes(self) -> bytes:
        return self._body


class AssetsBinding:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        ignore = root / ".assetsignore"
        self._ignored = [
            line.strip()
            for line in (ignore.read_text().splitlines() if ignore.is_file() else [])
            if line.strip() and not line.startswith("#")
        ]
        self.requests: list[str] = []

    def _uploaded(self, relative: str) -> bool:
        parts = relative.split("/")
        return relative != ".assetsignore" and not any(
            fnmatch.fnmatch(part, pattern) for part in parts for pattern in self._ignored
        )

    async def fetch(self, url: str) -> AssetResponse:
        path = unquote(urlsplit(url).path)
        self.requests.append(path)
        relative = path.lstrip("/")
        target = (self.root / relative).resolve()
        if not target.is_relative_to(self.root) or not target.is_file() or not self._uploaded(relative):
            return AssetResponse(404, b"")
        return AssetResponse(200, target.read_bytes())
