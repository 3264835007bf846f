"""TextTiling (Hearst, 1997) over a transcript's windows: where the subject changes.

The transcript is cut into tiles with the search index's window builder (``search/windows.py``:
whole consecutive segments, never past an embedding model's limit), smaller than search's
(``TILE_WORDS``, about 45 seconds of speech) so a cut can land near where the subject turns. At
every gap between two tiles, the ``BLOCK`` tiles before it are compared with the ``BLOCK``
after it:

- **lexical cohesion** (no embedder): the cosine of their content-word counts
  (``lexical.terms``), integer counting only, so the same transcript is cut the same way on
  every machine;
- **embeddings** (an embedder is set up): the cosine of the mean of each side's tile vectors.

A gap's *depth* is how far its similarity lies below the nearest peak on each side (climbing
while the similarity rises), summed. Gaps deeper than the mean depth less half its standard
deviation (Hearst's threshold) and above the natural break among those depths are candidates
(``_threshold``); the deepest are taken first, each only when it
leaves every chapter at least ``min_chapter_sec`` long, ties to the earlier gap. A cut then goes
to the best segment start near the gap: after a pause, where a sentence ended.

Pure: no I/O; the vectors come from the caller.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import msgspec

from ..formats.blocks import ends_sentence
from ..models import Segment, VideoContext
from ..search.windows import Window, make_windows
from .lexical import cosine

__all__ = [
    "BLOCK",
    "MAX_CHAPTERS",
    "MIN_CHAPTER_SEC",
    "TILE_WORDS",
    "boundaries",
    "depth_scores",
    "lexical_gaps",
    "min_chapter_sec",
    "tiles_of",
    "vector_gaps",
]

TILE_WORDS = 120
"""A tile stops growing at this many words (about 45 seconds of speech)."""
_TILE_MAX_WORDS = 160
BLOCK = 3
"""Tiles compared on each side of a gap: about two minutes of speech."""
MIN_CHAPTER_SEC = 120.0
"""No chapter is shorter than two minutes, nor than a thirtieth of the video (``min_chapter_sec``)."""
MAX_CHAPTERS = 40
_SNAP_SEGMENTS = 3
_DEPTH_DIGITS = 9
"""Depths are compared rounded, so that vectors differing in their last bits (one CPU's float
arithmetic against another's) do not reorder two gaps of the same depth."""


def min_chapter_sec(duration_sec: float) -> float:
    """The shortest chapter for a video this long: two minutes, or a thirtieth of it."""
    return max(MIN_CHAPTER_SEC, duration_sec / 30)


def tiles_of(context: VideoContext) -> list[Window]:
    """The tiles of ``context``'s transcript, ignoring any chapters it has (they are what is
    being remade, and the window builder would not cross them)."""
    bare = msgspec.structs.replace(
        context,
        metadata=msgspec.structs.replace(context.metadata, chapters=[]),
        generated_chapters=None,
    )
    return make_windows(bare, target_words=TILE_WORDS, max_words=_TILE_MAX_WORDS)


def _sides(count: int, gap: int) -> tuple[range, range]:
    return range(max(0, gap - BLOCK + 1), gap + 1), range(gap + 1, min(count, gap + 1 + BLOCK))


def lexical_gaps(tiles: Sequence[Counter[str]]) -> list[float]:
    """Similarity at each gap (between tile ``g`` and ``g + 1``) by shared words."""
    scores = []
    for gap in range(len(tiles) - 1):
        left, right = _sides(len(tiles), gap)
        a: Counter[str] = Counter()
        b: Counter[str] = Counter()
        for i in left:
            a.update(tiles[i])
        for i in right:
            b.update(tiles[i])
        scores.append(cosine(a, b))
    return scores


def _mean(vectors: Sequence[Sequence[float]], rows: range) -> list[float]:
    dim = len(vectors[rows[0]])
    return [sum(vectors[i][d] for i in rows) / len(rows) for d in range(dim)]


def _cos(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def vector_gaps(vectors: Sequence[Sequence[float]]) -> list[float]:
    """Similarity at each gap by the tiles' embeddings (the mean vector of each side)."""
    scores = []
    for gap in range(len(vectors) - 1):
        left, right = _sides(len(vectors), gap)
        scores.append(_cos(_mean(vectors, left), _mean(vectors, right)))
    return scores


def depth_scores(scores: Sequence[float]) -> list[float]:
    """How deep each gap's similarity lies below the peaks on either side (module docstring)."""
    depths = []
    for g, score in enumerate(scores):
        left = score
        for i in range(g - 1, -1, -1):
            if scores[i] < left:
                break
            left = scores[i]
        right = score
        for i in range(g + 1, len(scores)):
            if scores[i] < right:
                break
            right = scores[i]
        depths.append((left - score) + (right - score))
    return depths


def _threshold(depths: Sequence[float]) -> float:
    """The depth a gap must exceed: Hearst's (the mean less half the standard deviation), raised
    to the natural break among the valleys above it (the largest fall between two depths in
    order), so that the many shallow dips of ordinary speech are not taken for new subjects."""
    mean = sum(depths) / len(depths)
    spread = math.sqrt(sum((d - mean) ** 2 for d in depths) / len(depths))
    hearst = mean - spread / 2
    valleys = sorted((d for d in depths if d > 0 and d > hearst), reverse=True)
    if len(valleys) < 2:
        return hearst
    falls = [(valleys[i] - valleys[i + 1], -i) for i in range(len(valleys) - 1)]
    _, at = max(falls)
    return max(hearst, valleys[-at + 1])


def _cut_at(tiles: Sequence[Window], gap: int) -> int:
    """The first segment of the tile after ``gap`` that the tile before does not hold."""
    before, after = tiles[gap], tiles[gap + 1]
    return max(after.first_segment, before.last_segment + 1)


def _snap(segments: Sequence[Segment], at: int, low: int, high: int) -> int:
    """The best segment to start a chapter with near ``at``: after a pause, after a sentence."""

    def score(i: int) -> float:
        pause = max(0.0, segments[i].start_sec - segments[i - 1].end_sec)
        sentence = 1.0 if ends_sentence(segments[i - 1].text) else 0.0
        return min(pause, 3.0) / 3.0 * 0.6 + sentence * 0.5 - abs(i - at) * 0.1

    first, last = max(low, at - _SNAP_SEGMENTS, 1), min(high, at + _SNAP_SEGMENTS)
    if first > last:
        return at
    return max(range(first, last + 1), key=lambda i: (score(i), -i))


def boundaries(
    tiles: Sequence[Window],
    scores: Sequence[float],
    segments: Sequence[Segment],
    *,
    end_sec: float,
    min_sec: float,
) -> list[int]:
    """The segments (indices into ``segments``) that start a new chapter, in time order; the
    first chapter, from 0, is not among them. ``scores`` are ``lexical_gaps`` or ``vector_gaps``."""
    if len(scores) < 1 or not segments:
        return []
    depths = [round(d, _DEPTH_DIGITS) for d in depth_scores(scores)]
    threshold = _threshold(depths)
    candidates = sorted(
        (g for g, d in enumerate(depths) if d > 0 and d > threshold), key=lambda g: (-depths[g], g)
    )
    chosen: list[float] = []
    cuts: list[int] = []
    for gap in candidates:
        if len(cuts) >= MAX_CHAPTERS - 1:
            break
        at = _cut_at(tiles, gap)
        if at >= len(segments):
            continue
        low = tiles[gap].first_segment + 1
        high = min(len(segments) - 1, tiles[gap + 1].last_segment)
        at = _snap(segments, at, low, high)
        when = segments[at].start_sec
        if when < min_sec or end_sec - when < min_sec:
            continue
        if any(abs(when - other) < min_sec for other in chosen):
            continue
        chosen.append(when)
        cuts.append(at)
    return sorted(cuts, key=lambda i: segments[i].start_sec)
