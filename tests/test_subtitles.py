"""WebVTT and SubRip to segments: the shapes real files come in, and the ways they go wrong.

Cross-checked against two independent parsers (``webvtt-py`` and ``srt``, dev dependencies) on the
well-formed files, so our leniency never changes what a correct file means.
"""

from __future__ import annotations

import html
import io

import pytest
import srt
import webvtt

from vid2context.errors import ErrorCode, VidError
from vid2context.providers.captions import MAX_CAPTION_CHARS
from vid2context.providers.subtitles import parse_srt, parse_subtitles, parse_vtt

VTT = """WEBVTT - a title
Kind: captions
Language: en

NOTE a comment that spans
two lines --> and has an arrow

STYLE
::cue { color: yellow }

REGION
id:fred width:40%

intro
00:00:00.500 --> 00:00:04.000 align:start position:10% line:0
<v Anna Smith>Welcome to the <c.yellow>show</c>.</v>

00:00:05.000 --> 00:00:08.250
The weather today
is <i>sunny</i> &amp; warm.

01:00:00.000 --> 01:00:01.000
An hour in.
"""

SRT = """1
00:00:00,500 --> 00:00:04,000
<i>Welcome</i> to the <font color="#ff0">show</font>.

2
00:00:05,000 --> 00:00:08,250
{\\an8}The weather today
is sunny &amp; warm.

3
01:00:00,000 --> 01:00:01,000
An hour in.
"""


def _plain(segments):
    return [(s.start_sec, s.end_sec, s.text) for s in segments]


def test_webvtt_cues_tags_voices_and_blocks() -> None:
    segments = parse_vtt(VTT)
    assert _plain(segments) == [
        (0.5, 4.0, "Welcome to the show."),
        (5.0, 8.25, "The weather today is sunny & warm."),
        (3600.0, 3601.0, "An hour in."),
    ]
    assert segments[0].speaker == "Anna Smith"
    assert segments[1].speaker is None


def test_webvtt_agrees_with_webvtt_py() -> None:
    theirs = webvtt.from_buffer(io.StringIO(VTT))
    ours = parse_vtt(VTT)
    assert [c.start_in_seconds for c in theirs] == [int(s.start_sec) for s in ours]
    assert [" ".join(html.unescape(c.text).split()) for c in theirs] == [
        s.text for s in ours
    ]  # it leaves &amp;


def test_srt_cues_and_tags() -> None:
    assert _plain(parse_srt(SRT)) == [
        (0.5, 4.0, "Welcome to the show."),
        (5.0, 8.25, "The weather today is sunny & warm."),
        (3600.0, 3601.0, "An hour in."),
    ]


def test_srt_agrees_with_srt_library() -> None:
    theirs = list(srt.parse(SRT))
    ours = parse_srt(SRT)
    assert [c.start.total_seconds() for c in theirs] == [s.start_sec for s in ours]
    assert [c.end.total_seconds() for c in theirs] == [s.end_sec for s in ours]


@pytest.mark.parametrize("transform", [
    lambda t: "\ufeff" + t,
    lambda t: t.replace("\n", "\r\n"),
    lambda t: t.replace("\n", "\r"),
    lambda t: t.replace("\n\n", "\n   \n"),  # blank lines holding spaces
])  # fmt: skip
def test_srt_survives_boms_line_ends_and_blank_lines_with_spaces(transform) -> None:
    assert _plain(parse_srt(transform(SRT))) == _plain(parse_srt(SRT))


@pytest.mark.parametrize("transform", [lambda t: "\ufeff" + t, lambda t: t.replace("\n", "\r\n")])
def test_webvtt_survives_boms_and_crlf(transform) -> None:
    assert _plain(parse_vtt(transform(VTT))) == _plain(parse_vtt(VTT))


def test_sloppy_srt_without_blank_lines_counters_or_milliseconds() -> None:
    text = "00:00:01,000 --> 00:00:02,000\nOne\n2\n0:00:03.5 --> 0:00:04\nTwo\n00:00:05,000 --> 00:00:04,000\nBackwards\n"
    assert _plain(parse_srt(text)) == [(1.0, 2.0, "One"), (3.5, 4.0, "Two"), (5.0, 5.0, "Backwards")]


def test_empty_cues_and_garbage_are_dropped() -> None:
    text = "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n<i> </i>\n\nnot a cue\n\n00:00:03.000 --> 00:00:04.000\nKept\n"
    assert _plain(parse_vtt(text)) == [(3.0, 4.0, "Kept")]
    assert parse_vtt("WEBVTT\n") == []
    assert parse_srt("") == []
    assert parse_srt("just some text\nwith no timing") == []


def test_youtube_rolling_auto_captions_keep_each_word_once() -> None:
    text = (
        "WEBVTT\nKind: captions\nLanguage: en\n\n"
        "00:00:00.000 --> 00:00:02.500 align:start position:0%\n \n"
        "hey<00:00:00.320><c> this</c><00:00:00.480><c> is</c>\n\n"
        "00:00:02.500 --> 00:00:02.510 align:start position:0%\nhey this is\n \n\n"
        "00:00:02.510 --> 00:00:05.000 align:start position:0%\nhey this is\n"
        "just<00:00:02.800><c> a</c><00:00:03.000><c> test</c>\n"
    )
    assert _plain(parse_vtt(text)) == [(0.0, 2.5, "hey this is"), (2.51, 5.0, "just a test")]


