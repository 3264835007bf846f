"""Outlines (chapters, else ~5-minute sections) and get_section by index, title or time range."""

from __future__ import annotations

import itertools

import msgspec
import pytest

from vid2context.errors import ErrorCode, VidError
from vid2context.formats import FORMATTERS, RenderOptions, context_header, render, render_view
from vid2context.formats.blocks import chapter_spans
from vid2context.models import Chapter, Segment, Transcript, VideoContext, VideoMetadata
from vid2context.outline import Outline, Section, get_section, outline, outline_for_api, text_costs
from vid2context.tokens import estimate_tokens

WORDS = [
    "well",
    "the",
    "thing",
    "about",
    "compilers",
    "is",
    "that",
    "they",
    "read",
    "your",
    "code",
    "more",
    "carefully",
    "than",
    "you",
    "do",
]


def speech(minutes: float, *, step: float = 4.0, pauses: dict[float, float] | None = None) -> list[Segment]:
    """A segment every ``step`` seconds, a sentence end every fifth; ``pauses`` maps a start time
    to the silence before it."""
    segments = []
    t = 0.0
    i = 0
    pauses = pauses or {}
    while t < minutes * 60:
        gap = pauses.get(t, 0.0)
        text = " ".join(WORDS[(i + j) % len(WORDS)] for j in range(9)) + ("." if i % 5 == 4 else "")
        segments.append(Segment(start_sec=t, end_sec=t + step - 0.3 - gap, text=text))
        t += step
        i += 1
    return segments


def make_context(
    segments: list[Segment],
    *,
    chapters: list[Chapter] | None = None,
    duration: float | None = None,
    platform: str = "youtube",
) -> VideoContext:
    native = "Qw3Er5Ty7Ui"
    return VideoContext(
        id=f"{platform}:{native}",
        metadata=VideoMetadata(
            id=native,
            platform=platform,  # type: ignore[arg-type]
            title="Compilers, explained",
            url=f"https://www.youtube.com/watch?v={native}" if platform == "youtube" else None,
            channel="Code Club",
            duration_sec=duration,
            chapters=chapters or [],
        ),
        transcript=Transcript(
            language="en",
            origin="asr",
            timing="segment-approx",
            producer="stt/groq/whisper",
            segments=segments,
        ),
    )


CHAPTERS = [
    Chapter(title="Intro", start_sec=0),
    Chapter(title="Setup", start_sec=95),
    Chapter(title="Setup advanced", start_sec=200),
    Chapter(title="Parsing the tokens", start_sec=330, end_sec=500),
    Chapter(title="Wrap-up & questions", start_sec=540),
]


def chaptered() -> VideoContext:
    return make_context(speech(10), chapters=CHAPTERS, duration=600)


def total_of(context: VideoContext) -> int:
    assert context.transcript is not None
    return estimate_tokens(" ".join(seg.text for seg in context.transcript.segments))


# --- outline -----------------------------------------------------------------------------------


def test_chapters_outline() -> None:
    context = chaptered()
    result = outline(context)
    assert result.sections == "chapters"
    assert [entry.title for entry in result.chapters] == [ch.title for ch in CHAPTERS]
    assert [entry.index for entry in result.chapters] == [0, 1, 2, 3, 4]
    assert [entry.start for entry in result.chapters] == ["0:00", "1:35", "3:20", "5:30", "9:00"]
    # "Parsing the tokens" says it ends at 500, but the segments up to the next chapter are its.
    assert [entry.end_sec for entry in result.chapters] == [95, 200, 330, 540, 600]
    assert result.chapters[1].url == "https://www.youtube.com/watch?v=Qw3Er5Ty7Ui&t=95s"
    assert result.total_tokens == total_of(context)
    assert abs(sum(entry.tokens for entry in result.chapters) - result.total_tokens) <= len(result.chapters)
    assert result.title == "Compilers, explained"
    assert result.duration_sec == 600
    assert result.transcript is not None and result.transcript.producer == "stt/groq/whisper"
    assert "get_section" in result.next and "chapter=" in result.next


def test_outline_wire_shape_matches_the_contract() -> None:
    wire = msgspec.json.decode(msgspec.json.encode(outline(chaptered())))
    assert list(wire) == [
        "title",
        "url",
        "durationSec",
        "transcript",
        "sections",
        "totalTokens",
        "chapters",
        "metadata",
        "next",
    ]
    assert wire["transcript"] == {
        "origin": "asr",
        "language": "en",
        "producer": "stt/groq/whisper",
        "requestedLanguage": None,  # the language asked for, when no track was in it
        "availableLanguages": [],
    }
    assert set(wire["chapters"][0]) == {"index", "title", "startSec", "endSec", "start", "tokens", "url"}
    assert wire["metadata"] == {
        "id": "youtube:Qw3Er5Ty7Ui",
        "title": "Compilers, explained",
        "channel": "Code Club",
        "url": "https://www.youtube.com/watch?v=Qw3Er5Ty7Ui",
        "durationSec": 600,
        "language": "en",
    }  # the summary: no description, tags, thumbnails or second list of chapters
    assert msgspec.json.decode(msgspec.json.encode(outline(chaptered())), type=Outline) == outline(
        chaptered()
    )


