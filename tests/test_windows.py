"""``search/windows.py``: what gets embedded, checked for what each rule promises."""

from __future__ import annotations

import random

import pytest

from vid2context.models import Chapter, Segment, Transcript, VideoContext, VideoMetadata
from vid2context.outline import get_section
from vid2context.search.windows import (
    MAX_WINDOW_ID_BYTES,
    MAX_WORDS,
    TARGET_WORDS,
    Window,
    make_windows,
    token_bound,
    window_id,
)

VIDEO = "youtube:jNQXAC9IVRw"


def context(
    segments: list[Segment] | None, *, chapters: list[Chapter] | None = None, video_id: str = VIDEO
) -> VideoContext:
    transcript = None
    if segments is not None:
        transcript = Transcript(
            language="en", origin="captions-auto", timing="caption", producer="test", segments=segments
        )
    return VideoContext(
        id=video_id,
        metadata=VideoMetadata(id=video_id, platform="youtube", title="t", chapters=chapters or []),
        transcript=transcript,
    )


def speech(
    count: int, *, words: tuple[int, int] = (4, 14), seed: int = 7, step: float = 3.0
) -> list[Segment]:
    rng = random.Random(seed)
    vocabulary = "we tilt the stand back until it locks then fold the legs flat for the bag".split()
    return [
        Segment(
            start_sec=i * step,
            end_sec=i * step + step - 0.2,
            text=" ".join(rng.choice(vocabulary) for _ in range(rng.randint(*words))),
        )
        for i in range(count)
    ]


def covered(windows: list[Window]) -> set[int]:
    return {i for w in windows for i in range(w.first_segment, w.last_segment + 1)}


def assert_within_limits(windows: list[Window], max_tokens: int = 512) -> None:
    for w in windows:
        assert w.words <= MAX_WORDS and w.tokens <= max_tokens, w.id
        assert w.words == len(w.text.split()) or w.part is not None
        assert len(w.id.encode()) <= MAX_WINDOW_ID_BYTES


def test_no_transcript_and_an_empty_one_have_no_windows() -> None:
    assert make_windows(context(None)) == []
    assert make_windows(context([])) == []
    assert make_windows(context([Segment(start_sec=0, end_sec=1, text="  \n ")])) == []


def test_windows_are_about_250_words_of_whole_segments_overlapping_by_one() -> None:
    segments = speech(400)
    windows = make_windows(context(segments))
    assert len(windows) > 5
    assert_within_limits(windows)
    assert all(w.words >= TARGET_WORDS for w in windows[:-1])
    for before, after in zip(windows, windows[1:], strict=False):
        assert after.first_segment == before.last_segment  # one segment shared
    assert covered(windows) == set(range(len(segments)))
    for w in windows:
        texts = [" ".join(s.text.split()) for s in segments[w.first_segment : w.last_segment + 1]]
        assert w.text == " ".join(texts)
        assert w.start_sec == segments[w.first_segment].start_sec
        assert w.end_sec == segments[w.last_segment].end_sec
        assert w.id == f"{VIDEO}@{w.first_segment}-{w.last_segment}" and w.part is None
        assert w.chapter_index is None and w.chapter_title is None


def test_windows_are_deterministic() -> None:
    first = make_windows(context(speech(300, seed=3)))
    assert make_windows(context(speech(300, seed=3))) == first
    assert len({w.id for w in first}) == len(first)


def test_a_short_tail_joins_the_window_before_it() -> None:
    windows = make_windows(context(speech(60)))
    assert windows[-1].words > 40
    one = make_windows(context(speech(3)))
    assert len(one) == 1 and (one[0].first_segment, one[0].last_segment) == (0, 2)


def test_windows_never_cross_a_chapter_and_cite_the_outlines_chapter() -> None:
    segments = speech(300)
    chapters = [
        Chapter(title="Opening", start_sec=30.0),  # segments before it join it, as in the outline
        Chapter(title="  The\nstand ", start_sec=301.5),  # inside segment 100: it belongs to Opening
        Chapter(title="", start_sec=600.0),  # exactly on segment 200's start
    ]
    ctx = context(segments, chapters=chapters)
    windows = make_windows(ctx)
    assert_within_limits(windows)
    assert covered(windows) == set(range(300))
    owner = {}
    for w in windows:
        for i in range(w.first_segment, w.last_segment + 1):
            owner.setdefault(i, set()).add(w.chapter_index)
    assert all(len(chapters_of) == 1 for chapters_of in owner.values())  # overlaps stay inside too
    assert owner[0] == {0} and owner[100] == {0} and owner[101] == {1} and owner[200] == {2}
    assert {w.chapter_title for w in windows} == {"Opening", "The stand", "Chapter 3"}
    for index in range(3):
        section = get_section(ctx, chapter=index)
        in_section = {s.start_sec for s in section.context.transcript.segments}
        for w in (w for w in windows if w.chapter_index == index):
            assert all(
                segments[i].start_sec in in_section for i in range(w.first_segment, w.last_segment + 1)
            )


