"""A brief across videos: claims with checked citations, consensus, disagreement, open questions.

``build_brief(runtime, scope, template, ctx=...)`` is the core of ``POST /api/v1/briefs`` (a job
of kind ``brief``) and of MCP ``build_brief``:

1. **Sources.** ``grounding.ground`` finds the passages: those that best match the question, or,
   without one, passages spread evenly through every video; numbered, fenced as untrusted, sized
   for the smallest window of the rungs that may answer (``left_out`` counts what did not fit).
2. **Ask.** One request for one JSON object (``ANSWER_SCHEMA``): ``summary``, ``claims``,
   ``consensus``, ``disagreement`` (topics with positions) and ``openQuestions``, every claim citing
   its sources inline as ``[n]``. An answer that does not match is asked again once with what was
   wrong, then reported (``structured.ask_json``).
3. **Check.** Every claim goes through ``citations.check_citations``: numbers that match no
   source are removed and listed in ``unverified``, the others become ``Citation``s narrowed to
   the segment that best supports the claim. A claim left with no citation is dropped. Consensus
   must stand on two or more videos and each disagreement on positions from two or more videos;
   what the model offered with less becomes plain claims. Every such change is said in ``notes``.

Single pass: the passages that fit one window are the brief's material (no map-reduce).
"""

from __future__ import annotations

from typing import Any

from ..ctx import Ctx
from ..formats.blocks import one_line
from ..models import Brief, BriefDisagreement, BriefPoint, ChatMessage, Citation
from ..runtime import Runtime
from ..timecode import format_timestamp
from .citations import check_citations, strip_unverified
from .grounding import Grounding, Source
from .json_schema import check_schema, problems
from .llm.base import LlmOptions
from .scope import Scope, failed_inputs, fenced_sources, left_out_notes, prepare
from .structured import ask_json
from .templates import BriefTemplate

__all__ = ["ANSWER_SCHEMA", "ANSWER_TOKENS", "brief_markdown", "build_brief", "instructions"]

ANSWER_TOKENS = 2000
"""The most a brief's answer may take: a page of claims."""
_TEXT = {"type": "string", "minLength": 1}
_POINT = {"type": "object", "properties": {"text": _TEXT}, "required": ["text"]}
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string"},
        "claims": {"type": "array", "items": _POINT},
        "consensus": {"type": "array", "items": _POINT},
        "disagreement": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"topic": _TEXT, "positions": {"type": "array", "items": _POINT}},
                "required": ["topic", "positions"],
            },
        },
        "openQuestions": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["summary", "claims", "consensus", "disagreement", "openQuestions"],
}
_SHAPE = (
    '{"summary": "two or three sentences [n]", "claims": [{"text": "a claim [n]"}], '
    '"consensus": [{"text": "what two or more videos agree on [n][m]"}], '
    '"disagreement": [{"topic": "what they disagree about", "positions": [{"text": "one view [n]"}, '
    '{"text": "another view [m]"}]}], "openQuestions": ["what the videos leave open"]}'
)


def instructions(grounding: Grounding, template: BriefTemplate) -> str:
    """The system turn: the task, the answer's shape, the rules, and the fenced sources."""
    count = len(grounding.sources)
    videos = len({source.video_id for source in grounding.sources})
    return (
        f"You write a research brief from {count} numbered sources, passages of {videos} videos' transcripts. "
        f"The brief's focus: {template.asks}\n\n"
        "Answer with one JSON object and nothing else, of this shape:\n"
        f"{_SHAPE}\n\n"
        "Rules: use only what the sources say. End every claim, summary sentence and position with the "
        f"numbers of the sources that say it, in square brackets ([1] or [1][3]); the sources are numbered 1 "
        f"to {count}, use no other numbers. Put a claim under consensus only when sources from two or more "
        "different videos say it, and a disagreement only when different videos take different positions; "
        "otherwise it is a claim. Open questions are what the videos leave unanswered or unclear. Empty "
        "arrays are fine.\n\n" + fenced_sources(grounding)
    )


class _Checker:
    """Checks the model's points against the sources, collecting what it drops and why."""

    def __init__(self, sources: list[Source]) -> None:
        self.sources = sources
        self.known = {source.n for source in sources}
        self.unverified: list[int] = []
        self.notes: list[str] = []

    def _unknown(self, numbers: list[int]) -> None:
        self.unverified.extend(n for n in numbers if n not in self.unverified)

    def point(self, raw: dict[str, Any], what: str) -> BriefPoint | None:
        checked = check_citations(str(raw["text"]), self.sources)
        self._unknown(checked.unverified)
        if not checked.citations:
            self.notes.append(
                f"Dropped a {what} that cites no source that exists: {one_line(checked.text, 120)!r}."
            )
            return None
        return BriefPoint(
            text=checked.text.strip(),
            citations=checked.citations,
            videos=len({citation.video_id for citation in checked.citations}),
        )

    def text(self, raw: str) -> str:
        stripped, unknown = strip_unverified(raw, self.known)
        self._unknown(unknown)
        return stripped.strip()


