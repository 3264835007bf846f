"""The repository stands on its own: a clone with nothing beside it has all it needs.

The README opens with the two commands a newcomer runs; every link in the top-level docs resolves
to a file in the repository; no tracked file reaches outside it for fixtures, contracts or docs.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["README.md", "CONTRIBUTING.md", "tests/fixtures/README.md", "local/README.md"]
# A Markdown link's target: [text](target), not an image or an absolute URL.
LINK = re.compile(r"\]\(([^)\s]+)\)")


def tracked_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in listed.decode().split("\0") if name]


def test_the_readme_opens_with_make_run_and_make_test() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```")[1]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()[1:] if line.strip()]
    assert commands == ["make run", "make test"]
    assert readme.index("```") < readme.index("\n## "), "the two commands come before any section"


@pytest.mark.parametrize("doc", DOCS)
def test_every_link_in_the_docs_resolves_inside_the_repository(doc: str) -> None:
    path = ROOT / doc
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file = (path.parent / target.split("#")[0]).resolve()
        assert file.is_relative_to(ROOT), f"{doc} links outside the repository: {target}"
        assert file.exists(), f"{doc} links a missing file: {target}"


def test_no_tracked_file_reaches_outside_the_repository() -> None:
    # Spelled in parts so that this file does not match itself.
    outside = ("../" + "shared", "parents[2] / " + '"shared"')
    offenders = []
    for name in tracked_files():
        path = ROOT / name
        if path.suffix in {".gz", ".mp3", ".mp4", ".m4a", ".wav", ".webm"} or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if any(needle in text for needle in outside):
            offenders.append(name)
    assert not offenders
