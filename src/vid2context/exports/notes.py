"""Obsidian notes as text: one note per video and an index note, with names safe as file names.

Shared by both runtimes: ``POST /api/v1/exports/obsidian`` answers these as ``{path, content}``
files for the caller to write (the Worker has no disk of the user's), and the stdio tool
``export_obsidian`` writes the same notes into a vault through ``exports/obsidian.py``.

A name is the title then the native id, ``Title (nativeId)``: readable, unique per video, and a
valid wiki link. Every character that could leave a folder or break a link is removed, leading
and trailing dots and spaces too (so never ``..`` or a hidden file), and Windows' reserved device
names are prefixed, so a path is always one relative file name that any system can write.

A video note is YAML front matter (title, channel, url, id, duration, published, transcript origin
and language, tokens, tags) followed by the Markdown rendering (header, chapters, [m:ss](link)
paragraphs). The index note links every video note (``[[name]]``) and lists what failed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from ..errors import VidError
from ..formats import RenderOptions, render
from ..formats.blocks import duration_of, one_line, transcript_tokens
from ..formats.header import ORIGIN_LABELS, published_date
from ..models import VideoContext
from ..timecode import format_timestamp

__all__ = ["MAX_NAME", "index_note", "note_name", "safe_name", "vault_notes", "video_note"]

_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|#^\[\]]+')
_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL"} | {f"COM{n}" for n in range(1, 10)} | {f"LPT{n}" for n in range(1, 10)}
)
MAX_NAME = 100


def safe_name(text: str) -> str:
    """``text`` as one file name: unsafe characters removed, at most ``MAX_NAME`` characters;
    ``""`` when nothing is left."""
    name = " ".join(_UNSAFE.sub(" ", text).split()).strip(" .")
    if len(name) > MAX_NAME:
        name = name[:MAX_NAME].rstrip(" .")
    if name.split(".", 1)[0].upper() in _RESERVED:
        name = f"_{name}"
    return name


def note_name(context: VideoContext) -> str:
    """``Title (nativeId)``: readable, unique per video, safe as a file name and a wiki link."""
    native = context.id.split(":", 1)[-1]
    title = safe_name(context.metadata.title or "")
    suffix = safe_name(native) or "video"
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


def vault_notes(
    contexts: Sequence[VideoContext], *, title: str, failed: Sequence[tuple[str, VidError]] = ()
) -> list[tuple[str, str]]:
    """``(name, text)`` for one note per video, then the index note ``title``; names are distinct."""
    names: list[str] = []
    for context in contexts:
        name = note_name(context)
        while name in names:  # the same video twice: inputs are distinct, but be safe anyway
            name += " 2"
        names.append(name)
    notes = [(name, video_note(context)) for name, context in zip(names, contexts, strict=True)]
    index_name = safe_name(title) or "vid2context index"
    while index_name in names:
        index_name += " index"
    notes.append((index_name, index_note(title, contexts, names, failed)))
    return notes
