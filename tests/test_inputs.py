"""Every input form we accept, every hostile one we refuse, and public mode's guards.

Offline by construction: parsing is pure string work, and a fixture makes any DNS lookup fail.
"""

from __future__ import annotations

import random
import socket
import types

import pytest

from vid2context import inputs
from vid2context.errors import ErrorCode, VidError
from vid2context.inputs import is_list, parse_input

VID = "jNQXAC9IVRw"
VID2 = "a-b_c-d_e-f"
LIST = "PLrAXtmErZgOeiKm4sgNOknGvNjby9efdf"
CH = "UC4QobU6STFB0P71PMvOGN5A"
SHA = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
WATCH = f"https://www.youtube.com/watch?v={VID}"


def yt(start: float | None = None, list_id: str | None = None, vid: str = VID) -> tuple:
    return (f"youtube:{vid}", "youtube", "video", vid, start, list_id)


def pl(list_id: str = LIST) -> tuple:
    return (f"youtube:playlist:{list_id}", "youtube", "playlist", list_id, None, None)


def ch(native: str) -> tuple:
    return (f"youtube:channel:{native}", "youtube", "channel", native, None, None)


def web(url: str, start: float | None = None) -> tuple:
    return (f"web:{url}", "web", "video", url, start, None)


def local(path: str, start: float | None = None) -> tuple:
    return (f"local:{path}", "local", "video", path, start, None)


def upload(sha: str = SHA) -> tuple:
    return (f"upload:{sha}", "upload", "video", sha, None, None)


