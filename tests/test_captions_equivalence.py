"""The timedtext XML / srv3 parser against what it answered before issue #17's second pass.

``bench/captions_before.py`` is that parser (commit 58fec16), ``captions._parse_tree`` the strict
ElementTree reading both fall back to. For every document, recorded or generated, today's
``parse_timedtext_xml`` must give exactly what the old one gave (the same segments, or an error
with the same code and hint), or, where the old fast path disagreed with the strict reading
(it joined ``&am</s><s>p;`` into a reference; in a classic file it skipped a ``<text`` followed
by a newline, and ``<p>`` cues), exactly what the strict reading gives.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.bench_formats import build_transcript
from bench.captions_before import parse_before
from hypothesis import example, given, settings
from hypothesis import strategies as st

from vid2context.errors import VidError
from vid2context.providers import captions
from vid2context.providers.captions import parse_timedtext_xml

from . import test_caption_text, test_captions

HERE = Path(__file__).resolve().parent


def _outcome(parse, document: str) -> object:  # noqa: ANN001 - any of the three readers
    try:
        return parse(document)
    except VidError as exc:
        return ("error", exc.code, exc.hint)


def _strict(document: str) -> object:
    """What the strict path alone says, after the same refusals before parsing."""
    if "!" in document and captions._HOSTILE.search(document):
        return _outcome(parse_timedtext_xml, document)  # refused before either path
    return _outcome(lambda text: captions._parse_tree(text, "the video"), document)


def _check(document: str) -> str:
    """Asserts the contract; says which way it held, for the tests that count."""
    new, old = _outcome(parse_timedtext_xml, document), _outcome(parse_before, document)
    if new == old:
        return "same"
    strict = _strict(document)
    assert old != strict, "the answer changed where the old one was already the strict one"
    assert new == strict, "the answer changed, and not to the strict reading"
    return "strict"


def _recorded() -> list[str]:
    classic, _, srv3, _ = build_transcript()
    return [
        (HERE / "fixtures/youtube/yta/transcript.xml.static").read_text("utf-8"),
        test_captions.SRV3,
        test_caption_text.SRV3,
        test_caption_text.CLASSIC,
        classic,
        srv3,
        build_transcript(seed=11)[2],
    ]


@pytest.mark.parametrize("document", _recorded(), ids=range(len(_recorded())))
def test_recorded_documents_read_as_before(document: str) -> None:
    """The recorded fixture, every caption file the tests build, and the bench's three-hour
    files (2,500 cues, 25,000 words): the same segments as before, on the fast path."""
    assert captions._parse_fast(document) is not None
    assert _check(document) == "same"


# Pieces of a cue body: words, every reference of either layer, YouTube's tags escaped and raw,
# srv3's word elements, and what hostile or broken files hold (a reference cut by a tag, a "<"
# before a tag, CDATA-like text, raw quotes and ">", a cue inside a cue, a NUL, \x01).
_TEXT = ["a", "Zq", " ", "  ", "\n", "\t", "\xa0", "🎉", ";", "#", '"', ">", "'", "]]>", "amp;", "lt;", "p;"]
_REFERENCES = [*captions._BOTH_LAYERS, "&lt;", "&amp;", "&", "&am", "&#38;", "&#x26;", "&#0;", "&#233;"]
_REFERENCES += ["&amp;nbsp;", "&amp;#233;", "&amp", "&nbsp;", "&#X27;", "&amp;amp;amp;lt;", "&#1;"]
_TAGS = ["&lt;i&gt;", "&lt;/i&gt;", "&lt;I>", "&lt;b/&gt;", "&lt;font color=&quot;#E5E5E5&quot;&gt;"]
_TAGS += ["&lt;/font&gt;", "&lt;div&gt;", "&lt;font\ncolor=&quot;x&quot;&gt;", '&lt;font color="#fff"&gt;']
_ELEMENTS = ["<s>", "</s>", '<s t="200" ac="0">', '<s ac="1" t="">', "<i>", "</i>", "<br/>", "<b >"]
_ELEMENTS += ["<", "<<s>", "<</s>", "<![CDATA[x]]>", "<!-- c -->", "\x00", "\x01", '<s t="1"', "<span>"]
_ELEMENTS += ['<p t="5" d="1">in</p>', '<text start="9">in</text>', "<p>", "<text\n>", "<?pi x?>"]
_PIECE = st.sampled_from(_TEXT) | st.sampled_from(_REFERENCES) | st.sampled_from(_TAGS)
# A file's bodies are all of one kind, so half the files hold nothing that leaves the fast path.
_BODIES = [
    st.lists(st.sampled_from(["a", " b", " ", *captions._BOTH_LAYERS, *_TAGS[:5]]), max_size=8).map("".join),
    st.lists(_PIECE, max_size=8).map("".join),
    st.lists(_PIECE | st.sampled_from(_ELEMENTS), max_size=8).map("".join),
]
_BODY_KIND = st.sampled_from([_BODIES[0], *_BODIES])
_NUMBER = st.sampled_from(
    ["0", "1", "1.5", "2.25", "3.125", "12.96"] * 3 + ["0.0005", ".5", "1.2.3", "7e3", "99999999999"]
)
_MS = st.sampled_from(["0", "1", "200", "1500", "4320"] * 3 + ["-5", "x", "", "4503599627370497"])


@st.composite
def _classic(draw: st.DrawFn) -> str:
    cues = []
    for body in draw(st.lists(draw(_BODY_KIND), min_size=1, max_size=5)):
        start, dur = draw(_NUMBER), draw(_NUMBER)
        shape = draw(
            st.sampled_from(["usual"] * 6 + ["no-dur", "swapped", "closed", "newline", "spaced", "tabbed"])
        )
        cues.append(
            {
                "usual": f'<text start="{start}" dur="{dur}">{body}</text>',
                "no-dur": f'<text start="{start}">{body}</text>',
                "swapped": f'<text dur="{dur}" start="{start}">{body}</text>',
                "closed": f'<text start="{start}" dur="{dur}"/>',
                "newline": f'<text\nstart="{start}" dur="{dur}">{body}</text>',
                "spaced": f'<text start="{start}" dur="{dur}" >{body}</text>',
                "tabbed": f'<text start="{start}" dur="{dur}">{body}</text >',
            }[shape]
        )
    between = draw(st.sampled_from(["", "\n", "\n    ", "<br/>", '<p t="1" d="1">p cue</p>']))
    head = draw(st.sampled_from(['<?xml version="1.0" encoding="utf-8" ?>', "", "\ufeff"]))
    tail = draw(st.sampled_from(["</transcript>"] * 4 + ["</transcript>\n", "", "</timedtext>"]))
    return f"{head}<transcript>{between.join(cues)}{tail}"


@st.composite
def _srv3(draw: st.DrawFn) -> str:
    cues = []
    for words in draw(st.lists(st.lists(draw(_BODY_KIND), max_size=4), min_size=1, max_size=4)):
        t, d = draw(_MS), draw(_MS)
        spans = "".join(
            f'<s t="{n * 200}" ac="0">{word}</s>' if draw(st.booleans()) else word
            for n, word in enumerate(words)
        )
        if draw(st.booleans()):
            spans = f"&lt;font color=&quot;#E5E5E5&quot;&gt;{spans}&lt;/font&gt;"
        shape = draw(st.sampled_from(["usual"] * 6 + ["no-d", "swapped", "closed", "extra", "nested"]))
        cues.append(
            {
                "usual": f'<p t="{t}" d="{d}" w="1">{spans}</p>',
                "no-d": f'<p t="{t}">{spans}</p>',
                "swapped": f'<p d="{d}" t="{t}">{spans}</p>',
                "closed": f'<p t="{t}" d="{d}" a="1"/>',
                "extra": f'<p t="{t}" d="{d}" w="1" a="1" >{spans}</p>',
                "nested": f'<p t="{t}" d="{d}"><p t="{t}" d="1">{spans}</p></p>',
            }[shape]
        )
    head = draw(st.sampled_from(["", '<head><pen id="1" fc="#FEFEFE"/><ws id="0"/></head>', "<s>x</s>"]))
    between = draw(st.sampled_from(["", "\n", "<s>out</s>", '<text start="1" dur="1">t</text>']))
    tail = draw(st.sampled_from(["</body></timedtext>"] * 4 + ["</body></timedtext>\n", "</body>"]))
    return (
        f'<?xml version="1.0" encoding="utf-8" ?><timedtext format="3">{head}<body>{between.join(cues)}{tail}'
    )


_FUZZ = settings(max_examples=250, derandomize=True, deadline=None)


@_FUZZ
@given(_classic())
@example('<transcript><text\nstart="0" dur="1">missed before</text></transcript>')
@example('<transcript><text start="0" dur="1">a</text><p t="1000" d="1">p cue</p></transcript>')
# The one-kind-at-a-time decode: its placeholder in a body, more kinds than it takes, a made "&".
@example('<transcript><text start="0" dur="1">\x01 &amp;amp; &amp;lt;</text></transcript>')
@example(
    '<transcript><text start="0" dur="1">&amp;lt;&amp;gt;&#x27;</text>'
    '<text start="1" dur="1">&amp;amp;&gt;&amp;quot;&#10;</text></transcript>'
)
@example('<transcript><text start="0" dur="1">&amp;amp;amp;lt; &amp;amp;#39;</text></transcript>')
def test_classic_files_read_as_before_or_as_the_xml_parser(document: str) -> None:
    _check(document)


@_FUZZ
@given(_srv3())
@example('<timedtext><body><p t="0" d="1"><s>&am</s><s>p;lt;</s></p></body></timedtext>')
@example('<timedtext><body><p t="0" d="1">x<<s>p t="1"></s></p></body></timedtext>')
@example('<timedtext><body><p t="0" d="1"><s>&amp;</s><s>#39;</s> &lt;i&gt;x</p></body></timedtext>')
def test_srv3_files_read_as_before_or_as_the_xml_parser(document: str) -> None:
    _check(document)


def test_the_corrections_are_the_strict_reading() -> None:
    """The three cases the old fast path got wrong now read as the XML parser reads them."""
    cut = '<timedtext><body><p t="0" d="1"><s>&am</s><s>p;lt;</s></p></body></timedtext>'
    newline = '<transcript><text start="0" dur="1">a</text><text\nstart="1" dur="1">b</text></transcript>'
    mixed = '<transcript><text start="0" dur="1">a</text><p t="1000" d="1">p cue</p></transcript>'
    for document in (cut, newline, mixed):
        assert _check(document) == "strict"
    with pytest.raises(VidError) as refused:
        parse_timedtext_xml(cut)
    assert refused.value.code == "upstream"
    assert [s.text for s in parse_timedtext_xml(newline)] == ["a", "b"]
    assert [s.text for s in parse_timedtext_xml(mixed)] == ["a", "p cue"]
