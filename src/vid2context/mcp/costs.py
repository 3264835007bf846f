"""What MCP results cost in tokens, as the tool descriptions, the prompts and the server's
instructions state it: the figures, measured by the tests named beside each, and how a text
writes them. Free of the ``mcp`` SDK, so the instructions can be stated without it
(``identity.py``).
"""

from __future__ import annotations

from ..answers.video_context import BRIEF_TOKENS

__all__ = ["RESEARCH_COSTS", "SEARCH_COSTS", "STATED_COSTS", "about", "with_costs"]

STATED_COSTS: dict[str, int] = {
    "per_hour": 14_000,
    "per_hour_plain": 12_000,
    "outline_base": 200,
    "outline_per_chapter": 40,
    "section_per_5min": 1_200,
    "section_base": 100,
    "metadata": 650,
    "formats": 270,
    "per_track": 20,
    "per_target": 10,
}
"""The token costs the descriptions state, measured on the recorded fixtures and the generated
talks (``tests/talks.py``, speech at 150 words a minute): ``tests/test_mcp_costs.py`` measures
them again, so a description cannot drift from what the tools return."""


SEARCH_COSTS: dict[str, int] = {"search_base": 100, "search_per_hit": 50}
"""What a result costs: the fence and the status line, and each hit (title, range, link, snippet),
measured on the labelled talks (``tests/retrieval_set.py``) by ``tests/test_search_mcp.py``: 156 tokens for one hit, 627 for ten."""

RESEARCH_COSTS: dict[str, int] = {
    "research_base": 150,
    "research_per_excerpt": 250,
    "moments_base": 80,
    "moments_per_moment": 40,
    "brief": BRIEF_TOKENS,
}
"""What results cost, measured by ``tests/test_research_mcp.py`` (an excerpt with the default 30 s
of context each side, a key moment with its why and link)."""


def about(tokens: int) -> str:
    """A stated cost as a description writes it: ``14k``, ``1.2k``, ``270``."""
    if tokens >= 10_000:
        return f"{round(tokens / 1000)}k"
    if tokens >= 1000:
        return f"{tokens / 1000:.1f}k".replace(".0k", "k")
    return str(tokens)


def with_costs(text: str, figures: dict[str, int]) -> str:
    """``text`` with each measured figure where it names it (``{per_hour}``)."""
    for name, tokens in figures.items():
        text = text.replace("{" + name + "}", about(tokens))
    return text
