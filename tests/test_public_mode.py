"""Public mode on the local runtime, end to end: the REST route and the MCP tool answer the
contract's ``unsupported-input`` (the class named, no address, no stack trace) for a name that
resolves to loopback and for a redirect into a private network; the guard lives and dies with
the runtime; with public mode off nothing of it exists; ffmpeg and PyAV decode no playlist.

The runtime is ``build_local_runtime`` itself, with the guard's resolver and dialer injected
(``egress_standins``): a public test address mapped to a stand-in on 127.0.0.1, and the private
ones mapped to a "secret" stand-in that must never be asked for anything.
"""

from __future__ import annotations

import io
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.client import Client

from vid2context.api import create_app
from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.mcp import create_mcp
from vid2context.providers.audio_local import FfmpegPrep
from vid2context.providers.speech import AudioInput
from vid2context.providers.ytdlp import find_ytdlp
from vid2context.runtime import build_local_runtime

from .egress_standins import PUBLIC, MappedDialer, MappedResolver, Route, Site
from .runtimes import serve
from .test_ytdlp import Fake

pytestmark = pytest.mark.anyio

REAL = find_ytdlp()
needs_ytdlp = pytest.mark.skipif(
    not Path(REAL).is_file() and shutil.which(REAL) is None, reason="yt-dlp not installed"
)
needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg")
SECRET = b"the contents of an internal service"
PROXY_THREAD = "vid2context-egress-proxy"


@pytest.fixture
def secret() -> Iterator[Site]:
    with Site({"/talk.webm": Route(200, SECRET, {"Content-Type": "video/webm"})}) as site:
        yield site


@pytest.fixture
def public(fixtures: Path) -> Iterator[Site]:
    routes = {
        "/talk.webm": Route(
            200, headers={"Content-Type": "video/webm"}, file=fixtures / "media" / "talk.webm"
        ),
        "/go": Route(302, headers={"Location": "http://internal.example.com/talk.webm"}),
    }
    with Site(routes) as site:
        yield site


@pytest.fixture
def local(tmp_path: Path, public: Site, secret: Site):  # type: ignore[no-untyped-def]
    """``build_local_runtime`` in public mode over the stand-in DNS and network."""
    resolver = MappedResolver(
        {
            "media.example.com": [PUBLIC],
            "internal.example.com": ["10.0.0.7"],
            "loopback.example.com": ["127.0.0.1"],
        }
    )
    dialer = MappedDialer(
        {(PUBLIC, 80): public.address, ("10.0.0.7", 80): secret.address, ("127.0.0.1", 80): secret.address}
    )

    def build(**environ: str):  # type: ignore[no-untyped-def]
        env = {"VID2CONTEXT_HOME": str(tmp_path / "home"), "VID2CONTEXT_PUBLIC": "1", **environ}
        return build_local_runtime(env, resolver=resolver, dialer=dialer)

    return build


def _proxy_running() -> bool:
    return any(thread.name == PROXY_THREAD for thread in threading.enumerate())


CASES = [
    ("http://loopback.example.com/talk.webm", "loopback"),
    ("http://media.example.com/go", "private network"),  # refused at the redirect's hop, by the proxy
]


@needs_ytdlp
@pytest.mark.parametrize(("url", "word"), CASES)
async def test_the_rest_route_answers_unsupported_input_with_the_class(
    local, secret: Site, url: str, word: str
) -> None:  # type: ignore[no-untyped-def]
    app = create_app(local())
    async with serve(app) as client:
        response = await client.get("/api/v1/metadata", params={"url": url})
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"]["code"] == "unsupported-input"
    assert word in body["error"]["hint"]
    for leak in ("10.0.0.7", "127.0.0.1", PUBLIC, "Traceback", "proxy_url", ":x@"):
        assert leak not in response.text
    assert secret.requests == []
    assert not _proxy_running()  # the app's lifespan closed the runtime, and the proxy with it


@needs_ytdlp
@pytest.mark.parametrize(("url", "word"), CASES)
async def test_the_mcp_tool_answers_the_contract_error_with_the_class(
    local, secret: Site, url: str, word: str
) -> None:  # type: ignore[no-untyped-def]
    runtime = local()
    try:
        async with Client(create_mcp(runtime)) as connected:
            result = await connected.call_tool("get_metadata", {"url": url})
    finally:
        await runtime.aclose()
    assert result.is_error
    text = result.content[0].text
    body = json.loads(text)
    assert body["error"] == "unsupported-input" and word in body["hint"]
    for leak in ("10.0.0.7", "127.0.0.1", PUBLIC, "Traceback"):
        assert leak not in text
    assert secret.requests == []


