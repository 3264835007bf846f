"""Reuploads and clips among videos: the one core of ``POST /api/v1/duplicates`` and ``find_duplicates``.

So that a brief or a count of sources counts one talk once, however often it was uploaded::

    check (inputs and/or a collection, at most MAX_VIDEOS) ─▶ read the videos (batch.py)
        ─▶ fingerprint each transcript (fingerprints.py) ─▶ candidate pairs from the LSH buckets
        ─▶ compare each candidate exactly ─▶ classify ─▶ groups, each with its reference first

- **Classify.** A transcript is *contained* in another when at least ``CONTAINED`` of its
  shingles are found there, at least ``MIN_SHINGLES`` of them, most (``ALIGNED``) at one time
  offset. Each found in the other for ``REUPLOAD`` or more: a ``reupload`` (an intro or an outro
  added, a cut here or there). Otherwise the contained one (the higher share) is a ``clip`` of
  the other. Two talks on one subject share
  phrases, not most of their words, and are not grouped.
- **Groups.** Reuploads are joined into groups (one group however many copies); each clip goes
  with the largest video it is contained in, with the reuploads of a video counted as that video.
  The reference (first member, ``offsetSec`` 0) is the group's longest transcript; every other
  member is compared with it directly for its ``offsetSec`` and evidence: its moment ``t`` is said
  at ``t + offsetSec`` in the reference (a clip cut from 10:00 has 600; an original whose reupload
  added a 30 s intro has 30 in the reupload's group).
- **Evidence** is what a reader can check: each member's share of its transcript found in the
  reference (the reference's own: found in any member), how many shingles matched, the part that
  agrees with the offset, and the longest matched passages with their times on both sides.

A video that cannot be read is listed in ``failed`` and never fails the request; when none can
be read the first failure is the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from .. import pipeline
from ..answers.scope import failed_inputs
from ..batch import MAX_VIDEOS, OnEvent, emit, read_videos
from ..batch_inputs import Refusals, request_inputs
from ..ctx import Ctx
from ..errors import ErrorCode, VidError, per_surface
from ..formats.blocks import link_at
from ..models import Base, FailedInput, VideoContext
from ..runtime import Runtime
from .fingerprints import (
    ALIGN_TOLERANCE_SEC,
    SHINGLE_WORDS,
    Fingerprint,
    Match,
    candidate_pairs,
    compare,
    fingerprint,
)

__all__ = [
    "ALIGNED",
    "CONTAINED",
    "MAX_PASSAGES",
    "MAX_VIDEOS",
    "MIN_SHINGLES",
    "REUPLOAD",
    "DuplicateEvidence",
    "DuplicateGroup",
    "DuplicateMember",
    "DuplicatesResult",
    "MatchedPassage",
    "MemberOverlap",
    "check_inputs",
    "find_duplicates",
    "classify",
    "duplicates_of",
    "group_duplicates",
]

CONTAINED = 0.5
"""The share of a transcript's shingles found in another for it to count as contained in it."""
REUPLOAD = 0.75
"""The share both transcripts need for a reupload; below it in one, that one holds the other as a
clip (a cut of half a talk is a clip, one with an intro of 30 s before two minutes a reupload)."""
MIN_SHINGLES = 20
"""Fewer shared shingles than this (about 25 words) never group two videos, however short."""
ALIGNED = 0.5
"""The part of the shared shingles that must agree on one time offset."""
MAX_PASSAGES = 3
_INPUT_CHARS = 2000
"""Matched passages shown per member."""
PASSAGE_WORDS = 40
"""Words of a passage's text shown; the times cover the whole passage."""
_EXAMPLE = '["https://www.youtube.com/watch?v=jNQXAC9IVRw", "https://youtu.be/dQw4w9WgXcQ"]'
_INPUTS_HINT = per_surface(
    rest=f"Give inputs (video URLs or ids, playlists, channels) and/or a collectionId, e.g. "
    f'{{"inputs": {_EXAMPLE}}}.',
    mcp=f"Give urls (video URLs or ids, playlists, channels) and/or a collection, e.g. urls={_EXAMPLE}.",
)
_REFUSALS = Refusals(
    none="No videos to compare: neither inputs nor a collection with videos was given.",
    hint=_INPUTS_HINT,
    limit=f"at most {MAX_VIDEOS} are compared at once",
    split=per_surface(
        rest=f"Split the inputs (with the collectionId's videos) into requests of at most {MAX_VIDEOS}.",
        mcp=f"Split the urls (with the collection's videos) into calls of at most {MAX_VIDEOS}.",
    ),
)


class DuplicateMember(Base, kw_only=True):
    video_id: str
    offset_sec: float | None = None
    """This video's moment ``t`` is said at ``t + offsetSec`` in the group's first member (0 for
    that one)."""


class MemberOverlap(Base, kw_only=True):
    video_id: str
    share: float
    """The part of this video's transcript (0 to 1, by shingles) found in the reference; for the
    reference, found in any other member."""
    shingles: int
    """Shingles of this video's transcript that matched."""
    aligned: float | None = None
    """The part of the matched shingles that agree with ``offsetSec`` (not for the reference)."""


