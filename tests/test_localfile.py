"""Local media files through real ffprobe and ffmpeg, on the media fixtures in tests/fixtures/media.

The fixtures are copied into ``tmp_path`` when a test needs files beside them (sidecars) or a file
made from them (chapters, embedded subtitle streams: built here with ffmpeg). Every bad input the
issue names gets its own test: outside the roots, a link that escapes them, missing, a folder, a
pipe, unreadable, empty, not media, no sound, zero-length sound, ffprobe missing.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.inputs import parse_input
from vid2context.pipeline import get_context
from vid2context.providers.base import AudioSource, SourceProvider
from vid2context.providers.localfile import LocalFileProvider, extract_audio, parse_roots
from vid2context.runtime import build_local_runtime

pytestmark = pytest.mark.skipif(
    shutil.which("ffmpeg") is None, reason="needs ffmpeg (apt-get install ffmpeg)"
)

VTT = """WEBVTT

00:00:00.200 --> 00:00:04.800
Welcome to the show.

00:00:04.800 --> 00:00:08.500
Today we talk about python programming.
"""
SRT = """1
00:00:00,200 --> 00:00:04,800
Welcome to the show, from the SRT.

2
00:00:11,000 --> 00:00:14,000
The weather today is sunny and warm.
"""


def _ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True, timeout=120)


def _ffprobe(path: Path) -> dict:
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-print_format", "json", "-show_format", "-show_streams", str(path)],
        check=True, capture_output=True, timeout=60,
    ).stdout  # fmt: skip
    return json.loads(out)


def _run(coro):
    return asyncio.run(coro)


@pytest.fixture
def media(fixtures: Path) -> Path:
    return fixtures / "media"


@pytest.fixture
def folder(tmp_path: Path, media: Path) -> Path:
    """A root holding copies of the fixtures."""
    root = tmp_path / "root"
    root.mkdir()
    for name in ("talk.mp3", "talk.mp4", "talk.webm"):
        shutil.copy(media / name, root / name)
    return root


def _provider(*roots: Path, **kw: str) -> LocalFileProvider:
    return LocalFileProvider(roots=parse_roots(",".join(str(r) for r in roots)), **kw)


def _ref(path: Path | str):
    return parse_input(str(path))


def _error(coro) -> VidError:
    with pytest.raises(VidError) as caught:
        _run(coro)
    assert caught.value.hint, caught.value.message
    return caught.value


# --- metadata ------------------------------------------------------------------------------------


def test_metadata_of_the_fixture_video(media: Path) -> None:
    provider = _provider(media)
    meta = _run(provider.metadata(_ref(media / "talk.mp4"), Ctx()))
    assert meta.title == "Espeak Talk"
    assert meta.platform == "local"
    assert meta.id == f"local:{media / 'talk.mp4'}"
    assert meta.url == (media / "talk.mp4").resolve().as_uri()  # the real path, links resolved
    # The container says 34.4 s: the fixture's black video track runs 10 s past the 24.4 s of speech
    # (ffmpeg's -shortest with a lavfi source). Players show the container's length, and so do we.
    assert meta.duration_sec == pytest.approx(34.4, abs=0.1)
    assert meta.chapters == []
    assert meta.language is None  # "und"


def test_title_falls_back_to_the_file_name(media: Path) -> None:
    meta = _run(_provider(media).metadata(_ref(media / "talk.mp3"), Ctx()))
    assert meta.title == "talk"
    assert meta.duration_sec == pytest.approx(24.5, abs=0.1)


def test_chapters_and_tags_from_the_container(folder: Path) -> None:
    (folder / "meta.txt").write_text(
        ";FFMETADATA1\ntitle=Chaptered talk\nartist=Espeak\ndate=2024-05-06\n"
        "[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=10000\ntitle=Welcome\n"
        "[CHAPTER]\nTIMEBASE=1/1000\nSTART=10000\nEND=18000\ntitle=Weather\n"
        "[CHAPTER]\nTIMEBASE=1/1000\nSTART=18000\nEND=24400\n"
    )
    _ffmpeg("-i", str(folder / "talk.mp3"), "-i", str(folder / "meta.txt"), "-map", "0",
            "-map_metadata", "1", "-map_chapters", "1", "-c", "copy", str(folder / "chaptered.mkv"))  # fmt: skip
    meta = _run(_provider(folder).metadata(_ref(folder / "chaptered.mkv"), Ctx()))
    assert meta.title == "Chaptered talk"
    assert meta.channel == "Espeak"
    assert meta.published_at == "2024-05-06"
    assert [(c.title, c.start_sec, c.end_sec) for c in meta.chapters] == [
        ("Welcome", 0.0, 10.0),
        ("Weather", 10.0, 18.0),
        ("Chapter 3", 18.0, pytest.approx(meta.duration_sec)),
    ]


# --- sidecar and embedded subtitles --------------------------------------------------------------


def test_a_sidecar_srt_is_the_transcript(folder: Path) -> None:
    (folder / "talk.srt").write_text(SRT, encoding="utf-8")
    transcript = _run(_provider(folder).captions(_ref(folder / "talk.mp3"), Ctx()))
    assert transcript.origin == "sidecar"
    assert transcript.producer == "local/sidecar"
    assert transcript.language is None
    assert [s.text for s in transcript.segments] == [
        "Welcome to the show, from the SRT.",
        "The weather today is sunny and warm.",
    ]
    assert transcript.segments[1].start_sec == 11.0
    assert "talk.srt" in (transcript.note or "")


def test_sidecars_by_language(folder: Path) -> None:
    (folder / "talk.en.vtt").write_text(VTT, encoding="utf-8")
    (folder / "talk.de.forced.srt").write_bytes(SRT.replace("from the SRT", "auf Deutsch").encode("cp1252"))
    (folder / "talky.srt").write_text(SRT)  # another video's
    (folder / "talk.txt").write_text("not a subtitle")
    provider = _provider(folder)
    ref = _ref(folder / "talk.mp3")
    tracks = _run(provider.caption_tracks(ref, Ctx()))
    assert [(t.language, t.name) for t in tracks] == [("de", "talk.de.forced.srt"), ("en", "talk.en.vtt")]
    english = _run(provider.captions(ref, Ctx(), lang="en"))
    assert (english.language, english.segments[0].text) == ("en", "Welcome to the show.")
    german = _run(provider.captions(ref, Ctx(), lang="de-AT"))
    assert (german.language, german.segments[0].text) == ("de", "Welcome to the show, auf Deutsch.")


def test_a_sidecar_link_out_of_the_roots_is_not_read(tmp_path: Path, folder: Path) -> None:
    outside = tmp_path / "secret.srt"
    outside.write_text(SRT)
    (folder / "talk.srt").symlink_to(outside)
    error = _error(_provider(folder).captions(_ref(folder / "talk.mp3"), Ctx()))
    assert error.code is ErrorCode.NO_TRANSCRIPT


@pytest.mark.parametrize(("container", "codec"), [("mp4", "mov_text"), ("mkv", "srt")])
def test_an_embedded_subtitle_stream(folder: Path, container: str, codec: str) -> None:
    (folder / "subs.vtt").write_text(VTT)
    target = folder / f"subbed.{container}"
    _ffmpeg("-i", str(folder / "talk.mp4"), "-i", str(folder / "subs.vtt"), "-map", "0", "-map", "1",
            "-c:v", "copy", "-c:a", "copy", "-c:s", codec, "-metadata:s:s:0", "language=eng", str(target))  # fmt: skip
    provider = _provider(folder)
    tracks = _run(provider.caption_tracks(_ref(target), Ctx()))
    assert [(t.language, t.kind) for t in tracks] == [("en", "manual")]
    transcript = _run(provider.captions(_ref(target), Ctx()))
    assert transcript.origin == "embedded"
    assert transcript.producer == "local/ffmpeg"
    assert transcript.language == "en"
    assert [s.text for s in transcript.segments] == [
        "Welcome to the show.",
        "Today we talk about python programming.",
    ]
    assert transcript.segments[1].start_sec == pytest.approx(4.8, abs=0.1)  # mkv muxing shifts by ~46 ms


VERBATIM_SRT = """1
00:00:00,200 --> 00:00:04,800
performance & <price>. wrap it in a <div>

