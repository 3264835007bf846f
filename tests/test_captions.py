"""Caption parsers and track choice (``providers/captions.py``): pure functions, no network.

The classic timedtext file is the recorded ``transcript.xml.static``. No json3 or srv3 file is
recorded, so those documents are built here from the documented shapes (json3: ``events`` with
``tStartMs``/``dDurationMs``/``segs[].utf8``, window events without ``segs`` and ``aAppend``
line breaks; srv3: ``<timedtext format="3"><body><p t d><s>``).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from xml.sax.saxutils import escape as xml_escape

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from vid2context.errors import ErrorCode, VidError
from vid2context.models import CaptionTrack, Segment
from vid2context.providers import captions
from vid2context.providers.captions import (
    choose_track,
    clean_text,
    parse_captions,
    parse_json3,
    parse_timedtext_xml,
    same_language,
)

JSON3 = {
    "wireMagic": "pb3",
    "pens": [{}],
    "events": [
        {"tStartMs": 0, "dDurationMs": 5000, "id": 1, "wpWinPosId": 1, "wsWinStyleId": 1},  # window
        {
            "tStartMs": 120,
            "dDurationMs": 3520,
            "wWinId": 1,
            "segs": [{"utf8": "hello"}, {"utf8": " world", "tOffsetMs": 400}],
        },
        {"tStartMs": 3640, "dDurationMs": 20, "wWinId": 1, "aAppend": 1, "segs": [{"utf8": "\n"}]},
        {
            "tStartMs": 3660,
            "dDurationMs": 2000,
            "wWinId": 1,
            "segs": [{"utf8": "it's   a\ntest & <more>"}, {"utf8": " &amp;lt;"}],  # text, not markup
        },
        {"tStartMs": 6000, "wWinId": 1, "segs": [{"utf8": "no duration"}]},
        {"tStartMs": 7000, "dDurationMs": 1000, "segs": [{"utf8": "   "}]},
    ],
}

SRV3 = """<?xml version="1.0" encoding="utf-8" ?><timedtext format="3">
<head><pen id="1" fc="#FEFEFE"/><ws id="0"/><wp id="0"/></head>
<body>
<p t="120" d="3520" w="1"><s ac="0">hello</s><s t="400" ac="0"> world</s></p>
<p t="3640" d="20" w="1" a="1">
</p>
<p t="3660" d="2000">line one
line &amp;#39;two&amp;#39;</p>
<p t="9000" d="-50">negative duration</p>
</body></timedtext>"""

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<transcript><text start="0" dur="1">&lol3;</text></transcript>"""

EXTERNAL_ENTITY = """<?xml version="1.0"?>
<!doctype transcript [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<transcript><text start="0" dur="1">&xxe;</text></transcript>"""


def _texts(segments: list[Segment]) -> list[str]:
    return [s.text for s in segments]


def test_classic_timedtext_fixture(fixtures: Path) -> None:
    raw = (fixtures / "youtube" / "yta" / "transcript.xml.static").read_text()
    segments = parse_timedtext_xml(raw)
    assert _texts(segments) == [
        "Hey, this is just a test",
        "this is not the original transcript",  # <i> markup (escaped in the XML) stripped
        "just something shorter, I made up for testing",  # the empty cue at 5.0 is dropped
    ]
    assert [(s.start_sec, s.end_sec) for s in segments] == [(0.0, 1.54), (1.54, 5.7), (5.7, 8.939)]
    assert parse_captions(raw) == segments


def test_srv3_paragraphs_words_and_entities() -> None:
    segments = parse_timedtext_xml(SRV3)
    assert _texts(segments) == ["hello world", "line one line 'two'", "negative duration"]
    assert (segments[0].start_sec, segments[0].end_sec) == (0.12, 3.64)
    assert (segments[2].start_sec, segments[2].end_sec) == (9.0, 9.0)  # never negative


def test_srv2_text_in_milliseconds() -> None:
    doc = '<timedtext><window id="1"/><text t="1500" d="2000">two &amp; a half</text></timedtext>'
    assert parse_timedtext_xml(doc) == [Segment(start_sec=1.5, end_sec=3.5, text="two & a half")]


