"""Caption text verbatim (issue #11, item 4): every way text comes in, every way it goes out.

The same six lines are served through each input path, each written the way that source writes
text (none of these files is recorded; each is built from its format's documented shape, as
``tests/fixtures/README.md`` says of json3):

- json3 (InnerTube, yt-dlp): JSON strings, which are the text itself;
- srv3 (InnerTube's fallback, yt-dlp) and classic timedtext (the youtube-transcript-api rung, and
  InnerTube when YouTube ignores ``fmt=``): HTML inside XML, with YouTube's ``<font>`` and ``<i>``
  markup, the text HTML-escaped (or, for ``<price>`` and ``a < b > c``, not: both must read alike);
- WebVTT (a sidecar file, yt-dlp): the spec's escapes, cue spans and a timestamp tag.

Every path must give exactly ``EXPECTED``; then every format must match its golden file under
``tests/golden/caption-text/`` (``UPDATE_GOLDEN=1`` rewrites them), and SRT, WebVTT, JSON and
Markdown are read back by independent parsers (``srt``, ``webvtt-py``, msgspec, markdown-it-py)
to the same text.
"""

from __future__ import annotations

import asyncio
import html
import io
import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import httpx
import msgspec
import pytest
import requests
import srt
import webvtt
from markdown_it import MarkdownIt
from pytest_httpx import HTTPXMock

from vid2context.ctx import Ctx
from vid2context.formats import RenderOptions, render
from vid2context.inputs import parse_input
from vid2context.models import Segment, Transcript, VideoContext, VideoMetadata, VideoRef
from vid2context.providers.localfile import LocalFileProvider, parse_roots
from vid2context.providers.subtitles import parse_srt, parse_vtt
from vid2context.providers.transcript_api import TranscriptApiProvider
from vid2context.providers.youtube import YouTubeProvider
from vid2context.providers.ytdlp import YtDlpProvider, find_ytdlp

from .test_transcript_api import ReplayAdapter

GOLDEN = Path(__file__).parent / "golden" / "caption-text"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
YTA = Path(__file__).parent / "fixtures" / "youtube" / "yta"

TEXTS = [
    "performance & <price>.",
    "wrap it in a <div>",
    "a < b > c",
    "&amp;lt; is how you write &lt;",  # spelled out by the captioner: one decode too many loses it
    "it's <b>not</b> bold",  # a formatting tag typed as text, not YouTube's markup
    "🎉 done",
]
EXPECTED = [Segment(start_sec=n * 2.5, end_sec=(n + 1) * 2.5, text=text) for n, text in enumerate(TEXTS)]

# json3: strings are text. A window event, a line split over two segs, aAppend line breaks.
JSON3 = json.dumps(
    {
        "wireMagic": "pb3",
        "events": [
            {"tStartMs": 0, "dDurationMs": 15000, "id": 1, "wpWinPosId": 1},
            {"tStartMs": 0, "dDurationMs": 2500, "wWinId": 1, "segs": [{"utf8": "performance &"}, {"utf8": " <price>."}]},
            {"tStartMs": 2490, "dDurationMs": 10, "wWinId": 1, "aAppend": 1, "segs": [{"utf8": "\n"}]},
            {"tStartMs": 2500, "dDurationMs": 2500, "wWinId": 1, "segs": [{"utf8": "wrap it in a <div>"}]},
            {"tStartMs": 5000, "dDurationMs": 2500, "wWinId": 1, "segs": [{"utf8": "a < b > c"}]},
            {"tStartMs": 7500, "dDurationMs": 2500, "wWinId": 1, "segs": [{"utf8": "&amp;lt; is how you write &lt;"}]},
            {"tStartMs": 10000, "dDurationMs": 2500, "wWinId": 1, "segs": [{"utf8": "it's <b>not</b>"}, {"utf8": " bold"}]},
            {"tStartMs": 12500, "dDurationMs": 2500, "wWinId": 1, "segs": [{"utf8": "🎉 done"}]},
        ],
    },
    ensure_ascii=False,
)  # fmt: skip

