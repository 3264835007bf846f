"""The optional C parse of classic timedtext (``src/_vid2context_captions.c``) against the Python one.

The C module takes only the usual shape and says ``None`` for anything else, so what must hold is:
where it answers, exactly the segments the pure-Python path gives; where it does not, the Python
path runs as it would without it. ``make test`` builds it (the wheel's build hook, with the
machine's compiler), and it must be here: the speed target for the classic parse depends on it.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator

import pytest
from bench.bench_formats import build_transcript, pure_python
from hypothesis import example, given
from hypothesis import strategies as st

from vid2context.models import Segment
from vid2context.providers import captions

from .test_captions_equivalence import _FUZZ, _classic
from .test_captions_equivalence import _outcome as parsed_or_refused

try:
    import _vid2context_captions as speedups
except ImportError:  # test_the_c_parse_is_built_here says what to do
    speedups = None

needs_speedups = pytest.mark.skipif(speedups is None, reason="the C module is not built")


def _doc(*bodies: str, start: str = "1.5", dur: str = "2") -> str:
    cues = "".join(f'<text start="{start}" dur="{dur}">{body}</text>' for body in bodies)
    return f'<?xml version="1.0" encoding="utf-8" ?><transcript>{cues}</transcript>'


@pytest.fixture
def without_c(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(captions, "_classic_in_c", None)
    yield


def _outcome(document: str) -> object:
    return parsed_or_refused(captions.parse_timedtext_xml, document)


_python = pure_python(_outcome)


def test_the_c_parse_is_built_here() -> None:
    assert speedups is not None, (
        "_vid2context_captions is not built: install a C compiler and Python's headers "
        "(apt-get install gcc python3-dev), then `make test` again (it rebuilds the project)"
    )
    assert captions._classic_in_c is speedups.classic


@needs_speedups
def test_the_bench_file_is_parsed_in_c_with_the_same_segments() -> None:
    classic = build_transcript()[0]
    segments = speedups.classic(classic, Segment)
    assert segments is not None and len(segments) == 2500
    assert segments == _python(classic)


@needs_speedups
@pytest.mark.parametrize("token", sorted(captions._BOTH_LAYERS))
def test_every_reference_it_decodes_decodes_as_in_python(token: str) -> None:
    document = _doc(f"a{token}b", f"  {token} {token}\n", token)
    assert speedups.classic(document, Segment) is not None
    assert speedups.classic(document, Segment) == _python(document)


# YouTube's formatting tags as the XML holds them, each of which the C parse removes whole.
_FORMATTING = ["&lt;i&gt;", "&lt;/i&gt;", "&lt;I>", "&lt;b/&gt;", "&lt;/B>", "&lt;u&gt;", "&lt;/font&gt;"]
_FORMATTING += [
    '&lt;font color="#fff"&gt;',
    "&lt;font color=&quot;#E5E5E5&quot;&gt;",
    "&lt;FONT size=&quot;&quot;/>",
]
_FORMATTING += ['&lt;font color=&quot;#E5E5E5&quot; face="x y"&gt;']


@needs_speedups
@pytest.mark.parametrize("tag", _FORMATTING)
def test_every_formatting_tag_it_removes_is_removed_as_in_python(tag: str) -> None:
    document = _doc(f"a{tag}b", f"  {tag} word {tag}", tag, f"x &amp;lt;{tag}&amp;gt; y")
    assert speedups.classic(document, Segment) is not None
    assert speedups.classic(document, Segment) == _python(document)


def test_the_recorded_caption_file_is_parsed_in_c(fixtures) -> None:  # noqa: ANN001
    """The recorded answer has italics (``&lt;i>not&lt;/i>``) and an empty cue."""
    document = (fixtures / "youtube/yta/transcript.xml.static").read_text("utf-8")
    if speedups is not None:
        assert speedups.classic(document, Segment) == _python(document)
    assert [s.text for s in captions.parse_timedtext_xml(document)][
        1
    ] == "this is not the original transcript"


@needs_speedups
@pytest.mark.parametrize(
    "body",
    [
        "caf\xe9 cr\xe8me",  # one byte per character, not ASCII
        "\u65e5\u672c\u8a9e &amp;amp; \u3000 x",  # two bytes, with an ideographic space
        "\U0001f389 party\u2028line\x85next",  # four bytes; line and paragraph separators
        "\t lead and trail \n",
        "\x1c\x1d\x1e\x1f\xa0\u1680\u2000\u200a\u202f\u205f",  # nothing but whitespace: dropped
        "",
    ],
)
def test_whitespace_and_wide_characters_as_in_python(body: str) -> None:
    document = _doc(body, "next")
    assert speedups.classic(document, Segment) == _python(document)


@needs_speedups
@pytest.mark.parametrize(
    "document",
    [
        _doc("&lt;div&gt;"),  # markup that is not YouTube's formatting: words
        _doc("a &lt; b"),  # an escaped "<" that starts no tag
        _doc("&lt;\u0131&gt;"),  # a dotless i, which Python's case folding takes for an i
        _doc("&lt;font\ncolor=&quot;x&quot;&gt;"),  # not one space before the attribute
        _doc("&lt;font color=&quot;a&amp;b&quot;&gt;"),  # an "&" in a value
        _doc("&lt;font color=x&gt;"),  # an unquoted value
        _doc("&lt;i &gt;"),
        _doc("Q &amp; A"),  # an "&" that starts no reference
        _doc("&amp;nbsp;"),  # a reference outside the table
        _doc("x", start="01.5"),  # a time JSON would not read
        _doc("x", start="1.2345"),  # more than three decimals
        _doc("x", start="1.2.3"),
        _doc("x", dur="4503599627370497"),  # too large to stay exact
        _doc("x", start=".5"),
        '<transcript><text dur="1" start="0">swapped</text></transcript>',
        '<transcript><text start="0" dur="1"/></transcript>',
        '<transcript><text start="0" dur="1">a<b</text></transcript>',
        '<transcript><text start="0" dur="1">a</text><p t="1" d="1">p</p></transcript>',
        '<transcript><text\nstart="0" dur="1">a</text></transcript>',
    ],
)
def test_any_other_shape_is_left_to_python(document: str) -> None:
    assert speedups.classic(document, Segment) is None
    assert _outcome(document) == _python(document)


# The usual shape, whose bodies hold mostly what the C parse decodes (every reference token,
# whitespace of every kind, characters one to four bytes wide) and sometimes what it declines.
_ACCEPTED = ["a", "Zq", " ", "  ", "\n", "\t", "\xa0", "\u3000", "\x85", "\xe9", "\u65e5", "\U0001f389"]
_ACCEPTED += [";", "#", '"', ">", "'", "amp;", "\x01", *captions._BOTH_LAYERS, *_FORMATTING]
_DECLINED = ["&", "&amp;", "&lt;div&gt;", "&lt;", "&amp;nbsp;", "&#233;", "<", "<br/>", "&lt;font color=x>"]
_BODY = st.lists(st.sampled_from(_ACCEPTED), max_size=10)
_TIME = st.sampled_from(
    ["0", "1", "1.5", "2.25", "3.125", "12.96", "3600", "0.001"] * 12 + ["01", ".5", "1."]
)


@st.composite
def _usual(draw: st.DrawFn) -> str:
    bodies = draw(st.lists(_BODY.map("".join), min_size=1, max_size=6))
    if draw(st.integers(0, 9)) == 0:  # one file in ten has something the C parse declines
        bodies[-1] += draw(st.sampled_from(_DECLINED))
    cues = "".join(
        f'<text start="{draw(_TIME)}" dur="{draw(_TIME)}">{body}</text>' + draw(st.sampled_from(["", "\n"]))
        for body in bodies
    )
    return f'<?xml version="1.0" encoding="utf-8" ?><transcript>{cues}</transcript>'


@needs_speedups
@_FUZZ
@given(_usual())
@example(_doc("&amp;amp;amp;lt; &amp;amp;#39;", "\x01 &amp;lt;"))
def test_generated_usual_files_read_the_same_with_and_without_it(document: str) -> None:
    assert _outcome(document) == _python(document)


# Anything at all between and inside the pieces of a usual cue: what a hostile server could send.
_ANY = st.lists(
    st.text(max_size=12)
    | st.sampled_from(['<text start="', '" dur="', '">', "</text>", "&", "&lt;", "&quot;", "&gt;", "font"])
)


@needs_speedups
@_FUZZ
@given(_ANY.map("".join))
def test_any_text_in_a_transcript_reads_the_same(inside: str) -> None:
    document = f'<transcript><text start="1" dur="2">{inside}</text>{inside}</transcript>'
    assert _outcome(document) == _python(document)


@needs_speedups
@_FUZZ
@given(_classic())
def test_generated_classic_files_of_every_shape_read_the_same(document: str) -> None:
    assert _outcome(document) == _python(document)


@needs_speedups
def test_bad_arguments_raise_rather_than_crash() -> None:
    with pytest.raises(TypeError):
        speedups.classic(b"<transcript></transcript>", Segment)
    with pytest.raises(TypeError):
        speedups.classic(_doc("x"))  # type: ignore[call-arg]

    def refuse(**_: object) -> object:
        raise RuntimeError("the factory refused")

    with pytest.raises(RuntimeError, match="refused"):
        speedups.classic(_doc("x"), refuse)


@needs_speedups
def test_it_keeps_no_memory_between_calls() -> None:
    """Every float, string and buffer it makes is freed or handed over: a leak of one object per
    cue would be megabytes over these calls."""
    document = build_transcript()[0]
    for _ in range(5):
        speedups.classic(document, Segment)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(50):
            speedups.classic(document, Segment)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, grown


def test_without_it_the_python_path_parses_the_same(without_c: None) -> None:
    classic = build_transcript()[0]
    assert captions._classic_in_c is None
    assert len(captions.parse_timedtext_xml(classic)) == 2500