2
00:00:05,000 --> 00:00:08,000
a < b > c, <i>🎉</i> done
"""
VERBATIM_VTT = """WEBVTT

00:00:00.200 --> 00:00:04.800
performance &amp; &lt;price&gt;. wrap it in a &lt;div&gt;

00:00:05.000 --> 00:00:08.000
a &lt; b &gt; c, <i>🎉</i> done
"""
VERBATIM_TEXTS = ["performance & <price>. wrap it in a <div>", "a < b > c, 🎉 done"]


@pytest.mark.parametrize(
    ("sub", "container", "codec"),
    [("subs.srt", "mkv", "copy"), ("subs.vtt", "mkv", "copy"), ("subs.vtt", "mp4", "mov_text")],
    ids=["subrip-copied", "webvtt-copied", "mov_text-converted"],
)
def test_embedded_stream_text_is_kept_as_the_file_has_it(
    folder: Path, sub: str, container: str, codec: str
) -> None:
    """ffmpeg's SubRip decoder would drop <price> and <div> and make "< b >" bold; a copy does not.

    mov_text is plain text in the file, so its conversion (bare text in ffmpeg's WebVTT) keeps it.
    """
    (folder / "subs.srt").write_text(VERBATIM_SRT, encoding="utf-8")
    (folder / "subs.vtt").write_text(VERBATIM_VTT, encoding="utf-8")
    target = folder / f"verbatim.{container}"
    _ffmpeg("-i", str(folder / "talk.mp4"), "-i", str(folder / sub), "-map", "0", "-map", "1",
            "-c:v", "copy", "-c:a", "copy", "-c:s", codec, str(target))  # fmt: skip
    transcript = _run(_provider(folder).captions(_ref(target), Ctx()))
    assert transcript.origin == "embedded"
    assert [s.text for s in transcript.segments] == VERBATIM_TEXTS


def test_a_sidecar_wins_over_the_embedded_stream(folder: Path) -> None:
    (folder / "subs.vtt").write_text(VTT)
    target = folder / "both.mkv"
    _ffmpeg("-i", str(folder / "talk.mp4"), "-i", str(folder / "subs.vtt"), "-map", "0", "-map", "1",
            "-c:v", "copy", "-c:a", "copy", "-c:s", "srt", "-metadata:s:s:0", "language=eng", str(target))  # fmt: skip
    (folder / "both.en.srt").write_text(SRT)
    transcript = _run(_provider(folder).captions(_ref(target), Ctx(), lang="en"))
    assert transcript.origin == "sidecar"


def test_an_empty_sidecar_gives_way_to_the_next_track(folder: Path) -> None:
    (folder / "talk.srt").write_text("\n\n")
    (folder / "talk.en.vtt").write_text(VTT)
    transcript = _run(_provider(folder).captions(_ref(folder / "talk.mp3"), Ctx()))
    assert transcript.segments[0].text == "Welcome to the show."


def test_no_subtitles_is_no_transcript(folder: Path) -> None:
    error = _error(_provider(folder).captions(_ref(folder / "talk.mp3"), Ctx()))
    assert error.code is ErrorCode.NO_TRANSCRIPT
    assert "talk.srt" in error.hint and "mode=stt" in error.hint


# --- audio ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "fmt"), [("talk.mp4", "mp3"), ("talk.webm", "wav"), ("talk.mp3", "flac")])
def test_extracted_audio_is_mono_16k_speech(folder: Path, tmp_path: Path, name: str, fmt: str) -> None:
    out_dir = tmp_path / "out"
    path = _run(_provider(folder).download_audio(_ref(folder / name), Ctx(), dest_dir=out_dir, fmt=fmt))
    assert path.parent == out_dir and path.suffix == f".{fmt}"
    info = _ffprobe(path)
    (stream,) = info["streams"]
    assert (stream["codec_type"], stream["channels"], stream["sample_rate"]) == ("audio", 1, "16000")
    assert float(info["format"]["duration"]) == pytest.approx(24.4, abs=0.3)


def test_extract_audio_makes_its_own_folder_when_none_is_given(media: Path) -> None:
    path = _run(extract_audio(media / "talk.m4a", Ctx()))
    try:
        assert path.is_file() and path.name == "talk.16k-mono.mp3"
    finally:
        shutil.rmtree(path.parent)


def test_audio_source_hands_over_the_file_itself(folder: Path) -> None:
    provider = _provider(folder)
    assert isinstance(provider, SourceProvider) and isinstance(provider, AudioSource)
    audio = _run(provider.audio(_ref(folder / "talk.mp4"), Ctx()))
    assert audio.kind == "path" and audio.path == str(folder / "talk.mp4")
    assert audio.mime == "video/mp4"
    assert audio.duration_sec == pytest.approx(24.4, abs=0.1)  # the audio stream's own length


def test_media_without_sound(folder: Path) -> None:
    silent = folder / "silent.mp4"
    _ffmpeg("-i", str(folder / "talk.mp4"), "-an", "-c:v", "copy", str(silent))
    provider = _provider(folder)
    assert _error(provider.audio(_ref(silent), Ctx())).code is ErrorCode.NO_TRANSCRIPT
    assert _error(provider.download_audio(_ref(silent), Ctx())).code is ErrorCode.NO_TRANSCRIPT


def test_zero_length_audio(folder: Path, tmp_path: Path) -> None:
    empty = folder / "zero.wav"
    _ffmpeg("-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-t", "0", str(empty))
    error = _error(_provider(folder).download_audio(_ref(empty), Ctx(), dest_dir=tmp_path / "out"))
    assert error.code is ErrorCode.NO_TRANSCRIPT
    assert "zero length" in error.message
    assert list((tmp_path / "out").iterdir()) == []  # nothing left behind


def test_an_unknown_audio_format(folder: Path) -> None:
    assert _error(extract_audio(folder / "talk.mp3", Ctx(), fmt="aiff")).code is ErrorCode.BAD_REQUEST


# --- where files may be read from ----------------------------------------------------------------


def test_paths_outside_the_roots_are_refused_before_anything_is_revealed(
    tmp_path: Path, folder: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(folder / "talk.mp3", other / "talk.mp3")
    provider = _provider(folder)
    for path in (
        other / "talk.mp3",
        other / "missing.mp3",
        Path("/etc/passwd"),
        folder / ".." / "other" / "talk.mp3",
    ):
        error = _error(provider.metadata(_ref(path), Ctx()))
        assert error.code is ErrorCode.UNSUPPORTED_INPUT, path
        assert "VID2CONTEXT_FILE_ROOTS" in error.hint


def test_a_link_escaping_the_roots_is_refused(tmp_path: Path, folder: Path) -> None:
    outside = tmp_path / "outside.mp3"
    shutil.copy(folder / "talk.mp3", outside)
    (folder / "escape.mp3").symlink_to(outside)
    (folder / "inside.mp3").symlink_to(folder / "talk.mp3")
    provider = _provider(folder)
    error = _error(provider.metadata(_ref(folder / "escape.mp3"), Ctx()))
    assert error.code is ErrorCode.UNSUPPORTED_INPUT
    assert "link" in error.message
    assert _run(provider.metadata(_ref(folder / "inside.mp3"), Ctx())).title == "inside"


def test_relative_and_home_paths(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(folder)
    monkeypatch.setenv("HOME", str(folder))
    provider = LocalFileProvider()  # default root: the current directory
    assert provider.roots == [str(folder.resolve())]
    for given in ("talk.mp3", "./talk.mp3", "~/talk.mp3", "sub/../talk.mp3"):
        assert _run(provider.metadata(_ref(given), Ctx())).duration_sec, given
    assert _error(provider.metadata(_ref("../talk.mp3"), Ctx())).code is ErrorCode.UNSUPPORTED_INPUT


@pytest.mark.parametrize(
    ("make", "code"),
    [
        (lambda root: root / "missing.mp4", ErrorCode.NOT_FOUND),
        (lambda root: root / "talk.mp3" / "inside", ErrorCode.NOT_FOUND),
        (lambda root: root, ErrorCode.BAD_REQUEST),
        (lambda root: (os.mkfifo(root / "pipe.mp3"), root / "pipe.mp3")[1], ErrorCode.BAD_REQUEST),
        (lambda root: ((root / "empty.mp3").write_bytes(b""), root / "empty.mp3")[1], ErrorCode.BAD_REQUEST),
        (
            lambda root: ((root / "text.mp4").write_text("hello, I am not a video"), root / "text.mp4")[1],
            ErrorCode.UNSUPPORTED_INPUT,
        ),
        (
            lambda root: ((root / "subs.srt").write_text(SRT), root / "subs.srt")[1],
            ErrorCode.UNSUPPORTED_INPUT,
        ),
        (
            lambda root: (
                _ffmpeg(
                    "-f", "lavfi", "-i", "color=c=black:s=32x32", "-frames:v", "1", str(root / "still.png")
                ),
                root / "still.png",
            )[1],
            ErrorCode.UNSUPPORTED_INPUT,
        ),
    ],
    ids=["missing", "under-a-file", "folder", "pipe", "empty", "text", "subtitle-file", "still-image"],
)
def test_bad_files_get_clear_errors(folder: Path, make, code: ErrorCode) -> None:
    path = make(folder)
    error = _error(_provider(folder).metadata(_ref(path), Ctx()))
    assert error.code is code, error.message


_UNREADABLE_CHECK = """
import sys
from vid2context.errors import VidError
from vid2context.providers.localfile import resolve_local_path
try:
    resolve_local_path(sys.argv[1], [sys.argv[2]])
except VidError as error:
    print(error.code.value, error.message)
"""


def test_an_unreadable_file(folder: Path) -> None:
    """Root reads any file whatever its mode, so as root the check runs in a child without the
    capabilities that allow it (``setpriv``); as anyone else, in a child all the same."""
    locked = folder / "talk.mp3"
    locked.chmod(0)
    argv = [sys.executable, "-c", _UNREADABLE_CHECK, str(locked), str(folder)]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("root without setpriv (util-linux) cannot drop its right to read every file")
        argv = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--", *argv]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert result.stdout.startswith("bad-request "), result.stdout + result.stderr
    assert "permission denied" in result.stdout


def test_ffprobe_missing_is_no_provider(folder: Path) -> None:
    provider = _provider(folder, ffprobe=str(folder / "no-such-ffprobe"))
    error = _error(provider.metadata(_ref(folder / "talk.mp3"), Ctx()))
    assert error.code is ErrorCode.NO_PROVIDER
    assert "ffmpeg" in error.hint


def test_items_is_the_file_and_comments_are_none(folder: Path) -> None:
    provider = _provider(folder)
    ref = _ref(folder / "talk.mp3")
    assert _run(provider.items(ref, Ctx(), limit=5)) == [ref]
    assert _error(provider.comments(ref, Ctx(), limit=5)).code is ErrorCode.NO_PROVIDER


# --- through the pipeline ------------------------------------------------------------------------


def test_get_context_reads_the_sidecar_through_the_local_runtime(tmp_path: Path, folder: Path) -> None:
    (folder / "talk.srt").write_text(SRT)
    home = tmp_path / "home"

    async def scenario():
        runtime = build_local_runtime(
            {"VID2CONTEXT_HOME": str(home), "VID2CONTEXT_FILE_ROOTS": str(tmp_path)}
        )
        try:
            assert [p.id for p in runtime.sources if p.accepts(_ref(folder / "talk.mp3"))] == ["localfile"]
            first = await get_context(runtime, str(folder / "talk.mp3"))
            again = await get_context(runtime, f"file://{folder / 'talk.mp3'}")
            return first, again
        finally:
            await runtime.aclose()

    context, again = _run(scenario())
    assert context.metadata.title == "talk"
    assert context.transcript is not None
    assert context.transcript.origin == "sidecar"
    assert context.transcript.segments[0].text == "Welcome to the show, from the SRT."
    assert [(a.id, a.stage, a.outcome) for a in context.attempts][:2] == [
        ("localfile", "metadata", "ok"),
        ("localfile", "captions", "ok"),
    ]
    assert [a.stage for a in again.attempts] == ["cache"]  # a file:// URL is the same library entry


def test_the_local_runtime_refuses_files_outside_its_roots(tmp_path: Path, media: Path) -> None:
    async def scenario():
        runtime = build_local_runtime(
            {"VID2CONTEXT_HOME": str(tmp_path), "VID2CONTEXT_FILE_ROOTS": str(tmp_path)}
        )
        try:
            return await get_context(runtime, str(media / "talk.mp3"))
        finally:
            await runtime.aclose()

    error = _error(scenario())
    assert error.code is ErrorCode.UNSUPPORTED_INPUT