def _verify(data: dict[str, Any], grounding: Grounding) -> tuple[dict[str, Any], list[int], list[str]]:
    """The brief's parts, checked (module docstring, step 3)."""
    check = _Checker(grounding.sources)
    claims = [p for raw in data["claims"] if (p := check.point(raw, "claim")) is not None]
    consensus = []
    for raw in data["consensus"]:
        point = check.point(raw, "consensus claim")
        if point is None:
            continue
        if point.videos < 2:
            check.notes.append(
                f"Moved to claims, as only one video backs it: {one_line(point.text, 120)!r} (offered as consensus)."
            )
            claims.append(point)
        else:
            consensus.append(point)
    disagreement = []
    for raw in data["disagreement"]:
        positions = [
            p for position in raw["positions"] if (p := check.point(position, "position")) is not None
        ]
        videos = {c.video_id for p in positions for c in p.citations}
        topic = check.text(str(raw["topic"]))
        if len(positions) >= 2 and len(videos) >= 2:
            disagreement.append(BriefDisagreement(topic=topic, positions=positions))
        elif positions:
            check.notes.append(
                f"Moved to claims, as its positions do not come from two videos: {one_line(topic, 120)!r} "
                "(offered as a disagreement)."
            )
            claims.extend(positions)
    summary = check.text(str(data["summary"]))
    questions = [q for raw in data["openQuestions"] if (q := check.text(str(raw)))]
    parts = {
        "summary": summary,
        "claims": claims,
        "consensus": consensus,
        "disagreement": disagreement,
        "open_questions": questions,
    }
    return parts, check.unverified, check.notes


async def build_brief(
    runtime: Runtime, scope: Scope, template: BriefTemplate, *, ctx: Ctx, on_progress: Any = None
) -> Brief:
    """The brief of ``scope`` with ``template``'s focus (module docstring).

    Raises ``VidError``: ``no-provider`` with no language-model rung, what stops every video
    (``no-transcript``, ``not-found``, ...), ``too-large`` when not one passage fits the window,
    the rungs' own errors, ``upstream`` when the answer never matched its shape.
    """
    options = LlmOptions(max_tokens=ANSWER_TOKENS, temperature=0.2)
    pick, grounding, attempts = await prepare(
        runtime, scope, options=options, prompt=template.asks + " " + _SHAPE, ctx=ctx, on_progress=on_progress
    )
    asked = f"The question: {scope.question}" if scope.question else "Write the brief of these videos."
    messages = [
        ChatMessage(role="system", content=instructions(grounding, template)),
        ChatMessage(role="user", content=asked),
    ]
    data, answer = await ask_json(
        runtime,
        pick,
        messages,
        lambda value: problems(check_schema(ANSWER_SCHEMA), value),
        ctx=ctx,
        options=options,
        attempts=attempts,
    )
    parts, unverified, notes = _verify(data, grounding)
    notes.extend(left_out_notes(grounding))
    return Brief(
        template=template.name,
        question=scope.question,
        sources=[source.public() for source in grounding.sources],
        unverified=unverified,
        notes=notes,
        left_out=grounding.left_out,
        failed=failed_inputs(grounding.failed),
        rung=answer.rung,
        model=answer.model,
        usage=answer.usage,
        attempts=attempts,
        **parts,
    )


# --- Markdown, for MCP ------------------------------------------------------------------------------


def _links(citations: list[Citation]) -> str:
    shown = [
        f"[{c.title} @ {format_timestamp(c.start_sec)}]({c.url})"
        if c.url
        else f"{c.title} @ {format_timestamp(c.start_sec)}"
        for c in citations
    ]
    return " (" + "; ".join(shown) + ")" if shown else ""


def brief_markdown(brief: Brief) -> str:
    """The brief as Markdown: each claim followed by its narrowed moments as links."""
    title = brief.question or f"{brief.template} brief"
    lines = [f"# Brief: {one_line(title, 200)}", ""]
    if brief.summary:
        lines += [brief.summary, ""]

    def points(heading: str, found: list[BriefPoint]) -> None:
        if found:
            lines.extend([f"## {heading}", *(f"- {p.text}{_links(p.citations)}" for p in found), ""])

    points("Consensus", brief.consensus)
    if brief.disagreement:
        lines.append("## Disagreement")
        for item in brief.disagreement:
            lines.append(f"- {item.topic}")
            lines.extend(f"  - {p.text}{_links(p.citations)}" for p in item.positions)
        lines.append("")
    points("Claims", brief.claims)
    if brief.open_questions:
        lines.extend(["## Open questions", *(f"- {q}" for q in brief.open_questions), ""])
    lines.append("## Sources")
    lines.extend(
        f"[{s.n}] {s.title} @ {format_timestamp(s.start_sec)}–{format_timestamp(s.end_sec)}"
        + (f" <{s.url}>" if s.url else "")
        for s in brief.sources
    )
    if brief.unverified:
        lines.append(
            "Removed citations that matched no source: " + ", ".join(f"[{n}]" for n in brief.unverified) + "."
        )
    lines.extend(f"Note: {note}" for note in brief.notes)
    lines.extend(f"Not included: {f.input} ({f.code}: {f.message})" for f in brief.failed)
    return "\n".join(lines)
