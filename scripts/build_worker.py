"""Copy the package into ``worker/`` for ``wrangler deploy`` (wrangler.toml's ``[build]`` step).

Wrangler uploads the Python modules found beside ``worker/entry.py``, and the dependencies that
``pywrangler`` vendors into ``python_modules/``; the package itself lives in ``src/`` and is
neither. This copies ``src/vid2context`` to ``worker/vid2context`` without the modules that exist
for the local platform only (they import subprocess, sqlite3 or the filesystem, which the Worker
does not have, and nothing the Worker imports reaches them: tests/test_import_rule.py), so the
upload carries only what can run there. The copy is generated: it is in .gitignore.

    python3 scripts/build_worker.py [--out DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "vid2context"
DEFAULT_OUT = ROOT / "worker" / "vid2context"

# Local-only modules, relative to the package, without ".py" (the import rule's list).
LOCAL_ONLY = frozenset(
    {
        "cli",
        "cli_remote",
        "cli_frame",
        "remote",
        "__main__",
        "providers/ytdlp",
        "providers/ytdlp_public",
        "providers/ytdlp_errors",
        "providers/localfile",
        "providers/transcript_api",
        "providers/whisper_local",
        "providers/audio_local",
        "providers/process",
        "search/embedders/fastembed_local",
        "search/rerank_local",
        "storage/sqlite",
        "storage/sqlite_held",
        "storage/sqlite_vec",
        "storage/sqlite_vec_bits",
        "storage/keyword_pairs",
        "storage/keyword_ascending",
        "exports/obsidian",
        "live/ffmpeg_live",
        "live/pages",
        "exports/notion_sdk",
        "site_files",
        "visual/frames",
        "visual/tesseract",
        "visual/local_ocr",
        "egress/__init__",
        "egress/calls",
        "egress/dial",
        "egress/guard",
        "egress/proxy",
        "egress/resolve",
        "egress/transport",
        "integrations/webhook_egress",
    }
)


def worker_modules(package: Path = PACKAGE) -> list[Path]:
    """The package's modules that the Worker ships, relative to the package, sorted."""
    modules = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if "__pycache__" in relative.parts:
            continue
        if relative.with_suffix("").as_posix() not in LOCAL_ONLY:
            modules.append(relative)
    return modules


def build(out: Path = DEFAULT_OUT, package: Path = PACKAGE) -> list[Path]:
    """Replace ``out`` with the Worker's copy of the package; returns the files written."""
    if out.exists():
        shutil.rmtree(out)
    written = []
    for relative in worker_modules(package):
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(package / relative, target)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the copy goes")
    args = parser.parse_args(argv)
    written = build(args.out)
    size = sum(path.stat().st_size for path in written)
    print(f"build_worker: {len(written)} modules, {size / 1024:.0f} KiB -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