def test_json3_events() -> None:
    segments = parse_json3(json.dumps(JSON3))
    assert _texts(segments) == ["hello world", "it's a test & <more> &amp;lt;", "no duration"]
    assert (segments[0].start_sec, segments[0].end_sec) == (0.12, 3.64)
    assert (segments[2].start_sec, segments[2].end_sec) == (6.0, 6.0)
    assert parse_json3(JSON3) == segments  # an already decoded document too
    assert parse_captions(json.dumps(JSON3).encode()) == segments


@pytest.mark.parametrize("doc", [BILLION_LAUGHS, EXTERNAL_ENTITY])
def test_hostile_xml_is_refused_before_parsing(doc: str) -> None:
    with pytest.raises(VidError) as caught:
        parse_captions(doc, source="video abcdefghijk (en)")
    assert caught.value.code is ErrorCode.UPSTREAM
    assert "DOCTYPE" in caught.value.message and "abcdefghijk" in caught.value.message
    assert caught.value.hint


@pytest.mark.parametrize(
    "doc",
    [
        "<transcript><text start='0'>unclosed</transcript>",
        "<transcript><text start='0' dur='1'>a</text>",
        "<<>>",
    ],
)
def test_malformed_xml_is_upstream(doc: str) -> None:
    with pytest.raises(VidError) as caught:
        parse_timedtext_xml(doc)
    assert caught.value.code is ErrorCode.UPSTREAM
    assert caught.value.hint


@pytest.mark.parametrize(
    "doc", ["{not json", '{"no": "events"}', '{"events": 3}', "[1, 2]", "", "   ", "plain text"]
)
def test_unreadable_documents_are_upstream(doc: str) -> None:
    with pytest.raises(VidError) as caught:
        parse_captions(doc)
    assert caught.value.code is ErrorCode.UPSTREAM


def test_oversized_documents_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(captions, "MAX_CAPTION_CHARS", 100)
    with pytest.raises(VidError):
        parse_captions("<transcript>" + "x" * 200 + "</transcript>")
    with pytest.raises(VidError):
        parse_captions('{"events": []' + " " * 200 + "}")


def test_weird_values_do_not_crash() -> None:
    doc = {
        "events": [
            "not an event",
            {"segs": "nope"},
            {"tStartMs": "abc", "segs": [{"utf8": "no start"}]},
            {"tStartMs": 1000, "dDurationMs": "x", "segs": [{"utf8": "bad duration"}, "junk"]},
        ]
    }
    assert parse_json3(doc) == [Segment(start_sec=1.0, end_sec=1.0, text="bad duration")]
    xml = (
        '<transcript><text>no time</text><text start="nan" dur="1">nan</text>'
        '<text start="2">ok</text></transcript>'
    )
    assert parse_timedtext_xml(xml) == [Segment(start_sec=2.0, end_sec=2.0, text="ok")]


def test_clean_text() -> None:
    assert clean_text("  a\n\nb\t&amp; <b>c</b>  &quot;d&quot; ") == 'a b & c "d"'
    assert clean_text("\n") == ""


@pytest.mark.parametrize(
    ("markup", "text"),
    [
        ('<font color="#E5E5E5">red</font> <I>loud</I> <u>under</u><b/>', "red loud under"),
        ("<font\ncolor='a>b'>quoted</font>", "quoted"),  # a ">" inside a quoted value
        ("wrap it in a <div>, not a <bdi> or <ul>", "wrap it in a <div>, not a <bdi> or <ul>"),
        ("performance &amp; &lt;price&gt;.", "performance & <price>."),  # escaped by YouTube
        ("performance & <price>.", "performance & <price>."),  # or not: still words
        ("a < b > c", "a < b > c"),
        ("&lt;i&gt;literal&lt;/i&gt;", "<i>literal</i>"),  # an escaped tag is text, not markup
        ("&amp;lt; &amp;amp;", "&lt; &amp;"),  # one decode, never two
        ("&#127881; done &nbsp;&copy", "\U0001f389 done \xa0©"),  # any HTML reference
    ],
)
def test_the_html_layer_loses_only_youtube_formatting(markup: str, text: str) -> None:
    assert clean_text(markup) == " ".join(text.split())


