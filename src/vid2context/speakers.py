"""Speaker labels in an answer: kept, dropped, or a line saying how to get them.

``speakers`` of ``GET /api/v1/transcript`` and ``get_transcript``, as the Scribiz peer offers it:

- ``True``: keep every label; a transcript without any gets a line saying why there are none and
  what would give them (``mode=stt`` with a rung that labels speakers, or setting one up).
- ``None`` (not given): keep the labels only when two or more voices were found; a single label
  ("Speaker 1" on every line) says nothing and costs tokens. No line: the call did not ask.
- ``False``: never label.

The answer is a copy: the saved transcript keeps whatever labels its rung gave. Labels come from a
rung that diarizes (``providers/deepgram.py``) or from subtitles with voice tags (``<v Name>``);
the pipeline is what prefers such a rung (``pipeline.get_context(speakers=True)``).
"""

from __future__ import annotations

from typing import NamedTuple

import msgspec

from .formats.blocks import one_line
from .formats.header import ORIGIN_LABELS
from .models import Transcript, VideoContext
from .pipeline import labelling_rungs
from .runtime import Runtime

__all__ = ["DROPPED_MARK", "SpeakerView", "noted", "speaker_names", "with_speakers"]

DROPPED_MARK = "speaker labels dropped"
"""What ``chunking.merge`` writes in the note of audio cut into pieces whose labels it dropped."""
_SHOWN = 6


class SpeakerView(NamedTuple):
    context: VideoContext
    """The context to render: its transcript's labels kept or removed as asked."""
    line: str | None
    """What the answer says about speakers (``None``: nothing worth saying): who was labelled, or
    why nobody is and what would change that."""


def speaker_names(transcript: Transcript | None) -> list[str]:
    """The distinct speaker labels, in order of first appearance."""
    names: dict[str, None] = {}
    for segment in transcript.segments if transcript else []:
        if segment.speaker:
            names.setdefault(segment.speaker, None)
    return list(names)


def _unlabelled(context: VideoContext) -> VideoContext:
    transcript = context.transcript
    if transcript is None or not any(s.speaker for s in transcript.segments):
        return context
    segments = [msgspec.structs.replace(s, speaker=None) if s.speaker else s for s in transcript.segments]
    return msgspec.structs.replace(context, transcript=msgspec.structs.replace(transcript, segments=segments))


def _labelled_line(transcript: Transcript, names: list[str]) -> str:
    shown = ", ".join(one_line(name, 40) for name in names[:_SHOWN])
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    voices = "1 voice" if len(names) == 1 else f"{len(names)} voices"
    return f"{voices} labelled ({shown}{more}) by {one_line(transcript.producer, 80)}"


def _why_none(runtime: Runtime, transcript: Transcript) -> str:
    """Why a transcript has no labels, and the next step that would give them."""
    if DROPPED_MARK in (transcript.note or ""):
        return (
            "none: the audio was too long for one request, and each piece numbered its voices on its "
            "own, so the labels were dropped rather than name different people as one"
        )
    labellers = labelling_rungs(runtime)
    source = ORIGIN_LABELS.get(transcript.origin, transcript.origin)
    made_by = f"{source} by {one_line(transcript.producer, 80)}"
    if any(rung.id == transcript.producer for rung in labellers):
        return f"none: {made_by} told no voices apart"
    if labellers:
        return (
            f"none: {made_by} carry no speaker labels; ask again with mode=stt to have "
            f"{labellers[0].id} transcribe the audio and label who speaks (billed by the service)"
        )
    return (
        f"none: {made_by} carry no speaker labels, and no speech-to-text rung here labels speakers "
        "(DEEPGRAM_API_KEY turns on Deepgram's, then ask with mode=stt)"
    )


def noted(context: VideoContext, line: str) -> VideoContext:
    """A copy whose transcript's note ends with ``Speakers: <line>``: where the ``json`` format,
    which has no header, says it (as ``skip=`` says there what it removed)."""
    transcript = context.transcript
    if transcript is None:
        return context
    said = f"Speakers: {line}"
    note = f"{transcript.note}; {said}" if transcript.note else said
    return msgspec.structs.replace(context, transcript=msgspec.structs.replace(transcript, note=note))


def with_speakers(runtime: Runtime, context: VideoContext, speakers: bool | None) -> SpeakerView:
    """``context`` with its labels as ``speakers`` asks (module docstring), and the line to say."""
    transcript = context.transcript
    if transcript is None or speakers is False:
        return SpeakerView(_unlabelled(context), None)
    names = speaker_names(transcript)
    if speakers is None:
        return SpeakerView(context if len(names) >= 2 else _unlabelled(context), None)
    if names:
        return SpeakerView(context, _labelled_line(transcript, names))
    return SpeakerView(context, _why_none(runtime, transcript))