# (input, public, (id, platform, kind, native_id, start_sec, list_id))
GOOD = [
    # YouTube videos, every host and path form
    (WATCH, False, yt()),
    (f"http://www.youtube.com/watch?v={VID}", False, yt()),
    (f"https://youtube.com/watch?v={VID}", False, yt()),
    (f"https://m.youtube.com/watch?v={VID}", False, yt()),
    (f"https://music.youtube.com/watch?v={VID}&si=abc", False, yt()),
    (f"youtube.com/watch?v={VID}", False, yt()),
    (f"www.youtube.com/watch?v={VID}", False, yt()),
    (f"m.youtube.com/watch?v={VID}", False, yt()),
    (f"HTTPS://WWW.YOUTUBE.COM/watch?v={VID}", False, yt()),
    (f"https://www.youtube.com./watch?v={VID}", False, yt()),
    (f"https://www.youtube.com:443/watch?v={VID}", False, yt()),
    (f"https://youtu.be/{VID}", False, yt()),
    (f"http://youtu.be/{VID}", False, yt()),
    (f"youtu.be/{VID}", False, yt()),
    (f"https://youtu.be/{VID}?si=Xy12&t=1m30s", False, yt(90)),
    (f"https://youtu.be/{VID}?t=90", False, yt(90)),
    (f"https://youtu.be/{VID}?list={LIST}", False, yt(list_id=LIST)),
    (f"https://www.youtube.com/watch?feature=share&v={VID}&t=90s", False, yt(90)),
    (f"{WATCH}&t=0", False, yt(0)),
    (f"{WATCH}&t=1h2m3s", False, yt(3723)),
    (f"{WATCH}&t=", False, yt()),
    (f"{WATCH}#t=1m5s", False, yt(65)),
    (f"{WATCH}#comments", False, yt()),
    (f"{WATCH}&list={LIST}", False, yt(list_id=LIST)),
    (f"https://www.youtube.com/watch?list={LIST}&index=3&v={VID}&t=10", False, yt(10, LIST)),
    (f"{WATCH}&list=", False, yt()),
    (f"{WATCH}&list=<script>", False, yt()),
    (f"https://www.youtube.com/shorts/{VID}", False, yt()),
    (f"https://youtube.com/shorts/{VID}/?feature=share", False, yt()),
    (f"https://www.youtube.com/live/{VID}?si=abc", False, yt()),
    (f"https://www.youtube.com/embed/{VID}?start=30", False, yt(30)),
    (f"https://www.youtube-nocookie.com/embed/{VID}?start=5&autoplay=1", False, yt(5)),
    (f"youtube-nocookie.com/embed/{VID}", False, yt()),
    (f"https://www.youtube.com/v/{VID}?version=3", False, yt()),
    (f"https://www.youtube.com/v/{VID}&hl=en_US&fs=1", False, yt()),
    (VID, False, yt()),
    (VID2, False, yt(vid=VID2)),
    (f"youtube:{VID}", False, yt()),
    (f"  \t{WATCH}\n ", False, yt()),
    # YouTube playlists
    (f"https://www.youtube.com/playlist?list={LIST}", False, pl()),
    (f"https://m.youtube.com/playlist?list={LIST}", False, pl()),
    (f"https://music.youtube.com/playlist?list={LIST}&si=x", False, pl()),
    (f"youtube.com/playlist?list={LIST}", False, pl()),
    (f"https://www.youtube.com/watch?list={LIST}", False, pl()),
    (f"https://www.youtube.com/embed/videoseries?list={LIST}", False, pl()),
    (f"youtube:playlist:{LIST}", False, pl()),
    # YouTube channels
    ("https://www.youtube.com/@jawed", False, ch("@jawed")),
    ("https://www.youtube.com/@jawed/videos", False, ch("@jawed")),
    ("https://www.youtube.com/@jawed/streams", False, ch("@jawed")),
    ("https://www.youtube.com/@jawed/shorts", False, ch("@jawed")),
    ("https://www.youtube.com/@jawed/featured", False, ch("@jawed")),
    ("m.youtube.com/@jawed/", False, ch("@jawed")),
    ("https://www.youtube.com/@%E3%81%82%E3%81%84%E3%81%86", False, ch("@あいう")),
    ("@jawed", False, ch("@jawed")),
    (f"https://www.youtube.com/channel/{CH}", False, ch(CH)),
    (f"https://www.youtube.com/channel/{CH}/videos", False, ch(CH)),
    ("https://www.youtube.com/c/Example", False, ch("c/Example")),
    ("https://www.youtube.com/user/jawed/videos", False, ch("user/jawed")),
    ("youtube:channel:@jawed", False, ch("@jawed")),
    (f"youtube:channel:{CH}", False, ch(CH)),
    ("youtube:channel:c/Example", False, ch("c/Example")),
    ("youtube:channel:user/jawed", False, ch("user/jawed")),
    # Any other web page
    ("https://vimeo.com/76979871", False, web("https://vimeo.com/76979871")),
    ("HTTPS://Vimeo.COM/76979871", False, web("https://vimeo.com/76979871")),
    ("https://example.com", False, web("https://example.com/")),
    ("https://example.com/v.mp4#t=30", False, web("https://example.com/v.mp4", 30)),
    ("https://example.com/a#section-2", False, web("https://example.com/a")),
    ("https://example.com/a#t=5&x=1", False, web("https://example.com/a", 5)),
    ("https://example.com/my video.mp4", False, web("https://example.com/my%20video.mp4")),
    ("https://example.com:443/v?b=2&a=1", False, web("https://example.com/v?b=2&a=1")),
    ("https://example.com:8443/v", False, web("https://example.com:8443/v")),
    (
        f"https://youtube.com.evil.com/watch?v={VID}",
        False,
        web(f"https://youtube.com.evil.com/watch?v={VID}"),
    ),
    (f"https://evilyoutube.com/watch?v={VID}", False, web(f"https://evilyoutube.com/watch?v={VID}")),
    (
        f"https://youtube.com@evil.com/watch?v={VID}",
        False,
        web(f"https://youtube.com@evil.com/watch?v={VID}"),
    ),
    # Cyrillic "о" in a lookalike host: shown in its punycode form, never taken for YouTube.
    (
        f"https://www.y\u043eutube.com/watch?v={VID}",
        False,
        web(f"https://www.xn--yutube-wqf.com/watch?v={VID}"),
    ),
    ("https://bücher.de/video", False, web("https://xn--bcher-kva.de/video")),
    ("web:https://vimeo.com/1", False, web("https://vimeo.com/1")),
    ("http://user:pass@example.com/v", False, web("http://user:pass@example.com/v")),
    ("http://127.0.0.1:8000/video.mp4", False, web("http://127.0.0.1:8000/video.mp4")),
    ("http://0x7f000001/", False, web("http://127.0.0.1/")),
    ("http://127.1/", False, web("http://127.0.0.1/")),
    ("http://[::1]/v", False, web("http://[::1]/v")),
    ("http://localhost:8080/a.mp4", False, web("http://localhost:8080/a.mp4")),
    # Local files
    ("/home/me/video.mp4", False, local("/home/me/video.mp4")),
    ("/home/me/../me/./talk.mp4", False, local("/home/me/talk.mp4")),
    ("./clip.mp4", False, local("clip.mp4")),
    ("../clips/a.mkv", False, local("../clips/a.mkv")),
    ("~/Movies/talk.mov", False, local("~/Movies/talk.mov")),
    ("C:\\Users\\me\\talk.mp4", False, local("C:/Users/me/talk.mp4")),
    ("c:/Users/me/talk.mp4", False, local("C:/Users/me/talk.mp4")),
    ("file:///home/me/my%20talk.mp4", False, local("/home/me/my talk.mp4")),
    ("file://localhost/home/me/a.mp4", False, local("/home/me/a.mp4")),
    ("file:///C:/Users/me/a.mp4", False, local("C:/Users/me/a.mp4")),
    ("file:///home/me/a.mp4#t=1:30", False, local("/home/me/a.mp4", 90)),
    ("talk.mp4", False, local("talk.mp4")),
    ("song.MP3", False, local("song.MP3")),
    ("subs.en.vtt", False, local("subs.en.vtt")),
    ("clips/talk", False, local("clips/talk")),
    ("local:/home/me/a.mp4", False, local("/home/me/a.mp4")),
    # Uploads
    (f"upload:{SHA}", False, upload()),
    (f"upload:{SHA.upper()}", False, upload()),
    # Public mode still takes YouTube, public web pages and uploads
    (WATCH, True, yt()),
    (f"youtu.be/{VID}?t=5", True, yt(5)),
    ("@jawed", True, ch("@jawed")),
    (f"youtube:playlist:{LIST}", True, pl()),
    ("https://vimeo.com/76979871", True, web("https://vimeo.com/76979871")),
    ("http://example.com:80/v", True, web("http://example.com/v")),
    ("https://8.8.8.8/v", True, web("https://8.8.8.8/v")),
    ("https://[2606:4700:4700::1111]/v", True, web("https://[2606:4700:4700::1111]/v")),
    (f"upload:{SHA}", True, upload()),
]

