"""The docs site read from a folder on disk: the local server's ``SiteReader``.

The folder is ``site/`` of a source checkout, or the copy a wheel carries (``vid2context/_site``).
Only exact files inside the folder are read; ``site.SiteApp`` has already refused paths that climb
out, and the resolved path is checked again here so a symlink cannot lead outside either.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SiteFiles", "default_site_dir"]

_PACKAGE = Path(__file__).resolve().parent


def default_site_dir() -> Path | None:
    """The site shipped with this install: the wheel's copy, else the checkout's ``site/``."""
    for candidate in (_PACKAGE / "_site", _PACKAGE.parents[1] / "site"):
        if (candidate / "index.html").is_file():
            return candidate
    return None


class SiteFiles:
    """Reads site files from ``root``; small files, so a plain blocking read is fine."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    async def read(self, path: str) -> bytes | None:
        target = (self.root / path.lstrip("/")).resolve()
        if not target.is_relative_to(self.root) or not target.is_file():
            return None
        return target.read_bytes()
