"""Reading a long video in parts: ``/outline``, then ``/section`` one chapter or range at a time.

Both load the context as ``/context`` does (library first) and hand it to ``outline.py``. The
section's times and its choice (``chapter`` or ``from``/``to``) are checked before anything is
fetched, so a malformed request costs no upstream call.
"""

from __future__ import annotations

from typing import Annotated

from litestar import Request, Response, get
from litestar.params import QueryParameter

from ..errors import ErrorCode, VidError
from ..formats import RenderOptions, render_view
from ..includes import parse_include
from ..models import VideoContext
from ..outline import ApiOutline, get_section, outline_for_api, text_costs
from ..pipeline import get_context
from ..timecode import format_timestamp, parse_time
from .middleware import request_ctx
from .params import (
    FormatQuery,
    IncludeQuery,
    LangQuery,
    ModeQuery,
    RefreshQuery,
    TimestampsQuery,
    UrlQuery,
    parse_bool,
    parse_format,
    parse_lang,
    parse_mode,
    require_url,
    runtime_of,
)
from .videos import CONTENT_LANGUAGE, TEXT_MIME, text_response

__all__ = ["load_context", "outline", "section"]

_MAX_CHAPTER_CHARS = 200
_TIME = "Seconds (90), m:ss (1:30), h:mm:ss or units (1h2m5s)."


@get("/api/v1/outline")
async def outline(
    request: Request,
    url: UrlQuery = None,
    mode: ModeQuery = None,
    lang: LangQuery = None,
    refresh: RefreshQuery = None,
) -> ApiOutline:
    """Chapters (or five-minute sections) with token counts, and the total: what ``/section`` for
    each and ``/transcript`` cost in ``text`` (header included)."""
    found, checked_lang = await load_context(request, url, mode, lang, refresh)
    return outline_for_api(found, costs=text_costs(checked_lang))


async def load_context(
    request: Request, url: str | None, mode: str | None, lang: str | None, refresh: str | None
) -> tuple[VideoContext, str | None]:
    """The context a reading route names (library first), its arguments checked before anything
    is fetched; the checked language too, which the token counts depend on."""
    source = require_url(url)
    checked_mode, checked_lang = parse_mode(mode), parse_lang(lang)
    again = parse_bool("refresh", refresh)
    runtime = runtime_of(request)
    ctx = request_ctx(request, runtime)
    found = await get_context(runtime, source, mode=checked_mode, lang=checked_lang, refresh=again, ctx=ctx)
    return found, checked_lang


def _given(value: str | None) -> str | None:
    return None if value is None or not value.strip() else value


@get(
    "/api/v1/section",
    media_type=TEXT_MIME,
    response_description="The section rendered by the chosen formatter; Content-Type is its mimeType.",
    response_headers=[CONTENT_LANGUAGE],
)
async def section(
    request: Request,
    url: UrlQuery = None,
    from_: Annotated[str | None, QueryParameter(name="from", description=_TIME)] = None,
    to: Annotated[str | None, QueryParameter(description=_TIME)] = None,
    chapter: Annotated[
        str | None,
        QueryParameter(description="An outline index (0, 1, ...) or a chapter title, or part of one."),
    ] = None,
    format: FormatQuery = None,
    timestamps: TimestampsQuery = None,
    mode: ModeQuery = None,
    lang: LangQuery = None,
    include: IncludeQuery = None,
) -> Response[str]:
    """One chapter (index or title) or time range, rendered by the chosen formatter (with
    ``include=on_screen`` or a saved reading: what was on screen during it).

    In ``text`` the body follows the header and a ``Section "title": m:ss to m:ss`` line, as
    ``vid2context get --chapter`` prints it.
    """
    source = require_url(url)
    start, end, chosen = _given(from_), _given(to), _given(chapter)
    if start is None and end is None and chosen is None:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "Say which section to read.",
            hint="Give chapter (an index from GET /api/v1/outline, or a title), or from and/or to (90, 1:30).",
        )
    if chosen is not None and (start is not None or end is not None):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "Give either chapter or from/to, not both.",
            hint="Use chapter for one outline entry, or from/to for any time range.",
        )
    if chosen is not None and len(chosen) > _MAX_CHAPTER_CHARS:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"chapter is {len(chosen):,} characters long; the limit is {_MAX_CHAPTER_CHARS}.",
            hint="Give an outline index (0, 1, ...) or part of a chapter title.",
        )
    start_sec = parse_time(start) if start is not None else None
    end_sec = parse_time(end) if end is not None else None
    if start_sec is not None and end_sec is not None and start_sec > end_sec:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"from ({format_timestamp(start_sec)}) is after to ({format_timestamp(end_sec)}).",
            hint="Give from before to, e.g. from=1:30&to=4:00.",
        )
    formatter = parse_format(format)
    checked_mode, checked_lang = parse_mode(mode), parse_lang(lang)
    on_screen = "on_screen" in parse_include(include)
    options = RenderOptions(timestamps=parse_bool("timestamps", timestamps), asked=checked_lang)
    runtime = runtime_of(request)
    ctx = request_ctx(request, runtime)
    found = await get_context(
        runtime, source, mode=checked_mode, lang=checked_lang, ctx=ctx, on_screen=on_screen
    )
    part = get_section(found, chapter=chosen, from_=start_sec, to=end_sec)
    text = render_view(part.context, formatter, options, section_line=part.section_line())
    language = found.transcript.language if found.transcript else None
    return text_response(text, formatter.mime_type, language=language)