def test_outline_for_api_shape() -> None:
    context = chaptered()
    wire = msgspec.json.decode(msgspec.json.encode(outline_for_api(context)))
    assert list(wire) == ["metadata", "chapters", "totalTokens"]
    assert wire["chapters"][0] == {
        "title": "Intro",
        "startSec": 0,
        "endSec": 95,
        "tokens": outline(context).chapters[0].tokens,
    }
    assert wire["totalTokens"] == total_of(context)
    assert wire["metadata"]["title"] == "Compilers, explained"


def test_time_outline_of_a_23_minute_talk() -> None:
    context = make_context(speech(23), duration=23 * 60)
    result = outline(context)
    assert result.sections == "time"
    sections = result.chapters
    assert len(sections) == 5
    assert context.transcript is not None
    starts = {seg.start_sec for seg in context.transcript.segments}
    assert sections[0].start_sec == 0
    for entry in sections[1:]:
        assert entry.start_sec in starts  # cut on segment boundaries
    for previous, entry in itertools.pairwise(sections):
        assert previous.end_sec == entry.start_sec
    assert sections[-1].end_sec == 23 * 60
    for n, entry in enumerate(sections[1:], start=1):
        assert abs(entry.start_sec - n * 300) <= 30
    assert sections[0].title == f"0:00–{sections[1].start}"
    assert abs(sum(entry.tokens for entry in sections) - result.total_tokens) <= len(sections)
    assert "five minutes" in result.next


def flat_speech(minutes: float, *, breaks: dict[float, float]) -> list[Segment]:
    """A segment every 4 s with no punctuation; ``breaks`` maps a start to the pause before it,
    and the segment before it ends a sentence."""
    segments = []
    for i in range(int(minutes * 15)):
        start = i * 4.0
        nxt = start + 4.0
        end = nxt - breaks.get(nxt, 0.2)
        text = " ".join(WORDS[(i + j) % len(WORDS)] for j in range(9)) + ("." if nxt in breaks else "")
        segments.append(Segment(start_sec=start, end_sec=end, text=text))
    return segments


def test_time_sections_prefer_pauses_and_sentence_ends() -> None:
    # Around 5:00 only 5:16 follows a sentence end and a 2.5 s pause; around 10:00, 9:48 follows a
    # sentence end alone; around 15:00 nothing stands out, so the cut is at the mark.
    context = make_context(flat_speech(20, breaks={316.0: 2.5, 588.0: 0.2}), duration=1200)
    sections = outline(context).chapters
    assert [entry.start_sec for entry in sections] == [0, 316.0, 588.0, 900.0]


def test_time_sections_merge_a_short_tail() -> None:
    context = make_context(speech(21), duration=21 * 60)
    sections = outline(context).chapters
    assert len(sections) == 4
    assert sections[-1].end_sec == 21 * 60
    assert sections[-1].end_sec - sections[-1].start_sec > 300


def test_time_sections_survive_long_silences() -> None:
    segments = [s for s in speech(30) if not 400 <= s.start_sec < 1300]
    context = make_context(segments, duration=1800)
    sections = outline(context).chapters
    assert all(entry.tokens > 0 for entry in sections)
    assert [entry.index for entry in sections] == list(range(len(sections)))
    starts = [entry.start_sec for entry in sections]
    assert starts == sorted(set(starts))


def test_time_outline_without_duration_uses_the_last_segment() -> None:
    context = make_context(speech(7))
    result = outline(context)
    assert result.duration_sec == pytest.approx(7 * 60 - 0.3)
    assert len(result.chapters) == 2


def test_custom_section_length() -> None:
    assert len(outline(make_context(speech(10), duration=600), section_sec=60).chapters) == 10


def test_outline_without_transcript() -> None:
    context = msgspec.structs.replace(chaptered(), transcript=None)
    result = outline(context)
    assert result.transcript is None
    assert result.total_tokens == 0
    assert [entry.tokens for entry in result.chapters] == [0] * 5
    assert "no transcript" in result.next
    assert outline(msgspec.structs.replace(make_context([]), transcript=None)).chapters == []


# --- get_section -------------------------------------------------------------------------------


