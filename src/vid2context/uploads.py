"""Uploads: media a caller sends (``POST /api/v1/uploads``), kept for a while and named by the
SHA-256 of its bytes, so ``upload:<sha256>`` can be used wherever a video input is taken.

Where they live: the bytes in ``runtime.blobs`` under ``blobs/uploads/<sha256>``, the details in
``runtime.kv`` under ``uploads:<sha256>`` with a time to live of ``VID2CONTEXT_UPLOAD_TTL_MIN``
minutes. The KV record is what makes an upload exist: once it expires the upload is gone
(``not-found``), and its bytes are deleted by the next ``save_upload`` or ``get_upload`` that
meets them. The same bytes uploaded again are the same upload, kept for another full TTL and
described by the newest filename and type. On the Worker both stores are shared by every isolate
(R2 and KV); locally they are the SQLite file (or memory).

Errors::

    save_upload   bad-request (empty)  too-large (over VID2CONTEXT_MAX_UPLOAD_MB)
    get_upload    bad-request (not upload:<64 hex>)  not-found (expired or never uploaded)

This module does not transcribe: the pipeline's speech-to-text ladder reads an upload's bytes
with ``get_upload``.
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import msgspec

from .errors import ErrorCode, VidError, per_surface
from .models import Base

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = [
    "BLOB_PREFIX",
    "KV_PREFIX",
    "UploadInfo",
    "clean_filename",
    "clean_mime",
    "get_upload",
    "save_upload",
    "too_large",
    "upload_sha",
]

log = logging.getLogger("vid2context.uploads")

BLOB_PREFIX = "blobs/uploads/"
KV_PREFIX = "uploads:"
MAX_FILENAME_CHARS = 200
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_MIME = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,62}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}")
_OCTETS = "application/octet-stream"
_BY_EXTENSION = {
    "mp3": "audio/mpeg", "m4a": "audio/mp4", "aac": "audio/aac", "wav": "audio/wav", "flac": "audio/flac",
    "ogg": "audio/ogg", "oga": "audio/ogg", "opus": "audio/opus", "weba": "audio/webm",
    "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime", "webm": "video/webm",
    "mkv": "video/x-matroska", "avi": "video/x-msvideo", "mpeg": "video/mpeg", "mpg": "video/mpeg",
}  # fmt: skip
_UPLOAD_HINT = per_surface(
    rest="Upload the file again with POST /api/v1/uploads and use the input it returns.",
    mcp="Upload the file again and use the input it returns, or give a public URL of the media.",
)


class UploadInfo(Base):
    """The contract's answer to ``POST /uploads``, and what ``get_upload`` says about one."""

    input: str
    """``upload:<sha256>``: pass it as ``url`` (or in ``inputs``) wherever a video is taken."""
    filename: str
    bytes: int
    mime_type: str
    expires_at: str
    """ISO 8601 (UTC); an upload saved again later is kept longer."""


_ENCODE = msgspec.json.Encoder().encode
_DECODE = msgspec.json.Decoder(UploadInfo).decode


def upload_sha(reference: str) -> str:
    """The lowercase SHA-256 in ``upload:<sha256>`` (or a bare SHA-256); ``bad-request`` otherwise."""
    text = reference.strip() if isinstance(reference, str) else ""
    if text[:7].lower() == "upload:":
        text = text[7:]
    if not _SHA256.fullmatch(text):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "An upload reference is upload: followed by a 64-character hex SHA-256.",
            hint=per_surface(
                rest="Use the input value that POST /api/v1/uploads returned (upload:<sha256>).",
                mcp="Use the input value the upload returned (upload:<sha256>).",
            ),
        )
    return text.lower()


