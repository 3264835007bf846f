"""Obsidian export: exactly the expected notes, and nothing written outside the allowed roots."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest
from mcp.client import Client

from vid2context.errors import ErrorCode, VidError
from vid2context.exports.notes import note_name
from vid2context.exports.obsidian import allowed_roots, export_notes, resolve_vault
from vid2context.mcp import create_mcp
from vid2context.models import Chapter, Segment, Transcript, VideoContext, VideoMetadata
from vid2context.runtime import build_runtime
from vid2context.settings import load_settings


def _context(native: str = "jNQXAC9IVRw", title: str = "Me at the zoo") -> VideoContext:
    return VideoContext(
        id=f"youtube:{native}",
        metadata=VideoMetadata(
            id=native,
            platform="youtube",
            title=title,
            url=f"https://www.youtube.com/watch?v={native}",
            channel="jawed",
            duration_sec=19,
            published_at="2005-04-23T20:31:52-07:00",
            chapters=[Chapter(title="Intro", start_sec=0), Chapter(title="The elephants", start_sec=10)],
        ),
        transcript=Transcript(
            language="en",
            origin="captions-manual",
            timing="caption",
            producer="youtube/innertube",
            segments=[
                Segment(
                    start_sec=1.2, end_sec=5.0, text="All right, so here we are in front of the elephants."
                ),
                Segment(start_sec=12.0, end_sec=17.0, text="They have really, really long trunks."),
            ],
        ),
    )


URL = "https://www.youtube.com/watch?v=jNQXAC9IVRw"
EXPECTED_NOTE = f"""---
title: "Me at the zoo"
channel: "jawed"
url: "{URL}"
video_id: "youtube:jNQXAC9IVRw"
duration: "0:19"
published: "2005-04-23"
transcript: "manual captions"
language: "en"
tokens: 23
tags: [video, vid2context]
---

# Me at the zoo
- Channel: jawed · Duration: 0:19 · Published: 2005-04-23
- URL: {URL}
- Transcript: manual captions, en, by youtube/innertube, caption-level timing
- Chapters:
  - [0:00]({URL}&t=0s) Intro
  - [0:10]({URL}&t=10s) The elephants

## Intro [0:00]({URL}&t=0s)

[0:01]({URL}&t=1s) All right, so here we are in front of the elephants.

## The elephants [0:10]({URL}&t=10s)

[0:12]({URL}&t=12s) They have really, really long trunks.
"""
EXPECTED_INDEX = """---
title: "Zoo videos"
videos: 1
tags: [vid2context]
---

# Zoo videos

- [[Me at the zoo (jNQXAC9IVRw)]] · jawed · 0:19 · 23 tokens

## Not included

