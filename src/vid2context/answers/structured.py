"""Answers as JSON that must match a schema: ask, check, ask again once with what was wrong.

Briefs and extractions both ask a model for one JSON object. ``ask_json`` walks the pick
(``ladder.complete``: every rung through ``run_rung``, retries, fallback), reads the first JSON
object of the answer (a fenced ```json block or bare braces, text around it ignored) and checks
it with ``check`` (a list of ``"/pointer: reason"`` problems, ``json_schema.problems``). When it
does not parse or does not match, the same rung is asked once more, with its answer and the
problems; a second answer that still fails is reported as ``upstream`` naming the problems (the
model could not do it; a larger one may), never passed on as if it matched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..models import Attempt, ChatMessage
from ..runtime import Runtime
from .llm.base import Completion, LlmOptions
from .llm.ladder import LlmPick, complete

__all__ = ["Check", "ask_json", "read_json"]

Check = Callable[[Any], list[str]]
"""The problems of a parsed answer, as ``"/pointer: reason"`` lines; empty when it is right."""
_FENCED = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)
_NOT_JSON = "/: the answer is not one JSON object"


def read_json(text: str) -> tuple[Any, list[str]]:
    """The JSON object in ``text`` and ``[]``, or ``None`` and why it could not be read."""
    candidates = [match.group(1) for match in _FENCED.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value, []
    return None, [
        _NOT_JSON + (" (it was cut off at the token limit)" if start != -1 and end <= start else "")
    ]


def _correction(problems: Sequence[str]) -> str:
    listed = "\n".join(f"- {problem}" for problem in problems)
    return (
        "That answer does not match the required JSON shape:\n"
        f"{listed}\n"
        "Answer again with the whole JSON object, corrected, and nothing else."
    )


async def ask_json(
    runtime: Runtime,
    pick: LlmPick,
    messages: Sequence[ChatMessage],
    check: Check,
    *,
    ctx: Ctx,
    options: LlmOptions,
    attempts: list[Attempt],
) -> tuple[dict[str, Any], Completion]:
    """The checked object and the completion that gave it (module docstring).

    Raises what ``ladder.complete`` raises, and ``upstream`` when the answering rung's second
    answer still does not match.
    """
    answer = await complete(runtime, pick, messages, ctx=ctx, options=options, attempts=attempts)
    data, problems = read_json(answer.text)
    if data is not None:
        problems = check(data)
    if not problems:
        return data, answer
    rung = next(r for r in pick.rungs if r.id == answer.rung)
    again = [
        *messages,
        ChatMessage(role="assistant", content=answer.text),
        ChatMessage(role="user", content=_correction(problems)),
    ]
    retry = LlmPick(policy=pick.policy, rungs=[rung])
    answer = await complete(runtime, retry, again, ctx=ctx, options=options, attempts=attempts)
    data, problems = read_json(answer.text)
    if data is not None:
        problems = check(data)
    if problems:
        raise VidError(
            ErrorCode.UPSTREAM,
            f"The answer of {rung.id} did not match the required shape, even when asked again: "
            + "; ".join(problems),
            hint="Tell the user the language model could not give that shape (a larger model, another rung, may; "
            "so may a smaller schema or fewer videos); do not retry unchanged.",
            attempts=list(attempts),
        )
    return data, answer
