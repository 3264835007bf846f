"""Transcript fingerprints: timed word shingles, MinHash signatures of windows, and an LSH index.

Why this shape: comparing every pair of transcripts costs n² and misses nothing, but 1,000
transcripts are half a million pairs. A clip is a small part of its source, so one MinHash of a
whole transcript (which estimates Jaccard similarity of the two sets, about 0.03 for a two-minute
clip of an hour) cannot find it either. So each transcript is cut into overlapping windows of
shingles, each window gets a MinHash signature, and the signatures' bands go into buckets
(locality-sensitive hashing): two transcripts become a candidate pair only when some window of
one shares a band with some window of the other, which happens when the two windows share most
of their shingles. Only candidate pairs are then compared exactly (``compare``).

- **Shingles** are ``SHINGLE_WORDS`` consecutive words, casefolded with punctuation dropped, so
  captions that differ in case or commas still match. Each word's time is interpolated inside
  its segment; a shingle's time is its first word's.
- **Hashing is integer only**: one BLAKE2b digest of 64 bytes per shingle gives the 16 32-bit
  values of its MinHash row (16 hash functions for the price of one call) and its 64-bit key.
  No floating point enters a signature, so every machine buckets alike.
- **Windows** are ``WINDOW`` shingles every ``STRIDE``: any run of ``WINDOW + STRIDE`` matching
  shingles holds a whole window of the other transcript's, whatever the alignment, whose windows
  then agree on about two thirds of their shingles or more.
- **Bands** of ``ROWS`` values: two windows of Jaccard similarity ``j`` share a band with
  probability ``1 - (1 - j**ROWS) ** BANDS``: 0.97 at 0.8, 0.70 at 0.6, 0.005 at 0.1; a copied
  passage of a minute has five windows or more, so it is missed only when all of them are.
- **Candidates are screened** on their distinct shingle keys (a set intersection, in C) before
  the exact comparison: talks on one subject share stock phrases, so their windows meet in a
  bucket now and then, and most such pairs share far too little to be worth comparing.
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..models import Segment

__all__ = [
    "ALIGN_TOLERANCE_SEC",
    "BANDS",
    "ROWS",
    "SHINGLE_WORDS",
    "STRIDE",
    "WINDOW",
    "Fingerprint",
    "Match",
    "Run",
    "candidate_pairs",
    "compare",
    "fingerprint",
]

SHINGLE_WORDS = 5
"""Words per shingle: long enough that two talks rarely say the same five words by chance."""
WINDOW = 40
"""Shingles per MinHash window (about 15 s of speech)."""
STRIDE = 20
"""Shingles from one window's start to the next one's."""
SIGNATURE = 16
"""MinHash values per window: one 64-byte digest per shingle, 32 bits each."""
ROWS = 3
"""Values per LSH band (five bands use 15 of the 16 values)."""
BANDS = SIGNATURE // ROWS
ALIGN_TOLERANCE_SEC = 10.0
"""How far a matched shingle's time difference may lie from the offset and still agree with it."""
REPEATS = 4
"""Most places one shingle is matched at within a transcript (a refrain said over and over
adds nothing beyond its first few)."""

_WORD = re.compile(r"\w+")
_ROW = struct.Struct("<16I")
_PERSON = b"vid2context-dup"


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """One transcript as shingles: its words as said, their times, each shingle's key, and the
    LSH band keys of its windows."""

    words: tuple[str, ...]
    times: tuple[float, ...]
    keys: tuple[int, ...]
    """Shingle ``i`` covers ``words[i : i + SHINGLE_WORDS]``."""
    bands: frozenset[tuple[int, ...]]
    """``(band, value, value, value)`` of every window: equal tuples mean a shared band."""
    distinct: frozenset[int]
    """The shingle keys, each once."""

    @property
    def shingles(self) -> int:
        return len(self.keys)


@dataclass(frozen=True, slots=True)
class Run:
    """Consecutive shingles matched in the same order in both transcripts."""

    a_start: int
    b_start: int
    length: int
    """Shingles in the run; it covers ``length + SHINGLE_WORDS - 1`` words of each."""


@dataclass(frozen=True, slots=True)
class Match:
    """What two transcripts share, measured exactly on their shingles."""

    share_a: float
    """The part of ``a``'s shingles found in ``b`` (0 to 1)."""
    share_b: float
    matched_a: int
    matched_b: int
    offset_sec: float
    """``b``'s moment ``t`` is said at ``t + offset_sec`` in ``a``: the median time difference of
    the shingles said once in each (all matched shingles when none is)."""
    aligned: float
    """The part of those shingles whose difference lies within ``ALIGN_TOLERANCE_SEC`` of it."""
    runs: tuple[Run, ...]
    """The longest matched runs first."""


