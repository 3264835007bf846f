"""The transcript viewer: one page made of the component files in this folder.

``transcript.js`` and ``transcript.css`` are the transcript component (dependency-free, no build
step), ``viewer.js`` the MCP Apps glue around it and ``viewer.html`` the page that loads both.
An MCP Apps host renders a ``ui://`` resource from its HTML alone, so ``viewer_html()`` inlines
the stylesheet and both scripts into the page when it is read (the component first, then the glue
without its ``import`` line, in one module script). The files come from ``assets.py``, generated
from them, because the Worker has no filesystem.
"""

from __future__ import annotations

from functools import cache

from .assets import ASSETS

__all__ = ["VIEWER_URI", "viewer_html"]

VIEWER_URI = "ui://vid2context/transcript-viewer"

_STYLESHEET = '<link rel="stylesheet" href="transcript.css">'
_SCRIPT = '<script type="module" src="viewer.js"></script>'
_IMPORT = 'import { renderTranscript } from "./transcript.js";\n'


def _once(text: str, part: str, where: str) -> None:
    if text.count(part) != 1:
        raise ValueError(f"{where} must hold {part!r} exactly once")


@cache
def viewer_html(assets: tuple[tuple[str, str], ...] | None = None) -> str:
    """The viewer page with its stylesheet and scripts inline: one self-contained document.

    Raises ``ValueError`` when the files no longer have the shape this relies on (a changed tag,
    import line, or a closing ``</script``/``</style`` inside the inlined text).
    """
    files = dict(assets) if assets is not None else ASSETS
    page, css = files["viewer.html"], files["transcript.css"]
    component, glue = files["transcript.js"], files["viewer.js"]
    _once(page, _STYLESHEET, "viewer.html")
    _once(page, _SCRIPT, "viewer.html")
    _once(glue, _IMPORT, "viewer.js")
    script = component + "\n" + glue.replace(_IMPORT, "")
    if "</style" in css.lower() or "</script" in script.lower():
        raise ValueError("an inlined file closes its own tag")
    page = page.replace(_STYLESHEET, f"<style>\n{css}</style>")
    return page.replace(_SCRIPT, f'<script type="module">\n{script}</script>')
