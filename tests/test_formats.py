"""Formatters: golden files, parse-back of SRT/VTT/JSON, the header, and the pack's token budget.

Regenerate the golden files after an intended change with ``UPDATE_GOLDEN=1 pytest tests/test_formats.py``
and read the diff before committing it.
"""

from __future__ import annotations

import html
import io
import os
import re
from datetime import timedelta
from pathlib import Path

import msgspec
import pytest
import srt
import webvtt

from vid2context.errors import ErrorCode, VidError
from vid2context.formats import (
    FORMATTERS,
    FormatInfo,
    Formatter,
    Part,
    RenderOptions,
    context_header,
    format_info,
    format_infos,
    get_formatter,
    render,
    render_many,
    render_view,
)
from vid2context.formats.header import track_news
from vid2context.models import Attempt, Chapter, Segment, Transcript, VideoContext, VideoMetadata
from vid2context.tokens import estimate_tokens

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"

MIN_CUE_MS = 1000


def sample_context() -> VideoContext:
    """A short cooking video: chapters, unicode, html-ish text, a zero-length and a multi-line cue."""
    segments = [
        Segment(start_sec=0.0, end_sec=3.2, text="Welcome back to the kitchen!"),
        Segment(start_sec=3.2, end_sec=7.9, text="Today: café crème, the Italian way ☕."),
        Segment(start_sec=8.4, end_sec=12.0, text="Remember the rule: a < b && c --> d"),
        Segment(start_sec=12.0, end_sec=12.0, text="(zero-length cue)"),
        Segment(start_sec=12.5, end_sec=16.25, text="First line\n\n  second line after a blank  "),
        Segment(start_sec=61.0, end_sec=65.5, text="Grind 18 g of beans <fine>, not powder."),
        Segment(start_sec=65.5, end_sec=70.0, text="こんにちは、世界。 Tamp evenly.", speaker="Yuki"),
        Segment(start_sec=70.0, end_sec=69.0, text="Backwards timing & still shown."),
        Segment(start_sec=121.0, end_sec=126.0, text="Steam the milk to 60 °C; stop at the <hiss>."),
        Segment(start_sec=126.0, end_sec=131.5, text="Pour, and you're done. Ciao!"),
        Segment(start_sec=131.5, end_sec=132.0, text="   "),
    ]
    metadata = VideoMetadata(
        id="Zx3kQ9v7LmA",
        platform="youtube",
        title="Café crème\nat home — a <quick> guide",
        url="https://www.youtube.com/watch?v=Zx3kQ9v7LmA",
        channel="Ünïcode Kitchen",
        channel_id="UC123",
        duration_sec=185.5,
        published_at="2024-03-09T12:00:00Z",
        description="How to make café crème.",
        tags=["coffee", "espresso"],
        language="en",
        chapters=[
            Chapter(title="Intro", start_sec=0),
            Chapter(title="Espresso <basics>", start_sec=60),
            Chapter(title="Milk & foam", start_sec=120),
        ],
    )
    return VideoContext(
        id="youtube:Zx3kQ9v7LmA",
        metadata=metadata,
        transcript=Transcript(
            language="en",
            origin="captions-manual",
            timing="caption",
            producer="youtube/innertube",
            segments=segments,
            note="English (manual) chosen over the automatic track",
        ),
        attempts=[Attempt(id="youtube", stage="captions", outcome="ok", ms=120)],
        fetched_at="2024-03-10T08:00:00Z",
    )