def test_section_by_index_matches_the_outline() -> None:
    context = chaptered()
    entries = outline(context).chapters
    for entry in entries:
        section = get_section(context, chapter=entry.index)
        assert section.title == entry.title
        assert section.index == entry.index
        assert section.start_sec == entry.start_sec
        assert section.tokens == entry.tokens
        assert section.context.transcript is not None
        assert all(
            entry.start_sec <= seg.start_sec < (entry.end_sec or 1e9)
            for seg in section.context.transcript.segments
        )


def test_section_by_digit_string() -> None:
    context = chaptered()
    assert get_section(context, chapter=" 2 ").title == "Setup advanced"
    assert get_section(context, chapter="0").title == "Intro"


@pytest.mark.parametrize(
    ("chapter", "title"),
    [
        ("setup", "Setup"),  # exact beats the prefix match "Setup advanced"
        ("SETUP ADV", "Setup advanced"),  # prefix
        ("parsing", "Parsing the tokens"),
        ("tokens", "Parsing the tokens"),  # substring
        ("questions", "Wrap-up & questions"),
        ("  wrap-up  ", "Wrap-up & questions"),
    ],
)
def test_section_by_title(chapter: str, title: str) -> None:
    assert get_section(chaptered(), chapter=chapter).title == title


def test_prefix_beats_substring() -> None:
    chapters = [Chapter(title="The setup", start_sec=0), Chapter(title="Setup again", start_sec=60)]
    context = make_context(speech(3), chapters=chapters, duration=180)
    assert get_section(context, chapter="setup").title == "Setup again"


def test_time_section_by_index() -> None:
    context = make_context(speech(23), duration=23 * 60)
    section = get_section(context, chapter=4)
    assert section.end_sec == 23 * 60
    assert section.tokens == outline(context).chapters[4].tokens


@pytest.mark.parametrize(
    ("from_", "to"),
    [("1:30", "3:00"), (90, 180), (90.0, "180"), ("1m30s", "3m"), ("PT1M30S", "0:03:00"), ("90", "180.0")],
)
def test_section_by_range_in_any_form(from_: str | float, to: str | float) -> None:
    context = chaptered()
    section = get_section(context, from_=from_, to=to)
    assert (section.start_sec, section.end_sec) == (90, 180)
    assert section.title == "1:30–3:00"
    assert section.index is None
    assert section.context.transcript is not None
    segments = section.context.transcript.segments
    assert segments[0].start_sec == 88  # overlaps 1:30 (88 to 91.7)
    assert segments[-1].start_sec == 176
    assert section.section_line() == 'Section "1:30–3:00": 1:30 to 3:00'
    assert section.tokens == estimate_tokens(" ".join(s.text for s in segments))


def test_section_from_only_and_to_only() -> None:
    context = chaptered()
    tail = get_section(context, from_="9:00")
    assert (tail.start_sec, tail.end_sec) == (540, 600)
    head = get_section(context, to="0:10")
    assert (head.start_sec, head.end_sec) == (0, 10)
    assert head.context.transcript is not None
    assert [s.start_sec for s in head.context.transcript.segments] == [0, 4, 8]
    clamped = get_section(context, from_="9:00", to="2h")
    assert clamped.end_sec == 600


def test_section_at_a_point() -> None:
    section = get_section(chaptered(), from_="0:05", to="0:05")
    assert section.context.transcript is not None
    assert [s.start_sec for s in section.context.transcript.segments] == [4]


def test_section_renders_with_any_formatter() -> None:
    section = get_section(chaptered(), chapter="Setup")
    text = render(section.context, "text")
    assert text.strip()
    srt_text = render(section.context, "srt")
    assert srt_text.startswith("1\n00:01:36,000 --> ")
    # The header still describes the whole video.
    assert context_header(section.context).startswith("# Compilers, explained")
    assert section.section_line() == 'Section "Setup": 1:35 to 3:20'


def test_section_is_a_struct_on_the_wire() -> None:
    wire = msgspec.json.decode(msgspec.json.encode(get_section(chaptered(), chapter=1)))
    assert {"title", "startSec", "endSec", "tokens", "index", "context"} <= set(wire)
    assert isinstance(
        msgspec.json.decode(msgspec.json.encode(get_section(chaptered(), chapter=1)), type=Section), Section
    )


# --- errors ------------------------------------------------------------------------------------


def expect(code: ErrorCode, **kwargs: object) -> VidError:
    with pytest.raises(VidError) as caught:
        get_section(chaptered(), **kwargs)  # type: ignore[arg-type]
    assert caught.value.code is code, caught.value
    return caught.value


def test_nothing_asked_is_bad_request() -> None:
    error = expect(ErrorCode.BAD_REQUEST)
    assert error.hint and "chapter" in error.hint and "from" in error.hint