def test_timedtext_is_decoded_exactly_twice() -> None:
    """XML, then HTML: what the captioner typed, however many ampersands it has."""
    typed = ["&amp;lt;", "&lt;div&gt;", "<price>", "R&D", "it's"]
    # The recorded shape: HTML-escaped text (apostrophes as &#39;) inside XML-escaped data.
    cues = [html.escape(text).replace("&#x27;", "&#39;") for text in typed]
    doc = _classic([(str(n), "1", xml_escape(cue)) for n, cue in enumerate(cues)])
    assert _texts(parse_timedtext_xml(doc)) == typed
    assert "&amp;amp;amp;lt;" in doc
    srv3 = "<timedtext><body>" + "".join(
        f'<p t="{n}000" d="900"><s>{xml_escape(cue)}</s></p>' for n, cue in enumerate(cues)
    )
    assert _texts(parse_timedtext_xml(srv3 + "</body></timedtext>")) == typed


@pytest.mark.parametrize(
    "body",
    ["a &nbsp; b", "a & b", "&#0;", "&#xD800;", "&#99999999999;", "&#x110000;"],
    ids=["html-entity", "bare-ampersand", "nul", "surrogate", "huge", "beyond-unicode"],
)
def test_references_xml_does_not_allow_are_upstream_on_both_paths(body: str) -> None:
    from vid2context.providers.captions import _parse_fast, _parse_tree

    document = _classic([("0", "1", body)])
    assert _parse_fast(document) is None
    with pytest.raises(VidError) as caught:
        _parse_tree(document, "test")
    assert caught.value.code is ErrorCode.UPSTREAM
    with pytest.raises(VidError):
        parse_timedtext_xml(document)


# --- choosing a track ----------------------------------------------------------------------------


def _track(language: str, kind: str = "manual", translatable: bool = True) -> CaptionTrack:
    return CaptionTrack(language=language, name=language.upper(), kind=kind, translatable=translatable)  # type: ignore[arg-type]


TRACKS = [_track("zh"), _track("en", "auto"), _track("en"), _track("pt-BR"), _track("de", "auto")]


def test_same_language() -> None:
    assert same_language("pt", "PT_br", exact=False)
    assert not same_language("pt", "pt-BR", exact=True)
    assert same_language("en-us", "EN-US", exact=True)


def test_requested_language_manual_over_auto() -> None:
    choice = choose_track(TRACKS, lang="en", video_language="en")
    assert choice is not None and choice.index == 2 and choice.translate_to is None
    assert "over the auto-generated" in choice.note


def test_primary_subtag_matches() -> None:
    choice = choose_track(TRACKS, lang="pt", video_language="en")
    assert choice is not None and TRACKS[choice.index].language == "pt-BR"
    choice = choose_track(TRACKS, lang="en-GB", video_language="en")
    assert choice is not None and choice.index == 2


def test_auto_track_when_no_manual_one() -> None:
    choice = choose_track(TRACKS, lang="de", video_language="en")
    assert choice is not None and TRACKS[choice.index].kind == "auto" and choice.translate_to is None
    assert "no manual track" in choice.note


def test_translation_when_the_language_has_no_track() -> None:
    choice = choose_track(TRACKS, lang="fr", video_language="en", translation_languages=["de", "fr"])
    assert choice is not None and choice.translate_to == "fr"
    assert choice.index == 2  # from the manual track in the video's own language
    assert "translated to fr" in choice.note


def test_translation_target_by_primary_subtag() -> None:
    choice = choose_track(TRACKS, lang="fr-CA", video_language="en", translation_languages=["fr"])
    assert choice is not None and choice.translate_to == "fr"


def test_untranslatable_falls_back_to_the_video_language_with_a_note() -> None:
    tracks = [_track("en", translatable=False), _track("en", "auto", translatable=False)]
    choice = choose_track(tracks, lang="sw", video_language="en", translation_languages=["sw"])
    assert choice is not None and choice.index == 0 and choice.translate_to is None
    assert "requested sw not available" in choice.note
    choice = choose_track(TRACKS, lang="sw", video_language="en", translation_languages=["fr"])
    assert choice is not None and choice.index == 2 and "requested sw not available" in choice.note


def test_no_language_prefers_the_video_language() -> None:
    choice = choose_track(TRACKS, lang=None, video_language="en")
    assert choice is not None and choice.index == 2
    choice = choose_track(TRACKS, lang=None, video_language=None)
    assert choice is not None and choice.index == 0  # the first manual track
    only_auto = [_track("ja", "auto")]
    choice = choose_track(only_auto, lang=None, video_language=None)
    assert choice is not None and choice.index == 0


