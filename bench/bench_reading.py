"""What an agent spends to find one thing in a video and cite it, before and after issue #12.

Three videos, all saved in an in-memory library first so nothing is fetched (no network):

- ``short``: a two-minute class, no chapters (``tests/talks.py``'s speech);
- ``chaptered``: the recorded Surface Go review (``tests/fixtures``, replayed: its real title,
  channel and ten chapters over 5:16) with five minutes of speech in place of the recording's
  three-line stand-in transcript;
- ``two_hour``: a two-hour talk with eight named chapters (``tests/talks.py``).

In each a sentence is planted in one chapter, and the question is "find it and cite it". The
instructed path is ``get_outline``, then ``get_section`` for the chapter whose title names the
subject (the time section that holds it when there are no chapters), following its pages; the
other path reads the whole transcript with ``get_transcript``, every page. Each figure is the
tokens (``estimate_tokens``, about four characters a token) of the text the tools answered, as an
agent's context receives it. ``citable`` says whether the line with the sentence carries an
``[m:ss]`` and the answer says how to link it (a link on the line, or a link pattern in the
header). ``tools_list`` is the size of the ``tools/list`` answer an agent loads on connecting.

The same code measures the commit before issue #12 (``BENCH_READING_BASE``, default below) in the
same run: ``git archive`` of that commit into a temporary folder, this file run there with that
code first on ``PYTHONPATH``. Token counts do not depend on the machine, so the two columns compare
directly. Without git or that commit, ``before`` says why it is missing.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path
from typing import Any

BASE = os.environ.get("BENCH_READING_BASE", "3a94078")
"""The main commit issue #12 branched from."""
ROOT = Path(__file__).resolve().parent.parent


def _videos() -> dict[str, dict[str, Any]]:
    """The three videos: ``{name: {url, topic, planted}}`` (the contexts are built in ``_library``)."""
    return {
        "short": {"url": "ShortClass1", "topic": None, "planted": "the exam covers chapters three to five"},
        "chaptered": {
            "url": "GJLlxj_dtq8",
            "topic": "Battery",
            "planted": "on battery it lasted six hours and twenty minutes",
        },
        "two_hour": {
            "url": "TwoHourTalk",
            "topic": "Battery",
            "planted": "the battery health check at the dealer cost ninety dollars",
        },
    }


_TOPICS = [
    "Why hybrids",
    "Buying used",
    "Battery health",
    "Inverter faults",
    "Brakes and tyres",
    "Cabin and screen",
    "Running costs",
    "Verdict",
]


def _plant(context: Any, at_sec: float, sentence: str) -> Any:
    """``context`` with the segment starting nearest ``at_sec`` saying ``sentence``."""
    import msgspec

    segments = list(context.transcript.segments)
    index = min(range(len(segments)), key=lambda i: abs(segments[i].start_sec - at_sec))
    segments[index] = msgspec.structs.replace(segments[index], text=sentence.capitalize() + ".")
    return msgspec.structs.replace(
        context, transcript=msgspec.structs.replace(context.transcript, segments=segments)
    )


async def _library(runtime: Any) -> None:
    import msgspec
    from tests.talks import three_hour_talk

    from vid2context.models import Chapter
    from vid2context.pipeline import get_context

    now = "2099-01-01T00:00:00Z"  # a fresh saved copy, whatever the date of the run
    videos = _videos()

    short = three_hour_talk(videos["short"]["url"], minutes=2, seed=5)
    short = msgspec.structs.replace(
        short,
        metadata=msgspec.structs.replace(short.metadata, title="A two-minute class"),
        fetched_at=now,
    )
    short = _plant(short, 70, videos["short"]["planted"])

    recorded = await get_context(runtime, videos["chaptered"]["url"])  # replayed from tests/fixtures
    speech = three_hour_talk("Speech00001", minutes=6, seed=9).transcript
    duration = recorded.metadata.duration_sec or 316
    spoken = [seg for seg in speech.segments if seg.start_sec < duration]
    chaptered = msgspec.structs.replace(
        recorded,
        transcript=msgspec.structs.replace(recorded.transcript, segments=spoken),
        attempts=[],
        fetched_at=now,
    )
    battery = next(
        ch for ch in recorded.metadata.chapters if ch.title.startswith(videos["chaptered"]["topic"])
    )
    chaptered = _plant(chaptered, battery.start_sec + 4, videos["chaptered"]["planted"])

    long = three_hour_talk(videos["two_hour"]["url"], minutes=120, seed=4)
    chapters = [Chapter(title=title, start_sec=i * 900.0) for i, title in enumerate(_TOPICS)]
    long = msgspec.structs.replace(
        long,
        metadata=msgspec.structs.replace(
            long.metadata, title="Two hours on buying a used hybrid", chapters=chapters
        ),
        fetched_at=now,
    )
    long = _plant(long, 2 * 900 + 7 * 60, videos["two_hour"]["planted"])

    for context in (short, chaptered, long):
        await runtime.storage.put_context(context)


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


_NEXT = re.compile(r"; next page: (?P<tool>[a-z_]+) (?P<args>\{.*\}); next_cursor: [^\]\s]+\]$")


async def _follow(client: Any, tool: str, args: dict[str, Any]) -> list[str]:
    """Every page of ``tool(args)``, making the call each page names for the next."""
    pages: list[str] = []
    call: tuple[str, dict[str, Any]] | None = (tool, args)
    while call is not None and len(pages) < 100:
        result = await client.call_tool(*call)
        assert not result.is_error, _text(result)
        pages.append(_text(result))
        match = _NEXT.search(pages[-1].splitlines()[-1])
        call = (match.group("tool"), json.loads(match.group("args"))) if match else None
    return pages