def test_from_after_to_is_bad_request() -> None:
    error = expect(ErrorCode.BAD_REQUEST, from_="3:00", to="1:00")
    assert "3:00" in error.message and "1:00" in error.message


@pytest.mark.parametrize("from_", ["10:00", "11:00", 3600])
def test_from_past_the_end_is_bad_request(from_: str | int) -> None:
    error = expect(ErrorCode.BAD_REQUEST, from_=from_)
    assert "10:00" in error.message


@pytest.mark.parametrize("value", ["abc", "-5", "", "1:75", -3, float("nan")])
def test_unreadable_times_are_bad_request(value: str | float) -> None:
    expect(ErrorCode.BAD_REQUEST, from_=value)
    expect(ErrorCode.BAD_REQUEST, to=value)


@pytest.mark.parametrize("chapter", [5, 99, -1, "5", "99999999999999999999999"])
def test_index_out_of_range_is_not_found(chapter: int | str) -> None:
    error = expect(ErrorCode.NOT_FOUND, chapter=chapter)
    assert error.hint and "0 to 4" in error.hint


def test_unknown_title_is_not_found_with_titles() -> None:
    error = expect(ErrorCode.NOT_FOUND, chapter="benchmarks")
    assert error.hint is not None
    assert '0 "Intro"' in error.hint and '4 "Wrap-up & questions"' in error.hint


def test_unknown_title_hint_stays_brief() -> None:
    chapters = [
        Chapter(title=f"Chapter number {n} with a rather long title indeed", start_sec=n * 10)
        for n in range(40)
    ]
    context = make_context(speech(8), chapters=chapters, duration=480)
    with pytest.raises(VidError) as caught:
        get_section(context, chapter="nothing like it")
    assert caught.value.hint is not None
    assert len(caught.value.hint) < 500
    assert "(40 in all)" in caught.value.hint


@pytest.mark.parametrize("chapter", ["", "   ", True])
def test_empty_or_odd_chapter_is_bad_request(chapter: object) -> None:
    expect(ErrorCode.BAD_REQUEST, chapter=chapter)


def test_chapter_and_range_together_is_bad_request() -> None:
    expect(ErrorCode.BAD_REQUEST, chapter=1, from_="1:00")


def test_section_of_a_video_without_transcript() -> None:
    context = msgspec.structs.replace(make_context([]), transcript=None)
    with pytest.raises(VidError) as caught:
        get_section(context, chapter=0)
    assert caught.value.code is ErrorCode.NOT_FOUND


# --- what a section shows, what reading costs ----------------------------------------------------


@pytest.mark.parametrize(
    ("where", "titles"),
    [
        ({"chapter": "Setup"}, ["Setup"]),  # its neighbours only touch it
        ({"from": "1:30", "to": "3:00"}, ["Intro", "Setup"]),
        ({"from": "3:20", "to": "3:20"}, ["Setup advanced"]),
        ({"from": "9:30"}, ["Wrap-up & questions"]),
    ],
)
def test_a_section_keeps_only_the_chapters_it_overlaps(where: dict[str, str], titles: list[str]) -> None:
    """Markdown prints a heading per chapter: a section that kept every chapter printed empty
    headings for the ones outside it (issue #12 item 3)."""
    section = get_section(
        chaptered(), chapter=where.get("chapter"), from_=where.get("from"), to=where.get("to")
    )
    assert [chapter.title for chapter in section.context.metadata.chapters] == titles
    markdown = render(section.context, "markdown")
    assert [line.split(" [")[0] for line in markdown.splitlines() if line.startswith("## ")] == [
        f"## {title}" for title in titles
    ]
    whole = {span.title: (span.start_sec, span.end_sec) for span in chapter_spans(chaptered())}
    assert {span.title: (span.start_sec, span.end_sec) for span in chapter_spans(section.context)} == {
        title: whole[title] for title in titles
    }  # a kept chapter keeps its own span


def test_costs_are_the_callers_measure_of_what_it_returns() -> None:
    context = chaptered()
    measured = outline(context, costs=text_costs())
    for entry in measured.chapters:
        section = get_section(context, chapter=entry.index)
        text = render_view(section.context, FORMATTERS["text"], RenderOptions(), section.section_line())
        assert entry.tokens == estimate_tokens(text)
    assert measured.total_tokens == estimate_tokens(render_view(context, FORMATTERS["text"], RenderOptions()))
    assert f"about {measured.total_tokens} tokens" in measured.next
    assert outline_for_api(context, costs=text_costs()).total_tokens == measured.total_tokens
    words = outline(context)  # without costs: the words alone
    assert words.total_tokens == total_of(context) < measured.total_tokens