def test_no_tracks_is_none() -> None:
    assert choose_track([], lang="en", video_language="en") is None


def _classic(cues: list[tuple[str, str, str]]) -> str:
    body = "".join(f'<text start="{s}" dur="{d}">{t}</text>' for s, d, t in cues)
    return f'<?xml version="1.0" encoding="utf-8" ?><transcript>{body}</transcript>'


@pytest.mark.parametrize(
    "document",
    [
        _classic([("0", "1.5", "a &amp;amp; b"), ("1.5", "2", "&lt;i&gt;x&lt;/i&gt; y"), ("3", "1", "")]),
        _classic([("0", "1", "one\nline &#39;q&#39;"), ("2.25", "0.5", "it&amp;#39;s")]),
        '<timedtext format="3"><body><p t="0" d="1500" w="1"><s>hi</s><s t="300"> there</s></p>'
        '<p t="1500" d="200" a="1"/><p t="2000" d="1000">&lt;b&gt;bold&lt;/b&gt; &amp;amp;</p></body></timedtext>',
        (Path(__file__).resolve().parent / "fixtures/youtube/yta/transcript.xml.static").read_text("utf-8"),
        _classic(
            [
                ("0", "1", "performance &amp;amp; &amp;lt;price&amp;gt;."),
                ("1", "1", "a &lt; b &gt; c"),
                ("2", "1", "&amp;amp;amp;lt; &#127881; done"),
                ("3", "1", "wrap it in a &lt;div>"),
                ("4", "1", "&lt;font color=&quot;#E5E5E5&quot;&gt;&#x27;red&#39;&lt;/font&gt; &#38;lt;"),
            ]
        ),  # fmt: skip
        '<timedtext format="3"><body><p t="0" d="900" w="1"><s ac="0">a &amp;lt;</s><s t="1" a="x>y">'
        'div&amp;gt;</s></p><p t="900" d="9"><s>&lt;i&gt;&amp;amp;amp;lt;&lt;/i&gt; &#x1F389;</s></p>'
        "</body></timedtext>",
    ],
)
def test_fast_path_agrees_with_the_xml_parser(document: str) -> None:
    """The regex fast path must give exactly what the strict ElementTree path gives."""
    from vid2context.providers.captions import _parse_fast, _parse_tree

    fast = _parse_fast(document)
    assert fast is not None, "this document should take the fast path"
    assert fast == _parse_tree(document, "test")


@pytest.mark.parametrize(
    "document",
    [
        '<transcript><text dur="1" start="0">attributes swapped</text></transcript>',
        '<transcript><text start="0" dur="1"><![CDATA[x]]></text></transcript>',
        '<transcript><text start="0" dur="1">cut off',
        '<transcript><!-- note --><text start="0" dur="1">x</text></transcript>',
        '<transcript><text start="1.2.3" dur="1">x</text></transcript>',
    ],
)
def test_unusual_documents_leave_the_fast_path(document: str) -> None:
    from vid2context.providers.captions import _parse_fast

    assert _parse_fast(document) is None


_SINGLE_SPACES = [  # no whitespace but single spaces: each text is stripped where it stands
    {"wWinId": 1, "tStartMs": 0},
    {"tStartMs": 0, "dDurationMs": 1540, "segs": [{"utf8": " Hey,"}, {"utf8": " this is "}]},
    {"tStartMs": 1540, "wWinId": 1},
    {"tStartMs": 1540, "dDurationMs": 10, "segs": [{"utf8": " "}]},
    {"tStartMs": 1550, "dDurationMs": 4160, "segs": [{"utf8": "<price> & &amp;lt;"}]},
    {"tStartMs": 5710},
]


def test_json3_events_without_text_drop_and_the_rest_are_stripped() -> None:
    assert parse_json3(json.dumps({"events": _SINGLE_SPACES})) == [
        Segment(start_sec=0.0, end_sec=1.54, text="Hey, this is"),
        Segment(start_sec=1.55, end_sec=5.71, text="<price> & &amp;lt;"),
    ]