def _words(segments: Iterable[Segment]) -> tuple[list[str], list[bytes], list[float]]:
    said: list[str] = []
    plain: list[bytes] = []
    times: list[float] = []
    folded: dict[str, str] = {}  # a talk says the same few thousand words over and over
    for segment in segments:
        tokens = []
        for token in segment.text.split():
            norm = folded.get(token)
            if norm is None:
                norm = folded[token] = "".join(_WORD.findall(token.casefold()))
            if norm:
                tokens.append((token, norm))
        span = max(segment.end_sec - segment.start_sec, 0.0)
        for index, (token, norm) in enumerate(tokens):
            said.append(token)
            plain.append(norm.encode())
            times.append(segment.start_sec + span * index / len(tokens))
    return said, plain, times


def fingerprint(segments: Sequence[Segment]) -> Fingerprint:
    """The shingles of ``segments`` and the band keys of their windows."""
    said, plain, times = _words(segments)
    keys: list[int] = []
    rows: list[tuple[int, ...]] = []
    for start in range(len(plain) - SHINGLE_WORDS + 1):
        text = b" ".join(plain[start : start + SHINGLE_WORDS])
        row = _ROW.unpack(hashlib.blake2b(text, digest_size=64, person=_PERSON).digest())
        rows.append(row)
        keys.append(row[0] << 32 | row[1])
    bands: set[tuple[int, ...]] = set()
    if rows:
        last = max(len(rows) - WINDOW, 0)
        starts = list(range(0, last + 1, STRIDE))
        if starts[-1] != last:
            starts.append(last)  # the end of the transcript gets a window of its own
        for start in starts:
            signature = [min(column) for column in zip(*rows[start : start + WINDOW], strict=True)]
            for band in range(BANDS):
                bands.add((band, *signature[band * ROWS : (band + 1) * ROWS]))
    return Fingerprint(
        words=tuple(said),
        times=tuple(times),
        keys=tuple(keys),
        bands=frozenset(bands),
        distinct=frozenset(keys),
    )


def candidate_pairs(prints: Sequence[Fingerprint]) -> set[tuple[int, int]]:
    """The pairs ``(i, j)``, ``i < j``, of ``prints`` that share at least one band, and every pair
    with a transcript shorter than one window: its one window is smaller than the other's, so
    their Jaccard similarity stays low however much of it is copied (they are few and short, so
    the screen in front of ``compare`` answers those pairs cheaply)."""
    buckets: dict[tuple[int, ...], list[int]] = defaultdict(list)
    for index, found in enumerate(prints):
        for band in found.bands:
            buckets[band].append(index)
    pairs: set[tuple[int, int]] = set()
    for short, found in enumerate(prints):
        if 0 < found.shingles < WINDOW:
            pairs.update(
                (min(short, other), max(short, other)) for other in range(len(prints)) if other != short
            )
    for members in buckets.values():
        for n, first in enumerate(members):
            for second in members[n + 1 :]:
                pairs.add((first, second))
    return pairs


def _places(keys: Sequence[int]) -> dict[int, list[int]]:
    places: dict[int, list[int]] = defaultdict(list)
    for position, key in enumerate(keys):
        found = places[key]
        if len(found) < REPEATS:
            found.append(position)
    return places


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def _runs(pairs: list[tuple[int, int]]) -> tuple[Run, ...]:
    """Pairs ``(a, b)`` sorted by ``a`` cut where either side stops being consecutive."""
    runs: list[Run] = []
    start: tuple[int, int] | None = None
    length = 0
    previous = (-2, -2)
    for a, b in pairs:
        if start is not None and a == previous[0] + 1 and b == previous[1] + 1:
            length += 1
        else:
            if start is not None:
                runs.append(Run(start[0], start[1], length))
            start, length = (a, b), 1
        previous = (a, b)
    if start is not None:
        runs.append(Run(start[0], start[1], length))
    return tuple(sorted(runs, key=lambda run: (-run.length, run.a_start)))


def compare(a: Fingerprint, b: Fingerprint) -> Match:
    """Every shingle ``a`` and ``b`` share, where each is said, and what that says of the two."""
    in_a, in_b = _places(a.keys), _places(b.keys)
    shared = in_a.keys() & in_b.keys()
    matched_a = sum(1 for key in a.keys if key in shared)
    matched_b = sum(1 for key in b.keys if key in shared)
    anchors = [key for key in shared if len(in_a[key]) == 1 and len(in_b[key]) == 1] or list(shared)
    differences = [a.times[in_a[key][0]] - b.times[in_b[key][0]] for key in anchors]
    offset = _median(differences) if differences else 0.0
    agree = sum(1 for d in differences if abs(d - offset) <= ALIGN_TOLERANCE_SEC)
    pairs: list[tuple[int, int]] = []
    for key in shared:  # each place in a, with its place in b nearest the offset
        for place in in_a[key]:
            partner = min(in_b[key], key=lambda p: (abs(a.times[place] - b.times[p] - offset), p))
            pairs.append((place, partner))
    pairs.sort()
    return Match(
        share_a=matched_a / a.shingles if a.shingles else 0.0,
        share_b=matched_b / b.shingles if b.shingles else 0.0,
        matched_a=matched_a,
        matched_b=matched_b,
        offset_sec=round(offset, 1),
        aligned=agree / len(differences) if differences else 0.0,
        runs=_runs(pairs),
    )
