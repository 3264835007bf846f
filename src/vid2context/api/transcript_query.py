"""What a ``GET /api/v1/transcript`` asks for, checked once for both of its paths.

The handler (``videos.transcript``) and the cached-read front (``cached_reads.py``) read the query
here, so both report the same errors in the same order and find one cache key for one request.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import ErrorCode, VidError
from ..formats import Formatter, RenderOptions
from ..includes import parse_include
from ..integrations.skips import parse_skip, video_id_of
from ..models import Mode
from ..runtime import Runtime
from .params import parse_bool, parse_format, parse_lang, parse_mode, parse_optional_bool, require_url

__all__ = ["TranscriptAsk", "transcript_ask"]


class TranscriptAsk(NamedTuple):
    """What a ``/transcript`` request asks for, checked (``transcript_ask``)."""

    source: str
    formatter: Formatter
    options: RenderOptions
    mode: Mode
    lang: str | None
    skipped: tuple[str, ...] | None
    llm: bool
    labels: bool | None
    on_screen: bool

    @property
    def key(self) -> tuple[object, ...]:
        """The rendered-answer cache's key: the input as given (reading it is pure: same text,
        same settings, same video, so a hit need not parse it again; another spelling of the
        same video is an entry of its own), the format and every option the answer depends on."""
        return (
            self.source,
            self.formatter.id,
            self.options.timestamps,
            self.mode,
            self.lang,
            self.labels,
            self.on_screen,
        )


def transcript_ask(
    runtime: Runtime,
    url: str | None,
    format: str | None,  # noqa: A002 - the query parameter's name
    timestamps: str | None,
    mode: str | None,
    lang: str | None,
    skip: str | None,
    translate: str | None,
    speakers: str | None,
    include: str | None,
) -> TranscriptAsk:
    """The query of ``/transcript`` checked, in the order its errors are reported; the handler
    and the cached-read front (``cached_reads.py``) both read it here, so both find one key."""
    source = require_url(url)
    formatter = parse_format(format)
    checked_mode, checked_lang = parse_mode(mode), parse_lang(lang)
    options = RenderOptions(timestamps=parse_bool("timestamps", timestamps), asked=checked_lang)
    skipped = parse_skip(skip)
    if skipped is not None:
        video_id_of(runtime, source)  # a YouTube video, before anything is fetched
    llm = parse_bool("translate", translate)
    labels = parse_optional_bool("speakers", speakers)
    on_screen = "on_screen" in parse_include(include)
    if llm and checked_lang is None:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "translate=1 needs the language to translate into.",
            hint="Give lang as a BCP-47 tag (lang=de), or leave translate out.",
        )
    return TranscriptAsk(
        source, formatter, options, checked_mode, checked_lang, skipped, llm, labels, on_screen
    )