def _outline_json(result: Any) -> dict[str, Any]:
    blocks = [block.text for block in result.content]
    return json.loads(blocks[1] if len(blocks) == 3 else blocks[0])


_STAMP = re.compile(r"\[(\d+:)?\d{1,2}:\d{2}\]")
_LINKED = re.compile(r"\[(\d+:)?\d{1,2}:\d{2}\]\(https?://")


def _cites(pages: list[str], planted: str) -> dict[str, Any]:
    """Whether the answer holds the planted sentence and lets the agent cite it with a link."""
    text = "\n".join(pages)
    lines = [line for line in text.splitlines() if planted in line.lower()]
    if not lines:
        return {"found": False, "stamped": False, "linkable": False}
    line = lines[0]
    stamped = bool(_STAMP.search(line))
    pattern = "<seconds>" in text
    return {
        "found": True,
        "stamped": stamped,
        "linkable": bool(_LINKED.search(line)) or (stamped and pattern),
    }


def _tokens(texts: list[str]) -> int:
    from vid2context.tokens import estimate_tokens

    return sum(estimate_tokens(text) for text in texts)


async def _read(client: Any, video: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    url, planted = video["url"], video["planted"]
    outline_result = await client.call_tool("get_outline", {"url": url})
    outline_text = _text(outline_result)
    chapters = _outline_json(outline_result)["chapters"]
    if video["topic"]:
        index = next(c["index"] for c in chapters if video["topic"].lower() in c["title"].lower())
    else:
        index = 0  # no chapters: the time section the agent reads first
    section = await _follow(client, "get_section", {"url": url, "chapter": index, **extra})
    whole = await _follow(client, "get_transcript", {"url": url, **extra})
    outline_tokens, section_tokens, whole_tokens = _tokens([outline_text]), _tokens(section), _tokens(whole)
    return {
        "outline": outline_tokens,
        "section": section_tokens,
        "section_pages": len(section),
        "outline_plus_section": outline_tokens + section_tokens,
        "whole_transcript": whole_tokens,
        "whole_pages": len(whole),
        "outline_vs_whole": round(outline_tokens / whole_tokens, 2),
        "instructed_vs_whole": round((outline_tokens + section_tokens) / whole_tokens, 2),
        "stated_total": _outline_json(outline_result)["totalTokens"],
        "citable_instructed": _cites(section, planted),
        "citable_whole": _cites(whole, planted),
    }


async def measure() -> dict[str, Any]:
    """The figures for the code on ``sys.path`` (this checkout, or the base commit's)."""
    import httpx
    from mcp.client import Client
    from tests.youtube_replay import httpx_callback

    from vid2context.mcp import create_mcp
    from vid2context.runtime import build_runtime
    from vid2context.settings import load_settings
    from vid2context.tokens import estimate_tokens

    http = httpx.AsyncClient(transport=httpx.MockTransport(httpx_callback))
    runtime = build_runtime(load_settings({}), http=http)
    await _library(runtime)
    import vid2context

    figures: dict[str, Any] = {"code": str(Path(vid2context.__file__).parent)}
    async with Client(create_mcp(runtime)) as client:
        listed = await client.list_tools()
        sent = json.dumps(
            listed.model_dump(mode="json", by_alias=True, exclude_none=True), ensure_ascii=False
        )
        figures["tools_list"] = {"tools": len(listed.tools), "tokens": estimate_tokens(sent)}
        for name, video in _videos().items():
            figures[name] = {"defaults": await _read(client, video, {})}
            with_stamps = await _read(client, video, {"timestamps": True})
            figures[name]["timestamps_true"] = with_stamps
    await runtime.aclose()
    return figures


def _before() -> dict[str, Any]:
    """``measure()`` run on the base commit's code, in a subprocess."""
    try:
        archive = subprocess.run(
            [
                "git",
                "-C",
                str(ROOT),
                "archive",
                "--format=tar",
                BASE,
                "src",
                "tests/talks.py",
                "tests/youtube_replay.py",
                "tests/__init__.py",
                "tests/fixtures/youtube",
            ],
            capture_output=True,
            check=True,
        ).stdout
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", BASE], capture_output=True, check=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        return {"missing": f"no git checkout with commit {BASE} ({exc.__class__.__name__})"}
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        env = {**os.environ, "PYTHONPATH": f"{tmp}/src{os.pathsep}{tmp}"}
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--measure"],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        return {"missing": f"the base commit's run failed: {done.stderr.strip()[-500:]}"}
    return {"commit": commit, **json.loads(done.stdout)}


def run() -> dict[str, Any]:
    after = asyncio.run(measure())
    before = _before()
    comparison: dict[str, Any] = {}
    if "missing" not in before:
        comparison["tools_list_tokens"] = [before["tools_list"]["tokens"], after["tools_list"]["tokens"]]
        for name in _videos():
            was, now = before[name]["defaults"], after[name]["defaults"]
            cited = before[name]["timestamps_true"]
            comparison[name] = {
                key: [was[key], now[key]]
                for key in ("outline", "section", "outline_plus_section", "whole_transcript")
            }
            comparison[name]["outline_plus_section_citable_before"] = cited["outline_plus_section"]
            comparison[name]["citable_by_default"] = [
                was["citable_instructed"]["linkable"],
                now["citable_instructed"]["linkable"],
            ]
    return {"base": BASE, "comparison [before, after]": comparison, "after": after, "before": before}


if __name__ == "__main__":
    if sys.argv[1:] == ["--measure"]:
        print(json.dumps(asyncio.run(measure())))
    else:
        print(json.dumps(run(), indent=2))