# srv3: a <s> per word, YouTube's <font> and <i> markup (escaped once), the text escaped twice.
SRV3 = """<?xml version="1.0" encoding="utf-8" ?><timedtext format="3">
<head><pen id="1" fc="#E5E5E5"/><ws id="0"/><wp id="0"/></head>
<body>
<p t="0" d="2500" w="1"><s ac="0">performance</s><s t="700" ac="0"> &amp;amp;</s><s t="900" ac="0"> &amp;lt;price&amp;gt;.</s></p>
<p t="2490" d="10" w="1" a="1">
</p>
<p t="2500" d="2500" w="1">&lt;font color=&quot;#E5E5E5&quot;&gt;wrap it in a &amp;lt;div&amp;gt;&lt;/font&gt;</p>
<p t="5000" d="2500" w="1">a &amp;lt; b &amp;gt; c</p>
<p t="7500" d="2500" w="1">&amp;amp;amp;lt; is how you write &amp;amp;lt;</p>
<p t="10000" d="2500" w="1">it&amp;#39;s &lt;i&gt;&amp;lt;b&amp;gt;not&amp;lt;/b&amp;gt;&lt;/i&gt; bold</p>
<p t="12500" d="2500" w="1">&#x1F389; done</p>
</body>
</timedtext>
"""

# Classic timedtext, as the recorded transcript.xml.static: <price> and "a < b > c" left bare in
# the HTML (escaped once, for the XML), the rest escaped twice, italics as markup.
CLASSIC = """<?xml version="1.0" encoding="utf-8" ?>
<transcript>
    <text start="0" dur="2.5">performance &amp;amp; &lt;price&gt;.</text>
    <text start="2.5" dur="2.5">wrap it in a &amp;lt;div&amp;gt;</text>
    <text start="5" dur="2.5">a &lt; b &gt; c</text>
    <text start="7.5" dur="2.5">&amp;amp;amp;lt; is how you write &amp;amp;lt;</text>
    <text start="10" dur="2.5">it&amp;#39;s &amp;lt;b&amp;gt;not&amp;lt;/b&amp;gt; &lt;i>bold&lt;/i></text>
    <text start="12.5" dur="2.5"></text>
    <text start="12.5" dur="2.5">🎉 done</text>
</transcript>
"""

# WebVTT as the spec writes it: & and < escaped, cue spans, a voice-less cue with a timestamp tag.
VTT = """WEBVTT
Kind: captions
Language: en

00:00:00.000 --> 00:00:02.500
performance &amp; &lt;price&gt;.

00:00:02.500 --> 00:00:05.000 align:start position:0%
wrap it in a <c.code>&lt;div&gt;</c>

00:00:05.000 --> 00:00:07.500
a &lt; b &gt; c

00:00:07.500 --> 00:00:10.000
&amp;amp;lt; is how you write &amp;lt;

00:00:10.000 --> 00:00:12.500
it's <i>&lt;b&gt;not&lt;/b&gt;</i> bold

00:00:12.500 --> 00:00:15.000
🎉<00:00:13.000><c> done</c>
"""

ORIGIN = "https://www.youtube.com"
API_KEY = "AIzaSyAO_FJ2SlqU8Q4STEHLGCilw_Y9_11qcW8"  # the key in the recorded watch page
TIMEDTEXT = re.compile(r"https://www\.youtube\.com/api/timedtext\?.*")
JSON3_URL = re.compile(r"https://www\.youtube\.com/api/timedtext\?.*fmt=json3.*")
SRV3_URL = re.compile(r"https://www\.youtube\.com/api/timedtext\?.*fmt=srv3.*")

needs_ffprobe = pytest.mark.skipif(shutil.which("ffprobe") is None, reason="needs ffmpeg")
YTDLP = find_ytdlp()
needs_ytdlp = pytest.mark.skipif(
    not Path(YTDLP).is_file() and shutil.which(YTDLP) is None, reason="yt-dlp not installed"
)


# --- the input paths -----------------------------------------------------------------------------


