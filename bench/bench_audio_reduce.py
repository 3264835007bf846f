"""The web app's in-browser audio reduction (``ui/app_upload.js`` ``reduceToOpus``) on a 10-minute video.

The video is made here with ffmpeg, never committed: talk.wav (espeak-ng speech, from
``tests/fixtures/media``) looped to ``BENCH_REDUCE_SECONDS`` (default 600), as 48 kHz stereo AAC at
128 kbit/s beside a moving 854x480 test picture in H.264 at about 1 Mbit/s, in MP4: what a phone
or a screen recorder gives. Headless Chromium (Debian's, driven by Playwright, as the browser tests
do) loads a page from 127.0.0.1 (a secure context, so WebCodecs is there) that imports the module
from ``ui/assets.py``, fetches the file as a Blob and reduces it, ``BENCH_REDUCE_ROUNDS`` times
(default 3).

Figures: the source's size and its audio track's, the reduced Ogg Opus file's, ``ratio`` (source
over reduced) and ``audio_ratio`` (the AAC track over reduced), the wall time of the reduction
(decode with decodeAudioData at 16 kHz, mix to mono, encode at 32 kbit/s, frame as Ogg; median and
best), how many times faster than real time that is, and the load average before and after, since
the machine is shared and wall time moves with it.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from vid2context.ui.assets import ASSETS

TALK = ROOT / "tests" / "fixtures" / "media" / "talk.wav"
CHROMIUM = "/usr/bin/chromium"
PAGE = """<!doctype html><meta charset="utf-8"><title>reduce</title>
<script type="module">
import { reduceToOpus } from "./app_upload.js";
window.reduce = async () => {
  const blob = await (await fetch("video.mp4")).blob();
  const file = new File([blob], "video.mp4", { type: "video/mp4" });
  const started = performance.now();
  const out = await reduceToOpus(file);
  return { ms: performance.now() - started, bytes: out.size, source: file.size };
};
window.ready = true;
</script>"""


def _make(folder: Path, seconds: int) -> tuple[Path, int]:
    """The video and the size of its audio track."""
    video = folder / "video.mp4"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-y",
         "-f", "lavfi", "-i", f"testsrc2=size=854x480:rate=24:duration={seconds}",
         "-stream_loop", str(seconds // 24 + 1), "-i", str(TALK),
         "-t", str(seconds), "-map", "0:v", "-map", "1:a",
         "-c:v", "libx264", "-preset", "ultrafast", "-b:v", "1M",
         "-c:a", "aac", "-b:a", "128k", "-ac", "2", "-ar", "48000", str(video)],
        check=True,
    )  # fmt: skip
    probed = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "a", "-show_entries", "stream=bit_rate,duration",
         "-print_format", "json", str(video)],
        capture_output=True, check=True,
    )  # fmt: skip
    (stream,) = json.loads(probed.stdout)["streams"]
    return video, int(int(stream["bit_rate"]) * float(stream["duration"]) / 8)


async def _reduce(url: str, rounds: int) -> list[dict[str, float]]:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = await browser.new_page()
            await page.goto(url)
            await page.wait_for_function("window.ready === true")
            return [await page.evaluate("window.reduce()") for _ in range(rounds)]
        finally:
            await browser.close()


def run() -> dict[str, object]:
    seconds = int(os.environ.get("BENCH_REDUCE_SECONDS", "600"))
    rounds = int(os.environ.get("BENCH_REDUCE_ROUNDS", "3"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        video, audio_bytes = _make(folder, seconds)
        (folder / "index.html").write_text(PAGE, encoding="utf-8")
        for name in ("app_upload.js", "app_ogg.js", "app_sse.js"):
            (folder / name).write_text(ASSETS[name], encoding="utf-8")
        handler = partial(_Quiet, directory=str(folder))
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            load_before = os.getloadavg()
            results = asyncio.run(_reduce(f"http://127.0.0.1:{server.server_address[1]}/index.html", rounds))
            load_after = os.getloadavg()
        finally:
            server.shutdown()
            server.server_close()
    times = sorted(r["ms"] for r in results)
    reduced, source = results[0]["bytes"], results[0]["source"]
    assert all(r["bytes"] == reduced for r in results)
    return {
        "video_seconds": seconds,
        "source_mb": round(source / 1e6, 2),
        "source_audio_mb": round(audio_bytes / 1e6, 2),
        "reduced_mb": round(reduced / 1e6, 3),
        "ratio": round(source / reduced, 1),
        "audio_ratio": round(audio_bytes / reduced, 1),
        "reduced_kbit_s": round(reduced * 8 / seconds / 1000, 1),
        "reduce_median_s": round(statistics.median(times) / 1000, 2),
        "reduce_best_s": round(times[0] / 1000, 2),
        "faster_than_real_time": round(seconds / (statistics.median(times) / 1000), 1),
        "rounds": rounds,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
    }


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def end_headers(self) -> None:
        if self.path.endswith(".js"):  # served as a module script
            self.send_header("Cache-Control", "no-store")
        super().end_headers()
