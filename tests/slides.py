"""Slide decks drawn with ffmpeg's ``drawtext`` and cut together, for the on-screen layer.

``draw_deck(path, SLIDES)`` writes a video whose slide ``i`` shows its two lines from
``i * seconds`` to ``(i + 1) * seconds``: the words each slide shows and when are known, so a test
checks that they come back at those times. Each slide's words are its own (no word is on two
slides). The text is drawn with fontconfig's default font (Debian: DejaVu, from fonts-dejavu-core,
which the Makefile installs with tesseract-ocr). ``audio=True`` adds a tone, for a deck with sound.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

__all__ = ["SLIDES", "draw_deck", "slide_words"]

SLIDES: tuple[tuple[str, str], ...] = (
    ("Quarterly Revenue Report", "Growth across every region"),
    ("Kickstand tilts backwards", "one hundred sixty five degrees"),
    ("Install with apt get", "tesseract ocr package"),
    ("Latency under fifty milliseconds", "measured on two cores"),
    ("Merge repeated text", "across neighbouring frames"),
    ("Questions welcome anytime", "thank you for watching"),
)


def slide_words(slide: tuple[str, str]) -> set[str]:
    return {word.lower() for word in re.findall(r"\w+", " ".join(slide))}


def draw_deck(
    path: Path,
    slides: tuple[tuple[str, str], ...] = SLIDES,
    *,
    seconds: int = 4,
    size: str = "1280x720",
    audio: bool = False,
) -> Path:
    height = int(size.split("x")[1])
    big, small = height // 14, height // 21
    filters = []
    for i, (title, line) in enumerate(slides):
        shown = f"enable='gte(t,{i * seconds})*lt(t,{(i + 1) * seconds})'"
        filters.append(f"drawtext=text='{title}':fontsize={big}:x=w/12:y=h/4:fontcolor=black:{shown}")
        filters.append(f"drawtext=text='{line}':fontsize={small}:x=w/12:y=h/2:fontcolor=0x333333:{shown}")
    length = len(slides) * seconds
    argv = [
        "ffmpeg",
        "-v",
        "error",
        "-nostdin",
        "-y",
        "-f",
        "lavfi",
        "-i",
        f"color=c=0xf0f0e0:s={size}:d={length}:r=10",
    ]
    if audio:
        argv += ["-f", "lavfi", "-i", f"sine=frequency=440:duration={length}"]
    argv += ["-vf", ",".join(filters), "-c:v", "libx264", "-pix_fmt", "yuv420p"]
    argv += ["-c:a", "aac", "-shortest"] if audio else ["-an"]
    subprocess.run([*argv, str(path)], check=True, capture_output=True)
    return path