def test_a_segment_too_long_for_a_window_is_cut_into_parts_that_keep_its_time() -> None:
    huge = Segment(start_sec=100.0, end_sec=700.0, text=" ".join(f"word{i}" for i in range(1000)))
    segments = [*speech(30), huge, *speech(30, seed=9, step=3.0)]
    segments[31:] = [
        Segment(start_sec=700 + s.start_sec, end_sec=700 + s.end_sec, text=s.text) for s in segments[31:]
    ]
    windows = make_windows(context(segments))
    assert_within_limits(windows)
    parts = [w for w in windows if w.part is not None]
    assert len(parts) >= 4 and [p.part for p in parts] == list(range(len(parts)))
    assert all(
        (p.first_segment, p.last_segment, p.start_sec, p.end_sec) == (30, 30, 100.0, 700.0) for p in parts
    )
    assert [p.id for p in parts] == [f"{VIDEO}@30.{k}" for k in range(len(parts))]
    assert " ".join(p.text for p in parts) == huge.text
    assert max(p.words for p in parts) - min(p.words for p in parts) <= 1  # balanced: no stub
    others = [w for w in windows if w.part is None]
    assert all(w.last_segment < 30 or w.first_segment > 30 for w in others)  # nothing overlaps into it
    assert covered(windows) == set(range(61))


def test_one_huge_segment_alone() -> None:
    text = " ".join(["zeitgeistverschiebungsdebatte"] * 700)  # long words: the character bound rules
    windows = make_windows(context([Segment(start_sec=5, end_sec=65, text=text)]))
    assert len(windows) > 2 and all(w.part is not None for w in windows)
    assert_within_limits(windows)
    assert " ".join(w.text for w in windows) == text


def test_a_word_longer_than_a_window_is_cut_too() -> None:
    text = "see " + "x" * 5000 + " there"
    windows = make_windows(context([Segment(start_sec=0, end_sec=9, text=text)]))
    assert_within_limits(windows)
    assert "".join(w.text.replace(" ", "") for w in windows) == text.replace(" ", "")


def test_cjk_characters_count_as_words() -> None:
    text = "今日はスタンドの角度について話します。" * 40  # no spaces at all
    windows = make_windows(context([Segment(start_sec=0, end_sec=60, text=text)] * 3))
    assert_within_limits(windows)
    assert len(windows) > 1
    assert all(w.tokens >= token_bound(len(w.text), 0) for w in windows)


def test_segments_without_text_never_start_or_end_a_window() -> None:
    segments = speech(120)
    for i in (0, 1, 57, 58, 119):
        segments[i] = Segment(start_sec=segments[i].start_sec, end_sec=segments[i].end_sec, text=" ")
    windows = make_windows(context(segments))
    texty = {i for i, s in enumerate(segments) if s.text.strip()}
    assert all(w.first_segment in texty and w.last_segment in texty for w in windows)
    assert texty <= covered(windows)


def test_a_smaller_model_limit_makes_smaller_windows() -> None:
    windows = make_windows(context(speech(200)), max_tokens=128)
    assert_within_limits(windows, max_tokens=128)
    assert max(w.words for w in windows) <= (128 - 2) / 1.5
    with pytest.raises(ValueError):
        make_windows(context(speech(3)), max_tokens=2)


def test_random_transcripts_stay_within_the_limit() -> None:
    rng = random.Random(11)
    for trial in range(40):
        segments = speech(rng.randint(1, 150), words=(0, rng.choice((5, 40, 400))), seed=trial)
        chapters = [Chapter(title=f"c{k}", start_sec=rng.uniform(0, 300)) for k in range(rng.randint(0, 4))]
        windows = make_windows(context(segments, chapters=chapters), max_tokens=rng.choice((128, 256, 512)))
        assert_within_limits(windows, max_tokens=512)
        assert covered(windows) >= {i for i, s in enumerate(segments) if s.text.strip()}


def test_ids_are_stable_and_fit_vectorize_with_a_space_tag() -> None:
    assert window_id(VIDEO, 3, 9) == f"{VIDEO}@3-9"
    assert window_id(VIDEO, 7, 7, 2) == f"{VIDEO}@7.2"
    upload = "upload:" + "0f" * 32
    long_id = window_id(upload, 123456, 123460)
    assert long_id.startswith("~") and long_id.endswith("@123456-123460")
    assert len(long_id.encode()) <= MAX_WINDOW_ID_BYTES
    assert long_id == window_id(upload, 123456, 123460)
    assert window_id("upload:" + "0f" * 31 + "0e", 123456, 123460) != long_id
    windows = make_windows(context(speech(100), video_id=upload))
    assert all(w.id.startswith("~") and w.video_id == upload for w in windows)