@pytest.mark.parametrize(
    "events",
    [
        [
            {"tStartMs": 0, "dDurationMs": 1540, "segs": [{"utf8": "Hey,"}, {"utf8": " this  is\n a test"}]},
            {"tStartMs": 1540, "wWinId": 1, "segs": [{"utf8": "\n"}]},
            {"tStartMs": 1540, "dDurationMs": 4160, "segs": [{"utf8": " <price> & &amp;lt; "}]},
            {"tStartMs": 1600},
            {"tStartMs": 5700, "dDurationMs": 3239, "segs": [{"utf8": "nul\u0000 inside \u00a0 nbsp"}]},
            {"tStartMs": 10799999, "dDurationMs": 1, "segs": [{}]},
            {"tStartMs": 10799999, "dDurationMs": 1, "segs": [{"utf8": "the last"}]},
        ],
        _SINGLE_SPACES,
        [{"tStartMs": -500, "dDurationMs": 1000, "segs": [{"utf8": "before zero"}]}],
        [{"tStartMs": 100, "dDurationMs": -5, "segs": [{"utf8": "backwards"}]}],
        [{"tStartMs": 0.5, "dDurationMs": 1000.25, "segs": [{"utf8": "fractions of a ms"}]}],
    ],
    ids=["usual", "single-spaces", "negative-start", "negative-duration", "fractional-ms"],
)
def test_json3_fast_path_agrees_with_the_lenient_reading(events: list[dict[str, object]]) -> None:
    """The whole-millisecond comprehension must give what the general reading gives."""
    from vid2context.providers.captions import _parse_json3_leniently

    document = json.dumps({"events": events})
    assert parse_json3(document) == _parse_json3_leniently(json.loads(document), "test")
    assert parse_json3(document)


# --- the one-pass decode against the two-step one --------------------------------------------------

# Pieces a caption body is made of: words and spaces, every token of the one-pass decode and
# YouTube's formatting tags in each spelling; then, rarer, what must send a file the two-step way
# (a lone "&", a reference of either layer outside the table, a tag written otherwise, "&lt;" as
# text) or be refused.
_COMMON = ["a", "Zq", " ", "🎉", ";", "#", "lt;", "amp;", *captions._BOTH_LAYERS]
_COMMON += ["&lt;i&gt;", "&lt;/i&gt;", "&lt;I>", "&lt;b/&gt;", "&lt;/font&gt;"]
_COMMON += ["&lt;font color=&quot;#E5E5E5&quot;&gt;", '&lt;font color="#fff" size="2"&gt;']
_RARE = ["  ", "\n", "\xa0", "&lt;font\ncolor=&quot;x&quot;&gt;", "&lt;div&gt;", "&lt;", "&amp;", "&"]
_RARE += [
    "&amp;nbsp;",
    "&amp;#233;",
    "&#38;",
    "&#38;lt;",
    "&#x26;",
    "&#233;",
    "&#X27;",
    "&#0;",
    "&amp",
    "&am",
]
_PIECES = [*_COMMON, *_RARE]
_BODIES = st.one_of(  # half of them with nothing rare, so the one-pass decode runs on its own
    st.lists(st.sampled_from(_COMMON), max_size=12).map("".join),
    st.lists(st.sampled_from(_COMMON) | st.sampled_from(_RARE), max_size=12).map("".join),
)
_FUZZ = settings(max_examples=400, derandomize=True, deadline=None)


def _two_step(raw: str) -> str | type[Exception]:
    try:
        return captions._html_text(captions._xml_unescape(raw))
    except captions._NotXml:
        return captions._NotXml


def _one_pass(raw: str) -> str | type[Exception]:
    try:
        return captions._xml_then_html(raw)
    except captions._NotXml:
        return captions._NotXml


@_FUZZ
@given(st.lists(_BODIES, min_size=1, max_size=4).map("\x00".join))
@example("&am&lt;i&gt;p;amp;")  # a tag out must not join "&am" and "p;" into a reference
@example("&amp;&lt;i&gt;lt; &#39&lt;b&gt;;")
@example("&#3&lt;b&gt;9; it&lt;/i&gt; &amp;l&lt;i&gt;t; &amp;am&lt;/b&gt;p;")
def test_one_pass_decode_is_the_two_step_decode(raw: str) -> None:
    """Both layers in one split give what the XML decode, the tag removal and the HTML decode
    give one after the other, down to refusing the same bodies."""
    assert _one_pass(raw) == _two_step(raw)


