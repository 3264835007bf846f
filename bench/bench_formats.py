"""Parse and render a 3-hour transcript.

A timedtext XML file in the recorded fixture's shape (``<text start dur>``, HTML-escaped text) with
about 2,500 cues, as YouTube serves for a three-hour talk, and its json3, srv3 and WebVTT twins.
Figures:

- ms to parse the XML with our parser, and with youtube-transcript-api's parser on the same bytes
  (the reference; the target is at least 5x faster);
- ms to parse json3, srv3 (``<p t d>`` with a ``<s>`` per word, and a formatting tag in every
  tenth cue) and WebVTT (what yt-dlp and sidecar files give);
- ms to render the parsed transcript to every format in ``FORMATTERS``;
- ``vs_youtube_transcript_api``: ours against the reference on the same input, run alternately
  (``bench.timing.compare``): the XML parse (target 5x), and SRT and WebVTT rendering against its
  ``SRTFormatter`` and ``WebVTTFormatter`` given the same cues as its own ``FetchedTranscript``
  (target 2x). srv3 and json3 have no reference there: its parser reads only ``<text start dur>``;
  srv3 is put against our own ElementTree path (``_parse_tree``, what any XML-parser reading
  costs) and json3 against the 1.5 ms target alone;
- ``parse_xml_in_c``: whether the optional C module (``src/_vid2context_captions.c``) parsed the
  XML, and ``vs_youtube_transcript_api.parse_xml_pure_python``: the pure-Python path (the
  Worker's, and any install built without a compiler) against the same reference, same run;
  ``parse_xml_formatted`` (and ``parse_xml_formatted_in_c``): the same XML with YouTube's
  formatting tags around every tenth cue, against the reference on those bytes;
- ``parse_xml_stages``: where the pure-Python classic XML parse's time goes, each stage timed
  alone on the same file (the cue split, both decode layers, the whitespace check and the split
  into cues, the times and segments), and the lower bound that puts on the whole;
- ``vs_before``: the XML and srv3 parse against the parser as it was before issue #17's second
  pass (``bench/captions_before.py``), alternately in the same run: "theirs" is the old one.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from html import escape

from vid2context.formats import FORMATTERS, RenderOptions
from vid2context.models import Segment, Transcript, VideoContext, VideoMetadata
from vid2context.providers import captions
from vid2context.providers.captions import _parse_tree, parse_json3, parse_timedtext_xml
from vid2context.providers.subtitles import parse_vtt

from .captions_before import parse_before
from .timing import compare, measure

CUES = 2500
HOURS = 3

_WORDS = (
    "so the thing about this design is that it keeps <i>every</i> layer small & honest and we'll see "
    "why it matters when the load grows past what one machine can hold, which it always does"
).split()


_FONT_OPEN = escape('<font color="#E5E5E5">')
_FONT_CLOSE = escape("</font>")


def _vtt_time(seconds: float) -> str:
    minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(int(minutes), 60)
    return f"{hours:02d}:{minutes:02d}:{rest:06.3f}"


def build_transcript(seed: int = 7) -> tuple[str, str, str, str]:
    """(timedtext XML, json3, srv3, WebVTT) for a 3-hour talk, deterministic for a seed."""
    rng = random.Random(seed)
    step = HOURS * 3600 / CUES
    lines = ['<?xml version="1.0" encoding="utf-8" ?><transcript>']
    paragraphs = ['<?xml version="1.0" encoding="utf-8" ?><timedtext format="3"><body>']
    cues = ["WEBVTT", ""]
    events = []
    for i in range(CUES):
        start = round(i * step, 2)
        dur = round(step * rng.uniform(0.8, 1.0), 3)
        words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 14))]
        text = " ".join(words)
        lines.append(f'<text start="{start}" dur="{dur}">{escape(escape(text, quote=False))}</text>')
        events.append(
            {"tStartMs": int(start * 1000), "dDurationMs": int(dur * 1000), "segs": [{"utf8": text}]}
        )
        spans = "".join(
            f'<s t="{n * 200}" ac="0">{escape(escape((" " if n else "") + word, quote=False))}</s>'
            for n, word in enumerate(words)
        )
        if i % 10 == 0:  # YouTube's own formatting, escaped once: removed when read
            spans = f"{_FONT_OPEN}{spans}{_FONT_CLOSE}"
        paragraphs.append(f'<p t="{int(start * 1000)}" d="{int(dur * 1000)}" w="1">{spans}</p>')
        cues += [f"{_vtt_time(start)} --> {_vtt_time(start + dur)}", escape(text, quote=False), ""]
    lines.append("</transcript>")
    paragraphs.append("</body></timedtext>")
    return "\n".join(lines), json.dumps({"events": events}), "\n".join(paragraphs), "\n".join(cues)


def with_formatting(xml: str) -> str:
    """The classic file with YouTube's formatting around every tenth cue, as its srv3 twin has it
    (and as real files with italics or colour have: the recorded one has ``&lt;i>``)."""
    count = itertools.count()
    return re.sub(
        r"(<text [^>]*>)([^<]*)(</text>)",
        lambda m: f"{m[1]}{_FONT_OPEN}{m[2]}{_FONT_CLOSE}{m[3]}" if next(count) % 10 == 0 else m[0],
        xml,
    )


def xml_stages(xml: str) -> dict[str, float]:
    """CPU median ms of each stage of the classic XML fast path, run alone on ``xml``."""
    parts = captions._CLASSIC_USUAL.split(xml)
    starts, durations, bodies = parts[1::4], parts[2::4], parts[3::4]
    joined = captions._SEP.join(bodies)
    decoded = captions._xml_then_html(joined)
    texts = captions._clean_many(bodies, layer="xml")

    def whitespace() -> object:
        if not any(char in decoded for char in captions._WHITESPACE_BUT_SPACE) and decoded.rfind("  ") < 0:
            return list(map(str.strip, decoded.split(captions._SEP)))
        return None

    stages = {
        "cue_split": lambda: captions._CLASSIC_USUAL.split(xml),
        "decode_both_layers": lambda: captions._xml_then_html(joined),
        "whitespace_and_cue_texts": whitespace,
        "times_and_segments": lambda: captions._segments_in_ms(starts, durations, texts, seconds=True),
    }
    figures = {name: measure(work, repeat=41)["cpu_median_ms"] for name, work in stages.items()}
    figures["sum_of_stages"] = round(sum(figures.values()), 3)
    return figures


def pure_python(parse):  # noqa: ANN001, ANN202 - a parse function, the same without the C module
    """``parse`` run with the optional C module out of the way, as the Worker parses."""

    def parsed(text: str) -> object:
        saved, captions._classic_in_c = captions._classic_in_c, None
        try:
            return parse(text)
        finally:
            captions._classic_in_c = saved

    return parsed


def run() -> dict[str, object]:
    from youtube_transcript_api._transcripts import _TranscriptParser  # the reference parser

    xml, json3, srv3, vtt = build_transcript()
    reference = _TranscriptParser(preserve_formatting=False)
    ours = measure(lambda: parse_timedtext_xml(xml), repeat=40)
    theirs = measure(lambda: reference.parse(xml), repeat=40)
    segments = parse_timedtext_xml(xml)
    assert len(segments) == len(reference.parse(xml)) == CUES
    assert segments == parse_before(xml) and parse_timedtext_xml(srv3) == parse_before(srv3)
    context = VideoContext(
        id="youtube:benchmark01",
        metadata=VideoMetadata(
            id="youtube:benchmark01",
            platform="youtube",
            title="A three-hour talk",
            duration_sec=HOURS * 3600,
            url="https://www.youtube.com/watch?v=benchmark01",
        ),
        transcript=Transcript(
            language="en",
            origin="captions-manual",
            timing="caption",
            producer="youtube/innertube",
            segments=segments,
        ),
    )
    render = {}
    for formatter in FORMATTERS.values():
        for timestamps in (False, True):
            key = f"{formatter.id}{'+timestamps' if timestamps else ''}"
            options = RenderOptions(timestamps=timestamps)
            if formatter.combines_videos:
                render[key] = measure(lambda f=formatter, o=options: f.render(context, o), repeat=7)
            else:
                render[key] = measure(lambda f=formatter, o=options: f.render(context, o))
    from youtube_transcript_api import FetchedTranscript, FetchedTranscriptSnippet
    from youtube_transcript_api.formatters import SRTFormatter, WebVTTFormatter

    fetched = FetchedTranscript(
        snippets=[
            FetchedTranscriptSnippet(text=s.text, start=s.start_sec, duration=s.end_sec - s.start_sec)
            for s in segments
        ],
        video_id="benchmark01",
        language="English",
        language_code="en",
        is_generated=False,
    )
    plain = RenderOptions()
    srv3_versus_elementtree = compare(lambda: parse_timedtext_xml(srv3), lambda: _parse_tree(srv3, "bench"))
    python_xml = pure_python(parse_timedtext_xml)
    assert python_xml(xml) == segments
    formatted = with_formatting(xml)
    assert parse_timedtext_xml(formatted) == python_xml(formatted) == segments
    versus = {
        "parse_xml": compare(lambda: parse_timedtext_xml(xml), lambda: reference.parse(xml)),
        "parse_xml_pure_python": compare(lambda: python_xml(xml), lambda: reference.parse(xml)),
        "parse_xml_formatted": compare(
            lambda: parse_timedtext_xml(formatted), lambda: reference.parse(formatted)
        ),
        "render_srt": compare(
            lambda: FORMATTERS["srt"].render(context, plain),
            lambda: SRTFormatter().format_transcript(fetched),
        ),
        "render_vtt": compare(
            lambda: FORMATTERS["vtt"].render(context, plain),
            lambda: WebVTTFormatter().format_transcript(fetched),
        ),
    }
    return {
        "cues": CUES,
        "hours": HOURS,
        "xml_bytes": len(xml),
        "parse_xml": ours,
        "parse_xml_youtube_transcript_api": theirs,
        "parse_xml_speedup": round(theirs["median_ms"] / ours["median_ms"], 2),
        "parse_xml_speedup_cpu": round(theirs["cpu_median_ms"] / ours["cpu_median_ms"], 2),
        "parse_xml_formatted_in_c": captions._classic_in_c is not None
        and captions._classic_in_c(formatted, Segment) is not None,
        "parse_xml_in_c": captions._classic_in_c is not None
        and captions._classic_in_c(xml, Segment) is not None,
        "parse_json3": measure(lambda: parse_json3(json3)),
        "parse_srv3": measure(lambda: parse_timedtext_xml(srv3)),
        "parse_vtt": measure(lambda: parse_vtt(vtt)),
        "render": render,
        "vs_youtube_transcript_api": versus,
        "srv3_vs_elementtree": srv3_versus_elementtree,
        "parse_xml_stages": xml_stages(xml),
        "vs_before": {
            "parse_xml": compare(lambda: python_xml(xml), lambda: parse_before(xml)),
            "parse_srv3": compare(lambda: parse_timedtext_xml(srv3), lambda: parse_before(srv3)),
        },
    }