@needs_ytdlp
async def test_a_public_page_is_read_and_the_proxy_stops_with_the_runtime(local, public: Site) -> None:  # type: ignore[no-untyped-def]
    runtime = local()
    assert runtime.egress is not None and not _proxy_running()  # started on first use
    app = create_app(runtime)
    async with serve(app) as client:
        response = await client.get("/api/v1/metadata", params={"url": "http://media.example.com/talk.webm"})
        assert _proxy_running()
    assert response.status_code == 200, response.text
    assert response.json()["title"] == "talk"
    assert not _proxy_running()


async def test_with_public_mode_off_there_is_no_guard_and_no_proxy(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "print(json.dumps({'id': 'x', 'title': 'T'}))")
    runtime = build_local_runtime(
        {"VID2CONTEXT_HOME": str(tmp_path / "home"), "VID2CONTEXT_YTDLP": str(fake.path)}
    )
    assert runtime.egress is None
    app = create_app(runtime)
    async with serve(app) as client:
        response = await client.get("/api/v1/metadata", params={"url": "http://127.0.0.1:8000/v"})
        assert not _proxy_running()
    assert response.status_code == 200 and response.json()["title"] == "T"
    (argv,) = fake.calls()
    assert "--fixup" not in argv and "--downloader-args" not in argv


async def test_public_mode_with_a_socks_proxy_stops_start_up(tmp_path: Path) -> None:
    with pytest.raises(VidError) as caught:
        build_local_runtime(
            {
                "VID2CONTEXT_HOME": str(tmp_path),
                "VID2CONTEXT_PUBLIC": "1",
                "VID2CONTEXT_PROXY": "socks5://p:1080",
            }
        )
    assert caught.value.code is ErrorCode.BAD_REQUEST and "VID2CONTEXT_PROXY" in caught.value.message


# --- decoders: no playlist opens what it names ------------------------------------------------------


def _playlist(*entries: str) -> bytes:
    """An HLS playlist, as an upload or a download could be, naming ``entries``."""
    lines = "".join(f"#EXTINF:30,\n{entry}\n" for entry in entries)
    return f"#EXTM3U\n#EXT-X-TARGETDURATION:30\n#EXT-X-PLAYLIST-TYPE:VOD\n{lines}#EXT-X-ENDLIST\n".encode()


@needs_ffmpeg
async def test_ffmpeg_decodes_no_playlist_in_public_mode(fixtures: Path, secret: Site) -> None:
    local_file = f"file://{fixtures / 'media' / 'talk.mp3'}"
    for entries in [(local_file,), (f"http://127.0.0.1:{secret.port}/talk.webm",)]:
        audio = AudioInput.from_bytes(_playlist(*entries), filename="talk.mp3")
        with pytest.raises(VidError) as caught:  # pieces come as the decode runs: the refusal too
            async with FfmpegPrep(public=True).chunks(
                audio, Ctx(), max_bytes=10_000_000, max_sec=600
            ) as pieces:
                _ = [piece async for piece in pieces]
        assert caught.value.code is ErrorCode.BAD_REQUEST
    assert secret.requests == []
    # What the whitelist stops: a playlist decoded as on the user's own machine reads the file.
    audio = AudioInput.from_bytes(_playlist(local_file), filename="talk.mp3")
    async with FfmpegPrep().chunks(audio, Ctx(), max_bytes=10_000_000, max_sec=600) as pieces:
        chunks = [piece async for piece in pieces]
    assert chunks and chunks[-1].end_sec and chunks[-1].end_sec > 20


async def test_pyav_opens_no_concat_list_in_public_mode(fixtures: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    av = pytest.importorskip("av")
    from vid2context.providers.whisper_local import _check_container

    monkeypatch.chdir(fixtures / "media")
    data = b"ffconcat version 1.0\nfile talk.mp3\n"  # names a file beside wherever the server runs
    with av.open(io.BytesIO(data)) as container:  # what faster-whisper would read by itself
        assert container.format.name == "concat"
    with pytest.raises((ValueError, OSError)):
        _check_container(io.BytesIO(data))
    _check_container(io.BytesIO((fixtures / "media" / "talk.m4a").read_bytes()))  # real media is fine
