"""A transcript as a language model reads it: ``[m:ss] text`` lines, cut into parts that fit.

Key moments and overviews send a whole transcript to a model. A video too long for one request is
cut between segments into parts of at most ``budget`` tokens, each sent on its own (the caller
merges what the parts answer). The budget is worked out for the smallest window among the rungs
a request may fall back to, so a part sized for the first rung still fits the next one. Past
``MAX_PARTS`` parts the video is ``too-large``: that many requests is a bill and a wait no one
asked for, and a rung with a larger window answers it in fewer.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ErrorCode, VidError
from ..models import Segment
from ..timecode import format_timestamp
from ..tokens import estimate_tokens
from .llm.base import LanguageModel

__all__ = ["MAX_PARTS", "line_of", "part_budget", "split_parts"]

MAX_PARTS = 24
_LINE_OVERHEAD = 4
"""The ``[m:ss] `` prefix and the line break, in tokens."""


def line_of(segment: Segment) -> str:
    return f"[{format_timestamp(segment.start_sec)}] {' '.join(segment.text.split())}"


def part_budget(rungs: Sequence[LanguageModel], *, prompt_tokens: int, output_tokens: int) -> int:
    """Transcript tokens one request may carry on every rung of ``rungs``: what the smallest
    window leaves after the instructions and the answer, at most three quarters of it (token
    estimates are estimates)."""
    window = min(rung.context_tokens for rung in rungs)
    output = min(output_tokens, min(rung.max_output_tokens for rung in rungs))
    return max(500, min(window - prompt_tokens - output, window * 3 // 4))


def split_parts(segments: Sequence[Segment], budget: int) -> list[range]:
    """``segments`` in runs of neighbours of at most ``budget`` tokens as ``line_of`` writes them
    (a longer segment alone is a part of its own); ``too-large`` past ``MAX_PARTS``."""
    parts: list[range] = []
    start, tokens = 0, 0
    for index, segment in enumerate(segments):
        cost = estimate_tokens(segment.text) + _LINE_OVERHEAD
        if index > start and tokens + cost > budget:
            parts.append(range(start, index))
            start, tokens = index, 0
        tokens += cost
    if start < len(segments):
        parts.append(range(start, len(segments)))
    if len(parts) > MAX_PARTS:
        raise VidError(
            ErrorCode.TOO_LARGE,
            f"The transcript needs {len(parts)} requests to this language model (at most {MAX_PARTS}).",
            hint="Tell the user the video is too long for the language model set up here; a rung with a "
            "larger context window (VID2CONTEXT_LLM_CONTEXT_TOKENS for an OpenAI-compatible server) reads "
            "it in fewer parts. Do not retry until then.",
        )
    return parts