def _innertube(
    mock: HTTPXMock, json3: dict[str, object], srv3: dict[str, object] | None = None
) -> Transcript:
    """The InnerTube rung against the recorded watch page and player, with this caption file."""
    mock.add_response(
        method="GET",
        url=re.compile(r"https://www\.youtube\.com/watch\?v=.*"),
        content=(YTA / "youtube.html.static").read_bytes(),
    )
    mock.add_response(method="POST", url=f"{ORIGIN}/youtubei/v1/player?key={API_KEY}", content=(YTA / "youtube.innertube.json.static").read_bytes(), headers={"Content-Type": "application/json"})  # fmt: skip
    mock.add_response(method="GET", url=JSON3_URL, **json3)  # type: ignore[arg-type]
    if srv3 is not None:
        mock.add_response(method="GET", url=SRV3_URL, **srv3)  # type: ignore[arg-type]

    async def read() -> Transcript:
        async with httpx.AsyncClient() as client:
            ref = VideoRef(
                id="youtube:GJLlxj_dtq8", platform="youtube", kind="video", native_id="GJLlxj_dtq8"
            )
            return await YouTubeProvider(client).captions(ref, Ctx())

    return asyncio.run(read())


def json3_innertube(mock: HTTPXMock, tmp_path: Path) -> Transcript:
    return _innertube(mock, {"content": JSON3.encode()})


def srv3_innertube(mock: HTTPXMock, tmp_path: Path) -> Transcript:
    return _innertube(mock, {"status_code": 404}, {"content": SRV3.encode()})


def classic_innertube(mock: HTTPXMock, tmp_path: Path) -> Transcript:
    """YouTube answering the classic format whatever ``fmt=`` asked for."""
    return _innertube(mock, {"content": CLASSIC.encode()})


def classic_transcript_api(mock: HTTPXMock, tmp_path: Path) -> Transcript:
    """youtube-transcript-api asks for the classic format (it drops ``fmt=srv3`` from the URL)."""

    def serve(request: requests.PreparedRequest) -> tuple[int, dict[str, str], bytes] | None:
        if request.path_url.startswith("/api/timedtext?"):
            return 200, {"Content-Type": "text/xml; charset=utf-8"}, CLASSIC.encode()
        return None

    provider = TranscriptApiProvider(adapter=ReplayAdapter(serve))
    return asyncio.run(provider.captions(parse_input("GJLlxj_dtq8"), Ctx()))


def vtt_sidecar(mock: HTTPXMock, tmp_path: Path) -> Transcript:
    if shutil.which("ffprobe") is None:
        pytest.skip("needs ffmpeg (ffprobe)")
    shutil.copy(YTA.parent.parent / "media" / "talk.mp3", tmp_path / "talk.mp3")
    (tmp_path / "talk.en.vtt").write_text(VTT, encoding="utf-8")
    provider = LocalFileProvider(roots=parse_roots(str(tmp_path)))
    return asyncio.run(provider.captions(parse_input(str(tmp_path / "talk.mp3")), Ctx()))


def _ytdlp(tmp_path: Path, lang: str) -> Transcript:
    """The real yt-dlp, offline: an info JSON whose subtitle URLs are files written here."""
    if not Path(YTDLP).is_file() and shutil.which(YTDLP) is None:
        pytest.skip("yt-dlp not installed")
    files = {"en": ("vtt", VTT), "de": ("json3", JSON3), "nl": ("srv3", SRV3)}
    subtitles = {}
    for code, (ext, body) in files.items():
        (tmp_path / f"talk.{code}.{ext}").write_text(body, encoding="utf-8")
        subtitles[code] = [{"ext": ext, "url": (tmp_path / f"talk.{code}.{ext}").as_uri(), "name": code}]
    media = YTA.parent.parent / "media" / "talk.mp4"
    info = {
        "id": "talk", "title": "Talk", "extractor": "generic", "extractor_key": "Generic",
        "webpage_url": media.as_uri(), "duration": 24.4, "subtitles": subtitles,
        "formats": [{"format_id": "mp4", "url": media.as_uri(), "ext": "mp4", "protocol": "file"}],
    }  # fmt: skip
    (tmp_path / "talk.info.json").write_text(json.dumps(info), encoding="utf-8")
    provider = YtDlpProvider(
        extra_args=["--enable-file-urls", "--load-info-json", str(tmp_path / "talk.info.json")]
    )
    url = media.as_uri()
    ref = VideoRef(id=f"web:{url}", platform="web", kind="video", native_id=url, url=url)
    ctx = Ctx()
    asyncio.run(provider.metadata(ref, ctx))
    transcript = asyncio.run(provider.captions(ref, ctx, lang=lang))
    assert transcript.producer == f"ytdlp/{files[lang][0]}"
    return transcript