class MatchedPassage(Base, kw_only=True):
    video_id: str
    """The member the passage is quoted from."""
    start_sec: float
    end_sec: float
    reference_start_sec: float
    """Where the same words are said in the reference."""
    reference_end_sec: float
    text: str
    """The member's words (the first ``PASSAGE_WORDS``, then an ellipsis)."""
    url: str | None = None
    """Opens the member at ``startSec``, where the platform has links."""


class DuplicateEvidence(Base, kw_only=True):
    overlap: list[MemberOverlap]
    """One per member, in the members' order."""
    passages: list[MatchedPassage]
    """The longest passages each member shares with the reference, in the members' order."""
    shingle_words: int = SHINGLE_WORDS
    """Words per shingle, the unit shares are counted in."""


class DuplicateGroup(Base, kw_only=True):
    kind: Literal["reupload", "clip"]
    members: list[DuplicateMember]
    """The reference first (the longest transcript): for a clip group, the source."""
    evidence: DuplicateEvidence


class DuplicatesResult(Base, kw_only=True):
    groups: list[DuplicateGroup]
    """Reupload groups first, then clip groups, each kind in the order of the inputs."""
    compared: int = 0
    """Videos whose transcripts were fingerprinted."""
    candidates: int = 0
    """Pairs the LSH buckets proposed (of ``compared`` choose 2): each screened by the shingles
    the two share, and compared exactly when that could make one contained in the other."""
    failed: list[FailedInput] = []
    """Inputs that gave no transcript, with their errors."""


def _bad(message: str) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=_INPUTS_HINT)


async def check_inputs(runtime: Runtime, inputs: Any, collection: Any) -> list[str]:
    """The inputs to read (the collection's saved videos, then its pending ones, then ``inputs``),
    refused before any video is read: none, not strings, more than ``MAX_VIDEOS``, one no source
    can read, an unknown collection."""
    if inputs is not None and (
        not isinstance(inputs, Sequence)
        or isinstance(inputs, str)
        or not all(isinstance(text, str) and text.strip() for text in inputs)
    ):
        raise _bad("inputs must be an array of video URLs or ids, none empty.")
    given = list(dict.fromkeys(text.strip() for text in inputs or ()))
    _REFUSALS.check_count(given)
    if any(len(text) > _INPUT_CHARS for text in given):
        raise _bad(f"An input is longer than {_INPUT_CHARS} characters; no video URL is that long.")
    for text in given:
        pipeline.resolve(runtime, text)  # unsupported-input before anything is read
    if collection is not None and (not isinstance(collection, str) or not collection.strip()):
        raise _bad("The collection must be given as its id (col_...) or its name.")
    collection_id = collection.strip() if collection is not None else None
    named, _ = await request_inputs(runtime, given, collection_id, _REFUSALS, distinct=True)
    return named


def _contained(share: float, matched: int) -> bool:
    return share >= CONTAINED and matched >= MIN_SHINGLES


def classify(match: Match) -> Literal["reupload", "a-in-b", "b-in-a"] | None:
    """What ``compare(a, b)`` says the pair is, or None for two different videos."""
    if match.aligned < ALIGNED:
        return None
    a_in_b = _contained(match.share_a, match.matched_a)
    b_in_a = _contained(match.share_b, match.matched_b)
    if a_in_b and b_in_a and min(match.share_a, match.share_b) >= REUPLOAD:
        return "reupload"
    if a_in_b and (not b_in_a or match.share_a >= match.share_b):
        return "a-in-b"
    if b_in_a:
        return "b-in-a"
    return None


def _worth_comparing(a: Fingerprint, b: Fingerprint) -> bool:
    """Whether the distinct keys could make either transcript contained in the other: a screen
    at half of ``CONTAINED``, since a refrain counts once here but at every place in ``compare``."""
    shared = len(a.distinct & b.distinct)
    if shared < MIN_SHINGLES:
        return False
    smaller = min(len(a.distinct), len(b.distinct))
    return shared >= CONTAINED / 2 * smaller


class _Sets:
    """Union-find over indices, for the reupload groups."""

    def __init__(self, size: int) -> None:
        self.parent = list(range(size))

    def find(self, item: int) -> int:
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def join(self, a: int, b: int) -> None:
        low, high = sorted((self.find(a), self.find(b)))
        self.parent[high] = low