def test_a_line_repeated_by_hand_made_captions_is_kept() -> None:
    text = "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nNo.\n\n00:00:02.000 --> 00:00:03.000\nNo.\n"
    assert [s.text for s in parse_vtt(text)] == ["No.", "No."]


def test_dispatch_by_extension_and_by_sniffing() -> None:
    json3 = '{"events": [{"tStartMs": 1000, "dDurationMs": 500, "segs": [{"utf8": "hi"}]}]}'
    assert _plain(parse_subtitles(json3, ext="json3")) == [(1.0, 1.5, "hi")]
    assert _plain(parse_subtitles(json3)) == [(1.0, 1.5, "hi")]
    xml = '<timedtext format="3"><body><p t="2000" d="1000">yo</p></body></timedtext>'
    assert _plain(parse_subtitles(xml, ext="srv3")) == [(2.0, 3.0, "yo")]
    assert _plain(parse_subtitles(VTT.encode())) == _plain(parse_vtt(VTT))
    assert _plain(parse_subtitles(SRT)) == _plain(parse_srt(SRT))
    assert _plain(parse_subtitles(SRT, ext=".SRT")) == _plain(parse_srt(SRT))


def test_an_oversized_file_is_refused() -> None:
    with pytest.raises(VidError) as caught:
        parse_srt("x" * (MAX_CAPTION_CHARS + 1))
    assert caught.value.code is ErrorCode.TOO_LARGE


# --- cue text verbatim ---------------------------------------------------------------------------

# A conforming WebVTT file: text escaped as the spec asks, markup of every kind the spec has.
VERBATIM_VTT = """WEBVTT

00:00:01.000 --> 00:00:02.000
<v.loud Ann &amp; Bob>performance &amp; &lt;price&gt;.</v>

00:00:02.000 --> 00:00:03.000
wrap it in a <c.code>&lt;div&gt;</c>

00:00:03.000 --> 00:00:04.000
<i>a</i> &lt; <b>b</b> &gt; <u>c</u>

00:00:04.000 --> 00:00:05.000
<lang en>&amp;amp;lt;</lang> <ruby>漢<rt>kan</rt></ruby>

00:00:05.000 --> 00:00:06.000
🎉<00:00:05.500> done
"""


def test_webvtt_removes_its_markup_and_decodes_once() -> None:
    segments = parse_vtt(VERBATIM_VTT)
    assert [s.text for s in segments] == [
        "performance & <price>.",
        "wrap it in a <div>",
        "a < b > c",
        "&amp;lt; 漢kan",
        "🎉 done",
    ]
    assert segments[0].speaker == "Ann & Bob"


def test_verbatim_webvtt_agrees_with_webvtt_py() -> None:
    theirs = [" ".join(html.unescape(c.text).split()) for c in webvtt.from_buffer(io.StringIO(VERBATIM_VTT))]
    assert theirs == [s.text for s in parse_vtt(VERBATIM_VTT)]


def test_webvtt_from_a_writer_that_does_not_escape_keeps_its_words() -> None:
    """ffmpeg's WebVTT output writes text bare: the spec's tags still go, nothing else does."""
    text = 'WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nwrap it in a <div>, a < b > c & <I>d</I> <font color="red">e</font>\n'
    assert [s.text for s in parse_vtt(text)] == ["wrap it in a <div>, a < b > c & d e"]


def test_rolling_captions_compare_text_not_markup() -> None:
    text = (
        "WEBVTT\n\n00:00:00.000 --> 00:00:02.000\n&lt;div&gt;<00:00:00.500><c> one</c>\n\n"
        "00:00:02.000 --> 00:00:04.000\n<div> one\n&lt;p&gt;<00:00:02.500><c> two</c>\n"
    )
    assert [s.text for s in parse_vtt(text)] == ["<div> one", "<p> two"]


def test_srt_removes_its_formatting_and_keeps_bare_brackets() -> None:
    text = (
        "1\n00:00:01,000 --> 00:00:02,000\n{\\an8}<I>performance</I> & <price>.\n\n"
        "2\n00:00:02,000 --> 00:00:03,000\nwrap it in a <div>\n\n"
        '3\n00:00:03,000 --> 00:00:04,000\na < b > c <font color="#ff0">&amp;</font> <s>x</s>\n\n'
        "4\n00:00:04,000 --> 00:00:05,000\n<v Ann>🎉 done</v>\n"
    )
    segments = parse_srt(text)
    assert [s.text for s in segments] == [
        "performance & <price>.",
        "wrap it in a <div>",
        "a < b > c & x",
        "🎉 done",
    ]
    assert segments[3].speaker == "Ann"
    assert [c.content for c in srt.parse(text)][1] == "wrap it in a <div>"  # the srt library reads it so too