def long_context(
    native_id: str,
    minutes: int,
    *,
    title: str,
    chapters: bool = False,
    platform: str = "youtube",
) -> VideoContext:
    """About four words a second of realistic-looking speech, one segment every four seconds."""
    words = [
        "so",
        "the",
        "next",
        "thing",
        "we",
        "want",
        "to",
        "look",
        "at",
        "is",
        "how",
        "the",
        "engine",
        "behaves",
        "when",
        "it",
        "is",
        "cold",
    ]
    segments = []
    for i in range(minutes * 15):
        start = i * 4.0
        text = " ".join(words[(i + j) % len(words)] for j in range(10)) + ("." if i % 4 == 3 else "")
        segments.append(Segment(start_sec=start, end_sec=start + 3.6, text=text))
    chapter_list = (
        [Chapter(title=f"Part {n + 1}", start_sec=n * 240.0) for n in range(max(1, minutes // 4))]
        if chapters
        else []
    )
    url = f"https://www.youtube.com/watch?v={native_id}" if platform == "youtube" else None
    return VideoContext(
        id=f"{platform}:{native_id}",
        metadata=VideoMetadata(
            id=native_id,
            platform=platform,  # type: ignore[arg-type]
            title=title,
            url=url,
            channel="Garage Talk",
            duration_sec=minutes * 60.0,
            chapters=chapter_list,
        ),
        transcript=Transcript(
            language="en",
            origin="captions-auto",
            timing="caption",
            producer="youtube/innertube",
            segments=segments,
        ),
    )


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        return
    assert path.exists(), f"missing golden file {path}; run with UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file (UPDATE_GOLDEN=1)"


def expected_cues(context: VideoContext) -> list[tuple[int, int, str, str | None]]:
    """(start ms, end ms, text lines joined, speaker) as a subtitle file should carry each segment."""
    result = []
    assert context.transcript is not None
    for seg in context.transcript.segments:
        lines = [" ".join(line.split()) for line in seg.text.splitlines()]
        lines = [line for line in lines if line]
        if not lines:
            continue
        start = round(seg.start_sec * 1000)
        end = round(seg.end_sec * 1000)
        if end <= start:
            end = start + MIN_CUE_MS
        result.append((start, end, "\n".join(lines), seg.speaker))
    return result


# --- golden files ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "format_id", "options"),
    [
        ("text.txt", "text", RenderOptions()),
        ("text-timestamps.txt", "text", RenderOptions(timestamps=True)),
        ("markdown.md", "markdown", RenderOptions()),
        ("subtitles.srt", "srt", RenderOptions()),
        ("subtitles.vtt", "vtt", RenderOptions()),
        ("context.json", "json", RenderOptions()),
        ("pack-one.md", "pack", RenderOptions()),
    ],
)
def test_golden(name: str, format_id: str, options: RenderOptions) -> None:
    check_golden(name, render(sample_context(), format_id, options))


def test_golden_pack_of_several_videos() -> None:
    failed = [("https://youtu.be/missing0000", VidError(ErrorCode.NOT_FOUND, "Video unavailable."))]
    pack = render_many([sample_context(), long_context("Ab12Cd34Ef5", 3, title="Cold start")], failed=failed)
    check_golden("pack-many.md", pack)


def test_golden_pack_within_budget() -> None:
    contexts = [sample_context(), long_context("Ab12Cd34Ef5", 12, title="Cold start", chapters=True)]
    pack = render_many(contexts, max_tokens=900)
    assert estimate_tokens(pack) <= 900
    check_golden("pack-budget.md", pack)


def test_every_golden_file_is_used() -> None:
    if UPDATE:
        pytest.skip("golden files are being rewritten")
    names = {path.name for path in GOLDEN.iterdir() if path.is_file()}  # caption-text/ has its own test
    assert names == {
        "text.txt",
        "text-timestamps.txt",
        "markdown.md",
        "subtitles.srt",
        "subtitles.vtt",
        "context.json",
        "pack-one.md",
        "pack-many.md",
        "pack-budget.md",
    }


# --- the map -----------------------------------------------------------------------------------


def test_map_order_and_protocol() -> None:
    assert next(iter(FORMATTERS)) == "text"
    assert set(FORMATTERS) == {"text", "markdown", "srt", "vtt", "json", "pack"}
    for format_id, formatter in FORMATTERS.items():
        assert isinstance(formatter, Formatter)
        assert formatter.id == format_id
        assert formatter.mime_type and formatter.extension and formatter.description
    assert [fid for fid, f in FORMATTERS.items() if f.combines_videos] == ["pack"]


def test_format_info_is_camel_case() -> None:
    info = format_info(FORMATTERS["vtt"])
    assert isinstance(info, FormatInfo)
    wire = msgspec.json.decode(msgspec.json.encode(info))
    assert wire == {
        "id": "vtt",
        "description": FORMATTERS["vtt"].description,
        "mimeType": "text/vtt; charset=utf-8",
        "extension": "vtt",
        "combinesVideos": False,
    }
    assert [i.id for i in format_infos()] == list(FORMATTERS)


@pytest.mark.parametrize("bad", ["docx", "", "   ", "x" * 500, "text; drop"])
def test_unknown_format_is_bad_request_with_hint(bad: str) -> None:
    with pytest.raises(VidError) as caught:
        get_formatter(bad)
    assert caught.value.code is ErrorCode.BAD_REQUEST
    assert caught.value.hint is not None
    for format_id in FORMATTERS:
        assert format_id in caught.value.hint
    assert len(caught.value.message) < 100
    with pytest.raises(VidError):
        render(sample_context(), bad)


def test_format_ids_ignore_case_and_space() -> None:
    assert get_formatter(" SRT ") is FORMATTERS["srt"]
    assert render(sample_context()) == render(sample_context(), "text", RenderOptions())


# --- subtitles parse back ----------------------------------------------------------------------


def test_srt_parses_back_to_the_same_cues() -> None:
    context = sample_context()
    output = render(context, "srt")
    parsed = list(srt.parse(output))
    expected = expected_cues(context)
    assert len(parsed) == len(expected) == 10
    for number, (sub, (start, end, text, speaker)) in enumerate(zip(parsed, expected, strict=True), start=1):
        assert sub.index == number
        assert sub.start == timedelta(milliseconds=start)
        assert sub.end == timedelta(milliseconds=end)
        assert sub.end > sub.start
        assert sub.content == (f"{speaker}: {text}" if speaker else text)
    assert re.search(r"^\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}$", output, re.MULTILINE)
    # A blank line only ever separates cues.
    assert len(output.strip().split("\n\n")) == len(expected)


def test_vtt_parses_back_to_the_same_cues() -> None:
    context = sample_context()
    output = render(context, "vtt")
    assert output.startswith("WEBVTT\n\n")
    captions = list(webvtt.from_buffer(io.StringIO(output)))
    expected = expected_cues(context)
    assert len(captions) == len(expected)
    for caption, (start, end, text, speaker) in zip(captions, expected, strict=True):
        assert caption.start == _vtt(start)
        assert caption.end == _vtt(end)
        assert caption.end_time.in_seconds() >= caption.start_time.in_seconds()
        assert html.unescape(caption.text) == text
        assert caption.voice == speaker
        assert "-->" not in caption.raw_text
        assert "<" not in re.sub(r"^<v [^>]*>|</v>$", "", caption.raw_text)  # only the voice span


def test_vtt_escapes_cue_text() -> None:
    output = render(sample_context(), "vtt")
    assert "a &lt; b &amp;&amp; c --&gt; d" in output
    assert "&lt;fine&gt;" in output
    assert "<v Yuki>" in output
    timing_lines = [line for line in output.splitlines() if "-->" in line]
    assert all(
        re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3} --> \d\d:\d\d:\d\d\.\d{3}", line) for line in timing_lines
    )


def test_zero_and_negative_durations_get_a_minimum() -> None:
    output = render(sample_context(), "srt")
    assert "00:00:12,000 --> 00:00:13,000\n(zero-length cue)" in output
    assert "00:01:10,000 --> 00:01:11,000\nBackwards timing & still shown." in output


def test_subtitles_of_hostile_text_stay_valid() -> None:
    hostile = [
        Segment(start_sec=0, end_sec=1, text="1\n00:00:00,000 --> 00:00:09,000\n\nforged cue"),
        Segment(start_sec=1, end_sec=2, text="</v><c.evil>NOTE\n\nWEBVTT"),
        Segment(start_sec=2, end_sec=2.0004, text="tiny"),
    ]
    context = msgspec.structs.replace(
        sample_context(),
        transcript=Transcript(
            language="en", origin="asr", timing="segment-approx", producer="x", segments=hostile
        ),
    )
    subs = list(srt.parse(render(context, "srt")))
    assert len(subs) == 3
    assert subs[0].content == "1\n00:00:00,000 --> 00:00:09,000\nforged cue"
    assert subs[2].end > subs[2].start
    captions = list(webvtt.from_buffer(io.StringIO(render(context, "vtt"))))
    assert len(captions) == 3
    assert html.unescape(captions[1].raw_text) == "</v><c.evil>NOTE\nWEBVTT"


def test_empty_transcript_renders_valid_empty_files() -> None:
    context = msgspec.structs.replace(sample_context(), transcript=None)
    assert render(context, "srt") == ""
    assert render(context, "text") == ""
    assert render(context, "vtt") == "WEBVTT\n"
    assert list(webvtt.from_buffer(io.StringIO(render(context, "vtt")))) == []
    assert "_No transcript._" in render(context, "markdown")
    assert "- Transcript: none" in render(context, "markdown")


def _vtt(ms: int) -> str:
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{hours:02d}:{minutes:02d}:{rest // 1000:02d}.{rest % 1000:03d}"


# --- json --------------------------------------------------------------------------------------


def test_json_parses_back_to_an_equal_context() -> None:
    context = sample_context()
    output = render(context, "json")
    assert msgspec.json.decode(output, type=VideoContext) == context
    assert '"durationSec": 185.5' in output
    assert "Ünïcode" in output  # not \u-escaped


# --- text and markdown -------------------------------------------------------------------------


def test_text_with_timestamps_has_one_line_per_segment() -> None:
    lines = render(sample_context(), "text", RenderOptions(timestamps=True)).splitlines()
    assert len(lines) == 10
    assert lines[0] == "[0:00] Welcome back to the kitchen!"
    assert lines[4] == "[0:12] First line second line after a blank"
    assert lines[6] == "[1:05] Yuki: こんにちは、世界。 Tamp evenly."
    assert all(re.match(r"^\[\d+:\d\d\] \S", line) for line in lines)


def test_text_without_timestamps_is_paragraphs() -> None:
    text = render(sample_context(), "text")
    assert "[0:" not in text
    paragraphs = text.strip().split("\n\n")
    assert paragraphs[0].startswith("Welcome back to the kitchen! Today: café crème")
    assert any(p.startswith("Yuki: ") for p in paragraphs)


def test_markdown_has_header_chapters_and_citations() -> None:
    markdown = render(sample_context(), "markdown")
    assert markdown.startswith(context_header(sample_context()) + "\n\n")
    link = "https://www.youtube.com/watch?v=Zx3kQ9v7LmA&t=60s"
    assert f"## Espresso \\<basics> [1:00]({link})" in markdown  # a heading renders its <basics>
    assert "[1:01](https://www.youtube.com/watch?v=Zx3kQ9v7LmA&t=61s) Grind 18 g" in markdown
    body = markdown.split("## Intro", 1)[1]
    for block in body.split("\n\n")[1:]:
        assert block.startswith(("## ", "[")), block


def test_long_paragraphs_are_split() -> None:
    context = long_context("Ab12Cd34Ef5", 10, title="Long")
    paragraphs = render(context, "text").strip().split("\n\n")
    assert len(paragraphs) > 5
    assert all(len(p) <= 1200 for p in paragraphs)


# --- the header --------------------------------------------------------------------------------


def test_header_layout() -> None:
    header = context_header(sample_context())
    assert header.splitlines() == [
        "# Café crème at home — a <quick> guide",
        "- Channel: Ünïcode Kitchen · Duration: 3:05 · Published: 2024-03-09",
        "- URL: https://www.youtube.com/watch?v=Zx3kQ9v7LmA",
        "- Transcript: manual captions, en, by youtube/innertube, caption-level timing",
        "- Chapters:",
        "  - [0:00](https://www.youtube.com/watch?v=Zx3kQ9v7LmA&t=0s) Intro",
        "  - [1:00](https://www.youtube.com/watch?v=Zx3kQ9v7LmA&t=60s) Espresso <basics>",
        "  - [2:00](https://www.youtube.com/watch?v=Zx3kQ9v7LmA&t=120s) Milk & foam",
    ]  # no token count (a header cannot know its result's size), no Track line for the usual track


def test_the_text_header_states_the_link_pattern_once() -> None:
    header = context_header(sample_context(), links="pattern")
    assert header.splitlines() == [
        "# Café crème at home — a <quick> guide",
        "- Channel: Ünïcode Kitchen · Duration: 3:05 · Published: 2024-03-09",
        "- URL: https://www.youtube.com/watch?v=Zx3kQ9v7LmA",
        "- Moment links: https://www.youtube.com/watch?v=Zx3kQ9v7LmA&t=<seconds>s",
        "- Transcript: manual captions, en, by youtube/innertube, caption-level timing",
        "- Chapters:",
        "  - [0:00] Intro",
        "  - [1:00] Espresso <basics>",
        "  - [2:00] Milk & foam",
    ]
    assert render_view(sample_context(), FORMATTERS["text"], RenderOptions()).startswith(header + "\n\n")


@pytest.mark.parametrize(
    ("platform", "url", "links"),
    [
        (
            "youtube",
            "https://www.youtube.com/watch?v=Zx3kQ9v7LmA",
            "https://www.youtube.com/watch?v=Zx3kQ9v7LmA&t=<seconds>s",
        ),
        ("web", "https://example.com/talks/cafe.mp4", "https://example.com/talks/cafe.mp4#t=<seconds>"),
        ("local", None, "none (a local file)"),
        ("upload", None, "none (an upload)"),
    ],
)
def test_the_lean_header_is_one_line_with_the_link_pattern_of_each_source(
    platform: str, url: str | None, links: str
) -> None:
    context = sample_context()
    context = msgspec.structs.replace(
        context, metadata=msgspec.structs.replace(context.metadata, platform=platform, url=url)
    )
    chapter = Part(start_sec=60, end_sec=120, title="Espresso <basics>")
    assert context_header(context, links="pattern", part=chapter) == (
        "# Café crème at home — a <quick> guide · Espresso <basics>, 1:00–2:00 of 3:05 · manual captions, en"
        f" · moment links: {links}"
    )
    page = Part(start_sec=61, end_sec=185.5)
    assert context_header(context, part=page) == (
        "# Café crème at home — a <quick> guide · 1:01–3:05 of 3:05 · manual captions, en"
    )  # Markdown links every moment: no pattern to state
    lean = render_view(context, FORMATTERS["text"], RenderOptions(timestamps=True, part=page))
    assert lean.splitlines()[0].endswith(f"moment links: {links}") and lean.splitlines()[1] == ""


def _track(origin: str, language: str, note: str | None = "English (manual) chosen over the automatic track"):
    return Transcript(
        language=language, origin=origin, timing="caption", producer="p", segments=[], note=note
    )


@pytest.mark.parametrize(
    ("transcript", "asked", "news"),
    [
        (_track("captions-manual", "en"), None, None),
        (_track("captions-manual", "en"), "en-GB", None),
        (_track("captions-manual", "en", "requested de not available"), "de", "requested de not available"),
        (_track("captions-manual", "en", None), "de", "asked for de, the transcript is in en"),
        (
            _track("captions-auto", "en", "auto-generated English track (en) chosen"),
            None,
            "auto-generated English track (en) chosen",
        ),
        (_track("captions-auto", "en", None), None, None),
        (
            _track("captions-translated", "de", "no de track; translated by YouTube"),
            "de",
            "no de track; translated by YouTube",
        ),
        (_track("asr", "en", None), "en", None),
    ],
)
def test_the_track_line_only_when_it_is_news(
    transcript: Transcript, asked: str | None, news: str | None
) -> None:
    assert track_news(transcript, asked) == news
    context = msgspec.structs.replace(sample_context(), transcript=transcript)
    lines = context_header(context, asked=asked).splitlines()
    assert [line for line in lines if line.startswith("- Track:")] == ([f"- Track: {news}"] if news else [])
    lean = context_header(context, asked=asked, part=Part(start_sec=0, end_sec=60)).splitlines()
    assert lean[1:] == ([f"- Track: {news}"] if news else [])


def test_header_of_a_local_file_without_transcript() -> None:
    context = VideoContext(
        id="local:abc123",
        metadata=VideoMetadata(
            id="abc123", platform="local", title="  talk\r\n# forged heading ", published_at="20230102"
        ),
    )
    assert context_header(context, level=2, chapters=False).splitlines() == [
        "## talk # forged heading",
        "- Published: 2023-01-02",
        "- Source: local:abc123",
        "- Transcript: none",
    ]
    assert context_header(context, links="pattern").splitlines()[3] == "- Moment links: none (a local file)"
    assert context_header(context, part=Part(start_sec=0, end_sec=0)) == (
        "# talk # forged heading · 0:00–0:00 · no transcript"
    )


def test_header_of_a_long_video_uses_hours() -> None:
    context = long_context("Ab12Cd34Ef5", 75, title="Long")
    assert "Duration: 1:15:00" in context_header(context)


# --- the pack ----------------------------------------------------------------------------------

PACK_VIDEOS = [
    ("Ab12Cd34Ef5", 23, "Cold start, part one", True),
    ("Gh56Ij78Kl9", 2, "A short clip", False),
    ("Mn01Op23Qr4", 41, "Cold start: the long [director's] cut", False),
]

TRUNCATED = re.compile(r"\[Truncated at (\d+(?::\d\d)+) of (\d+(?::\d\d)+): (\d+) of (\d+) tokens\]")


def pack_contexts() -> list[VideoContext]:
    return [sample_context()] + [
        long_context(vid, minutes, title=title, chapters=chapters)
        for vid, minutes, title, chapters in PACK_VIDEOS
    ]


PACK_FAILED = [
    ("https://youtu.be/xxxxxxxxxxx", VidError(ErrorCode.UNAVAILABLE, "This video is private.")),
    ("not a url\nwith a newline", VidError(ErrorCode.UNSUPPORTED_INPUT, "Cannot read this input.")),
]


def test_pack_without_budget_holds_everything() -> None:
    contexts = pack_contexts()
    pack = render_many(contexts, failed=PACK_FAILED)
    assert pack.startswith("# Context pack: 4 videos, 2 not included\n")
    assert (
        "## Videos\n1. [Café crème at home — a <quick> guide](https://www.youtube.com/watch?v=Zx3kQ9v7LmA)"
        in pack
    )
    assert "[Cold start: the long \\[director's\\] cut]" in pack
    assert "## 3. A short clip" in pack
    assert not TRUNCATED.search(pack)
    assert "## Not included\n- https://youtu.be/xxxxxxxxxxx: unavailable: This video is private." in pack
    assert "- not a url with a newline: unsupported-input: Cannot read this input." in pack
    for context in contexts:
        assert context.transcript is not None
        assert " ".join(context.transcript.segments[-2].text.split()) in pack


BUDGETS = [*range(1, 40), *range(40, 400, 13), *range(400, 3000, 97), 4000, 6000, 9000, 12000, 20000, 40000]


@pytest.mark.parametrize("budget", BUDGETS)
def test_pack_never_exceeds_its_budget(budget: int) -> None:
    contexts = pack_contexts()
    full_tokens = estimate_tokens(render_many(contexts, failed=PACK_FAILED))
    pack = render_many(contexts, max_tokens=budget, failed=PACK_FAILED)
    assert pack
    assert estimate_tokens(pack) <= budget
    if budget >= full_tokens:
        assert pack == render_many(contexts, failed=PACK_FAILED)
    for match in TRUNCATED.finditer(pack):
        kept, total = int(match[3]), int(match[4])
        assert kept < total


@pytest.mark.parametrize("budget", [20, 50, 120, 700, 2500])
def test_pack_budget_across_many_videos(budget: int) -> None:
    contexts = [long_context(f"Vid{n:08d}", 3 + n % 5, title=f"Video {n}") for n in range(12)]
    pack = render_many(contexts, max_tokens=budget)
    assert estimate_tokens(pack) <= budget


def test_pack_shares_the_budget_fairly() -> None:
    contexts = pack_contexts()
    pack = render_many(contexts, max_tokens=6000)
    assert estimate_tokens(pack) <= 6000
    cuts = {m[4]: int(m[3]) for m in TRUNCATED.finditer(pack)}
    # The sample and the short clip fit whole; the two long videos are cut to similar sizes.
    assert "Pour, and you're done. Ciao!" in pack
    assert len(cuts) == 2, pack
    small, large = sorted(cuts.values())
    assert large - small < 0.2 * large
    assert "2 of 4 transcripts cut" in pack
    assert "(truncated)" in pack


def test_pack_truncation_says_where() -> None:
    context = long_context("Ab12Cd34Ef5", 23, title="Cold start")
    pack = render_many([context], max_tokens=1500)
    match = TRUNCATED.search(pack)
    assert match, pack
    assert match[2] == "23:00"
    assert context.transcript is not None
    starts = {seg.start_sec for seg in context.transcript.segments}
    minutes, seconds = match[1].split(":")
    assert int(minutes) * 60 + int(seconds) in starts
    assert int(match[4]) == estimate_tokens(" ".join(s.text for s in context.transcript.segments))
    # The text before the mark ends with a whole segment.
    before = pack[: match.start()].rstrip()
    cut = next(
        seg for seg in context.transcript.segments if seg.start_sec == int(minutes) * 60 + int(seconds)
    )
    previous = context.transcript.segments[context.transcript.segments.index(cut) - 1]
    assert before.endswith(previous.text)


def test_pack_budget_too_small_for_the_index() -> None:
    pack = render_many(pack_contexts(), max_tokens=20, failed=PACK_FAILED)
    assert estimate_tokens(pack) <= 20
    assert "too small" in pack
    tiny = render_many(pack_contexts(), max_tokens=1)
    assert estimate_tokens(tiny) <= 1 and tiny


def test_pack_index_only() -> None:
    contexts = pack_contexts()
    pack = render_many(contexts, max_tokens=200)
    assert estimate_tokens(pack) <= 200
    assert "only the index is included" in pack
    assert "## Videos" in pack


@pytest.mark.parametrize("bad", [0, -5, True])
def test_pack_rejects_budgets_below_one(bad: int) -> None:
    with pytest.raises(VidError) as caught:
        render_many(pack_contexts(), max_tokens=bad)
    assert caught.value.code is ErrorCode.BAD_REQUEST


def test_pack_of_failures_only() -> None:
    pack = render_many([], failed=PACK_FAILED)
    assert pack.startswith("# Context pack: 0 videos, 2 not included\n")
    assert "## Videos" not in pack


def test_pack_formatter_renders_one_video_with_budget() -> None:
    context = long_context("Ab12Cd34Ef5", 23, title="Cold start")
    pack = render(context, "pack", RenderOptions(max_tokens=800))
    assert estimate_tokens(pack) <= 800
    assert TRUNCATED.search(pack)