def clean_filename(filename: str | None) -> str:
    """The name without any folder, control characters or surrounding space, at most 200
    characters (the extension kept); ``upload`` when nothing is left."""
    name = unicodedata.normalize("NFC", filename or "")
    name = re.split(r"[/\\]", name)[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C").strip().strip(".")
    if len(name) > MAX_FILENAME_CHARS:
        stem, dot, extension = name.rpartition(".")
        if dot and 0 < len(extension) <= 10:
            name = stem[: MAX_FILENAME_CHARS - len(extension) - 1] + "." + extension
        else:
            name = name[:MAX_FILENAME_CHARS]
    return name or "upload"


def clean_mime(mime: str | None, filename: str) -> str:
    """A well-formed ``type/subtype`` (parameters dropped), else a guess from the extension."""
    value = (mime or "").split(";")[0].strip().lower()
    if _MIME.fullmatch(value) and value != _OCTETS:
        return value
    _, dot, extension = filename.rpartition(".")
    return _BY_EXTENSION.get(extension.lower(), _OCTETS) if dot else _OCTETS


def _ttl_s(runtime: Runtime) -> int:
    # Cloudflare KV refuses a TTL under 60 s.
    return max(60, runtime.settings.upload_ttl_min * 60)


def _cap(runtime: Runtime) -> int:
    return runtime.settings.max_upload_mb * 1024 * 1024


def too_large(runtime: Runtime) -> VidError:
    """The error for an upload over ``VID2CONTEXT_MAX_UPLOAD_MB``."""
    return VidError(
        ErrorCode.TOO_LARGE,
        f"The file is larger than {runtime.settings.max_upload_mb} MiB, this server's upload limit.",
        hint="Reduce it to compressed mono audio first (about 30 MB per hour at 64 kbit/s) and upload "
        "that, or tell the user the local runtime reads the file from its path.",
    )


async def save_upload(runtime: Runtime, data: bytes, filename: str | None, mime: str | None) -> UploadInfo:
    """Keep ``data`` for ``VID2CONTEXT_UPLOAD_TTL_MIN`` minutes and describe it.

    Raises ``bad-request`` for empty data and ``too-large`` over ``VID2CONTEXT_MAX_UPLOAD_MB``.
    """
    if not data:
        raise VidError(ErrorCode.BAD_REQUEST, "The file is empty.", hint="Send a file with some bytes in it.")
    if len(data) > _cap(runtime):
        raise too_large(runtime)
    sha = hashlib.sha256(data).hexdigest()
    name = clean_filename(filename)
    ttl = _ttl_s(runtime)
    expires = datetime.now(UTC) + timedelta(seconds=ttl)
    info = UploadInfo(
        input=f"upload:{sha}",
        filename=name,
        bytes=len(data),
        mime_type=clean_mime(mime, name),
        expires_at=expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    await _sweep(runtime)
    # The record first: the sweep deletes bytes without one, so the order keeps fresh bytes safe.
    await runtime.kv.put(KV_PREFIX + sha, _ENCODE(info).decode(), ttl=ttl)
    await runtime.blobs.put_blob(BLOB_PREFIX + sha, bytes(data), content_type=info.mime_type)
    return info


async def get_upload(runtime: Runtime, reference: str) -> tuple[UploadInfo, bytes]:
    """The upload's details and bytes, for ``upload:<sha256>`` or the bare SHA-256.

    Raises ``bad-request`` for a malformed reference and ``not-found`` for an upload that expired
    or never was.
    """
    sha = upload_sha(reference)
    gone = VidError(
        ErrorCode.NOT_FOUND, f"Upload {sha[:12]}... has expired or was never uploaded.", hint=_UPLOAD_HINT
    )
    raw = await runtime.kv.get(KV_PREFIX + sha)
    if raw is None:
        await _forget_bytes(runtime, sha)
        raise gone
    try:
        info = _DECODE(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        log.warning("the record of upload %s cannot be read", sha)
        raise gone from None
    blob = await runtime.blobs.get_blob(BLOB_PREFIX + sha)
    if blob is None:
        raise gone
    return info, blob.data


async def _forget_bytes(runtime: Runtime, sha: str) -> None:
    try:
        await runtime.blobs.delete_blob(BLOB_PREFIX + sha)
    except Exception:  # best effort: the next sweep tries again
        log.warning("could not delete the bytes of expired upload %s", sha, exc_info=True)


async def _sweep(runtime: Runtime) -> None:
    """Delete the bytes of uploads whose record has expired."""
    try:
        keys = await runtime.blobs.list_blobs(BLOB_PREFIX)
    except Exception:
        log.warning("could not list uploads", exc_info=True)
        return
    for key in keys:
        sha = key[len(BLOB_PREFIX) :]
        if _SHA256.fullmatch(sha) and await runtime.kv.get(KV_PREFIX + sha) is None:
            await _forget_bytes(runtime, sha)