# Bodies for the one-kind-at-a-time decode: words and reference tokens, few kinds of them, and
# rarely what makes it step aside (a formatting tag, a lone "&", "&lt;", its placeholder).
_KINDS = st.lists(st.sampled_from(sorted(captions._BOTH_LAYERS)), min_size=1, max_size=5, unique=True)
_STEP_ASIDE = ["&lt;i&gt;", "&", "&lt;", "&amp;", "&#38;", captions._AMPERSAND_LATER]


@st.composite
def _few_kinds(draw: st.DrawFn) -> str:
    pieces = ["a", " ", ";", "#", "lt;", "amp;", "amp;lt;", *draw(_KINDS)]
    if draw(st.booleans()):
        pieces.append(draw(st.sampled_from(_STEP_ASIDE)))
    return "\x00".join(
        draw(st.lists(st.lists(st.sampled_from(pieces), max_size=10).map("".join), min_size=1))
    )


@_FUZZ
@given(_few_kinds())
@example("&amp;amp;amp;lt;")  # the "&" a token makes is never read again
@example("&amp;amp;lt; &#x27;amp;lt;")
@example(captions._AMPERSAND_LATER + " &amp;amp;")  # the placeholder in the text: not this way
def test_one_kind_at_a_time_is_the_two_step_decode(raw: str) -> None:
    """Where it decodes, the one-kind-at-a-time decode gives what the two decodes give; it
    decodes every body of reference tokens alone, and steps aside where a body holds more."""
    decoded = captions._decode_by_kind(raw)
    tokens = captions._REFERENCE_TOKEN.findall(raw)  # each holds one "&", its first character
    every_one_a_token = len(tokens) == raw.count("&")
    few = len(set(tokens)) <= captions._MOST_KINDS
    assert (decoded is not None) == (every_one_a_token and few and captions._AMPERSAND_LATER not in raw)
    if decoded is not None:
        assert decoded == _two_step(raw)
    assert _one_pass(raw) == _two_step(raw)


def test_one_kind_at_a_time_gives_up_past_its_most_kinds() -> None:
    kinds = sorted(captions._BOTH_LAYERS)[: captions._MOST_KINDS + 1]
    assert captions._decode_by_kind(" ".join(kinds[:-1])) == _two_step(" ".join(kinds[:-1]))
    assert captions._decode_by_kind(" ".join(kinds)) is None
    assert _one_pass(" ".join(kinds)) == _two_step(" ".join(kinds))


@_FUZZ
@given(st.lists(st.tuples(st.sampled_from(["0", "1.5", "2.25", "3.125"]), _BODIES), max_size=5))
def test_fast_path_agrees_with_the_xml_parser_on_any_body(cues: list[tuple[str, str]]) -> None:
    """Whole documents, classic and srv3 (a word element around every body): the fast path
    either steps aside or gives what ElementTree gives, and a file both refuse is refused."""
    from vid2context.providers.captions import _parse_fast, _parse_tree

    classic = _classic([(start, "1", body) for start, body in cues])
    srv3 = "<timedtext><body>" + "".join(
        f'<p t="{n}000" d="900"><s t="0" ac="0">{body}</s></p>' for n, (_, body) in enumerate(cues)
    )
    for document in (classic, srv3 + "</body></timedtext>"):
        fast = _parse_fast(document)
        if fast is None:
            continue
        assert fast == _parse_tree(document, "test")


def test_whitespace_but_space_is_what_str_split_splits_on() -> None:
    every = [chr(code) for code in range(0x110000) if chr(code).isspace() and code != 0x20]
    assert list(captions._WHITESPACE_BUT_SPACE) == every
    assert "".join(every).split() == []


def test_the_one_pass_table_is_what_the_regex_finds() -> None:
    """Every token of the table is one match of the regex, whole; anything else it finds is a
    formatting tag as it stands in the XML, which the one-pass decode drops."""
    for token in captions._BOTH_LAYERS:
        assert captions._BOTH_LAYERS_TOKEN.fullmatch(token), token
    found = {m.group(0) for m in captions._BOTH_LAYERS_TOKEN.finditer("".join(_PIECES))}
    tags = found - set(captions._BOTH_LAYERS)
    assert tags, "the pieces hold formatting tags"
    for tag in tags:
        assert re.fullmatch("&" + captions._FORMATTING_TOKEN, tag), tag
        assert captions._html_text(captions._xml_unescape(tag)) == "", tag
