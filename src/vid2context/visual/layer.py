"""The on-screen layer of ``mode=video`` and ``include=on_screen``: walk ``Runtime.visual`` until a rung reads the picture.

Portable: the rungs themselves hold whatever is local. Disabled rungs are recorded as skipped with
what they need; the first rung that answers gives the layer. An answer with no text still fills
the layer (an empty list) and says why in ``visual_note``, so "nothing was read" never looks like
"nothing was shown".
"""

from __future__ import annotations

from ..ctx import Ctx
from ..errors import ErrorCode, VidError, per_surface
from ..models import Attempt, VideoRef, VisualItem
from ..timecode import format_timestamp
from .base import VisualReader, VisualReading

__all__ = ["check_readable", "on_screen_line", "read_visual", "reading_note"]


def _cannot_read_here(ref: VideoRef, rungs: list[VisualReader]) -> VidError:
    if not rungs:  # the Worker: no ffmpeg, no OCR, and no vision rung yet
        return VidError(
            ErrorCode.UNSUPPORTED_INPUT,
            "This server cannot read the picture of a video (mode=video and include=on_screen need ffmpeg "
            "and Tesseract).",
            hint=per_surface(
                rest="Use mode=auto without include for the transcript, or tell the user the local "
                "runtime reads the picture (`vid2context get FILE --mode video`).",
                mcp="Use mode=auto without include for the transcript, or tell the user the local "
                "runtime reads the picture (`vid2context mcp`, then mode=video); do not retry here.",
            ),
        )
    return VidError(
        ErrorCode.UNSUPPORTED_INPUT,
        f"Nothing here can get at the picture of {ref.platform} videos: mode=video reads local files, "
        "uploads, and the videos yt-dlp downloads.",
        hint="Use mode=auto without include for the transcript, or give the video as a local file or "
        "an upload (upload:<sha256>) with mode=video.",
    )


def check_readable(runtime, ref: VideoRef) -> None:
    """Refuse ``mode=video`` (or ``include=on_screen``) before anything is fetched where no rung could get at the picture."""
    rungs: list[VisualReader] = list(runtime.visual)
    if not any(rung.accepts(ref) for rung in rungs):
        raise _cannot_read_here(ref, rungs)


def reading_note(reading: VisualReading) -> str | None:
    """What the answer must say about a reading that holds less than the picture."""
    notes = list(reading.notes)
    if not reading.items:
        if reading.frames:
            notes.insert(
                0,
                f"No text could be read on the {reading.frames} frame{'s' if reading.frames != 1 else ''} "
                "looked at: the picture may show no text, or text too small, stylised or faint for OCR.",
            )
        else:
            notes.insert(0, "No frame could be taken from the picture, so nothing on screen was read.")
    return " ".join(notes) or None


async def read_visual(
    runtime, ref: VideoRef, ctx: Ctx, attempts: list[Attempt]
) -> tuple[list[VisualItem], str | None]:
    """The on-screen stretches of ``ref`` and the note that goes with them.

    Raises ``unsupported-input`` where no rung can get at the picture (the Worker; a YouTube URL
    without yt-dlp), or for a file with no video track, ``no-provider`` when the rungs that could are not set up.
    """
    from ..pipeline import run_rung  # the pipeline imports this module: import at call time

    rungs: list[VisualReader] = list(runtime.visual)
    accepting = [rung for rung in rungs if rung.accepts(ref)]
    if not accepting:
        raise _cannot_read_here(ref, rungs)
    ready = [rung for rung in accepting if rung.enabled]
    for rung in accepting:
        if not rung.enabled:
            detail = rung.needs or "not set up"
            attempts.append(
                Attempt(id=rung.id, stage="ocr", outcome="skipped", reason="missing-key", detail=detail)
            )
    if not ready:
        raise VidError(
            ErrorCode.NO_PROVIDER,
            "No rung that reads the picture is set up here.",
            hint="Tell the user to install Tesseract (`apt-get install tesseract-ocr`, `brew install "
            "tesseract`), and do not retry until then; mode=auto still gives the transcript.",
            attempts=attempts,
        )
    errors: list[VidError] = []
    for rung in ready:
        try:
            reading = await run_rung(attempts, rung.id, "ocr", lambda r=rung: r.read(ref, ctx))
        except VidError as error:
            if error.code in (ErrorCode.UNSUPPORTED_INPUT, ErrorCode.CANCELED, ErrorCode.TIMEOUT):
                raise  # the file itself, or the call: another rung would fare no better
            errors.append(error)
            continue
        attempts.extend(reading.attempts)
        return reading.items, reading_note(reading)
    from ..pipeline import combine_errors

    raise combine_errors(errors, attempts)


def on_screen_line(item: VisualItem) -> str:
    """``[m:ss] text`` on one line, for formatters and search snippets."""
    return f"[{format_timestamp(item.start_sec)}] " + " / ".join(item.text.splitlines())