def group_duplicates(prints: Sequence[Fingerprint]) -> tuple[list[tuple[str, list[int]]], int]:
    """The groups among ``prints`` as ``(kind, [reference, other members...])`` by index, and how
    many candidate pairs were compared."""
    pairs = sorted(candidate_pairs(prints))
    sets = _Sets(len(prints))
    contains: list[tuple[int, int]] = []  # (container, contained)
    for a, b in pairs:
        if not _worth_comparing(prints[a], prints[b]):
            continue
        kind = classify(compare(prints[a], prints[b]))
        if kind == "reupload":
            sets.join(a, b)
        elif kind == "a-in-b":
            contains.append((b, a))
        elif kind == "b-in-a":
            contains.append((a, b))

    def size(index: int) -> tuple[int, int]:
        return (-prints[index].shingles, index)  # longest first, then input order

    copies: dict[int, list[int]] = {}
    for index in range(len(prints)):
        copies.setdefault(sets.find(index), []).append(index)
    reference = {root: min(members, key=size) for root, members in copies.items()}
    groups: list[tuple[str, list[int]]] = []
    for root, members in sorted(copies.items()):
        if len(members) > 1:
            first = reference[root]
            groups.append(("reupload", [first, *sorted(set(members) - {first})]))
    source: dict[int, int] = {}  # a clip's group reference -> the largest container's reference
    for container, part in contains:
        whole, clip = reference[sets.find(container)], reference[sets.find(part)]
        if whole != clip and (clip not in source or size(whole) < size(source[clip])):
            source[clip] = whole
    clips: dict[int, list[int]] = {}
    for clip, whole in sorted(source.items()):
        clips.setdefault(whole, []).append(clip)
    for whole, parts in sorted(clips.items()):
        groups.append(("clip", [whole, *parts]))
    return groups, len(pairs)


def _passages(
    member: VideoContext, mine: Fingerprint, theirs: Fingerprint, match: Match
) -> list[MatchedPassage]:
    """The longest runs ``compare(theirs, mine)`` found, quoted from the member."""
    out = []
    aligned = [
        run
        for run in match.runs
        if abs(theirs.times[run.a_start] - mine.times[run.b_start] - match.offset_sec) <= ALIGN_TOLERANCE_SEC
    ]  # a phrase said again elsewhere is a match, but not a passage of the copy
    for run in aligned[:MAX_PASSAGES]:
        words = run.length + SHINGLE_WORDS - 1
        said = mine.words[run.b_start : run.b_start + words]
        text = " ".join(said[:PASSAGE_WORDS]) + (" …" if len(said) > PASSAGE_WORDS else "")
        start = mine.times[run.b_start]
        out.append(
            MatchedPassage(
                video_id=member.id,
                start_sec=round(start, 1),
                end_sec=round(mine.times[run.b_start + words - 1], 1),
                reference_start_sec=round(theirs.times[run.a_start], 1),
                reference_end_sec=round(theirs.times[run.a_start + words - 1], 1),
                text=text,
                url=link_at(member, int(start)),
            )
        )
    return sorted(out, key=lambda passage: passage.start_sec)


def _group(
    kind: str, members: list[int], contexts: list[VideoContext], prints: list[Fingerprint]
) -> DuplicateGroup:
    first, others = members[0], members[1:]
    reference = prints[first]
    listed = [DuplicateMember(video_id=contexts[first].id, offset_sec=0.0)]
    overlap: list[MemberOverlap] = []
    passages: list[MatchedPassage] = []
    found_in_reference: set[int] = set()
    for index in others:
        match = compare(reference, prints[index])
        found_in_reference.update(
            position for run in match.runs for position in range(run.a_start, run.a_start + run.length)
        )
        listed.append(DuplicateMember(video_id=contexts[index].id, offset_sec=match.offset_sec))
        overlap.append(
            MemberOverlap(
                video_id=contexts[index].id,
                share=round(match.share_b, 3),
                shingles=match.matched_b,
                aligned=round(match.aligned, 3),
            )
        )
        passages += _passages(contexts[index], prints[index], reference, match)
    mine = len(found_in_reference)
    overlap.insert(
        0,
        MemberOverlap(
            video_id=contexts[first].id,
            share=round(mine / reference.shingles, 3) if reference.shingles else 0.0,
            shingles=mine,
        ),
    )
    return DuplicateGroup(
        kind="reupload" if kind == "reupload" else "clip",
        members=listed,
        evidence=DuplicateEvidence(overlap=overlap, passages=passages),
    )


def duplicates_of(contexts: list[VideoContext]) -> DuplicatesResult:
    """The groups among videos already read (no I/O): the part ``bench/`` measures."""
    prints = [fingerprint(c.transcript.segments if c.transcript else []) for c in contexts]
    groups, candidates = group_duplicates(prints)
    found = [_group(kind, members, contexts, prints) for kind, members in groups]
    return DuplicatesResult(groups=found, compared=len(contexts), candidates=candidates)


async def find_duplicates(
    runtime: Runtime, inputs: list[str], *, ctx: Ctx, on_progress: OnEvent | None = None
) -> DuplicatesResult:
    """Read ``inputs`` (checked by ``check_inputs``) and group their reuploads and clips."""
    batch = await read_videos(runtime, inputs, ctx=ctx, limit=MAX_VIDEOS, on_progress=on_progress)
    batch.raise_if_empty("Give at least one video URL or id, or a list (playlist, channel) that has videos.")
    count = len(batch.contexts)
    await emit(on_progress, {"done": count, "total": count, "message": f"Comparing {count} transcripts"})
    result = duplicates_of(batch.contexts)
    result.failed = failed_inputs(batch.failed)
    return result