def vtt_ytdlp(mock: HTTPXMock, tmp_path: Path) -> Transcript:
    return _ytdlp(tmp_path, "en")


def json3_ytdlp(mock: HTTPXMock, tmp_path: Path) -> Transcript:
    return _ytdlp(tmp_path, "de")


def srv3_ytdlp(mock: HTTPXMock, tmp_path: Path) -> Transcript:
    return _ytdlp(tmp_path, "nl")


INPUTS = [
    json3_innertube,
    srv3_innertube,
    classic_innertube,
    classic_transcript_api,
    vtt_sidecar,
    vtt_ytdlp,
    json3_ytdlp,
    srv3_ytdlp,
]

# --- the output formats --------------------------------------------------------------------------

OUTPUTS = [
    ("text.txt", "text", RenderOptions()),
    ("text-timestamps.txt", "text", RenderOptions(timestamps=True)),
    ("markdown.md", "markdown", RenderOptions()),
    ("subtitles.srt", "srt", RenderOptions()),
    ("subtitles.vtt", "vtt", RenderOptions()),
    ("context.json", "json", RenderOptions()),
    ("pack.md", "pack", RenderOptions()),
]


def context_of(segments: list[Segment]) -> VideoContext:
    """One fixed video around ``segments``, so only the text can change what is rendered."""
    return VideoContext(
        id="youtube:GJLlxj_dtq8",
        metadata=VideoMetadata(
            id="GJLlxj_dtq8",
            platform="youtube",
            title="Caption text, verbatim",
            url="https://www.youtube.com/watch?v=GJLlxj_dtq8",
            duration_sec=15.0,
            language="en",
        ),
        transcript=Transcript(
            language="en",
            origin="captions-manual",
            timing="caption",
            producer="youtube/innertube",
            segments=segments,
        ),
        fetched_at="2026-01-01T00:00:00Z",
    )


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        return
    assert path.exists(), f"missing golden file {path}; run with UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file (UPDATE_GOLDEN=1)"


@pytest.mark.parametrize("read", INPUTS, ids=[read.__name__ for read in INPUTS])
def test_every_input_path_gives_the_text_verbatim_in_every_format(
    read, httpx_mock: HTTPXMock, tmp_path: Path
) -> None:
    transcript = read(httpx_mock, tmp_path)
    assert [s.text for s in transcript.segments] == TEXTS
    assert transcript.segments == EXPECTED
    context = context_of(transcript.segments)
    for name, format_id, options in OUTPUTS:
        check_golden(name, render(context, format_id, options))


def test_every_golden_file_is_used() -> None:
    if UPDATE:
        pytest.skip("golden files are being rewritten")
    assert {path.name for path in GOLDEN.iterdir()} == {name for name, _, _ in OUTPUTS}


# --- reading the outputs back --------------------------------------------------------------------


def test_srt_reads_back_with_the_srt_library() -> None:
    subs = list(srt.parse(render(context_of(EXPECTED), "srt")))
    assert [sub.content for sub in subs] == TEXTS  # SubRip has no escaping: the text is as written
    assert [(sub.start.total_seconds(), sub.end.total_seconds()) for sub in subs] == [
        (s.start_sec, s.end_sec) for s in EXPECTED
    ]


