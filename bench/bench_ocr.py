"""OCR throughput and accuracy on drawn slides: the on-screen layer's engine, and the one it beat.

The slides of ``tests/slides.py`` (six slides of two lines, drawn by ffmpeg's ``drawtext``) at
1280x720 and at 3840x2160, sampled one frame a second (24 frames each). Figures:

- ``tesseract``: what the local OCR rung runs (``visual/tesseract.py``: one ``tesseract`` process
  for the list of frames): frames per second by wall time and by CPU time (the child process's
  user+system time, which moves far less with the machine's load), and ``accuracy``, the share of
  each slide's words found in the text read from that slide's frames;
- ``layer``: the whole rung (``LocalOcr.read``: ffmpeg's frame picks at scene changes, then OCR and
  merging) on the 720p deck, with the share of slide words in the stretch at that slide's time;
- ``rapidocr``: RapidOCR (rapidocr-onnxruntime 1.4.4) on the same frames, the reference, when it
  can be imported (it is no dependency: ``uv pip install --target DIR rapidocr-onnxruntime`` and
  ``PYTHONPATH=DIR``); otherwise ``not installed``.
"""

from __future__ import annotations

import asyncio
import os
import re
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tests.slides import SLIDES, draw_deck, slide_words

from vid2context.ctx import Ctx
from vid2context.models import VideoRef
from vid2context.providers.localfile import LocalFileProvider
from vid2context.visual.frames import Frame, FramePlan
from vid2context.visual.local_ocr import LocalOcr
from vid2context.visual.tesseract import read_frames

SECONDS = 4


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"\w+", text)}


def _frames(deck: Path, folder: Path) -> list[Frame]:
    folder.mkdir()
    subprocess.run(
        ["ffmpeg", "-v", "error", "-nostdin", "-i", str(deck), "-vf", "fps=1,scale=w=min(iw\\,1920):h=-2,format=gray",
         str(folder / "f%03d.png")],
        check=True,
    )  # fmt: skip
    images = sorted(folder.glob("*.png"))
    return [Frame(time_sec=i + 0.5, path=p) for i, p in enumerate(images)]


def _accuracy(texts: list[tuple[float, str]]) -> float:
    wanted = found = 0
    for time_sec, text in texts:
        slide = SLIDES[min(int(time_sec // SECONDS), len(SLIDES) - 1)]
        words = slide_words(slide)
        wanted += len(words)
        found += len(words & _words(text))
    return round(found / wanted, 3)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tesseract(frames: list[Frame], folder: Path) -> dict[str, float]:
    started, cpu = time.perf_counter(), _children_cpu()
    texts = asyncio.run(read_frames(frames, folder, Ctx(timeout=600)))
    wall, used = time.perf_counter() - started, _children_cpu() - cpu
    return {
        "frames": len(frames),
        "fps_wall": round(len(frames) / wall, 2),
        "fps_cpu": round(len(frames) / used, 2) if used else 0.0,
        "accuracy": _accuracy([(t.time_sec, t.text) for t in texts]),
    }


def _rapidocr(frames: list[Frame]) -> dict[str, object]:
    try:
        from rapidocr_onnxruntime import RapidOCR  # type: ignore[import-not-found]
    except ImportError:
        return {"status": "not installed"}
    started = time.perf_counter()
    engine = RapidOCR()
    load = time.perf_counter() - started
    started, cpu = time.perf_counter(), time.process_time()
    texts = []
    for frame in frames:
        found, _ = engine(str(frame.path))
        texts.append((frame.time_sec, " ".join(item[1] for item in found or [])))
    wall, used = time.perf_counter() - started, time.process_time() - cpu
    return {
        "load_s": round(load, 2),
        "fps_wall": round(len(frames) / wall, 2),
        "fps_cpu": round(len(frames) / used, 2),
        "accuracy": _accuracy(texts),
    }


def _layer(deck: Path) -> dict[str, float]:
    rung = LocalOcr(files=LocalFileProvider(roots=[str(deck.parent)]), uploads=None, plan=FramePlan())
    ref = VideoRef(id=f"local:{deck}", platform="local", kind="video", native_id=str(deck))
    started, cpu = time.perf_counter(), _children_cpu()
    reading = asyncio.run(rung.read(ref, Ctx(timeout=600)))
    wall, used = time.perf_counter() - started, _children_cpu() - cpu
    texts = [((i.start_sec + i.end_sec) / 2, i.text) for i in reading.items]
    return {
        "frames": reading.frames,
        "stretches": len(reading.items),
        "wall_s": round(wall, 2),
        "cpu_s": round(used, 2),
        "accuracy": _accuracy(texts) if len(texts) == len(SLIDES) else 0.0,
    }


def run() -> dict[str, object]:
    folder = Path(tempfile.mkdtemp(prefix="bench-ocr-"))
    try:
        figures: dict[str, object] = {"load_average": [round(x, 2) for x in os.getloadavg()]}
        for name, size in (("720p", "1280x720"), ("4k", "3840x2160")):
            deck = draw_deck(folder / f"{name}.mp4", seconds=SECONDS, size=size)
            frames = _frames(deck, folder / name)
            figures[name] = {"tesseract": _tesseract(frames, folder / name), "rapidocr": _rapidocr(frames)}
        figures["layer_720p"] = _layer(folder / "720p.mp4")
        return figures
    finally:
        shutil.rmtree(folder, ignore_errors=True)
