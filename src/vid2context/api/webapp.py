"""``/app``: the web page for people, served by the API app on both runtimes.

The page (``ui/app.html``) and every script and stylesheet of ``ui/`` (``/app/<name>.js``,
``/app/<name>.css``) come from ``ui/app_assets.py`` and ``ui/assets.py``, the generated copies the
Worker can read, so the
local server and the Worker answer the same bytes from the same origin as the API, with no build
step. Only names of that folder are answered (a module another branch adds, ``app_ask.js``, is
served once ``make site`` has copied it in); everything else is ``not-found``. The page is not
under ``/api``, so it needs no key: it asks for one when the API does. A strict
``Content-Security-Policy`` (scripts and requests to this origin only, no inline code) backs the
page's own rule that text from a video is text. Its one source beyond ``'self'`` is ``media-src
blob:``: the Upload part reads a chosen file's length from a media element over an object URL of
that file (``URL.createObjectURL``, which only this page's own code can mint).
"""

from __future__ import annotations

import re
from typing import Annotated

from litestar import Response, get
from litestar.params import Parameter

from ..errors import ErrorCode, VidError
from ..ui.app_assets import ASSETS as APP_ASSETS
from ..ui.assets import ASSETS as SHARED_ASSETS

__all__ = ["APP_PAGE", "ASSETS", "WEBAPP_ROUTES", "app_file", "app_page"]

APP_PAGE = "app.html"
ASSETS = {**SHARED_ASSETS, **APP_ASSETS}
"""Every file of ``ui/``: the web app's own (``app_assets.py``) and the component's and viewer's."""
_NAME = re.compile(r"[a-z0-9_]{1,64}\.(js|css)")
_TYPES = {"js": "text/javascript", "css": "text/css"}  # Litestar adds the charset
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' blob:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-cache",
}


def _missing(name: str) -> VidError:
    return VidError(
        ErrorCode.NOT_FOUND,
        f"The web app has no file {name[:80]!r}.",
        hint="Tell the user the web app has no such file (its page is /app); do not retry.",
    )


@get(["/app", "/app/"], include_in_schema=False, sync_to_thread=False)
def app_page() -> Response[str]:
    """The web app's page."""
    return Response(ASSETS[APP_PAGE], media_type="text/html", headers=_HEADERS)


@get("/app/{name:str}", include_in_schema=False, sync_to_thread=False)
def app_file(name: Annotated[str, Parameter(description="A file of ui/.")]) -> Response[str]:
    """One script or stylesheet of ``ui/``, by its file name."""
    match = _NAME.fullmatch(name)
    if match is None or name not in ASSETS:
        raise _missing(name)
    return Response(ASSETS[name], media_type=_TYPES[match.group(1)], headers=_HEADERS)


WEBAPP_ROUTES = [app_page, app_file]
