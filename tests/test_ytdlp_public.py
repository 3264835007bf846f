"""yt-dlp in public mode: the real program, fetching through the real filtering proxy.

The proxy's resolver and dialer are the stand-ins of ``egress_standins``: ``media.example.com``
is a public address that the dialer maps to a stand-in web server on 127.0.0.1 serving the media
fixtures, and the private addresses the attacks aim at are mapped to a "secret" stand-in, so that
only the guard stands between yt-dlp and the secret. yt-dlp and the ffmpeg it starts run for
real and make their own connections, all through the proxy. A fake yt-dlp (``test_ytdlp.Fake``)
shows the arguments and environment a public run gets.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from vid2context.ctx import Ctx
from vid2context.egress import Egress
from vid2context.errors import ErrorCode, VidError
from vid2context.inputs import parse_input
from vid2context.providers.ytdlp import YtDlpProvider, find_ytdlp
from vid2context.providers.ytdlp_public import check_saved_media, public_info

from .egress_standins import PUBLIC, MappedDialer, MappedResolver, Route, Site, TestCA
from .test_ytdlp import Fake

REAL = find_ytdlp()
needs_tools = pytest.mark.skipif(
    (not Path(REAL).is_file() and shutil.which(REAL) is None) or shutil.which("ffmpeg") is None,
    reason="needs yt-dlp and ffmpeg",
)
SECRET = b"the contents of an internal service"
PRIVATE = "10.0.0.7"


@pytest.fixture
def hls(tmp_path: Path, fixtures: Path) -> Path:
    """The talk as an HLS playlist of MPEG-TS segments (made here with ffmpeg, a few kB each)."""
    folder = tmp_path / "hls"
    folder.mkdir()
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-i", str(fixtures / "media" / "talk.mp3"), "-c:a", "aac",
         "-b:a", "32k", "-f", "hls", "-hls_time", "10", "-hls_playlist_type", "vod",
         "-hls_segment_filename", str(folder / "seg%d.ts"), str(folder / "list.m3u8")],
        check=True,
    )  # fmt: skip
    return folder


@pytest.fixture
def secret() -> Iterator[Site]:
    routes = {path: Route(200, SECRET, {"Content-Type": "video/webm"}) for path in ("/talk.webm", "/seg0.ts")}
    with Site(routes) as site:
        yield site


@pytest.fixture
def public(fixtures: Path, hls: Path) -> Iterator[Site]:
    media = fixtures / "media"
    playlist = (hls / "list.m3u8").read_text()
    routes = {
        "/talk.webm": Route(200, headers={"Content-Type": "video/webm"}, file=media / "talk.webm"),
        "/go": Route(302, headers={"Location": "http://internal.example.com/talk.webm"}),
        "/list.m3u8": Route(200, playlist.encode(), {"Content-Type": "application/vnd.apple.mpegurl"}),
        "/bad.m3u8": Route(
            200,
            playlist.replace("seg0.ts", "http://internal.example.com/seg0.ts").encode(),
            {"Content-Type": "application/vnd.apple.mpegurl"},
        ),
    }
    for segment in hls.glob("seg*.ts"):
        routes[f"/{segment.name}"] = Route(200, headers={"Content-Type": "video/mp2t"}, file=segment)
    with Site(routes) as site:
        yield site


@pytest.fixture
def dialer(public: Site, secret: Site) -> MappedDialer:
    return MappedDialer(
        {(PUBLIC, 80): public.address, (PRIVATE, 80): secret.address, ("127.0.0.1", 80): secret.address}
    )


def _egress(dialer: MappedDialer, names: dict | None = None) -> Egress:
    table = {
        "media.example.com": [PUBLIC],
        "internal.example.com": [PRIVATE],
        "loopback.example.com": ["127.0.0.1"],
        **(names or {}),
    }
    return Egress(resolver=MappedResolver(table), dialer=dialer)


def _run(provider: YtDlpProvider, coro_of, egress: Egress):  # type: ignore[no-untyped-def]
    async def scenario():  # type: ignore[no-untyped-def]
        try:
            return await coro_of(provider)
        finally:
            await egress.aclose()

    return asyncio.run(scenario())


def _refused(provider: YtDlpProvider, coro_of, egress: Egress) -> VidError:  # type: ignore[no-untyped-def]
    with pytest.raises(VidError) as caught:
        _run(provider, coro_of, egress)
    return caught.value


def _no_address_in(error: VidError) -> None:
    text = error.message + (error.hint or "")
    for address in (PRIVATE, "127.0.0.1", PUBLIC):
        assert address not in text, text
    assert "Traceback" not in text


# --- the real program through the real proxy -------------------------------------------------------


@needs_tools
def test_a_media_file_at_a_public_address_is_read_through_the_proxy(
    public: Site, secret: Site, dialer: MappedDialer
) -> None:
    egress = _egress(dialer)
    provider = YtDlpProvider(egress=egress)
    ref = parse_input("http://media.example.com/talk.webm", public=True)

    async def read(p: YtDlpProvider):  # type: ignore[no-untyped-def]
        ctx = Ctx()
        meta = await p.metadata(ref, ctx)
        audio = await p.audio(ref, ctx)
        size = Path(audio.path or "").stat().st_size
        await p.release_audio(audio)
        return meta, size

    meta, size = _run(provider, read, egress)
    assert meta.title == "talk" and size > 1000
    assert "/talk.webm" in public.paths()
    assert set(dialer.dialed) == {(PUBLIC, 80)} and secret.requests == []


@needs_tools
def test_a_name_that_resolves_to_loopback_is_refused_before_yt_dlp_starts(
    public: Site, secret: Site, dialer: MappedDialer
) -> None:
    egress = _egress(dialer)
    error = _refused(
        YtDlpProvider(egress=egress),
        lambda p: p.metadata(parse_input("http://loopback.example.com/talk.webm", public=True), Ctx()),
        egress,
    )
    assert error.code is ErrorCode.UNSUPPORTED_INPUT and "loopback" in (error.hint or "")
    assert "led to" not in error.message  # the check before the run, not the proxy's
    _no_address_in(error)
    assert dialer.dialed == [] and secret.requests == [] and public.requests == []


@needs_tools
@pytest.mark.parametrize(
    ("url", "names"),
    [
        ("http://media.example.com/go", {}),  # a redirect from a public page to a private address
        ("http://rebind.example.com/talk.webm", {"rebind.example.com": [[PUBLIC], [PRIVATE]]}),
    ],
)
def test_a_redirect_or_a_rebinding_name_into_a_private_network_is_refused_at_the_proxy(
    public: Site, secret: Site, dialer: MappedDialer, url: str, names: dict
) -> None:
    egress = _egress(dialer, names)
    error = _refused(
        YtDlpProvider(egress=egress), lambda p: p.metadata(parse_input(url, public=True), Ctx()), egress
    )
    assert error.code is ErrorCode.UNSUPPORTED_INPUT
    assert "private network" in (error.hint or "") and "led to" in error.message
    _no_address_in(error)
    assert (PRIVATE, 80) not in dialer.dialed and secret.requests == []


@needs_tools
def test_hls_through_the_ffmpeg_yt_dlp_starts_goes_through_the_proxy(
    public: Site, secret: Site, dialer: MappedDialer
) -> None:
    """``--downloader m3u8:ffmpeg`` (an operator's choice): ffmpeg fetches the playlist and its
    segments itself, through the proxy yt-dlp gives it (it sends the run's credential when the
    proxy asks for it)."""
    egress = _egress(dialer)
    provider = YtDlpProvider(egress=egress, extra_args=["--downloader", "m3u8:ffmpeg"])
    ref = parse_input("http://media.example.com/list.m3u8", public=True)

    async def download(p: YtDlpProvider):  # type: ignore[no-untyped-def]
        audio = await p.audio(ref, Ctx())
        size = Path(audio.path or "").stat().st_size
        await p.release_audio(audio)
        return size

    assert _run(provider, download, egress) > 1000
    by_ffmpeg = [path for _, path, headers in public.requests if "icy-metadata" in headers]
    assert "/seg0.ts" in by_ffmpeg  # ffmpeg's own request (it asks for Icy metadata)
    assert secret.requests == []


@needs_tools
@pytest.mark.parametrize("downloader", ["native", "ffmpeg"])
def test_a_playlist_segment_at_a_private_address_is_refused(
    public: Site, secret: Site, dialer: MappedDialer, downloader: str
) -> None:
    egress = _egress(dialer)
    provider = YtDlpProvider(egress=egress, extra_args=["--downloader", f"m3u8:{downloader}"])
    ref = parse_input("http://media.example.com/bad.m3u8", public=True)
    error = _refused(provider, lambda p: p.audio(ref, Ctx()), egress)
    assert error.code is ErrorCode.UNSUPPORTED_INPUT and "private network" in (error.hint or "")
    _no_address_in(error)
    assert secret.requests == []


@needs_tools
def test_yt_dlps_ffmpeg_opens_no_raw_tcp_or_file_entry_of_a_playlist(
    public: Site, secret: Site, dialer: MappedDialer, fixtures: Path
) -> None:
    """Entries that would bypass the proxy: a raw ``tcp:`` connection to a local service and a
    local file. Neither is opened (ffmpeg's whitelist and HLS reader), and the run fails."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    local = fixtures / "media" / "talk.mp3"
    playlist = (
        "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        f"#EXTINF:10,\ntcp://127.0.0.1:{port}/x.ts\n#EXTINF:10,\nfile://{local}\n#EXT-X-ENDLIST\n"
    )
    public.routes["/sneaky.m3u8"] = Route(
        200, playlist.encode(), {"Content-Type": "application/vnd.apple.mpegurl"}
    )
    egress = _egress(dialer)
    provider = YtDlpProvider(egress=egress, extra_args=["--downloader", "m3u8:ffmpeg"])
    ref = parse_input("http://media.example.com/sneaky.m3u8", public=True)
    with pytest.raises(VidError):
        _run(provider, lambda p: p.audio(ref, Ctx()), egress)
    with pytest.raises(BlockingIOError):  # nothing ever connected (the program has ended)
        listener.accept()
    listener.close()


# --- what a public run is given --------------------------------------------------------------------


def test_a_public_run_gets_the_proxy_last_and_no_proxy_variables(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("no_proxy", "*")
    monkeypatch.setenv("HTTPS_PROXY", "http://elsewhere:3128")
    fake = Fake(
        tmp_path,
        "names = sorted(k for k in os.environ if k.lower().endswith('_proxy'))\n"
        "print(json.dumps({'id': 'x', 'title': ','.join(names) or 'none'}))",
    )
    egress = Egress(resolver=MappedResolver({"media.example.com": [PUBLIC]}), dialer=MappedDialer())
    provider = fake.provider(
        egress=egress, proxy="http://operator:secret@proxy.example:3128", extra_args=["--proxy", "x"]
    )
    meta = _run(
        provider, lambda p: p.metadata(parse_input("http://media.example.com/v", public=True), Ctx()), egress
    )
    assert meta.title == "none"  # no *_proxy variable reached the program (nor its ffmpeg)
    (argv,) = fake.calls()
    proxies = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--proxy"]
    assert (
        proxies[0] == "x"
        and proxies[-1].startswith("http://")
        and proxies[-1].endswith(":x@127.0.0.1:" + proxies[-1].rsplit(":", 1)[1])
    )
    assert "http://operator:secret@proxy.example:3128" not in argv  # the proxy tunnels through it instead
    assert argv[argv.index("--fixup") + 1] == "never"
    assert argv[argv.index("--downloader-args") + 1].startswith("ffmpeg_i:-protocol_whitelist http,https,")
    assert argv[-2:] == ["--", "http://media.example.com/v"]


def test_with_public_mode_off_nothing_changes(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "print(json.dumps({'id': 'x', 'title': 'T'}))")
    asyncio.run(
        fake.provider(proxy="http://p.example:3128").metadata(parse_input("http://127.0.0.1:8000/v"), Ctx())
    )
    (argv,) = fake.calls()
    assert argv[argv.index("--proxy") + 1] == "http://p.example:3128"
    assert "--fixup" not in argv and "--downloader-args" not in argv


@pytest.mark.parametrize("arg", ["--enable-file-urls", "--enable-file", "--enable"])
def test_public_mode_refuses_file_urls_in_the_operators_arguments(arg: str) -> None:
    with pytest.raises(VidError) as caught:
        YtDlpProvider(egress=Egress(), extra_args=["--no-check-certificates", arg])
    assert caught.value.code is ErrorCode.BAD_REQUEST and "VID2CONTEXT_YTDLP_ARGS" in caught.value.message
    YtDlpProvider(extra_args=[arg])  # the user's own machine may read its own files


def test_public_mode_needs_its_guard() -> None:
    with pytest.raises(ValueError):
        YtDlpProvider(public=True)


def test_the_info_json_given_back_keeps_only_what_goes_through_the_proxy() -> None:
    info = {
        "id": "x", "url": "rtmp://media.example.com/live", "downloader_options": {"ffmpeg_args": ["-i", "tcp://x"]},
        "formats": [
            {"format_id": "a", "url": "https://cdn.example.com/a.m4a", "downloader_options": {"ffmpeg_args": ["-x"]}},
            {"format_id": "b", "url": "rtsp://cam.example.com/b"},
            {"format_id": "c", "url": "file:///etc/passwd"},
        ],
        "subtitles": {"en": [{"ext": "vtt", "url": "ftp://files.example.com/en.vtt"}, {"ext": "vtt", "data": "WEBVTT"},
                             {"ext": "srt", "url": "http://cdn.example.com/en.srt"}]},
        "automatic_captions": {"fr": [{"ext": "vtt", "url": "file:///tmp/fr.vtt"}]},
    }  # fmt: skip
    clean = public_info(info)
    assert "url" not in clean and "downloader_options" not in clean
    assert clean["formats"] == [{"format_id": "a", "url": "https://cdn.example.com/a.m4a"}]
    assert clean["subtitles"]["en"] == [
        {"ext": "vtt", "data": "WEBVTT"},
        {"ext": "srt", "url": "http://cdn.example.com/en.srt"},
    ]
    assert clean["automatic_captions"]["fr"] == []
    assert json.dumps(info["formats"][1])  # the original is left alone


@pytest.mark.parametrize(("name", "refused"), [("audio.m4a", False), ("audio.webm", False), ("audio.m3u8", True), ("audio", True), ("audio.txt", True)])  # fmt: skip
def test_a_saved_file_must_be_named_as_media(tmp_path: Path, name: str, refused: bool) -> None:
    path = tmp_path / name
    path.write_bytes(b"#EXTM3U\n")
    if not refused:
        check_saved_media(path, "the page")
        assert path.exists()
        return
    with pytest.raises(VidError) as caught:
        check_saved_media(path, "the page")
    assert caught.value.code is ErrorCode.UNSUPPORTED_INPUT and not path.exists()


@needs_tools
def test_https_goes_through_the_proxys_tunnel_and_a_redirect_is_refused_there(
    tmp_path: Path, fixtures: Path, secret: Site
) -> None:
    """yt-dlp asks the proxy for ``CONNECT media.example.com:443`` and does TLS itself (the test
    certificate is not in its bundle, hence the operator's ``--no-check-certificates``)."""
    ca = TestCA()
    routes = {
        "/talk.webm": Route(
            200, headers={"Content-Type": "video/webm"}, file=fixtures / "media" / "talk.webm"
        ),
        "/go": Route(302, headers={"Location": "https://internal.example.com/talk.webm"}),
    }
    with Site(routes, tls=ca.server_context("media.example.com", tmp_path)) as site:
        dialer = MappedDialer({(PUBLIC, 443): site.address, (PRIVATE, 443): secret.address})
        egress = _egress(dialer)
        provider = YtDlpProvider(egress=egress, extra_args=["--no-check-certificates"])
        meta = _run(
            provider,
            lambda p: p.metadata(parse_input("https://media.example.com/talk.webm", public=True), Ctx()),
            egress,
        )
        error = _refused(
            provider,
            lambda p: p.metadata(parse_input("https://media.example.com/go", public=True), Ctx()),
            egress,
        )
    assert meta.title == "talk" and site.server_names[0] == "media.example.com"
    assert error.code is ErrorCode.UNSUPPORTED_INPUT and "private network" in (error.hint or "")
    _no_address_in(error)
    assert (PRIVATE, 443) not in dialer.dialed and secret.requests == []
