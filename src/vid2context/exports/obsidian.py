"""Obsidian notes on the user's disk: one note per video and an index note, under allowed roots.

Local only (it writes files): the MCP ``export_obsidian`` tool imports this module inside the tool,
refuses calls that arrive over HTTP, and the Worker never loads it.

Where files may go. The vault path the caller gives must lie inside one of the allowed roots
(``VID2CONTEXT_FILE_ROOTS``, comma-separated; by default the current directory), judged after
resolving ``..`` and every symlink, so ``../x``, an absolute path elsewhere, or a symlink inside a
root that points outside are all refused. A relative vault path is taken relative to the first
root. Note names come from titles with every character that could leave the folder or break a
wiki link removed, and each note is written to a temporary file in the vault and moved into place,
so a symlink planted at a note's name is replaced, never followed.

A video note is YAML front matter (title, channel, url, id, duration, published, transcript origin
and language, tokens, tags) followed by the Markdown rendering (header, chapters, [m:ss](link)
paragraphs). The index note links every video note (``[[name]]``) and lists what failed.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Sequence
from pathlib import Path

from ..errors import ErrorCode, VidError
from ..formats import RenderOptions, render
from ..formats.blocks import duration_of, one_line, transcript_tokens
from ..formats.header import ORIGIN_LABELS, published_date
from ..models import VideoContext
from ..timecode import format_timestamp

__all__ = [
    "allowed_roots",
    "export_notes",
    "index_note",
    "note_name",
    "resolve_vault",
    "video_note",
    "write_notes",
]

_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|#^\[\]]+')
_ROOTS_HINT = (
    "Give a folder inside {roots} as vaultPath, or tell the user to add its parent to "
    "VID2CONTEXT_FILE_ROOTS (comma-separated)."
)
MAX_NAME = 100


def allowed_roots(setting: str | None) -> list[Path]:
    """The folders exports may write under, resolved (symlinks followed); the current directory
    when ``setting`` is unset. Roots that do not exist are left out."""
    raw = [part.strip() for part in (setting or "").split(",") if part.strip()] or [os.getcwd()]
    roots = []
    for part in raw:
        root = Path(os.path.realpath(os.path.expanduser(part)))
        if root.is_dir() and root not in roots:
            roots.append(root)
    return roots


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def resolve_vault(vault_path: str, roots: Sequence[Path]) -> Path:
    """The vault folder for ``vault_path``, created if missing; ``forbidden`` outside the roots."""
    shown = ", ".join(str(root) for root in roots) or "(none)"
    if (
        not isinstance(vault_path, str)
        or not vault_path.strip()
        or "\x00" in vault_path
        or len(vault_path) > 4096
    ):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "vaultPath must be a folder path.",
            hint="Give the folder of your Obsidian vault (or a folder inside it).",
        )
    if not roots:
        raise VidError(
            ErrorCode.FORBIDDEN,
            "No allowed root exists, so nothing may be written.",
            hint="Tell the user to set VID2CONTEXT_FILE_ROOTS to existing folders (comma-separated); do not retry "
            "until then.",
        )
    given = Path(os.path.expanduser(vault_path.strip()))
    candidate = given if given.is_absolute() else roots[0] / given
    real = Path(os.path.realpath(candidate))
    if not any(_inside(real, root) for root in roots):
        raise VidError(
            ErrorCode.FORBIDDEN,
            f"vaultPath {vault_path.strip()[:200]!r} is outside the folders this server may write to.",
            hint=_ROOTS_HINT.format(roots=shown),
        )
    if real.exists() and not real.is_dir():
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"vaultPath {vault_path.strip()[:200]!r} is not a folder.",
            hint="Give a folder, not a file.",
        )
    real.mkdir(parents=True, exist_ok=True)
    checked = Path(os.path.realpath(real))  # a component swapped for a symlink meanwhile is caught here
    if not any(_inside(checked, root) for root in roots):
        raise VidError(
            ErrorCode.FORBIDDEN,
            f"vaultPath {vault_path.strip()[:200]!r} is outside the folders this server may write to.",
            hint=_ROOTS_HINT.format(roots=shown),
        )
    return checked


def _safe(text: str) -> str:
    name = " ".join(_UNSAFE.sub(" ", text).split()).strip(" .")
    if len(name) > MAX_NAME:
        name = name[:MAX_NAME].rstrip(" .")
    return name


def note_name(context: VideoContext) -> str:
    """``Title (nativeId)``: readable, unique per video, safe as a file name and a wiki link."""
    native = context.id.split(":", 1)[-1]
    title = _safe(context.metadata.title or "")
    suffix = _safe(native) or "video"
    return f"{title} ({suffix})" if title else suffix


def _yaml(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def video_note(context: VideoContext) -> str:
    meta = context.metadata
    lines = ["---", f"title: {_yaml(one_line(meta.title) or context.id)}"]
    if meta.channel:
        lines.append(f"channel: {_yaml(one_line(meta.channel))}")
    if meta.url:
        lines.append(f"url: {_yaml(meta.url)}")
    lines.append(f"video_id: {_yaml(context.id)}")
    if (duration := duration_of(context)) is not None:
        lines.append(f"duration: {_yaml(format_timestamp(duration))}")
    if published := published_date(meta.published_at):
        lines.append(f"published: {_yaml(published)}")
    if context.transcript is not None:
        lines.append(
            f"transcript: {_yaml(ORIGIN_LABELS.get(context.transcript.origin, context.transcript.origin))}"
        )
        if context.transcript.language:
            lines.append(f"language: {_yaml(context.transcript.language)}")
    lines.append(f"tokens: {transcript_tokens(context)}")
    lines.append("tags: [video, vid2context]")
    lines.append("---")
    return "\n".join(lines) + "\n\n" + render(context, "markdown", RenderOptions())


def index_note(
    title: str,
    contexts: Sequence[VideoContext],
    names: Sequence[str],
    failed: Sequence[tuple[str, VidError]] = (),
) -> str:
    heading = one_line(title) or "Videos"
    lines = [
        "---",
        f"title: {_yaml(heading)}",
        f"videos: {len(contexts)}",
        "tags: [vid2context]",
        "---",
        "",
        f"# {heading}",
        "",
    ]
    for context, name in zip(contexts, names, strict=True):
        facts = [f"[[{name}]]"]
        if channel := one_line(context.metadata.channel, 80):
            facts.append(channel)
        if (duration := duration_of(context)) is not None:
            facts.append(format_timestamp(duration))
        facts.append(f"{transcript_tokens(context)} tokens")
        lines.append("- " + " · ".join(facts))
    if failed:
        lines += ["", "## Not included", ""]
        lines += [
            f"- {one_line(text, 200)}: {error.code.value}: {one_line(error.message, 300)}"
            for text, error in failed
        ]
    return "\n".join(lines) + "\n"


def write_notes(vault: Path, notes: Sequence[tuple[str, str]]) -> list[Path]:
    """Write ``(name, text)`` notes as ``<vault>/<name>.md``; each goes to a temporary file first and
    is moved into place, so nothing is written through a symlink."""
    written = []
    for name, text in notes:
        safe = _safe(name)
        if not safe:
            raise VidError(ErrorCode.BAD_REQUEST, "A note name is empty after removing unsafe characters.")
        target = vault / f"{safe}.md"
        if target.parent != vault:  # pragma: no cover - _safe leaves no separator
            raise VidError(ErrorCode.FORBIDDEN, "A note name tried to leave the vault.")
        temporary = vault / f".{safe[:40]}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        descriptor = os.open(temporary, flags, 0o644)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
            os.replace(temporary, target)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        written.append(target)
    return written


def export_notes(
    vault_path: str,
    roots_setting: str | None,
    contexts: Sequence[VideoContext],
    *,
    title: str,
    failed: Sequence[tuple[str, VidError]] = (),
) -> tuple[Path, list[Path]]:
    """Write one note per video and the index note ``title``; the vault and the paths written."""
    vault = resolve_vault(vault_path, allowed_roots(roots_setting))
    names: list[str] = []
    for context in contexts:
        name = note_name(context)
        while name in names:  # two videos with the same title and id cannot happen; be safe anyway
            name += " 2"
        names.append(name)
    notes = [(name, video_note(context)) for name, context in zip(names, contexts, strict=True)]
    index_name = _safe(title) or "vid2context index"
    if index_name in names:
        index_name += " index"
    notes.append((index_name, index_note(title, contexts, names, failed)))
    return vault, write_notes(vault, notes)
