"""The frames worth reading: one at every scene change, and one every N seconds on a held slide.

Local only (ffmpeg subprocess, files). ffmpeg's ``select`` keeps the first frame, every frame whose
scene score passes the threshold (at least a second after the last one kept, so a fade is one
pick, not thirty), and a frame whenever ``interval_s`` passed without a pick: a slide deck's text
changes move the scene score by only about 0.03, so the threshold is low and the interval
catches what it misses. Frames wider than ``MAX_WIDTH`` are scaled down first (a 4K frame holds
no more readable text than a 1080p one, and costs OCR four times the pixels); ``metadata=print``
writes each kept frame's time to a file beside the images.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..providers.localfile import FFMPEG_HINT, Probe, probe
from ..providers.process import first_line, run_program

__all__ = ["MAX_WIDTH", "Frame", "FramePlan", "frame_count_note", "pick_frames", "video_streams"]

MAX_WIDTH = 1920
FRAMES_TIMEOUT_S = 3600.0
_PTS_TIME = re.compile(rb"pts_time:([0-9.]+)")


@dataclass(frozen=True)
class Frame:
    time_sec: float
    path: Path


@dataclass(frozen=True)
class FramePlan:
    """How frames are picked: ``scene`` the score (0 to 1) that marks a change, 0 for none;
    ``interval_s`` the longest gap between picks, 0 for none; ``max_frames`` the cap, 0 for none."""

    scene: float = 0.01
    interval_s: int = 10
    max_frames: int = 300


def video_streams(probed: Probe) -> list[dict]:
    """The moving pictures of a file: an attached cover picture is not one."""
    return [s for s in probed.of_type("video") if not (s.get("disposition") or {}).get("attached_pic")]


def _select(plan: FramePlan) -> str:
    """The ``select`` expression. It always names ``scene``: only then does ffmpeg score every
    frame and attach the score as metadata, which is what ``metadata=print`` writes (with the
    frame's time); without it the times file stays empty."""
    terms = ["isnan(prev_selected_t)"]
    if plan.scene > 0:
        terms.append(f"gt(scene\\,{plan.scene:g})*gte(t-prev_selected_t\\,1)")
    else:
        terms.append("0*scene")
    if plan.interval_s > 0:
        terms.append(f"gte(t-prev_selected_t\\,{plan.interval_s})")
    return "+".join(terms)


async def pick_frames(
    source: Path, folder: Path, ctx: Ctx, *, plan: FramePlan, shown: str, ffmpeg: str = "ffmpeg"
) -> tuple[list[Frame], Probe]:
    """The picked frames of ``source`` (a trusted path) as grey PNG files in ``folder``, with
    their times, and the file's probe. ``unsupported-input`` when it has no video track."""
    probed = await probe(source, ctx, shown=shown)
    if not video_streams(probed):
        raise VidError(
            ErrorCode.UNSUPPORTED_INPUT,
            f"{shown} has no video track, so there is no picture to read.",
            hint="Use mode=auto (captions, then speech-to-text) for a file that is only sound.",
        )
    times = folder / "times.txt"
    graph = f"select={_select(plan)},scale=w=min(iw\\,{MAX_WIDTH}):h=-2,format=gray,metadata=mode=print:file={times}"
    argv = [
        ffmpeg, "-nostdin", "-hide_banner", "-v", "error", "-i", f"file:{source}",
        "-map", "0:v:0", "-an", "-sn", "-dn", "-vf", graph, "-fps_mode", "vfr",
    ]  # fmt: skip
    if plan.max_frames > 0:
        argv += ["-frames:v", str(plan.max_frames)]
    argv.append(str(folder / "f%06d.png"))
    ctx.progress("frames", None, "picking frames")
    done = await run_program(argv, ctx, timeout=FRAMES_TIMEOUT_S, what="ffmpeg", missing_hint=FFMPEG_HINT)
    if done.returncode != 0:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"ffmpeg could not read the picture of {shown} ({first_line(done.stderr)}).",
            hint="Tell the user the file may be damaged or use a codec this ffmpeg lacks; do not retry.",
        )
    stamps = [float(m.group(1)) for m in _PTS_TIME.finditer(times.read_bytes())] if times.exists() else []
    images = sorted(p for p in folder.iterdir() if p.suffix == ".png")
    return [Frame(time_sec=t, path=p) for t, p in zip(stamps, images, strict=False)], probed


def frame_count_note(count: int, plan: FramePlan) -> str | None:
    """Said when the cap cut the frames short, so a long video's missing tail is not silent."""
    if plan.max_frames > 0 and count >= plan.max_frames:
        return (
            f"Only the first {plan.max_frames} frames were read (VID2CONTEXT_FRAME_MAX): text shown "
            "after the last of them is missing."
        )
    return None