- dsMFmonKDD4: no-transcript: Video dsMFmonKDD4 has no captions.
"""


def test_the_notes_written_are_exactly_the_expected_ones(tmp_path: Path) -> None:
    failed = [("dsMFmonKDD4", VidError(ErrorCode.NO_TRANSCRIPT, "Video dsMFmonKDD4 has no captions."))]
    vault, written = export_notes("vault", str(tmp_path), [_context()], title="Zoo videos", failed=failed)
    assert vault == tmp_path.resolve() / "vault"
    assert [path.name for path in written] == ["Me at the zoo (jNQXAC9IVRw).md", "Zoo videos.md"]
    assert sorted(p.name for p in vault.iterdir()) == ["Me at the zoo (jNQXAC9IVRw).md", "Zoo videos.md"]
    assert written[0].read_text(encoding="utf-8") == EXPECTED_NOTE
    assert written[1].read_text(encoding="utf-8") == EXPECTED_INDEX
    again = export_notes("vault", str(tmp_path), [_context()], title="Zoo videos", failed=failed)[1]
    assert again == written and written[0].read_text(encoding="utf-8") == EXPECTED_NOTE  # rewritten in place


def test_note_names_cannot_leave_the_folder_or_break_links() -> None:
    hostile = _context(title="../../etc/passwd [[x]] | a:b*c?\x00")
    name = note_name(hostile)
    assert "/" not in name and "\\" not in name and "[" not in name and "|" not in name and "\x00" not in name
    assert name == ". . etc passwd x a b c (jNQXAC9IVRw)".replace(". . ", "")  # leading dots dropped too
    assert note_name(_context(title="")) == "jNQXAC9IVRw"


@pytest.mark.parametrize(
    "vault",
    ["../outside", "vault/../../outside", "/", "/etc", "~", "a/../../../tmp"],
)
def test_paths_outside_the_roots_are_refused(tmp_path: Path, vault: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(VidError) as caught:
        export_notes(vault, str(root), [_context()], title="x")
    assert caught.value.code is ErrorCode.FORBIDDEN
    assert "VID2CONTEXT_FILE_ROOTS" in (caught.value.hint or "")
    assert not (tmp_path / "outside").exists()


def test_a_symlink_out_of_the_roots_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside, target_is_directory=True)
    for vault in ("link", str(root / "link"), "link/sub"):
        with pytest.raises(VidError) as caught:
            export_notes(vault, str(root), [_context()], title="x")
        assert caught.value.code is ErrorCode.FORBIDDEN
    assert list(outside.iterdir()) == []


def test_a_symlink_planted_at_a_note_is_replaced_not_followed(tmp_path: Path) -> None:
    root, secret = tmp_path / "root", tmp_path / "secret.txt"
    (root / "vault").mkdir(parents=True)
    secret.write_text("keep me", encoding="utf-8")
    (root / "vault" / "Me at the zoo (jNQXAC9IVRw).md").symlink_to(secret)
    _, written = export_notes("vault", str(root), [_context()], title="x")
    assert secret.read_text(encoding="utf-8") == "keep me"
    assert not written[0].is_symlink() and written[0].read_text(encoding="utf-8") == EXPECTED_NOTE
    assert not [p for p in (root / "vault").iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    ("vault", "code"),
    [("", ErrorCode.BAD_REQUEST), ("a\x00b", ErrorCode.BAD_REQUEST), ("file.md", ErrorCode.BAD_REQUEST)],
)
def test_bad_vault_paths_are_bad_requests(tmp_path: Path, vault: str, code: ErrorCode) -> None:
    (tmp_path / "file.md").write_text("x", encoding="utf-8")
    with pytest.raises(VidError) as caught:
        resolve_vault(vault, allowed_roots(str(tmp_path)))
    assert caught.value.code is code


def test_roots_default_to_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert allowed_roots(None) == [tmp_path.resolve()]
    assert allowed_roots(f" {tmp_path} , {tmp_path / 'missing'} ,") == [tmp_path.resolve()]
    assert resolve_vault("notes", allowed_roots(None)) == tmp_path.resolve() / "notes"


@pytest.mark.anyio
async def test_the_tool_writes_under_the_current_directory_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    runtime = build_runtime(load_settings({}), http=httpx.AsyncClient())
    await runtime.storage.put_context(_context())
    async with Client(create_mcp(runtime)) as client:
        result = await client.call_tool("export_obsidian", {"vaultPath": "zoo", "urls": ["jNQXAC9IVRw"]})
        body = json.loads(result.content[0].text)
        assert not result.is_error, body
        names = ("Me at the zoo (jNQXAC9IVRw).md", "vid2context export.md")
        assert body["notes"] == [str(tmp_path.resolve() / "zoo" / name) for name in names]
        assert (tmp_path / "zoo" / "Me at the zoo (jNQXAC9IVRw).md").read_text(
            encoding="utf-8"
        ) == EXPECTED_NOTE
        outside = await client.call_tool(
            "export_obsidian", {"vaultPath": os.path.dirname(tmp_path), "urls": ["x"]}
        )
        assert json.loads(outside.content[0].text)["error"] == "forbidden"
    await runtime.aclose()
