"""The yt-dlp provider: the real program on the media fixtures, and a fake one for what the real
one cannot be made to do offline (each error message, hanging, an old version).

Real runs use ``file://`` URLs (``--enable-file-urls`` through the extra-arguments setting) and an
``.info.json`` written here, read with ``--load-info-json``: chapters, manual subtitles, automatic
captions in YouTube's shape (``-orig`` originals, ``tlang`` translations), comments. No network.

The fake is a small Python program made executable in ``tmp_path`` and configured as the binary
path, exactly as ``VID2CONTEXT_YTDLP`` would. It logs the arguments it was given.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import shutil
import signal
import stat
import sys
from pathlib import Path

import pytest

from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.inputs import parse_input
from vid2context.models import VideoRef
from vid2context.providers.base import AudioSource, SourceProvider
from vid2context.providers.ytdlp import YtDlpProvider, find_ytdlp, parse_version
from vid2context.runtime import build_local_runtime
from vid2context.settings import load_settings

from .hint_steps import problems, surfaces

REAL = find_ytdlp()
needs_real = pytest.mark.skipif(
    not Path(REAL).is_file() and shutil.which(REAL) is None, reason="yt-dlp not installed"
)
needs_ffprobe = pytest.mark.skipif(
    shutil.which("ffprobe") is None, reason="needs ffmpeg (apt-get install ffmpeg)"
)

VTT = "WEBVTT\n\n00:00:00.500 --> 00:00:04.000\nWelcome to the show.\n\n00:00:05.000 --> 00:00:08.000\nThe weather today is sunny and warm.\n"
FR_VTT = "WEBVTT\n\n00:00:00.500 --> 00:00:04.000\nBienvenue dans l'émission.\n"
JSON3 = {"events": [{"tStartMs": 0, "dDurationMs": 1500, "segs": [{"utf8": "willkommen"}, {"utf8": " zur show"}]},
                    {"tStartMs": 1500, "dDurationMs": 10, "segs": [{"utf8": "\n"}]}]}  # fmt: skip


def _run(coro):
    return asyncio.run(coro)


def _web(url: str) -> VideoRef:
    """A web reference to any URL (``file://`` too: ``parse_input`` would make that a local file)."""
    return VideoRef(id=f"web:{url}", platform="web", kind="video", native_id=url, url=url)


def _error(coro) -> VidError:
    with pytest.raises(VidError) as caught:
        _run(coro)
    return caught.value


@pytest.fixture
def media(fixtures: Path) -> Path:
    return fixtures / "media"


@pytest.fixture
def info_json(tmp_path: Path, media: Path) -> Path:
    """An info JSON as yt-dlp writes it, with what the generic extractor cannot find in a file."""
    (tmp_path / "talk.en.vtt").write_text(VTT, encoding="utf-8")
    (tmp_path / "talk.fr.vtt").write_text(FR_VTT, encoding="utf-8")
    (tmp_path / "talk.de.json3").write_text(json.dumps(JSON3), encoding="utf-8")

    def sub(name: str, ext: str, label: str) -> list[dict]:
        return [{"ext": ext, "url": (tmp_path / name).as_uri(), "name": label}]

    info = {
        "id": "talk", "title": "Talk with chapters", "extractor": "generic", "extractor_key": "Generic",
        "webpage_url": (media / "talk.mp4").as_uri(), "duration": 24.4, "uploader": "Espeak",
        "channel_id": "espeak-1", "upload_date": "20250102", "description": "A talk about the weather.",
        "tags": ["speech", "test"], "view_count": 42, "language": "en",
        "thumbnails": [{"url": "https://img.example/1.jpg", "width": 120, "height": 90}, {"url": "file:///x.jpg"}],
        "chapters": [
            {"start_time": 0, "end_time": 10, "title": "Intro"},
            {"start_time": 10, "end_time": 18.5, "title": "Weather"},
            {"start_time": 18.5, "end_time": 24.4, "title": "Outro"},
        ],
        "subtitles": {
            "en": sub("talk.en.vtt", "vtt", "English"),
            "live_chat": [{"ext": "json", "url": (tmp_path / "chat.json").as_uri()}],
        },
        # YouTube's shape: the original automatic track twice ("de-orig" and "de"), and machine
        # translations whose URLs carry tlang=.
        "automatic_captions": {
            "de-orig": sub("talk.de.json3", "json3", "German (Original)"),
            "de": sub("talk.de.json3", "json3", "German"),
            "fr": [{"ext": "vtt", "url": (tmp_path / "talk.fr.vtt").as_uri() + "#tlang=fr", "name": "French"}],
        },
        "comments": [
            {"id": "c1", "text": "Great talk", "author": "Ann", "like_count": 3, "timestamp": 1700000000, "parent": "root"},
            {"id": "c2", "text": "a reply", "author": "Bob", "parent": "c1"},
            {"id": "c3", "text": "Second", "author": "Cy", "parent": "root"},
            {"id": "c4", "text": "Third", "parent": "root"},
        ],
        "formats": [{"format_id": "mp4", "url": (media / "talk.mp4").as_uri(), "ext": "mp4", "protocol": "file"}],
    }  # fmt: skip
    path = tmp_path / "talk.info.json"
    path.write_text(json.dumps(info), encoding="utf-8")
    return path


def _real(*extra: str, **kw) -> YtDlpProvider:
    return YtDlpProvider(extra_args=["--enable-file-urls", *extra], **kw)


# --- the real program ----------------------------------------------------------------------------


@needs_real
@needs_ffprobe
def test_a_media_file_url_metadata_and_audio(media: Path) -> None:
    import subprocess

    provider = _real()
    ref = _web((media / "talk.webm").as_uri())
    ctx = Ctx()
    meta = _run(provider.metadata(ref, ctx))
    assert (meta.id, meta.platform, meta.title) == (ref.id, "web", "talk")
    assert _run(provider.caption_tracks(ref, ctx)) == []
    error = _error(provider.captions(ref, ctx))
    assert error.code is ErrorCode.NO_TRANSCRIPT and "mode=stt" in (error.hint or "")
    audio = _run(provider.audio(ref, ctx))  # reuses the metadata run's extraction (--load-info-json)
    assert isinstance(provider, AudioSource) and isinstance(provider, SourceProvider)
    assert audio.kind == "path" and audio.mime == "video/webm"
    path = Path(audio.path or "")
    argv = ["ffprobe", "-v", "error", "-print_format", "json", "-show_streams", str(path)]
    probe = json.loads(subprocess.run(argv, capture_output=True, check=True).stdout)
    assert [s["codec_type"] for s in probe["streams"]] == ["audio"]
    _run(provider.release_audio(audio))
    assert not path.parent.exists()


@needs_real
def test_download_audio_without_a_metadata_run(media: Path, tmp_path: Path) -> None:
    path = _run(_real().download_audio(_web((media / "talk.mp3").as_uri()), Ctx(), dest_dir=tmp_path / "a"))
    assert path == tmp_path / "a" / "audio.mp3"
    assert path.read_bytes() == (media / "talk.mp3").read_bytes()


@needs_real
def test_info_json_metadata_chapters_and_tracks(info_json: Path, media: Path) -> None:
    provider = _real("--load-info-json", str(info_json))
    ref = _web((media / "talk.mp4").as_uri())
    ctx = Ctx()
    meta = _run(provider.metadata(ref, ctx))
    assert meta.title == "Talk with chapters"
    assert (meta.channel, meta.channel_id, meta.duration_sec) == ("Espeak", "espeak-1", 24.4)
    assert (meta.published_at, meta.tags, meta.view_count, meta.language) == (
        "2025-01-02",
        ["speech", "test"],
        42,
        "en",
    )
    assert [t.url for t in meta.thumbnails] == ["https://img.example/1.jpg"]
    assert [(c.title, c.start_sec, c.end_sec) for c in meta.chapters] == [
        ("Intro", 0.0, 10.0),
        ("Weather", 10.0, 18.5),
        ("Outro", 18.5, 24.4),
    ]
    tracks = _run(provider.caption_tracks(ref, ctx))
    assert [(t.language, t.kind, t.name) for t in tracks] == [
        ("en", "manual", "English"),
        ("de", "auto", "German"),
    ]  # live chat skipped, "de" and "fr" are a duplicate and a translation


@needs_real
def test_info_json_captions_manual_auto_and_translated(info_json: Path, media: Path) -> None:
    provider = _real("--load-info-json", str(info_json))
    ref = _web((media / "talk.mp4").as_uri())
    ctx = Ctx()
    _run(provider.metadata(ref, ctx))
    manual = _run(provider.captions(ref, ctx))
    assert (manual.origin, manual.language, manual.producer) == ("captions-manual", "en", "ytdlp/vtt")
    assert [(s.start_sec, s.text) for s in manual.segments] == [
        (0.5, "Welcome to the show."),
        (5.0, "The weather today is sunny and warm."),
    ]
    auto = _run(provider.captions(ref, ctx, lang="de"))
    assert (auto.origin, auto.language, auto.producer) == ("captions-auto", "de", "ytdlp/json3")
    assert [s.text for s in auto.segments] == ["willkommen zur show"]
    translated = _run(provider.captions(ref, ctx, lang="fr"))
    assert (translated.origin, translated.language) == ("captions-translated", "fr")
    assert translated.segments[0].text == "Bienvenue dans l'émission."


@needs_real
def test_comments_are_top_level_and_limited(info_json: Path, media: Path) -> None:
    provider = _real("--load-info-json", str(info_json))
    comments = _run(provider.comments(_web((media / "talk.mp4").as_uri()), Ctx(), limit=2))
    assert [(c.id, c.text, c.author) for c in comments] == [
        ("c1", "Great talk", "Ann"),
        ("c3", "Second", "Cy"),
    ]
    assert comments[0].like_count == 3
    assert comments[0].published_at == "2023-11-14T22:13:20Z"


@needs_real
def test_a_feed_expands_to_its_videos(tmp_path: Path, media: Path) -> None:
    items = "".join(
        f"<item><title>{name}</title><link>{(media / name).as_uri()}</link><guid>{i}</guid>"
        f'<enclosure url="{(media / name).as_uri()}" type="audio/mpeg" length="1"/></item>'
        for i, name in enumerate(["talk.mp3", "talk.webm", "talk.mp4"])
    )
    items += (
        "<item><title>yt</title><link>https://www.youtube.com/watch?v=GJLlxj_dtq8</link><guid>9</guid></item>"
    )
    feed = tmp_path / "feed.xml"
    feed.write_text(
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>Talks</title><link>http://example.com/</link>'
        f"<description>d</description>{items}</channel></rss>"
    )
    provider = _real()
    found = _run(provider.items(_web(feed.as_uri()), Ctx(), limit=10))
    assert [r.id for r in found] == [
        f"local:{media / 'talk.mp3'}", f"local:{media / 'talk.webm'}", f"local:{media / 'talk.mp4'}",
        "youtube:GJLlxj_dtq8",
    ]  # fmt: skip
    assert [r.id for r in _run(provider.items(_web(feed.as_uri()), Ctx(), limit=2))] == [
        f"local:{media / 'talk.mp3'}",
        f"local:{media / 'talk.webm'}",
    ]
    single = _web((media / "talk.mp3").as_uri())
    assert _run(provider.items(single, Ctx(), limit=5)) == [single]


@needs_real
def test_the_real_program_refuses_file_urls_by_default(media: Path) -> None:
    error = _error(YtDlpProvider().metadata(_web((media / "talk.mp3").as_uri()), Ctx()))
    assert error.code is ErrorCode.UNSUPPORTED_INPUT
    assert "yt-dlp:" in error.message


# --- a fake yt-dlp -------------------------------------------------------------------------------


class Fake:
    """An executable stand-in for yt-dlp: answers ``--version``, logs its arguments, then runs
    ``body`` (Python source)."""

    def __init__(self, tmp_path: Path, body: str, *, version: str = "2026.10.26") -> None:
        self.dir = tmp_path
        self.log = tmp_path / "args.log"
        self.versions = tmp_path / "versions.log"
        self.pids = tmp_path / "pids"
        self.path = tmp_path / "yt-dlp"
        self.path.write_text(
            f"#!{sys.executable}\n"
            "import json, os, signal, subprocess, sys, time\n"
            "args = sys.argv[1:]\n"
            "if args == ['--version']:\n"
            f"    open({str(self.versions)!r}, 'a').write('v\\n')\n"
            f"    print({version!r})\n"
            "    sys.exit(0)\n"
            f"open({str(self.log)!r}, 'a').write(json.dumps(args) + '\\n')\n"
            f"PIDS = {str(self.pids)!r}\n"
            f"{body}\n"
        )
        self.path.chmod(self.path.stat().st_mode | stat.S_IXUSR)

    def provider(self, **kw) -> YtDlpProvider:
        return YtDlpProvider(binary=str(self.path), **kw)

    def calls(self) -> list[list[str]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []


def _fails_with(stderr: str) -> str:
    return f"sys.stderr.write({stderr!r})\nprint('null')\nsys.exit(1)"


ERRORS = [
    (("ERROR: [youtube] abc: Sign in to confirm you\u2019re not a bot. Use --cookies-from-browser or --cookies for "
      "the authentication. See  https://github.com/yt-dlp/yt-dlp/wiki/FAQ"), ErrorCode.BLOCKED),
    ("ERROR: [youtube] abc: Sign in to confirm your age. This video may be inappropriate for some users.",
     ErrorCode.UNAVAILABLE),
    ("ERROR: [youtube] abc: Private video. Sign in if you've been granted access to this video", ErrorCode.UNAVAILABLE),
    ("ERROR: [youtube] abc: Video unavailable. The uploader has not made this video available in your country",
     ErrorCode.UNAVAILABLE),
    ("ERROR: [vimeo] 1: This video is not available from your location due to geo restriction", ErrorCode.UNAVAILABLE),
    ("ERROR: [youtube] abc: Join this channel to get access to members-only content like this video",
     ErrorCode.UNAVAILABLE),
    ("ERROR: unable to download video data: HTTP Error 403: Forbidden", ErrorCode.BLOCKED),
    ("ERROR: [youtube] abc: Unable to download webpage: HTTP Error 429: Too Many Requests", ErrorCode.RATE_LIMITED),
    ("ERROR: Unsupported URL: https://example.com/page", ErrorCode.UNSUPPORTED_INPUT),
    ("ERROR: [vimeo] 1: This video is only available for registered users. Use --cookies", ErrorCode.UNAVAILABLE),
    ("ERROR: [youtube] abc: Video unavailable. This video has been removed by the uploader", ErrorCode.NOT_FOUND),
    ("ERROR: [generic] x: Unable to download webpage: HTTP Error 404: Not Found", ErrorCode.NOT_FOUND),
    ("ERROR: [youtube] abc: This live event will begin in 3 hours.", ErrorCode.UNAVAILABLE),
    ("ERROR: [youtube] abc: Requested format is not available. Use --list-formats", ErrorCode.UNAVAILABLE),
    ("ERROR: Postprocessing: ffmpeg not found. Please install or provide the path", ErrorCode.NO_PROVIDER),
    ("ERROR: [generic] x: Unable to download webpage: The read operation timed out", ErrorCode.TIMEOUT),
    ("ERROR: [generic] x: Unable to download webpage: [Errno -2] Name or service not known", ErrorCode.UPSTREAM),
    ("Traceback (most recent call last):\n  ...\nKeyError: 'x'\n", ErrorCode.UPSTREAM),
]  # fmt: skip


@pytest.mark.parametrize(
    ("stderr", "code"), ERRORS, ids=[c.value + f"-{i}" for i, (_, c) in enumerate(ERRORS)]
)
def test_stderr_becomes_our_codes(tmp_path: Path, stderr: str, code: ErrorCode) -> None:
    fake = Fake(tmp_path, _fails_with(stderr))
    error = _error(fake.provider().metadata(parse_input("https://example.com/v/1"), Ctx()))
    assert error.code is code, error.message
    for surface, facts in surfaces().items():  # a step that exists there, and nothing that does not
        assert problems(error.hint_for(surface), facts) == [], error.hint_for(surface)
    assert "yt-dlp:" in error.message
    assert "wiki/FAQ" not in error.message  # yt-dlp's trailers are cut


def test_arguments_proxy_cookies_extra_and_the_end_of_options(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "print(json.dumps({'id': 'x', 'title': 'T'}))")
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("# Netscape HTTP Cookie File\n.example.com\tTRUE\t/\tTRUE\t0\tSID\tSECRETCOOKIE\n")
    provider = fake.provider(
        proxy="http://user:pw@proxy.example:3128", cookies=str(cookies), extra_args=["--geo-bypass", "-4"]
    )
    meta = _run(provider.metadata(_web("-https://example.com/odd"), Ctx()))
    assert meta.title == "T"
    (argv,) = fake.calls()
    assert argv[:2] == ["--ignore-config", "--no-progress"]
    assert argv[argv.index("--proxy") + 1] == "http://user:pw@proxy.example:3128"
    assert argv[argv.index("--cookies") + 1] == str(cookies)
    assert argv.index("--geo-bypass") < argv.index("-J")  # ours come last, so they win
    assert argv[-2:] == ["--", "-https://example.com/odd"]


def test_secrets_stay_out_of_messages(tmp_path: Path) -> None:
    fake = Fake(tmp_path, _fails_with(
        "ERROR: Unable to download webpage: Unable to connect to proxy http://user:hunter2@proxy.example:3128 "
        "with cookies SECRETCOOKIE-free\n"
    ))  # fmt: skip
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("SECRETCOOKIE")
    provider = fake.provider(proxy="http://user:hunter2@proxy.example:3128", cookies=str(cookies))
    error = _error(provider.metadata(parse_input("https://example.com/v/1"), Ctx()))
    assert "hunter2" not in error.message and "hunter2" not in (error.hint or "")
    assert "proxy.example" not in error.message or "***" in error.message


def test_the_version_is_checked_once(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "print(json.dumps({'id': 'x', 'title': 'T'}))")
    provider = fake.provider()
    for _ in range(3):
        _run(provider.metadata(parse_input("https://example.com/v/1"), Ctx()))
    assert fake.versions.read_text().count("v") == 1
    assert len(fake.calls()) == 3


@pytest.mark.parametrize(
    ("version", "words"),
    [("2023.03.04", "too old"), ("not a version", "--version"), ("2024.12.31", "too old")],
)
def test_old_or_strange_programs_are_no_provider(tmp_path: Path, version: str, words: str) -> None:
    fake = Fake(tmp_path, "print('{}')", version=version)
    error = _error(fake.provider().metadata(parse_input("https://example.com/v/1"), Ctx()))
    assert error.code is ErrorCode.NO_PROVIDER
    assert words in error.message
    assert "pip install -U yt-dlp" in (error.hint or "")
    assert fake.calls() == []  # nothing else ran


def test_a_missing_or_unrunnable_program_is_no_provider(tmp_path: Path) -> None:
    missing = YtDlpProvider(binary=str(tmp_path / "nowhere" / "yt-dlp"))
    error = _error(missing.metadata(parse_input("https://example.com/v/1"), Ctx()))
    assert error.code is ErrorCode.NO_PROVIDER
    assert "VID2CONTEXT_YTDLP" in (error.hint or "")
    plain = tmp_path / "not-executable"
    plain.write_text("#!/bin/sh\necho 2026.01.01\n")
    error = _error(YtDlpProvider(binary=str(plain)).metadata(parse_input("https://example.com/v/1"), Ctx()))
    assert error.code is ErrorCode.NO_PROVIDER


def test_output_that_is_not_json_is_upstream(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "print('[download] hello')")
    assert (
        _error(fake.provider().metadata(parse_input("https://example.com/v/1"), Ctx())).code
        is ErrorCode.UPSTREAM
    )


def test_a_list_is_not_one_video(tmp_path: Path) -> None:
    fake = Fake(
        tmp_path, "print(json.dumps({'_type': 'playlist', 'id': 'p', 'title': 'A list', 'entries': []}))"
    )
    provider = fake.provider()
    ref = parse_input("https://example.com/list")
    ctx = Ctx()
    assert _run(provider.metadata(ref, ctx)).title == "A list"
    assert _error(provider.captions(ref, ctx)).code is ErrorCode.BAD_REQUEST
    assert len(fake.calls()) == 1  # the second question reused the first answer


def test_list_entries_are_refs_and_remote_lists_never_name_local_files(tmp_path: Path) -> None:
    entries = [
        {"_type": "url", "url": "https://www.youtube.com/watch?v=GJLlxj_dtq8", "ie_key": "Youtube"},
        {"_type": "url", "url": "F1xioXWb8CY", "ie_key": "Youtube", "id": "F1xioXWb8CY"},
        {"_type": "url", "url": "https://vimeo.com/123#__youtubedl_smuggle=%7B%7D"},
        {"_type": "url", "url": "file:///etc/passwd"},
        {"_type": "url", "url": "https://www.youtube.com/playlist?list=PL0123456789"},
        {"_type": "url", "url": "https://www.youtube.com/watch?v=GJLlxj_dtq8"},
        {"_type": "url", "url": "not a url at all"},
        "junk",
    ]
    fake = Fake(tmp_path, f"print(json.dumps({{'_type': 'playlist', 'entries': {entries!r}}}))")
    found = _run(fake.provider().items(parse_input("https://example.com/feed"), Ctx(), limit=10))
    assert [r.id for r in found] == [
        "youtube:GJLlxj_dtq8",
        "youtube:F1xioXWb8CY",
        "web:https://vimeo.com/123",
    ]
    (argv,) = fake.calls()
    assert argv[argv.index("--playlist-end") + 1] == "10"


def test_a_youtube_channel_is_listed_by_its_videos_tab(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "print(json.dumps({'_type': 'playlist', 'entries': []}))")
    _run(fake.provider().items(parse_input("https://www.youtube.com/@ProgrammingKnowledge"), Ctx(), limit=3))
    assert fake.calls()[0][-1] == "https://www.youtube.com/@ProgrammingKnowledge/videos"


# --- time limits: the whole process group goes ----------------------------------------------------
#
# Nothing here measures time: a run that was not stopped would live 300 s and then leave a mark
# (``pids.lived``), and what is left of a run is found by the test's folder in the command lines, so even
# a run stopped before it wrote its pids (a loaded machine can take a second to start Python) is
# looked for whole. Waiting for a process to end is the kernel's word (a pidfd), not a poll.

HANG = """
grandchild = subprocess.Popen([sys.executable, '-c',
    'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)', PIDS])
open(PIDS + '.tmp', 'w').write(f'{os.getpid()} {grandchild.pid}')
os.replace(PIDS + '.tmp', PIDS)
time.sleep(300)
open(PIDS + '.lived', 'w').write('ran its whole course: nothing stopped it')
"""

GUARD_S = 60.0
"""How long a stopped process may take to end before the test fails; no correct run comes near."""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie waiting for init to reap it is gone


def _left_of(fake: Fake) -> list[int]:
    """The live processes of ``fake``'s runs (the program and its child): their command lines name
    the test's folder."""
    marker = str(fake.dir).encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and marker in (entry / "cmdline").read_bytes()
                and _alive(int(entry.name))
            ):
                found.append(int(entry.name))
        except OSError:
            continue  # ended while we looked
    return found


def _all_end(pids: list[int]) -> bool:
    """Whether each of ``pids`` ends (a zombie has) within ``GUARD_S``."""
    for pid in pids:
        try:
            handle = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            if not select.select([handle], [], [], GUARD_S)[0]:
                return False
        finally:
            os.close(handle)
    return True


def _assert_nothing_outlives(fake: Fake) -> None:
    left = _left_of(fake)
    try:
        assert _all_end(left), f"still running: {[p for p in left if _alive(p)]}"
        assert not Path(str(fake.pids) + ".lived").exists()
    finally:
        for pid in _left_of(fake):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_run_past_its_timeout_is_killed_with_its_children(tmp_path: Path) -> None:
    fake = Fake(tmp_path, HANG)
    error = _error(fake.provider(timeout_s=1).metadata(parse_input("https://example.com/v/1"), Ctx()))
    assert error.code is ErrorCode.TIMEOUT
    _assert_nothing_outlives(fake)


def test_the_calls_deadline_also_stops_it(tmp_path: Path) -> None:
    fake = Fake(tmp_path, HANG)
    error = _error(
        fake.provider(timeout_s=60).metadata(parse_input("https://example.com/v/1"), Ctx(timeout=1.5))
    )
    assert error.code is ErrorCode.TIMEOUT
    _assert_nothing_outlives(fake)


async def _when_started(fake: Fake) -> None:
    """Until the run has started its child and written both pids (a poll: a file has no event)."""
    for _ in range(int(GUARD_S / 0.05)):
        if fake.pids.exists():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the fake never started")


def test_an_aborted_call_kills_the_run(tmp_path: Path) -> None:
    fake = Fake(tmp_path, HANG)
    ctx = Ctx()

    async def scenario() -> None:
        task = asyncio.ensure_future(
            fake.provider(timeout_s=60).metadata(parse_input("https://example.com/v/1"), ctx)
        )
        await _when_started(fake)
        ctx.abort()
        await task

    error = _error(scenario())
    assert error.code is ErrorCode.CANCELED
    _assert_nothing_outlives(fake)


def test_a_cancelled_task_kills_the_run(tmp_path: Path) -> None:
    fake = Fake(tmp_path, HANG)

    async def scenario() -> None:
        task = asyncio.ensure_future(
            fake.provider(timeout_s=60).metadata(parse_input("https://example.com/v/1"), Ctx())
        )
        await _when_started(fake)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    _run(scenario())
    _assert_nothing_outlives(fake)


# --- settings and the ladder ----------------------------------------------------------------------


def test_settings_reach_the_provider(tmp_path: Path) -> None:
    settings = load_settings({
        "VID2CONTEXT_YTDLP": str(tmp_path / "yt"),
        "VID2CONTEXT_YTDLP_COOKIES": "~/cookies.txt",
        "VID2CONTEXT_YTDLP_ARGS": "--cookies-from-browser 'firefox:My Profile' -4",
        "VID2CONTEXT_YTDLP_TIMEOUT_S": "7",
        "VID2CONTEXT_PROXY": "socks5://127.0.0.1:1080",
    })  # fmt: skip
    provider = YtDlpProvider.from_settings(settings)
    assert provider.binary == str(tmp_path / "yt")
    assert provider.timeout_s == 7
    argv = provider._argv(["-J"], "https://example.com/")
    assert argv[argv.index("--cookies") + 1] == os.path.expanduser("~/cookies.txt")
    assert ["--cookies-from-browser", "firefox:My Profile", "-4"] == argv[
        argv.index("--cookies-from-browser") :
    ][:3]
    assert argv[argv.index("--proxy") + 1] == "socks5://127.0.0.1:1080"
    with pytest.raises(VidError) as caught:
        YtDlpProvider.from_settings(load_settings({"VID2CONTEXT_YTDLP_ARGS": "--opt 'unclosed"}))
    assert caught.value.code is ErrorCode.BAD_REQUEST and "VID2CONTEXT_YTDLP_ARGS" in caught.value.message


def test_the_program_is_found_beside_this_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    beside = Path(sys.executable).parent / "yt-dlp"
    assert find_ytdlp() == (str(beside) if beside.is_file() else "yt-dlp")
    assert find_ytdlp("~/bin/yt-dlp") == os.path.expanduser("~/bin/yt-dlp")


def test_parse_version() -> None:
    assert parse_version("2026.10.26\n") == (2026, 10, 26)
    assert parse_version("2025.01.15.232512") == (2025, 1, 15)
    assert parse_version("yt-dlp") is None


def test_the_local_ladder_order(tmp_path: Path) -> None:
    async def ladder(environ: dict[str, str]) -> dict[str, list[str]]:
        runtime = build_local_runtime({"VID2CONTEXT_HOME": str(tmp_path), **environ})
        try:
            inputs = {
                "youtube": "GJLlxj_dtq8",
                "list": "https://www.youtube.com/playlist?list=PL0123456789",
                "web": "https://vimeo.com/123",
                "local": "./talk.mp4",
            }
            return {
                k: [p.id for p in runtime.sources if p.accepts(parse_input(v))] for k, v in inputs.items()
            }
        finally:
            await runtime.aclose()

    assert _run(ladder({})) == {
        "youtube": ["youtube", "transcript-api", "ytdlp"],
        "list": ["youtube", "ytdlp"],
        "web": ["ytdlp"],
        "local": ["localfile"],
    }
    # Replaying recorded YouTube: yt-dlp cannot be sent there, so it stays out of the YouTube ladder.
    replay = _run(ladder({"VID2CONTEXT_YOUTUBE_ORIGIN": "http://127.0.0.1:9"}))
    assert replay["youtube"] == ["youtube", "transcript-api"]
    assert replay["web"] == ["ytdlp"]