# Inputs public mode must refuse that are fine on the user's own machine.
PRIVATE = [
    "http://127.0.0.1/",
    "http://127.1/",
    "http://0x7f000001/",
    "http://0x7f.1/",
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://0/",
    "http://0.0.0.0/",
    "http://127.0.0.1:80/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://100.64.0.1/",
    "http://224.0.0.1/",
    "http://240.0.0.1/",
    "http://255.255.255.255/",
    "http://[::1]/",
    "http://[::]/",
    "http://[fe80::1]/",
    "http://[fe80::1%25eth0]/",
    "http://[fc00::1]/",
    "http://[fd12:3456::1]/",
    "http://[fec0::1]/",
    "http://[ff02::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://[64:ff9b::7f00:1]/",
    "http://[2002:7f00:1::]/",
    "http://[2001:db8::1]/",
    "http://localhost/",
    "http://LOCALHOST./",
    "http://foo.localhost/",
    "http://printer.local/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://router.home.arpa/",
    "http://intranet/",
    "http://127.0.0.1.nip.io/",
    "http://%6c%6f%63%61%6c%68%6f%73%74/",
    "http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/",  # fullwidth "localhost"
    "http://127\u30020\u30020\u30021/",  # ideographic full stops
    "http://user:pass@example.com/",
    "http://example.com:8080/",
    "web:http://127.0.0.1/",
    "file:///etc/passwd",
    "file://localhost/etc/passwd",
    "/etc/passwd",
    "./a.mp4",
    "~/a.mp4",
    "C:\\Users\\me\\a.mp4",
    "talk.mp4",
    "local:/etc/passwd",
    "vimeo.com/123",
]

