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
from typing import Any

import msgspec
import pytest
import srt
import webvtt

from vid2context.api.packs import section_route
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
from vid2context.formats.pack import MAX_QUERY_CHARS, check_query
from vid2context.models import Attempt, Chapter, Segment, Transcript, VideoContext, VideoMetadata
from vid2context.outline import get_section, outline, text_costs
from vid2context.relevance import part_scores, query_terms
from vid2context.timecode import parse_time
from vid2context.tokens import estimate_tokens

from .talks import BIKE_TOPICS, bike_review, sourdough, topic_talk

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
    reading = text_costs()
    pack = render_many(  # as GET /api/v1/pack answers it
        contexts, max_tokens=1300, query="engine", reader=section_route(), costs=lambda _: reading
    )
    assert estimate_tokens(pack) <= 1300
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

MINIMUM = re.compile(r"Give maxTokens of at least (\d+) ")
PARAGRAPH = re.compile(r"^\[(\d+:\d\d(?::\d\d)?)\]", re.MULTILINE)
OUTLINE_ENTRY = re.compile(r"^  - (\d+) · (.*) · (\d+) tokens(?: · match)?( · below)?$", re.MULTILINE)


def pack_contexts() -> list[VideoContext]:
    return [sample_context()] + [
        long_context(vid, minutes, title=title, chapters=chapters)
        for vid, minutes, title, chapters in PACK_VIDEOS
    ]


PACK_FAILED = [
    ("https://youtu.be/xxxxxxxxxxx", VidError(ErrorCode.UNAVAILABLE, "This video is private.")),
    ("not a url\nwith a newline", VidError(ErrorCode.UNSUPPORTED_INPUT, "Cannot read this input.")),
]


def minimum_of(contexts: list[VideoContext], **options: Any) -> int:
    """The smallest budget the pack accepts, read from the error a budget of one token gets."""
    with pytest.raises(VidError) as caught:
        render_many(contexts, max_tokens=1, **options)
    assert caught.value.code is ErrorCode.BAD_REQUEST
    match = MINIMUM.search(caught.value.hint or "")
    assert match, caught.value.hint
    return int(match.group(1))


def video_sections(pack: str) -> list[str]:
    """The pack's per-video parts: from each ``## N.`` heading to the next ``##`` heading."""
    return re.findall(r"^## \d+\. .*?(?=^## |\Z)", pack, re.MULTILINE | re.DOTALL)


def chosen_entries(section: str) -> dict[int, bool]:
    """Each outline entry of one video's part: its index, and whether it is marked below."""
    return {int(m[1]): bool(m[4]) for m in OUTLINE_ENTRY.finditer(section)}


def assert_whole_chapters(pack: str, contexts: list[VideoContext]) -> None:
    """Every entry marked below is in the pack whole, under its heading; no paragraph of any other
    entry is (each paragraph's citation says where it starts)."""
    for section, context in zip(video_sections(pack), contexts, strict=True):
        shape = outline(context)
        entries = chosen_entries(section)
        assert sorted(entries) == [entry.index for entry in shape.chapters]
        flat = " ".join(section.split()).replace("\\", "")
        cited = [parse_time(stamp) for stamp in PARAGRAPH.findall(section)]
        noun = "section" if shape.sections == "time" else "chapter"
        for entry in shape.chapters:
            part = get_section(context, chapter=entry.index).context
            assert part.transcript is not None
            starts = {seg.start_sec for seg in part.transcript.segments}
            inside = [at for at in cited if int(min(starts, default=-1)) <= at <= max(starts, default=-1)]
            if entries[entry.index]:
                texts = [" ".join(seg.text.split()) for seg in part.transcript.segments if seg.text.strip()]
                assert all(text in flat for text in texts), entry.title
                assert f" ({noun} {entry.index})\n" in section
                assert inside
            else:
                assert not inside and f" ({noun} {entry.index})\n" not in section, entry.title


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
    assert "Token budget" not in pack and "· below" not in pack
    assert "## Not included\n- https://youtu.be/xxxxxxxxxxx: unavailable: This video is private." in pack
    assert "- not a url with a newline: unsupported-input: Cannot read this input." in pack
    for context in contexts:
        assert context.transcript is not None
        assert " ".join(context.transcript.segments[-2].text.split()) in pack


BUDGETS = [
    *range(1, 40, 7),
    *range(40, 400, 53),
    *range(400, 3000, 97),
    4000,
    6000,
    9000,
    12000,
    20000,
    40000,
]


