"""``choose_caption_track``: the user picks the caption track, through elicitation.

The tool lists the video's tracks (the core of ``list_caption_languages``), asks the user which
language to read with ``elicitation/create`` (a form with one choice), then answers that track's
transcript as ``get_transcript`` would, paging included (the next page is a ``get_transcript``
call with the chosen ``language``). When only one language is offered there is nothing to ask.
Without elicitation (a client that did not declare it, or stateless HTTP, where the server cannot
ask back in the middle of a call) it answers the list, with the call to make once a track is
chosen; a user who declines or cancels gets the same list.
"""

from __future__ import annotations

from typing import Any, Literal

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field, create_model

from ...caption_languages import CaptionLanguages, caption_languages
from ...ctx import Ctx
from ...formats import RenderOptions, get_formatter
from ...models import Base, CaptionTrack
from ...pipeline import get_context
from ...runtime import Runtime
from ..costs import STATED_COSTS
from ..paging import page_size
from ..params import Url
from ..reading import Reading
from ..results import JsonReply, Reply
from ..toolkit import ContractTool, Deps, define
from .common import describe_costs, notes

__all__ = ["TrackChoices", "tools"]


class TrackChoices(Base, kw_only=True):
    """The tracks, when the user was not (or could not be) asked."""

    id: str
    url: str | None = None
    tracks: list[CaptionTrack]
    asked: bool
    """Whether the user was asked (and declined or cancelled)."""
    next: str


def _languages(tracks: list[CaptionTrack]) -> dict[str, str]:
    """Each language once, labelled with what it offers: ``English (manual, automatic)``."""
    kinds: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    for track in tracks:
        names.setdefault(track.language, track.name or track.language)
        label = "manual" if track.kind == "manual" else "automatic"
        if label not in kinds.setdefault(track.language, []):
            kinds[track.language].append(label)
    return {code: f"{names[code]} ({', '.join(kinds[code])})" for code in kinds}


def _form(languages: dict[str, str]) -> type[BaseModel]:
    """The elicitation form: one required choice among the languages' codes."""
    choice = Literal[tuple(languages)]  # type: ignore[valid-type]
    described = "; ".join(f"{code}: {label}" for code, label in languages.items())
    return create_model(
        "CaptionTrackChoice",
        language=(choice, Field(description=f"The caption track to read: {described}"[:1000])),
    )


def _call_ctx(runtime: Runtime) -> Ctx:
    """The call's own deadline: the user's answer is waited for inside it, so the call stays short."""
    return Ctx(timeout=runtime.settings.request_timeout_ms / 1000)


def _can_elicit(ctx: Context) -> bool:
    """Whether the client declared elicitation and this call's channel can carry the question:
    stdio and an HTTP session can, stateless HTTP (one JSON answer per request) cannot."""
    try:
        session = ctx.request_context.session
        capabilities = session.client_capabilities
        reachable = session.can_send_request
    except (ValueError, LookupError, AttributeError):
        return False
    return reachable and capabilities is not None and capabilities.elicitation is not None


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def choose_caption_track(ctx: Context, url: Url) -> Reply:
        """Let the user choose which caption track of a video to read: lists the tracks, asks
        the user to pick one (elicitation), then returns that track's transcript as
        get_transcript does (text, [m:ss] lines, in pages). Without elicitation in this client
        it returns the list instead: call get_transcript with the chosen language. Costs what
        get_transcript costs for the chosen track (about {per_hour} tokens an hour of speech), or
        about {per_track} tokens per track for the list."""
        listed: CaptionLanguages = await caption_languages(runtime, url, _call_ctx(runtime))
        languages = _languages(listed.tracks)
        chosen: str | None = next(iter(languages)) if len(languages) == 1 else None
        asked = False
        if chosen is None and languages and _can_elicit(ctx):
            asked = True
            answer = await ctx.elicit(f"Which caption track of {listed.id} should be read?", _form(languages))
            if answer.action == "accept" and answer.data is not None:
                chosen = str(answer.data.language)  # type: ignore[attr-defined]
        if chosen is None:
            hint = (
                "Ask the user which language to read, then call get_transcript with that language."
                if languages
                else "This video offers no caption tracks: call get_transcript with mode=stt to transcribe it."
            )
            return JsonReply(
                TrackChoices(id=listed.id, url=listed.url, tracks=listed.tracks, asked=asked, next=hint)
            )
        context = await get_context(runtime, url, lang=chosen, ctx=_call_ctx(runtime))
        formatter = get_formatter("text")
        given: dict[str, Any] = {"url": url, "language": chosen}
        reading = Reading(
            context,
            formatter,
            RenderOptions(timestamps=True, asked=chosen),
            page_size(runtime, None),
            ("get_transcript", given),
            notes(context),
        )
        return reading.page(None)[0]

    describe_costs(choose_caption_track, STATED_COSTS)
    return [
        define(
            choose_caption_track,
            title="Choose a caption track",
            read_only=True,
            open_world=True,
            idempotent=True,
        )
    ]