def test_srt_is_not_the_faithful_export() -> None:
    """What SubRip cannot say, read back by our reader (the documented price, see formats/srt.py):
    a formatting tag typed as text is formatting to every SRT reader, and a spelled-out entity
    loses a level to readers that decode references, as ours and VLC do. WebVTT and JSON keep both.
    """
    texts = [s.text for s in parse_srt(render(context_of(EXPECTED), "srt"))]
    lost = {
        "&amp;lt; is how you write &lt;": "&lt; is how you write <",
        "it's <b>not</b> bold": "it's not bold",
    }
    assert texts == [lost.get(text, text) for text in TEXTS]


def test_vtt_reads_back_with_webvtt_py_and_with_ours() -> None:
    output = render(context_of(EXPECTED), "vtt")
    captions = list(webvtt.from_buffer(io.StringIO(output)))
    assert [html.unescape(c.text) for c in captions] == TEXTS  # webvtt-py leaves references alone
    assert [c.raw_text for c in captions][1] == "wrap it in a &lt;div&gt;"
    assert all("<" not in c.raw_text for c in captions)  # nothing in the text can be read as a tag
    assert parse_vtt(output) == EXPECTED


def test_json_keeps_the_raw_strings() -> None:
    output = render(context_of(EXPECTED), "json")
    decoded = msgspec.json.decode(output.encode(), type=VideoContext)
    assert decoded.transcript is not None and decoded.transcript.segments == EXPECTED
    assert '"text": "&amp;lt; is how you write &lt;"' in output and "🎉" in output


def test_text_is_literal() -> None:
    lines = render(context_of(EXPECTED), "text", RenderOptions(timestamps=True)).splitlines()
    assert lines == [f"[0:{int(s.start_sec):02d}] {s.text}" for s in EXPECTED]
    assert render(context_of(EXPECTED), "text") == " ".join(TEXTS) + "\n"


class _Text(HTMLParser):
    """The text a browser would show for some HTML: character data, references decoded."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _rendered(markdown: str) -> str:
    parser = _Text()
    parser.feed(MarkdownIt("commonmark").render(markdown))
    return "".join(parser.parts)


@pytest.mark.parametrize("format_id", ["markdown", "pack"])
def test_markdown_renders_every_word(format_id: str) -> None:
    """Rendered by a CommonMark renderer, every caption reads as it was said; none becomes HTML."""
    markdown = render(context_of(EXPECTED), format_id)
    shown = _rendered(markdown)
    for text in TEXTS:
        assert text in shown, text
    tokens = MarkdownIt("commonmark").parse(markdown)
    inline_html = [c for t in tokens for c in (t.children or []) if c.type == "html_inline"]
    assert not inline_html and not [t for t in tokens if t.type == "html_block"]


@pytest.mark.parametrize(
    "text",
    [
        "\\<div> and \\\\n",  # backslashes of the text's own
        "<!-- c --> <?x?> <https://example.com> </p>",
        "&copy; &#60; &#x3C; AT&T a<b",
        "use `<i>` here",  # a code span would show a backslash added inside it
        "__init__ and snake_case, 2*3*4 and *stars*",
        "[0:00](https://evil.example) ![x](https://evil.example/i.png) [Music]",  # no forged citation
    ],
)
def test_markdown_escaping_is_exact(text: str) -> None:
    """What the text says is what a renderer shows: no HTML, reference, emphasis, code or link."""
    markdown = render(context_of([Segment(start_sec=0, end_sec=1, text=text)]), "markdown")
    assert _rendered(markdown).rstrip().endswith(" " + text)
    body = MarkdownIt("commonmark").parse(markdown.split("## Transcript", 1)[1])
    kinds = {c.type for t in body for c in (t.children or [])}
    assert kinds <= {"text", "link_open", "link_close", "softbreak"}, kinds  # only our citation links
    links = [c.attrs["href"] for t in body for c in (t.children or []) if c.type == "link_open"]
    assert links == ["https://www.youtube.com/watch?v=GJLlxj_dtq8&t=0s"]