@pytest.mark.parametrize("budget", BUDGETS)
def test_pack_never_exceeds_its_budget(budget: int) -> None:
    contexts = pack_contexts()
    whole = render_many(contexts, failed=PACK_FAILED)
    minimum = minimum_of(contexts, failed=PACK_FAILED)
    if budget < minimum:
        with pytest.raises(VidError) as caught:
            render_many(contexts, max_tokens=budget, failed=PACK_FAILED)
        assert caught.value.code is ErrorCode.BAD_REQUEST and f"at least {minimum} " in (
            caught.value.hint or ""
        )
        return
    pack = render_many(contexts, max_tokens=budget, failed=PACK_FAILED)
    assert estimate_tokens(pack) <= budget
    assert pack == render_many(contexts, max_tokens=budget, failed=PACK_FAILED)  # deterministic
    if budget >= estimate_tokens(whole):
        assert pack == whole
    else:
        assert f"Token budget: {budget} of about {estimate_tokens(whole)}: " in pack
        assert_whole_chapters(pack, contexts)
        assert "## Not included\n- https://youtu.be/xxxxxxxxxxx: unavailable" in pack


@pytest.mark.parametrize("budget", [20, 50, 700, 2500, 4000])
def test_pack_budget_across_many_videos(budget: int) -> None:
    contexts = [long_context(f"Vid{n:08d}", 3 + n % 5, title=f"Video {n}") for n in range(12)]
    minimum = minimum_of(contexts)
    if budget < minimum:
        with pytest.raises(VidError):
            render_many(contexts, max_tokens=budget)
        return
    pack = render_many(contexts, max_tokens=budget)
    assert estimate_tokens(pack) <= budget
    assert_whole_chapters(pack, contexts)


def tiny_context() -> VideoContext:
    """One word and no chapters: its outline costs more than the word."""
    context = sample_context()
    assert context.transcript is not None
    segments = [Segment(start_sec=0.0, end_sec=2.0, text="Yes.")]
    return msgspec.structs.replace(
        context,
        metadata=msgspec.structs.replace(context.metadata, chapters=[]),
        transcript=msgspec.structs.replace(context.transcript, segments=segments),
    )


MINIMUM_CASES = {
    "the sample pack": (pack_contexts(), PACK_FAILED, None),
    "two talks and a query": ([bike_review(), sourdough()], [], "kickstand baking"),
    "time sections": ([bike_review(chapters=False)], [], None),
    "a video without a transcript": (
        [msgspec.structs.replace(sample_context(), transcript=None), bike_review()],
        [],
        None,
    ),
    "a whole pack smaller than its outline": ([tiny_context()], [], None),
}


@pytest.mark.parametrize("case", list(MINIMUM_CASES), ids=list(MINIMUM_CASES))
def test_the_minimum_budget_is_exact(case: str) -> None:
    contexts, failed, query = MINIMUM_CASES[case]
    minimum = minimum_of(contexts, failed=failed, query=query)
    at_minimum = render_many(contexts, max_tokens=minimum, failed=failed, query=query)
    assert estimate_tokens(at_minimum) <= minimum
    with pytest.raises(VidError) as caught:
        render_many(contexts, max_tokens=minimum - 1, failed=failed, query=query)
    assert caught.value.code is ErrorCode.BAD_REQUEST
    assert f"maxTokens={minimum - 1} is too small" in caught.value.message
    assert f"at least {minimum} " in (caught.value.hint or "")
    whole = render_many(contexts, failed=failed)
    if case == "a whole pack smaller than its outline":
        assert at_minimum == whole  # the whole pack is the smallest answer there is
    else:
        assert minimum < estimate_tokens(whole)
        assert not any(any(chosen_entries(part).values()) for part in video_sections(at_minimum))


@pytest.mark.parametrize("budget", [1, 20])
def test_tiny_budgets_are_errors_that_name_the_minimum(budget: int) -> None:
    with pytest.raises(VidError) as caught:
        render_many(pack_contexts(), max_tokens=budget, failed=PACK_FAILED)
    error = caught.value
    assert error.code is ErrorCode.BAD_REQUEST
    assert MINIMUM.search(error.hint or "") and "leave maxTokens out" in (error.hint or "")


