"""Reading a paged MCP result the way an agent does: make the call the page's last line names.

A page but the last ends with ``[Partial ...; next page: <tool> <JSON arguments>; next_cursor: C]``;
``follow()`` makes exactly that call, over whichever client it is given, until a page ends with
``[End of ...]``, and checks on the way that every page fits its size and states its own size.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcp.client import Client

from vid2context.mcp.fences import unfence
from vid2context.tokens import estimate_tokens

__all__ = ["follow", "lean_preamble", "next_call", "reassembles", "stated_tokens", "text_of"]

_NEXT = re.compile(r"; next page: (?P<tool>[a-z_]+) (?P<args>\{.*\}); next_cursor: (?P<cursor>[^\]\s]+)\]$")
_STATED = re.compile(r"about (\d+) tokens in this result")


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def next_call(page: str) -> tuple[str, dict[str, Any]] | None:
    """The call a page names for the next one, or ``None`` on the last page."""
    last = page.splitlines()[-1]
    if last.startswith("[End of "):
        return None
    match = _NEXT.search(last)
    assert match and last.startswith("[Partial "), last
    args = json.loads(match.group("args"))
    assert args["cursor"] == match.group("cursor")  # the call and the contract's next_cursor agree
    return match.group("tool"), args


def stated_tokens(page: str) -> int:
    """The size a page states for itself, which must be its own size by ``estimate_tokens``."""
    match = _STATED.search(page.splitlines()[-1])
    assert match, page.splitlines()[-1]
    stated = int(match.group(1))
    assert abs(stated - estimate_tokens(page)) <= 1, (stated, estimate_tokens(page))
    return stated


async def follow(client: Client, tool: str, args: dict[str, Any], size: int) -> list[str]:
    """Every page from the call ``tool(args)`` on, each at most ``size`` tokens."""
    pages: list[str] = []
    call: tuple[str, dict[str, Any]] | None = (tool, args)
    while call is not None:
        result = await client.call_tool(*call)
        assert not result.is_error, text_of(result)
        page = text_of(result)
        assert estimate_tokens(page) <= size, (len(pages), estimate_tokens(page))
        stated_tokens(page)
        pages.append(page)
        call = next_call(page)
        if call is not None:
            assert call[0] == tool
            assert {k: v for k, v in call[1].items() if k != "cursor"} == {
                k: v for k, v in args.items() if k != "cursor"
            }
        assert len(pages) < 200
    return pages


def _blocks_at(text: str) -> list[int]:
    """Where each ``\\n\\n``-parted block of ``text`` starts."""
    starts = [0]
    at = text.find("\n\n")
    while at >= 0:
        starts.append(at + 2)
        at = text.find("\n\n", at + 2)
    return starts


def lean_preamble(content: str, whole: str, at: int) -> int:
    """The length of the preamble of a later page ``content`` whose units continue ``whole`` at
    ``at``: the shortest run of its leading blocks after which the page is ``whole``'s own text."""
    for start in _blocks_at(content):
        if content[start:] and whole.startswith(content[start:], at):
            return start
    raise AssertionError("a later page is not the whole text after a preamble")


def _first(content: str, whole: str) -> int | None:
    """Where ``whole`` continues after the first page: its end, when ``whole`` starts with it (a
    first read has the full header, as the whole result does); else (a section: every page's lean
    header says what that page covers) where the page's text after its preamble ends in ``whole``
    after the whole's own preamble."""
    if whole.startswith(content):
        return len(content)
    for start in _blocks_at(content)[1:]:
        for own in _blocks_at(whole)[1:3]:
            if content[start:] and whole.startswith(content[start:], own):
                return own + len(content) - start
    return None


def reassembles(pages: list[str], whole: str) -> bool:
    """Whether the fenced text of the first page plus that of every later page without its own
    preamble (the lean header and what else every page repeats) is exactly ``whole``."""
    contents = [unfence(page)[0] for page in pages]
    at = _first(contents[0], whole)
    if at is None:
        return False
    for content in contents[1:]:
        start = lean_preamble(content, whole, at)
        at += len(content) - start
    return at == len(whole)