# (input, public, expected code)
BAD = [
    ("", False, ErrorCode.BAD_REQUEST),
    ("   \n\t ", False, ErrorCode.BAD_REQUEST),
    ("a" * 10_000, False, ErrorCode.BAD_REQUEST),
    (f"{WATCH}&x=" + "a" * 10_000, False, ErrorCode.BAD_REQUEST),
    (f"youtu.be/{VID}\x00", False, ErrorCode.BAD_REQUEST),
    (f"{VID}\x00.mp4", False, ErrorCode.BAD_REQUEST),
    (f"{WATCH}\nhttps://evil.example/", False, ErrorCode.BAD_REQUEST),
    (f"{WATCH}\r\nX-Injected: 1", False, ErrorCode.BAD_REQUEST),
    ("java\tscript:alert(1)", False, ErrorCode.BAD_REQUEST),
    ("a\x07b.mp4", False, ErrorCode.BAD_REQUEST),
    ("a\x7fb.mp4", False, ErrorCode.BAD_REQUEST),
    ("a\x85b.mp4", False, ErrorCode.BAD_REQUEST),
    ("a\u2028b.mp4", False, ErrorCode.BAD_REQUEST),
    ("https://example.com/\u202egpj.mp4", False, ErrorCode.BAD_REQUEST),
    (None, False, ErrorCode.BAD_REQUEST),
    (b"https://youtu.be/x", False, ErrorCode.BAD_REQUEST),
    ("javascript:alert(1)", False, ErrorCode.UNSUPPORTED_INPUT),
    ("JaVaScRiPt:alert(document.cookie)", False, ErrorCode.UNSUPPORTED_INPUT),
    ("data:text/html,<script>alert(1)</script>", False, ErrorCode.UNSUPPORTED_INPUT),
    ("data:video/mp4;base64,AAAA", False, ErrorCode.UNSUPPORTED_INPUT),
    ("chrome://settings", False, ErrorCode.UNSUPPORTED_INPUT),
    ("ftp://example.com/v.mp4", False, ErrorCode.UNSUPPORTED_INPUT),
    ("mailto:a@example.com", False, ErrorCode.UNSUPPORTED_INPUT),
    ("about:blank", False, ErrorCode.UNSUPPORTED_INPUT),
    ("x" * 2000 + ":y", False, ErrorCode.UNSUPPORTED_INPUT),
    ("hello", False, ErrorCode.UNSUPPORTED_INPUT),
    ("@a", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https://www.youtube.com/watch?v=short", False, ErrorCode.UNSUPPORTED_INPUT),
    (f"https://www.youtube.com/watch?v={VID}x", False, ErrorCode.UNSUPPORTED_INPUT),
    (f"https://www.youtube.com/watch?v={VID[:10]}%00", False, ErrorCode.UNSUPPORTED_INPUT),
    (f"https://www.youtube.com/watch/{VID}", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https://www.youtube.com/watch", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https://www.youtube.com/", False, ErrorCode.UNSUPPORTED_INPUT),
    ("youtube.com", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https://youtu.be/", False, ErrorCode.UNSUPPORTED_INPUT),
    (f"https://youtu.be/{VID}/extra", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https://www.youtube.com/results?search_query=cats", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https://www.youtube.com/channel/UCshort", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https://www.youtube.com/@jawed/live", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https://www.youtube.com/@a", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https://www.youtube.com/playlist?list=", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https://www.youtube.com/playlist?list=PL<script>", False, ErrorCode.UNSUPPORTED_INPUT),
    (f"https://www.youtube-nocookie.com/watch?v={VID}", False, ErrorCode.UNSUPPORTED_INPUT),
    (f"{WATCH}&t=abc", False, ErrorCode.BAD_REQUEST),
    (f"{WATCH}&t=-5", False, ErrorCode.BAD_REQUEST),
    ("youtube:nope", False, ErrorCode.UNSUPPORTED_INPUT),
    ("youtube:playlist:", False, ErrorCode.UNSUPPORTED_INPUT),
    ("youtube:channel:UCshort", False, ErrorCode.UNSUPPORTED_INPUT),
    ("web:ftp://example.com/", False, ErrorCode.UNSUPPORTED_INPUT),
    ("upload:", False, ErrorCode.BAD_REQUEST),
    ("upload:abc", False, ErrorCode.BAD_REQUEST),
    ("upload:" + "g" * 64, False, ErrorCode.BAD_REQUEST),
    (f"upload:{SHA}0", False, ErrorCode.BAD_REQUEST),
    ("upload:../../etc/passwd", False, ErrorCode.BAD_REQUEST),
    ("local:", False, ErrorCode.BAD_REQUEST),
    ("file://server/share/a.mp4", False, ErrorCode.UNSUPPORTED_INPUT),
    ("file:///etc/passwd%00.mp4", False, ErrorCode.BAD_REQUEST),
    ("file:///a%0Ab.mp4", False, ErrorCode.BAD_REQUEST),
    ("file:relative.mp4", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https://exa mple.com/", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https://exa%00mple.com/", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https://[::1/", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https://[not-an-ip]/", False, ErrorCode.UNSUPPORTED_INPUT),
    ("http://example.com:99999/", False, ErrorCode.UNSUPPORTED_INPUT),
    ("http:///path", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https:", False, ErrorCode.UNSUPPORTED_INPUT),
    ("http://:80/", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https://evil.com\\@youtube.com/", False, ErrorCode.UNSUPPORTED_INPUT),
    ("http://1.2.3.4.5/", False, ErrorCode.UNSUPPORTED_INPUT),
    ("http://256.1.1.1/", False, ErrorCode.UNSUPPORTED_INPUT),
    ("http://08.0.0.1/", False, ErrorCode.UNSUPPORTED_INPUT),
    ("http://0x_.0x/", False, ErrorCode.UNSUPPORTED_INPUT),
    ("http://example.123/", False, ErrorCode.UNSUPPORTED_INPUT),
    ("https://a\u202e.com/", False, ErrorCode.BAD_REQUEST),
    *[(text, True, ErrorCode.UNSUPPORTED_INPUT) for text in PRIVATE],
]

YOUTUBE_BY_KIND = {
    "video": [text for text, _, want in GOOD if want[0].startswith("youtube:") and want[2] == "video"],
    "playlist": [text for text, _, want in GOOD if want[2] == "playlist"],
    "channel": [text for text, _, want in GOOD if want[2] == "channel"],
}


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("parse_input must never resolve or connect")

    for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "create_connection"):
        monkeypatch.setattr(socket, name, refuse)


def _row(text: str, public: bool) -> tuple:
    ref = parse_input(text, public=public)
    return (ref.id, ref.platform, ref.kind, ref.native_id, ref.start_sec, ref.list_id)


@pytest.mark.parametrize(("text", "public", "want"), GOOD, ids=[repr(t)[:60] for t, _, _ in GOOD])
def test_good_input(text: str, public: bool, want: tuple) -> None:
    assert _row(text, public) == want


@pytest.mark.parametrize(("text", "public", "code"), BAD, ids=[repr(t)[:60] for t, _, _ in BAD])
def test_bad_input(text: str, public: bool, code: ErrorCode) -> None:
    with pytest.raises(VidError) as caught:
        parse_input(text, public=public)
    error = caught.value
    assert error.code == code, (error.code, error.message)
    assert error.hint, "every refusal names the fix"
    assert len(error.message) <= 160, error.message
    assert "Traceback" not in error.message and "Traceback" not in error.hint
    if isinstance(text, str) and len(text) > 100:
        assert text[:90] not in error.message, "a long input is never echoed back whole"


@pytest.mark.parametrize("text", PRIVATE)
def test_public_refusals_are_accepted_locally(text: str) -> None:
    ref = parse_input(text)
    assert ref.platform in ("web", "local")


def test_public_refusal_of_a_local_path_suggests_an_upload() -> None:
    with pytest.raises(VidError) as caught:
        parse_input("/home/me/a.mp4", public=True)
    assert "POST /api/v1/uploads" in (caught.value.hint or "")


def test_public_refusal_of_a_schemeless_host_suggests_https() -> None:
    with pytest.raises(VidError) as caught:
        parse_input("vimeo.com/123", public=True)
    assert "https://" in (caught.value.hint or "")


@pytest.mark.parametrize(
    ("text", "url"),
    [
        (f"youtu.be/{VID}?t=9", WATCH),
        (f"youtube.com/playlist?list={LIST}", f"https://www.youtube.com/playlist?list={LIST}"),
        ("@jawed", "https://www.youtube.com/@jawed"),
        (f"youtube:channel:{CH}", f"https://www.youtube.com/channel/{CH}"),
        ("youtube:channel:c/Example", "https://www.youtube.com/c/Example"),
        (
            "https://www.youtube.com/@%E3%81%82%E3%81%84%E3%81%86",
            "https://www.youtube.com/@%E3%81%82%E3%81%84%E3%81%86",
        ),
        ("https://example.com/a b", "https://example.com/a%20b"),
        ("/home/me/a.mp4", None),
        (f"upload:{SHA}", None),
    ],
)
def test_canonical_url(text: str, url: str | None) -> None:
    assert parse_input(text).url == url


def test_every_youtube_url_maps_to_exactly_one_kind() -> None:
    """As yt-dlp's test_all_urls: no URL is claimed by two kinds, and each parses to its own."""
    seen: dict[str, str] = {}
    for kind, texts in YOUTUBE_BY_KIND.items():
        assert texts, kind
        for text in texts:
            assert seen.setdefault(text, kind) == kind, f"{text!r} is listed as {seen[text]} and {kind}"
            ref = parse_input(text)
            matches = [k for k in YOUTUBE_BY_KIND if ref.kind == k]
            assert matches == [kind], (text, matches)
            assert ref.platform == "youtube"
            assert is_list(ref) is (kind != "video")


@pytest.mark.parametrize("text", [t for texts in YOUTUBE_BY_KIND.values() for t in texts if "://" in t])
def test_youtube_url_variants_agree(text: str) -> None:
    """The scheme, its case, a missing scheme and surrounding space change nothing."""
    rest = text.split("://", 1)[1]
    want = parse_input(text)
    for variant in (f"http://{rest}", f"HTTPS://{rest}", rest, f"  {text}\n"):
        assert parse_input(variant) == want, variant
    assert parse_input(text, public=True) == want


@pytest.mark.parametrize(("text", "public", "want"), GOOD, ids=[repr(t)[:60] for t, _, _ in GOOD])
def test_ids_parse_back(text: str, public: bool, want: tuple) -> None:
    """A stored id is an input too, and names the same thing."""
    ref = parse_input(text, public=public)
    again = parse_input(ref.id, public=public)
    assert (again.id, again.platform, again.kind, again.native_id) == (
        ref.id,
        ref.platform,
        ref.kind,
        ref.native_id,
    )


def test_is_list() -> None:
    assert not is_list(parse_input(VID))
    assert is_list(parse_input(f"youtube:playlist:{LIST}"))
    assert is_list(parse_input("@jawed"))
    assert not is_list(parse_input("https://vimeo.com/1"))


def test_the_module_stays_portable() -> None:
    """Pure string work only: nothing that reaches the filesystem, processes or the network."""
    imported = {value.__name__ for value in vars(inputs).values() if isinstance(value, types.ModuleType)}
    assert imported <= {"ipaddress", "posixpath", "re", "unicodedata", "msgspec"}, imported
    assert set(inputs.__all__) == {"parse_input", "is_list", "legacy_ipv4"}  # the last for webhook_targets


def test_nothing_but_vid_error_escapes() -> None:
    """Random splices of URL-ish pieces: each parses or fails with a VidError, never anything else."""
    pieces = ["http://", "https://", "file://", "youtube:", "upload:", "web:", "local:", "@", "/", "\\", "?",
              "#", "&", "=", "t=", "v=", "list=", ":", "[", "]", "%", "%25", "%00", "0x", "127", ".", "..", "~",
              "C:", "youtube.com", "youtu.be", "watch", "embed", "a", "\u00e9", "\uff0e", "\u3002", "xn--", "-",
              "_", "9" * 12, " ", "::", "ffff", VID]  # fmt: skip
    rng = random.Random(20261129)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        for public in (False, True):
            try:
                parse_input(text, public=public)
            except VidError:
                pass