def test_the_query_picks_the_matching_chapter_of_each_video() -> None:
    contexts = [bike_review(), sourdough()]
    minimum = minimum_of(contexts, query="kickstand baking")
    kickstand = get_section(contexts[0], chapter=4).tokens
    baking = get_section(contexts[1], chapter=5).tokens
    budget = minimum + kickstand + baking + 120  # both, with their headings and citations
    for query in ("kickstand baking", "the kickstand, and the baking", "tilt crust", "KICKSTANDS baked"):
        pack = render_many(contexts, max_tokens=budget, query=query)
        assert estimate_tokens(pack) <= budget
        bike, bread = (chosen_entries(section) for section in video_sections(pack))
        assert bike[4] and bread[5], query
        assert "### The kickstand (chapter 4)" in pack and "### Baking (chapter 5)" in pack
        assert "4 · 4:50 The kickstand · 245 tokens · match · below" in pack
        assert_whole_chapters(pack, contexts)
    without = render_many(contexts, max_tokens=budget)
    assert not chosen_entries(video_sections(without)[0])[4]  # spread: the first and last come first


def test_a_query_that_matches_nothing_spreads_the_chapters() -> None:
    contexts = [long_context("Ab12Cd34Ef5", 24, title="Cold start", chapters=True)]  # six equal chapters
    size = get_section(contexts[0], chapter=0).tokens
    budget = minimum_of(contexts) + int(3.5 * size)
    pack = render_many(contexts, max_tokens=budget, query="zeppelin")
    assert pack == render_many(contexts, max_tokens=budget, query="zeppelin")
    assert " · match" not in pack
    chosen = chosen_entries(video_sections(pack)[0])
    assert [i for i, below in chosen.items() if below] == [0, 2, 5]  # the first, the last, the middle
    assert pack == render_many(contexts, max_tokens=budget).replace(
        "spread across each video", 'matches for "zeppelin" first, then spread across each video'
    )


def test_the_budget_is_shared_between_videos() -> None:
    contexts = [bike_review(), sourdough(), topic_talk("ThirdTalk01", "Another review", BIKE_TOPICS, seed=5)]
    minimum = minimum_of(contexts)
    for extra in (900, 1500, 3000):
        pack = render_many(contexts, max_tokens=minimum + extra)
        kept = []
        for section, context in zip(video_sections(pack), contexts, strict=True):
            chosen = [i for i, below in chosen_entries(section).items() if below]
            assert chosen, (extra, context.id)  # every video gets a whole chapter
            kept.append(sum(get_section(context, chapter=i).tokens for i in chosen))
        assert max(kept) - min(kept) < 400, (extra, kept)  # no video takes the others' share


def test_videos_without_chapters_are_read_by_time_sections() -> None:
    context = bike_review(chapters=False)
    budget = minimum_of([context]) + 1200
    pack = render_many([context], max_tokens=budget)
    assert "- Outline: 2 sections of about five minutes (no chapters), 1 in full below\n" in pack
    assert "  - 0 · 0:00–5:03 · 1029 tokens · below" in pack and "### 0:00–5:03 (section 0)" in pack
    assert_whole_chapters(pack, [context])


def test_the_outline_names_the_call_for_each_part() -> None:
    def reader(context: VideoContext) -> str:
        return f"read {context.id} N"

    contexts = [bike_review(), sourdough()]
    budget = minimum_of(contexts) + 300
    pack = render_many(contexts, max_tokens=budget, reader=reader)
    assert "read chapter N (for the tokens beside it): read youtube:BikeReview1 N\n" in pack
    rest = render_many(contexts, max_tokens=budget + 100, reader=section_route("auto", "de"))
    assert (
        "read chapter N (for the tokens beside it): GET /api/v1/section?url=youtube:Sourdough01&lang=de&chapter=N\n"
        in rest
    )
    bare = render_many(contexts, max_tokens=budget)  # no surface to name a call for
    assert re.search(r"^- Outline: 8 chapters, \d in full below$", bare, re.MULTILINE)


