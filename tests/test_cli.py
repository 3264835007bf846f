"""The real ``vid2context`` command in a subprocess, against a local server that replays YouTube.

Nothing is patched: the CLI builds its runtime from the environment, and
``VID2CONTEXT_YOUTUBE_ORIGIN`` sends its requests to the replay server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import srt
import webvtt

from .ports import healthy, start_serve
from .youtube_replay import ReplayServer


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


def _env(tmp_path: Path, origin: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VID2CONTEXT_")}
    env.update(VID2CONTEXT_HOME=str(tmp_path), VID2CONTEXT_YOUTUBE_ORIGIN=origin, **extra)
    return env


def run_cli(tmp_path: Path, origin: str, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vid2context", *args],
        capture_output=True,
        text=True,
        env=_env(tmp_path, origin, **extra),
        timeout=120,
        check=False,
    )


def test_get_prints_header_and_transcript(tmp_path: Path, replay: ReplayServer) -> None:
    result = run_cli(tmp_path, replay.origin, "get", "https://www.youtube.com/watch?v=GJLlxj_dtq8")
    assert result.returncode == 0, result.stderr
    assert "Surface Go Review" in result.stdout
    assert "Hey, this is just a test" in result.stdout
    assert "youtube.com/watch?v=GJLlxj_dtq8" in result.stdout
    assert "Traceback" not in result.stderr
    assert "Surface Go Review" in result.stderr  # the progress summary goes to stderr, not stdout


def test_get_with_timestamps_cites_every_line(tmp_path: Path, replay: ReplayServer) -> None:
    result = run_cli(tmp_path, replay.origin, "get", "GJLlxj_dtq8", "--timestamps", "--no-header", "-q")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert lines and all(line.startswith("[") for line in lines), result.stdout
    assert result.stderr == ""


def test_get_srt_and_vtt_parse_back(tmp_path: Path, replay: ReplayServer) -> None:
    as_srt = run_cli(tmp_path, replay.origin, "get", "youtu.be/GJLlxj_dtq8", "--format", "srt", "-q")
    assert as_srt.returncode == 0, as_srt.stderr
    cues = list(srt.parse(as_srt.stdout))
    assert [c.content for c in cues][0] == "Hey, this is just a test"
    as_vtt = run_cli(tmp_path, replay.origin, "get", "GJLlxj_dtq8", "--format", "vtt", "-q")
    assert as_vtt.returncode == 0, as_vtt.stderr
    assert len(webvtt.from_buffer(__import__("io").StringIO(as_vtt.stdout))) == len(cues)


def test_get_json_is_the_whole_context(tmp_path: Path, replay: ReplayServer) -> None:
    result = run_cli(tmp_path, replay.origin, "get", "youtube:GJLlxj_dtq8", "--format", "json", "-q")
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["id"] == "youtube:GJLlxj_dtq8"
    assert body["metadata"]["durationSec"] == 316
    assert body["transcript"]["segments"][0]["startSec"] == 0


def test_get_a_time_range(tmp_path: Path, replay: ReplayServer) -> None:
    result = run_cli(tmp_path, replay.origin, "get", "GJLlxj_dtq8", "--from", "0:05", "--to", "10s")
    assert result.returncode == 0, result.stderr
    assert "just something shorter" in result.stdout
    assert "Hey, this is just a test" not in result.stdout
    assert "Section" in result.stdout


@pytest.mark.parametrize(
    ("video", "code"),
    [
        ("botCheck001", "blocked"),
        ("Njp5uhTorCo", "unavailable"),
        ("unavailable", "not-found"),
        ("dsMFmonKDD4", "no-transcript"),
        ("tooMany429x", "rate-limited"),
    ],
)
def test_failures_are_explained_on_stderr(
    tmp_path: Path, replay: ReplayServer, video: str, code: str
) -> None:
    result = run_cli(tmp_path, replay.origin, "get", video)
    assert result.returncode == 1
    assert result.stdout == ""
    assert f"error: {code}: " in result.stderr
    assert "hint: " in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["get", "GJLlxj_dtq8", "--format", "nope"], "bad-request"),
        (["get", "ftp://example.com/a.mp4"], "unsupported-input"),
        (["get", "GJLlxj_dtq8", "--from", "soon"], "bad-request"),
        (["get", "https://www.youtube.com/playlist?list=PL0123456789"], "bad-request"),
    ],
)
def test_bad_input_is_an_explained_error(
    tmp_path: Path, replay: ReplayServer, args: list[str], code: str
) -> None:
    result = run_cli(tmp_path, replay.origin, *args)
    assert result.returncode == 1, result.stderr
    assert f"error: {code}: " in result.stderr
    assert "hint: " in result.stderr


def test_public_mode_refuses_local_paths(tmp_path: Path, replay: ReplayServer) -> None:
    result = run_cli(tmp_path, replay.origin, "get", "/etc/passwd", VID2CONTEXT_PUBLIC="1")
    assert result.returncode == 1
    assert "error: unsupported-input: " in result.stderr
    assert replay.requests == [] or all("passwd" not in path for _, path in replay.requests)


def test_a_bad_setting_is_named(tmp_path: Path, replay: ReplayServer) -> None:
    result = run_cli(tmp_path, replay.origin, "get", "GJLlxj_dtq8", VID2CONTEXT_PUBLIC="perhaps")
    assert result.returncode == 1
    assert "VID2CONTEXT_PUBLIC" in result.stderr


def test_usage_error_exits_2(tmp_path: Path, replay: ReplayServer) -> None:
    result = run_cli(tmp_path, replay.origin, "get")
    assert result.returncode == 2


def test_formats_lists_every_formatter(tmp_path: Path, replay: ReplayServer) -> None:
    from vid2context.formats import FORMATTERS

    result = run_cli(tmp_path, replay.origin, "formats")
    assert result.returncode == 0
    listed = [line.split()[0] for line in result.stdout.splitlines()]
    assert listed == list(FORMATTERS)


def test_serve_answers_health_for_real(tmp_path: Path, replay: ReplayServer) -> None:
    server, url = start_serve(_env(tmp_path, replay.origin), tmp_path / "serve.log", healthy)
    try:
        body = httpx.get(f"{url}/api/v1/health", timeout=10).json()
        assert body["ok"] is True
        assert body["runtime"] == "local"
        assert {f["id"] for f in body["formats"]} >= {"text", "srt", "vtt", "json", "markdown", "pack"}
        assert any(p["id"] == "youtube" for p in body["providers"])
        missing = httpx.get(f"{url}/api/v1/nope", timeout=2)
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "not-found"
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_serve_on_a_port_taken_first_starts_on_another(
    tmp_path: Path, replay: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``start_serve``'s retry, for real: the first port it is given is held by another socket,
    as when another process takes it between the probe and the server's bind."""
    from . import ports

    probe = ports.free_port
    with ports.bound_socket() as taken:
        taken.listen()
        held = taken.getsockname()[1]
        given = iter([held])
        monkeypatch.setattr(ports, "free_port", lambda: next(given, None) or probe())
        server, url = ports.start_serve(_env(tmp_path, replay.origin), tmp_path / "serve.log", ports.healthy)
    try:
        assert not url.endswith(f":{held}")
        assert httpx.get(f"{url}/api/v1/health", timeout=10).json()["ok"] is True
    finally:
        server.terminate()
        server.wait(timeout=30)
