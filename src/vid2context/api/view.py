"""``GET /api/v1/view``: one video as the web app shows it, in one request.

The transcript viewer's data (``viewer.transcript_view``: metadata, chapters or five-minute
sections, segments, the moment link; what the MCP tool ``open_transcript_viewer`` hands its page)
and the token count ``/outline`` reports, so the page needs neither platform knowledge (how a
moment's link is made) nor a second round trip before the transcript is readable. The context is
loaded as ``/context`` loads it (library first).
"""

from __future__ import annotations

from litestar import Request, get

from ..outline import text_costs
from ..viewer import PageView, page_view
from .params import LangQuery, ModeQuery, RefreshQuery, UrlQuery
from .reading import load_context

__all__ = ["view"]


@get("/api/v1/view")
async def view(
    request: Request,
    url: UrlQuery = None,
    mode: ModeQuery = None,
    lang: LangQuery = None,
    refresh: RefreshQuery = None,
) -> PageView:
    """A video as the web app shows it: metadata, chapters (or five-minute sections), every timed
    segment, the moment link (``<seconds>`` where the seconds go), origin and token count."""
    found, checked_lang = await load_context(request, url, mode, lang, refresh)
    return page_view(found, text_costs(checked_lang).whole(found))
