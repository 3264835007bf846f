"""The caption tracks a video offers and the languages the platform translates them into.

One core for ``GET /api/v1/caption-languages`` and the MCP tool ``list_caption_languages``. The
source ladder is walked as for captions: the first rung that lists the tracks answers. Only a rung
that reads YouTube's player answer (InnerTube) knows the translation targets
(``ListsTranslations``); one that lists tracks only answers with none.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .ctx import Ctx
from .errors import ErrorCode, VidError
from .models import Attempt, Base, CaptionTrack, TranslationTarget, VideoRef
from .pipeline import resolve_video, run_rung
from .runtime import Runtime

__all__ = ["CaptionLanguages", "ListsTranslations", "caption_languages"]


class CaptionLanguages(Base, kw_only=True):
    id: str
    url: str | None = None
    tracks: list[CaptionTrack]
    translation_targets: list[TranslationTarget] = []


@runtime_checkable
class ListsTranslations(Protocol):
    """A source that lists the tracks and the translation targets together (one upstream read)."""

    async def caption_languages(
        self, ref: VideoRef, ctx: Ctx
    ) -> tuple[list[CaptionTrack], list[TranslationTarget]]: ...


async def caption_languages(runtime: Runtime, source: str, ctx: Ctx) -> CaptionLanguages:
    """The tracks of the video ``source`` names, from the first source rung that lists them."""
    ref = resolve_video(runtime, source, wanted="tracks")
    providers = [provider for provider in runtime.sources if provider.accepts(ref)]
    if not providers:
        raise VidError(
            ErrorCode.NO_PROVIDER,
            f"No provider here lists caption tracks for {ref.id[:80]}.",
            hint="Caption tracks are listed for YouTube videos only: give a YouTube video's URL or id as url.",
        )
    attempts: list[Attempt] = []
    errors: list[VidError] = []
    for provider in providers:
        try:
            if isinstance(provider, ListsTranslations):
                tracks, targets = await run_rung(
                    attempts, provider.id, "captions", lambda p=provider: p.caption_languages(ref, ctx)
                )
            else:
                tracks = await run_rung(
                    attempts, provider.id, "captions", lambda p=provider: p.caption_tracks(ref, ctx)
                )
                targets = []
        except VidError as error:
            errors.append(error)
            continue
        return CaptionLanguages(id=ref.id, url=ref.url, tracks=tracks, translation_targets=targets)
    raise errors[0]
