"""Tesseract, the OCR rung's engine: every frame of a call read by one ``tesseract`` process.

Local only (a subprocess). Chosen over RapidOCR (rapidocr-onnxruntime) by measurement on the
drawn slides of ``bench/bench_ocr.py`` (2 shared cores): Tesseract read every word at 720p and 4K
at about 7 frames per CPU second, RapidOCR 91% of the words at 720p (all at 4K) at about 1 (0.6 at
4K); and Tesseract comes from Debian's packages (``tesseract-ocr``) with no Python dependency,
where RapidOCR's wheel brings OpenCV. One process reads a list of images, so
its models load once per call. The TSV output carries a confidence per word: words below
``MIN_CONFIDENCE`` are dropped (what Tesseract "reads" in a photo or a gradient is mostly that).
"""

from __future__ import annotations

from pathlib import Path

from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..providers.process import first_line, run_program
from .frames import Frame
from .merge import FrameText

__all__ = ["MIN_CONFIDENCE", "TESSERACT_HINT", "read_frames"]

MIN_CONFIDENCE = 60.0
OCR_TIMEOUT_S = 3600.0
TESSERACT_HINT = (
    "Tell the user to install Tesseract (`apt-get install tesseract-ocr`, `brew install tesseract`, "
    "`winget install tesseract`), and do not retry until then."
)


def _parse_tsv(tsv: str, count: int) -> list[list[str]]:
    """Lines of words per page (1-based ``page_num`` in the TSV), in reading order."""
    pages: list[dict[tuple[int, int, int], list[str]]] = [{} for _ in range(count)]
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5":
            continue
        try:
            page, block, par, line = (int(c) for c in cells[1:5])
            confidence = float(cells[10])
        except ValueError:
            continue
        word = cells[11].strip()
        if word and confidence >= MIN_CONFIDENCE and 1 <= page <= count:
            pages[page - 1].setdefault((block, par, line), []).append(word)
    return [[" ".join(words) for words in page.values()] for page in pages]


async def read_frames(
    frames: list[Frame], folder: Path, ctx: Ctx, *, lang: str = "eng", tesseract: str = "tesseract"
) -> list[FrameText]:
    """Each frame's text (empty where none was read). ``no-provider`` when Tesseract is missing,
    ``bad-request`` when it refuses (an unknown language in ``lang``)."""
    if not frames:
        return []
    listing = folder / "frames.txt"
    listing.write_text("".join(f"{frame.path}\n" for frame in frames), encoding="utf-8")
    argv = [tesseract, str(listing), "stdout", "-l", lang, "--psm", "3", "tsv"]
    ctx.progress("ocr", None, f"reading {len(frames)} frames")
    done = await run_program(argv, ctx, timeout=OCR_TIMEOUT_S, what="tesseract", missing_hint=TESSERACT_HINT)
    if done.returncode != 0:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"Tesseract could not read the frames ({first_line(done.stderr)}).",
            hint="Tell the user to check VID2CONTEXT_OCR_LANG names installed Tesseract languages "
            "(`tesseract --list-langs`; e.g. eng, or eng+deu); do not retry until then.",
        )
    pages = _parse_tsv(done.stdout.decode("utf-8", "replace"), len(frames))
    return [
        FrameText(time_sec=f.time_sec, text="\n".join(lines)) for f, lines in zip(frames, pages, strict=True)
    ]
