"""Time values in every form the Scribiz peer accepts, and the citations we print."""

from __future__ import annotations

import pytest

from vid2context.errors import ErrorCode, VidError
from vid2context.timecode import SECONDS, format_timestamp, parse_time, timestamp_pattern, timestamp_url


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("90", 90),
        ("90.5", 90.5),
        (90, 90),
        (12.25, 12.25),
        ("0", 0),
        ("1:30", 90),
        ("01:30", 90),
        ("0:05", 5),
        ("1:02:05", 3725),
        ("01:02:05.5", 3725.5),
        ("10:00:00", 36000),
        ("75:00", 4500),  # m:ss with minutes past the hour is still clear
        ("1h2m5s", 3725),
        ("1h", 3600),
        ("2m", 120),
        ("45s", 45),
        ("1m30s", 90),
        ("1h 2m 5s", 3725),
        ("1H2M5S", 3725),
        ("1.5m", 90),
        ("PT1H2M5S", 3725),
        ("pt90s", 90),
        ("  1:30  ", 90),
    ],
)
def test_accepted_forms(value: str | float, seconds: float) -> None:
    assert parse_time(value) == seconds


@pytest.mark.parametrize(
    "value",
    [
        "",
        "   ",
        "abc",
        "1:60",
        "1:61:00",
        "-5",
        -5,
        "1:2:3:4",
        "h",
        "m",
        "PT",
        "1x",
        "1:30pm",
        float("nan"),
        float("inf"),
        "9" * 40,
        "200h",
        True,
        "1::30",
        ":30",
        "1:3",
    ],
)
def test_refused_forms_name_the_fix(value: object) -> None:
    with pytest.raises(VidError) as caught:
        parse_time(value)  # type: ignore[arg-type]
    assert caught.value.code is ErrorCode.BAD_REQUEST
    assert "1:30" in (caught.value.hint or "")
    assert len(caught.value.message) < 120


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0:00"),
        (5, "0:05"),
        (59.99, "0:59"),
        (60, "1:00"),
        (90.7, "1:30"),
        (3599, "59:59"),
        (3600, "1:00:00"),
        (3725, "1:02:05"),
        (36000, "10:00:00"),
        (-3, "0:00"),
    ],
)
def test_format_timestamp_never_points_past_the_moment(seconds: float, text: str) -> None:
    assert format_timestamp(seconds) == text


def test_timestamp_urls() -> None:
    assert (
        timestamp_url("youtube", "jNQXAC9IVRw", None, 90.9)
        == "https://www.youtube.com/watch?v=jNQXAC9IVRw&t=90s"
    )
    assert timestamp_url("web", "x", "https://vimeo.com/1#old", 12) == "https://vimeo.com/1#t=12"
    assert timestamp_url("local", "/a.mp4", None, 12) is None
    assert timestamp_url("upload", "ab" * 32, None, 12) is None
    assert timestamp_url("web", "x", "javascript:alert(1)", 1) is None


@pytest.mark.parametrize(
    ("platform", "native", "url", "pattern"),
    [
        ("youtube", "jNQXAC9IVRw", None, "https://www.youtube.com/watch?v=jNQXAC9IVRw&t=<seconds>s"),
        ("web", "x", "https://example.com/talk.mp4#old", "https://example.com/talk.mp4#t=<seconds>"),
        ("local", "/a.mp4", None, None),
        ("upload", "ab" * 32, None, None),
        ("web", "x", "javascript:alert(1)", None),
    ],
)
def test_a_link_pattern_is_every_timestamp_url_at_once(
    platform: str, native: str, url: str | None, pattern: str | None
) -> None:
    """The pattern a header states, with the seconds put in, is the link of that moment."""
    assert timestamp_pattern(platform, native, url) == pattern
    for seconds in (0, 59.9, 3725):
        expected = timestamp_url(platform, native, url, seconds)
        assert (pattern.replace(SECONDS, str(int(seconds))) if pattern else None) == expected