def test_not_included_lists_every_input_left_out_and_why() -> None:
    contexts = [bike_review(), sourdough()]
    failed = PACK_FAILED[:1]
    left_out = [("https://www.youtube.com/playlist?list=PLx", "3 of its videos, beyond limit=2")]
    minimum = minimum_of(contexts, failed=failed, left_out=left_out)
    pack = render_many(contexts, max_tokens=minimum, failed=failed, left_out=left_out)
    assert pack.startswith("# Context pack: 2 videos, 2 not included\n")
    not_included = pack.split("## Not included\n", 1)[1].splitlines()
    assert not_included == [
        "- https://youtu.be/xxxxxxxxxxx: unavailable: This video is private.",
        "- https://www.youtube.com/playlist?list=PLx: left out: 3 of its videos, beyond limit=2",
        "- Video 1's transcript: none of its chapters fit what the budget left (its outline names the call for each).",
        "- Video 2's transcript: none of its chapters fit what the budget left (its outline names the call for each).",
    ]
    # With room for some chapters, only the videos left without any are listed, and truly so.
    for extra in range(0, 1400, 50):
        pack = render_many(contexts, max_tokens=minimum + extra, failed=failed, left_out=left_out)
        for number, section in enumerate(video_sections(pack), start=1):
            listed = f"- Video {number}'s transcript: none of its" in pack
            assert listed == (not any(chosen_entries(section).values())), (extra, number)
    whole = render_many(contexts, failed=failed, left_out=left_out)
    assert "3 of its videos, beyond limit=2" in whole and "Video 1's transcript" not in whole


@pytest.mark.parametrize("bad", [0, -5, True])
def test_pack_rejects_budgets_below_one(bad: int) -> None:
    with pytest.raises(VidError) as caught:
        render_many(pack_contexts(), max_tokens=bad)
    assert caught.value.code is ErrorCode.BAD_REQUEST


def test_query_checks() -> None:
    assert check_query(None) is None and check_query("  \n ") is None
    assert check_query(" kickstand\n angle ") == "kickstand angle"
    with pytest.raises(VidError) as caught:
        check_query("x" * (MAX_QUERY_CHARS + 1))
    assert caught.value.code is ErrorCode.BAD_REQUEST and caught.value.hint


def test_pack_of_failures_only() -> None:
    pack = render_many([], failed=PACK_FAILED)
    assert pack.startswith("# Context pack: 0 videos, 2 not included\n")
    assert "## Videos" not in pack


def test_pack_formatter_renders_one_video_with_budget() -> None:
    context = long_context("Ab12Cd34Ef5", 23, title="Cold start", chapters=True)
    pack = render(context, "pack", RenderOptions(max_tokens=800))
    assert estimate_tokens(pack) <= 800
    assert "· below" in pack
    assert_whole_chapters(pack, [context])


# --- keyword relevance (until search is built) ---------------------------------------------------


def test_relevance_scores_the_parts_that_say_the_words() -> None:
    parts = ["the kickstand bends back", "baking the loaf, then bake again", "nothing here", ""]
    assert query_terms("How does the Kickstand bake?") == ["kickstand", "bak"]
    scores = part_scores("kickstand", parts)
    assert scores[0] > 0 and scores[1:] == [0.0, 0.0, 0.0]
    baked = part_scores("baked", parts)
    assert baked[1] > 0 and baked[0] == baked[2] == 0.0
    assert part_scores("the of and", parts) == [0.0] * 4  # only common words
    assert part_scores(None, parts) == [0.0] * 4 and part_scores("x", []) == []
    # A word every part says counts for less than one only some say.
    common = part_scores("engine kickstand", ["engine kickstand", "engine", "engine"])
    assert common[0] > 2 * part_scores("engine", ["engine kickstand", "engine", "engine"])[0]


@pytest.mark.parametrize("format_id", ["srt", "vtt"])
def test_plain_transcripts_render_as_the_general_path_does(format_id: str) -> None:
    """One-line, speakerless transcripts take a batched path; it must write the same bytes as the
    per-cue path, which a trailing space on each text (cleaned away) forces."""
    texts = ["a < b & c > d", "&amp;lt; stays spelled out", "<i>words</i> -->", "x" * 300, "ünïcödé 字幕"]
    times = [(-1.0, 0.5), (0.0, 0.0), (59.9995, 61.2), (3599.999, 3600.0), (36000.25, 35999.0)]
    plain = [Segment(start_sec=s, end_sec=e, text=t) for (s, e), t in zip(times, texts, strict=True)]
    padded = [Segment(start_sec=s, end_sec=e, text=t + " ") for (s, e), t in zip(times, texts, strict=True)]
    formatter = FORMATTERS[format_id]

    def rendered(segments: list[Segment]) -> str:
        context = sample_context()
        assert context.transcript is not None
        transcript = msgspec.structs.replace(context.transcript, segments=segments)
        return formatter.render(msgspec.structs.replace(context, transcript=transcript), RenderOptions())

    fast = rendered(plain)
    assert fast == rendered(padded)
    assert fast.count(" --> ") == len(texts)
    assert rendered([]) == ("WEBVTT\n" if format_id == "vtt" else "")
