"""Caption files to segments, and which caption track to read: pure, no I/O.

Formats, sniffed from the text itself so a server that ignores ``fmt=`` still parses:

- **json3**: ``{"events": [{"tStartMs", "dDurationMs", "segs": [{"utf8": ...}]}]}``; events without
  ``segs`` (window definitions) and blank ``aAppend`` line breaks are skipped.
- **srv3**: ``<timedtext format="3"><body><p t="ms" d="ms"><s>word</s>...</p>``.
- **classic timedtext / srv1**: ``<transcript><text start="s" dur="s">...</text>``; srv2's
  ``<text t="ms" d="ms">`` too.

Caption text comes out as the captioner wrote it, whitespace collapsed; empty cues are dropped.
``end_sec`` is ``start + duration`` as the file says (cues may overlap; never negative). What that
takes depends on how each format nests text:

- json3 is JSON whose strings are the text itself, with no markup and no entities: a ``<price>``
  or an ``&amp;`` in a ``utf8`` string is kept as it is.
- The timedtext XML formats carry HTML inside XML. A cue's character data, once XML-decoded, is
  HTML: YouTube's formatting tags (``<i>``, ``<b>``, ``<u>``, ``<font color=...>``) as markup,
  and the text HTML-escaped (``&amp;#39;`` in the file is ``&#39;`` in the HTML, ``'`` in the
  text; the recorded ``&lt;i>not&lt;/i>`` is italic markup). So there are exactly two decodes:
  the XML one, then, once the formatting tags are out, one HTML decode. Each is a single pass:
  a captioner who typed ``&amp;lt;`` (``&amp;amp;amp;lt;`` in the file) gets ``&amp;lt;`` back,
  where decoding until nothing changes would give ``<``. Only those four tags are markup; any
  other tag-like text (``<price>``, ``<div>``, ``a < b > c``) is words, whether YouTube escaped
  it in the HTML or not. Removing every tag after decoding, as youtube-transcript-api does, is
  how ``performance & <price>.`` came out as ``performance & .``.

XML comes from the network, so a document carrying a DOCTYPE or an entity declaration is refused
before parsing (no billion laughs, no external entities), as is anything over ``MAX_CAPTION_CHARS``.
Every failure is a ``VidError`` with code ``upstream``: the platform sent something we cannot read.

``choose_track`` picks among listed tracks for a requested language (or the video's own), manual
before automatic, with a platform translation as the next best, and explains its choice.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Annotated, Any
from xml.etree import ElementTree

import msgspec

from ..errors import ErrorCode, VidError
from ..models import CaptionTrack, Segment

try:  # The usual classic shape parsed in C, built where a compiler was (hatch_build.py); the
    # Worker and any install without it parse in Python below, with the same segments.
    from _vid2context_captions import classic as _classic_in_c
except ImportError:
    _classic_in_c = None

__all__ = [
    "MAX_CAPTION_CHARS",
    "TrackChoice",
    "choose_track",
    "clean_text",
    "parse_captions",
    "parse_json3",
    "parse_timedtext_xml",
    "missing_note",
    "same_language",
    "track_languages",
]

MAX_CAPTION_CHARS = 20_000_000
_HOSTILE = re.compile(r"<!\s*(?:DOCTYPE|ENTITY)", re.IGNORECASE)

# The fast path reads the two shapes YouTube actually serves with one regex each; a document
# with any cue the regex does not account for (attributes in another order, CDATA, comments,
# a truncated body) goes to the strict ElementTree path instead, so speed never costs accuracy.
# The usual classic cue first (every cue with a duration and a body), then the general one.
# Possessive: what follows each run is a character the run cannot hold (4% less time).
_CLASSIC_USUAL = re.compile(r'<text start="([0-9.]++)" dur="([0-9.]++)">([^<]*+)</text>')
_CLASSIC_CUE = re.compile(r'<text start="([0-9.]+)"(?: dur="([0-9.]+)")?\s*(?:/>|>([^<]*)</text>)')
# srv3's likewise: the usual cue (a duration, attributes with numbers, a body with no "<" once
# the word elements are out; 30% less time), then the general one, whose body is an unrolled
# loop with possessive quantifiers: runs of non-``<`` characters taken whole, where a lazy
# ``.*?`` would try ``</p>`` at every character.
_SRV3_USUAL = re.compile(r'<p t="([0-9]+)" d="([0-9]+)"(?: [a-z]+="[0-9]*+")*+>([^<]*+)</p>')
_SRV3_CUE = re.compile(
    r'<p t="([0-9]+)"(?: d="([0-9]+)")?(?: [a-zA-Z]+="[^"]*")*\s*(?:/>|>([^<]*+(?:<(?!/p>)[^<]*+)*+)</p>)'
)
# An element the strict path would read (``p`` or ``text``, any attributes): one left outside
# the cues the regex matched, or inside a body, means the regex missed a cue.
_CUE_ELEMENT = re.compile(r"<(?:p|text)[\s/>]")
_OVER_THREE_DECIMALS = re.compile(r"\.[0-9]{4}")
_EXACT_MS = 2.0**53 / 4  # a start plus a duration still an exact integer
# A time too large to be exact fails the decode (a ValidationError, which is a DecodeError).
_decode_times = msgspec.json.Decoder(list[Annotated[float, msgspec.Meta(le=_EXACT_MS)]]).decode
_ROOT_ENDS = ("</transcript>", "</timedtext>")  # a document cut short goes the strict way
# A classic file's first cue comes within this many characters; looking there first spares an
# srv3 file a scan for "<text " (a file with both kinds of cue goes the strict way either way).
_HEAD = 2048
# What str.split() and str.isspace() call whitespace, the space aside (tests check the list).
_WHITESPACE_BUT_SPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
# Cue texts are cleaned in one batch joined by NUL, which a caption file cannot contain (XML
# forbids it; the fast path refuses documents that have one); no pattern below crosses it.
_SEP = "\x00"
# An element tag in raw XML (``<s t="200" ac="0">``, ``</s>``); quoted values may hold ``>``.
# Possessive quantifiers: a tag never needs backtracking, and srv3 has one per word.
_XML_TAG = re.compile(r"""<[^<>"'\x00]*+(?:(?:"[^"\x00]*+"|'[^'\x00]*+')[^<>"'\x00]*+)*+>""")
# srv3's word element as YouTube writes it (``<s t="200" ac="0">``, ``<s>``, ``</s>``), and the
# boundary between two words (``</s><s t="400" ac="0">``, nine in ten of them), which one match
# removes whole: YouTube's two attributes spelled out take 30% less time than any attributes,
# and a tag written otherwise goes the general way. None right after a "<" (the lookbehind
# comes after the literal start, which keeps the regex's fast scan for it): removing a tag
# there would join that "<" to what follows it.
_SRV3_WORD = re.compile(r'<(?<!<<)(?:/s|s(?: [a-z]+="[0-9]*+")*+)>')
_SRV3_BOUNDARY = re.compile(r'</s><s t="(?<!<</s><s t=")[0-9]*+" ac="[0-9]*+">')
# An "&" whose reference a tag cuts (``&am<s>p;``): not XML, and without the tag it would be a
# reference. A reference holds no "<", so this is the only way removing tags can make one.
_CUT_REFERENCE = re.compile(r"&[#0-9A-Za-z]*+<")
# YouTube's formatting markup in the HTML layer, and nothing else (see the module docstring).
_FORMATTING_TAG = re.compile(
    r"""</?(?:b|i|u|font)(?:[ \t\r\n\f](?:[^<>"'\x00]|"[^"\x00]*"|'[^'\x00]*')*)?/?>""", re.IGNORECASE
)
# XML's references: its five named entities and numeric character references, nothing else.
_XML_REF = re.compile(r"&(?:(lt|gt|amp|quot|apos)|#([0-9]+)|#x([0-9a-fA-F]+));")
_XML_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}
_STRAY_AMPERSAND = re.compile(r"&(?!(?:lt|gt|amp|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)")
# Caption files use the five XML entities almost exclusively; decoding those with str.replace is
# an order of magnitude faster than a per-entity callback. ``&amp;`` comes last, so the "&" it
# makes is never read again: one level of decoding, whatever the order of the others.
# The character references YouTube writes for quotes and line breaks go the same way: none of
# them makes an "&", so their order among the others does not matter.
_XML_ENTITIES = (
    ("&lt;", "<"),
    ("&gt;", ">"),
    ("&quot;", '"'),
    ("&apos;", "'"),
    ("&#39;", "'"),
    ("&#x27;", "'"),
    ("&#34;", '"'),
    ("&#x22;", '"'),
    ("&#10;", "\n"),
    ("&amp;", "&"),
)
_HTML_ENTITIES = (*_XML_ENTITIES[:6], ("&amp;", "&"))
# A reference, or an "&" that starts none (listed alone, so no table has it).
_REFERENCE = re.compile(r"&(?:#[0-9]+;|#[xX][0-9a-fA-F]+;|[A-Za-z][A-Za-z0-9]*;)?")
_TABLE_KEYS = {table: frozenset(entity for entity, _ in table) for table in (_XML_ENTITIES, _HTML_ENTITIES)}
# Both layers in one pass, for files whose references are all common ones. Each token below is a
# reference of either layer (``&amp;lt;`` is the XML ``&amp;`` then the HTML ``&lt;``), ending at
# its first ";" as a reference does, or one of YouTube's formatting tags as it stands in the XML
# (``&lt;font color=&quot;#E5E5E5&quot;&gt;``, ``&lt;i>``), which decodes to a tag
# ``_FORMATTING_TAG`` removes whole. The tags are stricter than that pattern (one space before an
# attribute, quoted values with no "&"): one written any other way is no token, and the file
# takes the two-step decode. Where every "&" is inside a token, the tokens are the references
# and the tags there are (``_xml_then_html`` says why).
_FORMATTING_TOKEN = (
    r"""lt;/?(?i:b|i|u|font)(?: [A-Za-z]+=(?:&quot;[^&<>"\x00]*&quot;|"[^&<>"\x00]*"))*/?(?:&gt;|>)"""
)
_REFERENCE_TOKENS = r"amp;(?:amp|lt|gt|quot|apos|#39|#x27|#10);|gt;|quot;|apos;|#39;|#x27;|#34;|#x22;|#10;"
_BOTH_LAYERS_TOKEN = re.compile(f"(&(?:{_REFERENCE_TOKENS}|{_FORMATTING_TOKEN}))")
# The tokens that are references (all but the formatting tags), one kind at a time.
_REFERENCE_TOKEN = re.compile(f"&(?:{_REFERENCE_TOKENS})")
# Where a formatting tag can start (and only there, outside the tokens), so a file with one
# does not take the one-kind-at-a-time decode only to give it up after a pass per kind.
_ESCAPED_LT = re.compile("&lt;")  # sre's scan for it: a quarter faster than str's
# What ``&amp;amp;`` becomes until the last step, so that no "&" a token makes is read again:
# a character XML forbids (the one-kind-at-a-time decode steps aside where a body has one).
_AMPERSAND_LATER = "\x01"
# Most kinds of token decoded one kind at a time: a pass per kind costs about a sixth of the
# one-split decode on the benchmark's file (0.17 against 0.93 ms), and giving up on the next
# kind wastes the passes made.
_MOST_KINDS = 5


class _NotXml(ValueError):
    """A reference XML does not allow: the document is not XML, the strict path says why."""


def _xml_char(match: re.Match[str]) -> str:
    name, decimal, hexadecimal = match.groups()
    if name:
        return _XML_NAMED[name]
    code = int(decimal) if decimal else int(hexadecimal, 16)
    if (
        code in (0x9, 0xA, 0xD)
        or 0x20 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    ):
        return chr(code)
    raise _NotXml(match.group(0))


def _replace_common(text: str, table: tuple[tuple[str, str], ...]) -> str | None:
    """``text`` with its references decoded by ``str.replace`` when ``table`` has every one it
    holds, else ``None``. One regex pass lists the references there are (an ``&`` that starts
    none is listed alone), so only those are replaced: ten scans of a whole file cost more."""
    present = set(_REFERENCE.findall(text))
    if not present.issubset(_TABLE_KEYS[table]):
        return None
    for entity, char in table:
        if entity in present:
            text = text.replace(entity, char)
    return text


def _xml_unescape(text: str) -> str:
    """The XML parser's one level of decoding; ``_NotXml`` where a parser would stop."""
    if "&" not in text:
        return text
    decoded = _replace_common(text, _XML_ENTITIES)
    if decoded is not None:
        return decoded
    if _STRAY_AMPERSAND.search(text):
        raise _NotXml("an & that starts no reference")
    return _XML_REF.sub(_xml_char, text)  # one pass: a "&" it makes is not read again


def _html_unescape(text: str) -> str:
    """One level of HTML decoding (``&amp;lt;`` becomes ``&lt;``, not ``<``)."""
    if "&" not in text:
        return text
    decoded = _replace_common(text, _HTML_ENTITIES)
    return html.unescape(text) if decoded is None else decoded


def _html_text(markup: str) -> str:
    """The text of a cue's HTML layer: YouTube's formatting tags out, then one HTML decode."""
    if "<" in markup:
        markup = _FORMATTING_TAG.sub("", markup)
    return _html_unescape(markup)


def _both_layers_table() -> dict[str, str]:
    """What the two decodes make of each token of ``_BOTH_LAYERS_TOKEN``."""
    xml_layer = ("&gt;", "&quot;", "&apos;", "&#39;", "&#x27;", "&#34;", "&#x22;", "&#10;")
    html_layer = ("&lt;", "&gt;", "&quot;", "&apos;", "&#39;", "&#x27;", "&#10;", "&amp;")
    tokens = (*xml_layer, *("&amp;" + entity[1:] for entity in html_layer))
    return {token: _html_text(_xml_unescape(token)) for token in tokens}


_BOTH_LAYERS = _both_layers_table()
_BY_KIND = {**_BOTH_LAYERS, "&amp;amp;": _AMPERSAND_LATER}


def _decode_by_kind(raw: str) -> str | None:
    """``_xml_then_html(raw)`` one kind of token at a time, or ``None`` to decode it otherwise.

    Each kind found (the first "&" left, a reference token of ``_BOTH_LAYERS``) is replaced
    everywhere in one C pass, split and join: a handful of kinds, each a few thousand times
    over, cost less than a regex match and a lookup per token. The same as the one-split decode
    (so as the two-step one) because each reference token holds one "&", at its start, and none
    is the start of another: the tokens of the text never overlap, so a pass replaces all of
    one kind and no other; what a pass writes ("<", ">", a quote, a line break, or
    ``_AMPERSAND_LATER`` for ``&amp;amp;``) is in no token, so no pass makes a token that was
    not there or finds one where the text had none. When no "&" is left, every "&" was a
    reference token's, and each was replaced by its value (``&amp;amp;``'s once the
    placeholder, which the text did not hold, turns into "&"). A formatting tag (or any
    ``&lt;``, looked for first), a lone "&", a reference outside the table or too many kinds:
    ``None``.
    """
    if _AMPERSAND_LATER in raw or _ESCAPED_LT.search(raw):
        return None
    text, at, kinds = raw, 0, 0
    while (at := text.find("&", at)) >= 0:
        token = _REFERENCE_TOKEN.match(text, at)
        if token is None or kinds == _MOST_KINDS:
            return None
        kind = token.group()
        text = _BY_KIND[kind].join(text.split(kind))
        kinds += 1
    return text.replace(_AMPERSAND_LATER, "&")


def _xml_then_html(raw: str) -> str:
    """The text of raw XML character data with no element tags left: the XML decode, YouTube's
    formatting tags out, the HTML decode; raises ``_NotXml`` as ``_xml_unescape`` does.

    Exactly ``_html_text(_xml_unescape(raw))``, which takes two scans for references, a regex
    pass for the tags and a ``str.replace`` per kind per layer; when every "&" is inside a token
    of ``_BOTH_LAYERS_TOKEN``, one regex split finds them all and one dict lookup each decodes
    both layers at once (a formatting tag, in no table, becomes nothing). The same because:
    with every "&" in a token, every XML reference is one, so is every "<" of the HTML layer
    (a raw one is an element, out already), so the formatting tags the two-step decode removes
    are the formatting tokens; every "&" of the HTML layer comes from a token's XML ``&amp;``
    and starts a reference that ends at the token's ";", so removing a tag next to it cannot
    lengthen it, and the plain text between tokens holds no "&" to start another.
    """
    if "&" not in raw:
        return raw  # no reference, and with no "<" no markup: nothing to decode in either layer
    decoded = _decode_by_kind(raw)
    if decoded is not None:
        return decoded
    parts = _BOTH_LAYERS_TOKEN.split(raw)
    tokens = parts[1::2]
    amps = raw.count("&")
    # Each token holds an "&", a formatting tag more than one: as many tokens as "&", or as
    # many "&" in the tokens as in the text, means no "&" outside them.
    if len(tokens) == amps or "".join(tokens).count("&") == amps:
        parts[1::2] = map(_BOTH_LAYERS.get, tokens, repeat(""))
        return "".join(parts)
    return _html_text(_xml_unescape(raw))


def _bad(source: str, why: str) -> VidError:
    return VidError(
        ErrorCode.UPSTREAM,
        f"Could not read the caption file for {source}: {why}.",
        hint="Retry once in a minute; if it fails again, tell the user the caption file could not be "
        "read, and do not retry.",
    )


def clean_text(markup: str) -> str:
    """One cue's text from its HTML layer (timedtext character data after XML decoding):
    YouTube's formatting tags out, entities decoded once, runs of whitespace made one space."""
    return " ".join(_html_text(markup).split())


def _clean_many(raws: list[str], *, layer: str) -> list[str]:
    """The text of many cues at once: one regex pass and one decode for the lot.

    ``layer`` says what the strings are: ``xml``, raw XML character data (the fast path), whose
    element tags and XML decoding are what a parser would have done; ``html``, character data a
    parser already decoded; ``plain``, text that is nothing but text (json3). Raises ``_NotXml``
    when ``xml`` strings are not well-formed. No string holds a NUL (callers take them out).
    """
    if not raws:
        return []
    joined = _SEP.join(raws)
    if layer == "xml":
        if "<" in joined:  # srv3's word elements are out already (``_without_words``)
            if _CUE_ELEMENT.search(joined):
                raise _NotXml("a cue inside a cue")  # the strict path reads both
            joined = _XML_TAG.sub("", joined)
            if "<" in joined:
                raise _NotXml("a < that starts no tag")
        joined = _xml_then_html(joined)
    elif layer == "html":
        joined = _html_text(joined)
    # The characters first: a search for one is memchr (none for a character wider than the
    # string's widest), so a file with line breaks in it is not also searched for two spaces.
    # Then rfind, not "in": CPython's backward search for two spaces is a quarter faster on
    # words (0.18 against 0.23 ms on 2,500 cues, alternating), the answer the same.
    if not any(char in joined for char in _WHITESPACE_BUT_SPACE) and joined.rfind("  ") < 0:
        # No whitespace but single spaces, so nothing to collapse: only the spaces at the ends
        # of each cue go. Plain strings are what was joined, NUL-free: no split.
        return list(map(str.strip, raws if layer == "plain" else joined.split(_SEP)))
    # str.split() collapses every run of whitespace in C; NUL is not whitespace, so the
    # separators survive, each with at most a space on either side for strip() to take.
    joined = " ".join(joined.split())
    return [text.strip() for text in joined.split(_SEP)]


def _segments(starts: list[float], durations: list[float], texts: list[str]) -> list[Segment]:
    """Segments from parallel lists, dropping empty cues and impossible times."""
    segments: list[Segment] = []
    append = segments.append
    for start, duration, text in zip(starts, durations, texts, strict=True):
        if not text or math.isnan(start) or math.isinf(start):
            continue
        if start < 0:
            start = 0.0
        if math.isnan(duration) or math.isinf(duration) or duration < 0:
            duration = 0.0
        append(Segment(start_sec=start, end_sec=round(start + duration, 3), text=text))
    return segments


def _number(value: Any, default: float = 0.0) -> float:
    if isinstance(value, bool):
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


# gc=False: these hold only numbers, strings and lists of each other, never a cycle, so the
# collector need not track the thousands a file decodes to (a quarter of the decode's time).
class _Json3Seg(msgspec.Struct, gc=False):
    utf8: str = ""


class _Json3Event(msgspec.Struct, gc=False):
    tStartMs: float = math.nan  # YouTube's field names
    dDurationMs: float = 0.0
    segs: list[_Json3Seg] | None = None


class _Json3(msgspec.Struct, gc=False):
    events: list[_Json3Event]


_decode_json3 = msgspec.json.Decoder(_Json3).decode

# A time the comprehension below reads exactly: whole milliseconds, never negative, and a start
# plus a duration still an exact integer. Anything else fails the typed decode and takes the
# general reading, which clamps it as it always has.
_Millis = Annotated[int, msgspec.Meta(ge=0, le=int(_EXACT_MS) // 2)]


class _Json3EventMs(msgspec.Struct, gc=False):
    """An event as YouTube writes it: whole milliseconds, and a start always there."""

    tStartMs: _Millis
    dDurationMs: _Millis = 0
    segs: tuple[_Json3Seg, ...] | None = None  # a tuple decodes (and frees) faster than a list


class _Json3Ms(msgspec.Struct, gc=False):
    events: list[_Json3EventMs]


_decode_json3_ms = msgspec.json.Decoder(_Json3Ms).decode


def _json3_in_ms(events: list[_Json3EventMs]) -> list[Segment]:
    """Segments from whole-millisecond events with one comprehension.

    ``t / 1000`` and ``(t + d) / 1000`` are exactly what rounding the sums in seconds to three
    decimals gives, so no ``round`` per cue; the texts are cleaned in one batch.
    """
    # An event with no segs (a window definition) has no text, so it drops with the empty cues:
    # no list of the others to build first.
    raws = [
        ""
        if (segs := event.segs) is None
        else segs[0].utf8
        if len(segs) == 1
        else "".join([seg.utf8 for seg in segs])
        for event in events
    ]
    if _SEP in "".join(raws):
        raws = [raw.replace(_SEP, "") for raw in raws]
    return [
        Segment(start_sec=cue.tStartMs / 1000, end_sec=(cue.tStartMs + cue.dDurationMs) / 1000, text=text)
        for cue, text in zip(events, _clean_many(raws, layer="plain"), strict=True)
        if text
    ]


def parse_json3(data: str | bytes | Mapping[str, Any], *, source: str = "the video") -> list[Segment]:
    """Segments from YouTube's json3 caption format.

    Typed decoding (msgspec, in C) reads the usual shape; a file with surprises in it (a number
    as a string, a stray null) is read again leniently rather than refused.
    """
    if not isinstance(data, Mapping):
        if len(data) > MAX_CAPTION_CHARS:
            raise _bad(source, "the file is too large")
        try:
            return _json3_in_ms(_decode_json3_ms(data).events)
        except msgspec.ValidationError:  # a time in fractions of a millisecond, negative, or none
            pass
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            raise _bad(source, "it is not valid JSON") from exc
        try:
            events = _decode_json3(data).events
        except msgspec.ValidationError:
            pass
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            raise _bad(source, "it is not valid JSON") from exc
        else:
            starts = [round(e.tStartMs / 1000.0, 3) for e in events if e.segs is not None]
            durations = [e.dDurationMs / 1000.0 for e in events if e.segs is not None]
            raws = [
                "".join(seg.utf8 for seg in e.segs).replace(_SEP, "") for e in events if e.segs is not None
            ]
            return _segments(starts, durations, _clean_many(raws, layer="plain"))
        data = json.loads(data)
    return _parse_json3_leniently(data, source)


def _parse_json3_leniently(data: Any, source: str) -> list[Segment]:
    events = data.get("events") if isinstance(data, Mapping) else None
    if not isinstance(events, list):
        raise _bad(source, "it has no events list")
    starts: list[float] = []
    durations: list[float] = []
    raws: list[str] = []
    for event in events:
        if not isinstance(event, Mapping) or not isinstance(segs := event.get("segs"), list):
            continue  # window definitions and the like
        text = "".join(str(seg.get("utf8", "")) for seg in segs if isinstance(seg, Mapping))
        starts.append(round(_number(event.get("tStartMs"), math.nan) / 1000.0, 3))
        durations.append(_number(event.get("dDurationMs")) / 1000.0)
        raws.append(text.replace(_SEP, ""))
    # blank aAppend line breaks drop here
    return _segments(starts, durations, _clean_many(raws, layer="plain"))


def parse_timedtext_xml(text: str | bytes, *, source: str = "the video") -> list[Segment]:
    """Segments from srv3 (``<p t d>``, ms), srv2 (``<text t d>``, ms) or classic
    (``<text start dur>``, seconds)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if len(text) > MAX_CAPTION_CHARS:
        raise _bad(source, "the file is too large")
    if "!" in text and _HOSTILE.search(text):  # both need a "!", and a search for one is memchr
        raise _bad(source, "it declares a DOCTYPE or entities, which a caption file never needs")
    fast = _parse_fast(text)
    return fast if fast is not None else _parse_tree(text, source)


def _parse_fast(text: str) -> list[Segment] | None:
    """The common shapes by regex; ``None`` when the document is anything else."""
    if _SEP in text or not text.rstrip().endswith(_ROOT_ENDS):
        return None
    if "!" in text and "<!" in text:  # a comment or CDATA: the strict path
        return None
    if "<text " in text[:_HEAD] or ("<p " not in text and "<text " in text):
        if _classic_in_c is not None:  # None: a shape the C parse leaves to this one
            segments = _classic_in_c(text, Segment)
            if segments is not None:
                return segments
        # One split: what lies between cues, then each cue's start, duration and body (``None``
        # where the file has none), four by four; the usual shape first, the general if need be.
        seconds = True
        usual, general, document = _CLASSIC_USUAL, _CLASSIC_CUE, text
    elif "<p " in text:
        seconds = False
        words = _without_words(text)
        if words is None:
            return None
        usual, general, document = _SRV3_USUAL, _SRV3_CUE, words
    else:
        return None
    parts = usual.split(document)
    if not _missed_cue(parts):
        starts, durations, bodies = parts[1::4], parts[2::4], parts[3::4]
    else:
        parts = general.split(document)
        if _missed_cue(parts):
            return None
        # Only the general regexes have optional groups (a cue with no duration or no body):
        # scanning the usual split's lists for ``None`` would find none, 2,500 comparisons each.
        starts, durations, bodies = parts[1::4], parts[2::4], parts[3::4]
        if None in bodies:
            bodies = [body or "" for body in bodies]
        if None in durations:
            durations = [duration or "0" for duration in durations]
    try:
        texts = _clean_many(bodies, layer="xml")
    except _NotXml:
        return None  # the strict path says what is wrong with it
    segments = _segments_in_ms(starts, durations, texts, seconds=seconds)
    if segments is not None:
        return segments
    scale = 1.0 if seconds else 1000.0
    segments = []
    append = segments.append
    try:  # numbers JSON does not read the same way (".5", "1.2.3", "1.2345"): one at a time
        for start, duration, cue in zip(starts, durations, texts, strict=True):
            if cue:  # self-closed and blank cues have no text
                begin = float(start) / scale
                end = begin + float(duration) / scale
                append(Segment(start_sec=round(begin, 3), end_sec=round(end, 3), text=cue))
    except ValueError:  # "1.2.3" matches [0-9.]+ but is no number
        return None
    return segments


def _missed_cue(parts: list[str]) -> bool:
    """Whether a cue regex's split missed a cue: one would be in what lies between the cues it
    found (one inside a body, a cue in a cue, ``_clean_many`` refuses), as an element the strict
    path reads (``<text`` or ``<p`` followed by a space, a newline, ``/`` or ``>``)."""
    return _CUE_ELEMENT.search("".join(parts[::4])) is not None


def _without_words(text: str) -> str | None:
    """An srv3 document without its word elements, or ``None`` when removing them could change
    what it says (an XML reference cut by a tag, which is no XML).

    25,000 words are 50,000 tags: removed from the whole document before the cues are found,
    in two regex passes (word boundaries, then the rest), the cue regex then scans bodies with
    no "<" in them. Text outside every ``<p>`` stays outside (only tags go), and the regexes
    never remove a tag right after a "<", so no element or reference is made that was not there.
    """
    if "&" in text and _CUT_REFERENCE.search(text):
        return None
    if "<s" not in text:
        return text
    return _SRV3_WORD.sub("", _SRV3_BOUNDARY.sub("", text))


def _segments_in_ms(
    starts: list[str], durations: list[str], texts: list[str], *, seconds: bool
) -> list[Segment] | None:
    """Segments with every time read by one msgspec decode, or ``None`` to read them one by one.

    Times are whole milliseconds: srv3 writes them so, and a classic time in seconds with at most
    three decimals is one once ``e3`` is appended (``"1.54e3"`` is 1540.0, exactly). Then
    ``(start + duration) / 1000`` is exactly what rounding ``start + duration`` in seconds to
    three decimals gives, so the one comprehension left does no rounding. Any number JSON would
    read differently, or a time too large to be exact, sends the caller the slow way.
    """
    comma = "e3," if seconds else ","
    numbers = comma.join(starts) + comma + comma.join(durations)
    if seconds:
        if _OVER_THREE_DECIMALS.search(numbers):
            return None
        numbers += "e3"
    try:
        values = _decode_times(f"[{numbers}]")
    except msgspec.DecodeError:  # not JSON's numbers, or one too large to be exact
        return None
    count = len(starts)
    return [
        Segment(start_sec=start / 1000, end_sec=(start + duration) / 1000, text=text)
        for start, duration, text in zip(values[:count], values[count:], texts, strict=True)
        if text
    ]


def _parse_tree(text: str, source: str) -> list[Segment]:
    """Any well-formed timedtext document, through a real XML parser."""
    try:
        root = ElementTree.fromstring(text.lstrip("\ufeff"))
    except ElementTree.ParseError as exc:
        raise _bad(source, f"malformed XML ({exc})") from exc
    starts: list[float] = []
    durations: list[float] = []
    raws: list[str] = []
    for element in root.iter():
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag not in ("p", "text"):
            continue
        attrs = element.attrib
        if "start" in attrs:
            start, duration = _number(attrs["start"], math.nan), _number(attrs.get("dur"))
        elif "t" in attrs:
            start, duration = _number(attrs["t"], math.nan) / 1000.0, _number(attrs.get("d")) / 1000.0
        else:
            continue
        starts.append(start if math.isnan(start) else round(start, 3))
        durations.append(duration)
        raws.append("".join(element.itertext()).replace(_SEP, ""))
    return _segments(starts, durations, _clean_many(raws, layer="html"))


def parse_captions(text: str | bytes, *, source: str = "the video") -> list[Segment]:
    """Segments from any supported format, recognised by its first character."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    head = text.lstrip("\ufeff \t\r\n")[:1]
    if head == "{":
        return parse_json3(text, source=source)
    if head == "<":
        return parse_timedtext_xml(text, source=source)
    if not head:
        raise _bad(source, "the file is empty")
    raise _bad(source, "it is neither json3 nor timedtext XML")


# --- which track -------------------------------------------------------------------------------


def _norm(code: str) -> str:
    return code.strip().replace("_", "-").lower()


def same_language(a: str, b: str, *, exact: bool) -> bool:
    """``exact``: the same code ignoring case; otherwise the same primary subtag (``pt`` ~ ``pt-BR``)."""
    a, b = _norm(a), _norm(b)
    return a == b if exact else a.split("-")[0] == b.split("-")[0]


@dataclass(frozen=True)
class TrackChoice:
    index: int
    """Position of the chosen source track in the list given to ``choose_track``."""
    translate_to: str | None
    """The platform's code to translate into, or ``None`` to read the track as it is."""
    note: str
    missing: str | None = None
    """The language asked for when no track is in it (the choice is the best track instead)."""
    languages: tuple[str, ...] = ()
    """The languages of the tracks there are, each once, in the platform's order."""


_NOTE_LANGUAGES = 12
"""Most track languages a note lists (``available_languages`` has them all): a header shows a
note on one line of at most 200 characters."""


def track_languages(tracks: Sequence[CaptionTrack]) -> tuple[str, ...]:
    """Each track's language once, in the order the platform lists them."""
    return tuple(dict.fromkeys(track.language for track in tracks))


def missing_note(lang: str, languages: Sequence[str]) -> tuple[str, str]:
    """What a note says before and after its reason when ``lang`` had no track: that it had none
    (first, so a shortened line still says it), and which languages there are."""
    shown = ", ".join(languages[:_NOTE_LANGUAGES])
    if len(languages) > _NOTE_LANGUAGES:
        shown += f" and {len(languages) - _NOTE_LANGUAGES} more"
    return f"requested {lang} not available, so the best track instead: ", f"; tracks: {shown}"


def _label(track: CaptionTrack) -> str:
    kind = "auto-generated" if track.kind == "auto" else "manual"
    return f"{kind} {track.name or track.language} track ({track.language})"


def _find(tracks: Sequence[CaptionTrack], lang: str) -> int | None:
    """Manual before automatic; within each, the exact code before a primary-subtag match."""
    for kind in ("manual", "auto"):
        for exact in (True, False):
            for index, track in enumerate(tracks):
                if track.kind == kind and same_language(track.language, lang, exact=exact):
                    return index
    return None


def _reason(tracks: Sequence[CaptionTrack], index: int) -> str:
    track = tracks[index]
    if track.kind == "manual" and any(
        t.kind == "auto" and same_language(t.language, track.language, exact=False) for t in tracks
    ):
        return f"{_label(track)} chosen over the auto-generated one"
    if track.kind == "auto":
        return f"{_label(track)} chosen: no manual track in that language"
    return f"{_label(track)} chosen"


def _translation_source(tracks: Sequence[CaptionTrack], video_language: str | None) -> int | None:
    translatable = [i for i, t in enumerate(tracks) if t.translatable]
    if not translatable:
        return None
    if video_language:
        own = [i for i in translatable if same_language(tracks[i].language, video_language, exact=False)]
        for index in own:
            if tracks[index].kind == "manual":
                return index
        if own:
            return own[0]
    manual = [i for i in translatable if tracks[i].kind == "manual"]
    return (manual or translatable)[0]


def choose_track(
    tracks: Sequence[CaptionTrack],
    *,
    lang: str | None,
    video_language: str | None,
    translation_languages: Sequence[str] = (),
) -> TrackChoice | None:
    """The track to read, and why; ``None`` only when ``tracks`` is empty.

    With ``lang``: a track in that language (manual first), else a platform translation into it
    from a translatable track (the video's own language first), else the best track as without
    ``lang``, with ``missing`` set and a note that says so and lists the languages there are.
    Without ``lang``: the video's own language, manual first, else the first manual track, else
    the first one.
    """
    if not tracks:
        return None
    languages = track_languages(tracks)
    missing = None
    if lang:
        index = _find(tracks, lang)
        if index is not None:
            return TrackChoice(
                index, None, f"requested {lang}: {_reason(tracks, index)}", languages=languages
            )
        target = next((code for code in translation_languages if same_language(code, lang, exact=True)), None)
        target = target or next(
            (code for code in translation_languages if same_language(code, lang, exact=False)), None
        )
        source = _translation_source(tracks, video_language)
        if target is not None and source is not None:
            note = f"no {lang} track; {_label(tracks[source])} translated to {target} by YouTube"
            return TrackChoice(source, target, note, languages=languages)
        # No track and no platform translation: the best track, saying so. A translation of our
        # own (an LLM's, `translate=1` on the REST API, not built yet) would start from here.
        missing = lang
    before, after = missing_note(lang, languages) if missing else ("", "")
    index = _find(tracks, video_language) if video_language else None
    if index is None:
        index = next((i for i, t in enumerate(tracks) if t.kind == "manual"), 0)
        note = f"{_label(tracks[index])} chosen"
    else:
        note = f"video language {video_language}: {_reason(tracks, index)}"
    return TrackChoice(index, None, f"{before}{note}{after}", missing, languages)
