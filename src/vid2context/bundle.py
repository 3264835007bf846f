"""The bundle: several videos as one zip an agent or a person can unpack and read.

Layout, every path under one root folder so unpacking never spills files::

    <root>/context.md                       the context pack of every video (``render_many``)
    <root>/<video-slug>/<video-slug>.<ext>  one file per chosen format (``text`` -> .txt, ...)
    <root>/<video-slug>/comments.json       the comments, when asked for and available
    <root>/manifest.json                    videos, files, formats and failures

A file whose extension another chosen format already took is named ``<video-slug>.<format>.<ext>``
(``markdown`` and ``pack`` are both ``.md``). Per-video files are exactly what each formatter
renders; the headers live in ``context.md``. Inputs that could not be read are listed in the pack's
"Not included" and in the manifest's ``failures``, as are comments that could not be fetched
(``cause: "comments"``).

The zip is built in memory with ``zipfile`` (no filesystem, so it runs on the Worker too); the
HTTP layer streams the bytes out in chunks.
"""

from __future__ import annotations

import hashlib
import io
import re
import unicodedata
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import msgspec

from .errors import VidError
from .formats import RenderOptions, get_formatter, render_many
from .formats.blocks import transcript_tokens
from .formats.pack import Reader, ReadingCosts
from .models import Base, Comment, FailedInput, VideoContext

__all__ = ["Bundle", "BundleManifest", "BundleVideo", "build_bundle", "slugify"]

_SLUG_CHARS = 60
_NON_SLUG = re.compile(r"[^a-z0-9]+")
_NON_ID = re.compile(r"[^A-Za-z0-9_-]+")
_ENCODER = msgspec.json.Encoder()


class BundleVideo(Base, kw_only=True):
    id: str
    title: str
    url: str | None = None
    folder: str
    """The video's folder, relative to the root."""
    files: list[str]
    """Paths relative to the root, in the order the formats were asked for."""
    tokens: int


class BundleManifest(Base, kw_only=True):
    format: Literal["vid2context.bundle"] = "vid2context.bundle"
    version: Literal[1] = 1
    root: str
    created_at: str
    formats: list[str]
    videos: list[BundleVideo]
    failures: list[FailedInput]


@dataclass(frozen=True, slots=True)
class Bundle:
    root: str
    """The root folder inside the zip; also the download's file name without ``.zip``."""
    data: bytes
    manifest: BundleManifest


def slugify(text: str, limit: int = _SLUG_CHARS) -> str:
    """Lowercase ASCII words joined by ``-``: safe as a file name everywhere, and in a header."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return _NON_SLUG.sub("-", ascii_text.lower()).strip("-")[:limit].rstrip("-")


def _video_slug(context: VideoContext) -> str:
    native = context.id.partition(":")[2] or context.id
    native = _NON_ID.sub("-", native).strip("-")[-24:] or "video"
    title = slugify(context.metadata.title or "", _SLUG_CHARS - len(native) - 1)
    return f"{title}-{native}" if title else native


def _root_name(contexts: Sequence[VideoContext]) -> str:
    if len(contexts) == 1:
        return _video_slug(contexts[0])
    digest = hashlib.sha256("\n".join(c.id for c in contexts).encode()).hexdigest()[:8]
    return f"vid2context-{len(contexts)}-videos-{digest}"


def _failure(source: str, error: VidError, cause: str | None = None) -> FailedInput:
    return FailedInput(
        input=source[:200], code=error.code.value, message=error.message[:300], hint=error.hint, cause=cause
    )


def build_bundle(
    contexts: Sequence[VideoContext],
    *,
    formats: Sequence[str] = (),
    max_tokens: int | None = None,
    failed: Sequence[tuple[str, VidError]] = (),
    comments: Mapping[str, list[Comment]] | None = None,
    comment_failures: Sequence[tuple[str, VidError]] = (),
    now: datetime | None = None,
    query: str | None = None,
    reader: Reader | None = None,
    costs: ReadingCosts | None = None,
) -> Bundle:
    """The zip for ``contexts``: ``context.md``, each format per video, ``manifest.json``.

    ``formats`` are formatter ids (``bad-request`` for an unknown one); ``failed`` lists the
    ``(input, error)`` pairs left out; ``comments`` maps a video id to its comments. ``max_tokens``,
    ``query``, ``reader`` and ``costs`` shape ``context.md`` as they shape a pack (``formats.pack``).
    """
    formatters = list({f.id: f for f in (get_formatter(format_id) for format_id in formats)}.values())
    pack = render_many(
        contexts, max_tokens=max_tokens, failed=failed, query=query, reader=reader, costs=costs
    )
    moment = now or datetime.now(UTC)
    root = _root_name(contexts)
    stamp = moment.timetuple()[:6]
    names: dict[str, str] = {}  # format id -> file suffix, fixed once for every video
    taken: set[str] = set()
    for formatter in formatters:
        suffix = (
            f".{formatter.extension}"
            if formatter.extension not in taken
            else f".{formatter.id}.{formatter.extension}"
        )
        taken.add(formatter.extension)
        names[formatter.id] = suffix

    buffer = io.BytesIO()
    videos: list[BundleVideo] = []
    folders: set[str] = set()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:

        def write(path: str, text: str | bytes) -> None:
            info = zipfile.ZipInfo(f"{root}/{path}", date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text)

        write("context.md", pack)
        for context in contexts:
            folder = _video_slug(context)
            while folder in folders:
                folder += "-2"
            folders.add(folder)
            files = []
            for formatter in formatters:
                path = f"{folder}/{folder}{names[formatter.id]}"
                write(path, formatter.render(context, RenderOptions()))
                files.append(path)
            if comments is not None and context.id in comments:
                path = f"{folder}/comments.json"
                write(path, msgspec.json.format(_ENCODER.encode(comments[context.id]), indent=2) + b"\n")
                files.append(path)
            videos.append(
                BundleVideo(
                    id=context.id,
                    title=context.metadata.title,
                    url=context.metadata.url,
                    folder=folder,
                    files=files,
                    tokens=transcript_tokens(context),
                )
            )
        manifest = BundleManifest(
            root=root,
            created_at=moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
            formats=[f.id for f in formatters],
            videos=videos,
            failures=[_failure(source, error) for source, error in failed]
            + [_failure(source, error, "comments") for source, error in comment_failures],
        )
        write("manifest.json", msgspec.json.format(_ENCODER.encode(manifest), indent=2) + b"\n")
    return Bundle(root=root, data=buffer.getvalue(), manifest=manifest)
