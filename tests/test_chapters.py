"""Chapters from markers and from description timestamps (``chapters.py``, pure).

The recorded watch page (``youtube.html.static``) carries YouTube's automatic "key moments"
(``engagement-panel-macro-markers-auto-chapters``), and those are tested as recorded. No recorded
page has uploader chapters, so the ``engagement-panel-macro-markers-description-chapters`` panel
and the player bar's ``markersMap`` / ``chapterRenderer`` are built here from their documented
shapes.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from vid2context.chapters import (
    chapters_from_description,
    chapters_from_markers,
    choose_chapters,
    fill_ends,
)
from vid2context.models import Chapter
from vid2context.providers.youtube_pages import marker_lists, parse_watch_page


def _macro(title: str, clock: str, seconds: float | None = None) -> dict[str, Any]:
    """A ``macroMarkersListItemRenderer`` as the watch page writes one."""
    item: dict[str, Any] = {
        "title": {"simpleText": title},
        "timeDescription": {"simpleText": clock},
        "thumbnail": {"thumbnails": []},
    }
    if seconds is not None:
        item["onTap"] = {"watchEndpoint": {"videoId": "abcdefghijk", "startTimeSeconds": seconds}}
    return {"macroMarkersListItemRenderer": item}


def _panel(identifier: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "engagementPanelSectionListRenderer": {
            "panelIdentifier": identifier,
            "content": {"macroMarkersListRenderer": {"contents": items}},
        }
    }


def _starts(chapters: list[Chapter]) -> list[float]:
    return [c.start_sec for c in chapters]


def test_recorded_page_key_moments(fixtures: Path) -> None:
    page = parse_watch_page((fixtures / "youtube" / "yta" / "youtube.html.static").read_text())
    assert page.creator_markers == [] and len(page.auto_markers) == 10
    chapters = choose_chapters(auto_markers=page.auto_markers, duration_sec=316)
    assert [c.title for c in chapters[:3]] == ["Build Quality", "Screen", "Pen Support"]
    assert chapters[0].start_sec == 39.16  # the precise startTimeSeconds, not the "0:39" label
    assert chapters[-1].title == "Ports" and chapters[-1].end_sec == 316
    assert all(c.end_sec == n.start_sec for c, n in pairwise(chapters))


def test_uploader_markers_beat_description_and_auto() -> None:
    data = {
        "engagementPanels": [
            {"engagementPanelSectionListRenderer": {"panelIdentifier": "engagement-panel-comments-section"}},
            _panel("engagement-panel-macro-markers-auto-chapters", [_macro("Auto", "0:05")]),
            _panel(
                "engagement-panel-macro-markers-description-chapters",
                [_macro("Intro", "0:00", 0), _macro("Middle", "1:00"), _macro("End", "1:02:03")],
            ),
        ]
    }
    creator, auto = marker_lists(data)
    assert len(creator) == 3 and len(auto) == 1
    chapters = choose_chapters(
        creator_markers=creator, description="0:00 a\n0:30 b\n1:00 c", auto_markers=auto, duration_sec=4000
    )
    assert [(c.title, c.start_sec, c.end_sec) for c in chapters] == [
        ("Intro", 0.0, 60.0),
        ("Middle", 60.0, 3723.0),
        ("End", 3723.0, 4000),
    ]


def test_chapter_renderers_in_the_player_bar() -> None:
    data = {
        "playerOverlays": {
            "playerOverlayRenderer": {
                "decoratedPlayerBarRenderer": {
                    "decoratedPlayerBarRenderer": {
                        "playerBar": {
                            "multiMarkersPlayerBarRenderer": {
                                "markersMap": [
                                    {
                                        "key": "DESCRIPTION_CHAPTERS",
                                        "value": {
                                            "chapters": [
                                                {
                                                    "chapterRenderer": {
                                                        "title": {"simpleText": "One"},
                                                        "timeRangeStartMillis": 0,
                                                    }
                                                },
                                                {
                                                    "chapterRenderer": {
                                                        "title": {"simpleText": "Two"},
                                                        "timeRangeStartMillis": 61500,
                                                    }
                                                },
                                            ]
                                        },
                                    }
                                ]
                            }
                        }
                    }
                }
            }
        }
    }
    creator, auto = marker_lists(data)
    assert auto == []
    chapters = chapters_from_markers(creator, 100)
    assert [(c.title, c.start_sec, c.end_sec) for c in chapters] == [("One", 0.0, 61.5), ("Two", 61.5, 100)]


def test_markers_are_sorted_deduplicated_and_clipped() -> None:
    markers: list[Any] = [
        _macro("B", "1:00"),
        _macro("A", "0:00"),
        _macro("A again", "0:00"),
        _macro("Too late", "9:00"),
        _macro("", "0:30"),
        _macro("No time", "soon"),
        "junk",
        {"macroMarkersListItemRenderer": "junk"},
    ]
    chapters = chapters_from_markers(markers, duration_sec=300)
    assert [(c.title, c.start_sec, c.end_sec) for c in chapters] == [("A", 0.0, 60.0), ("B", 60.0, 300)]
    assert chapters_from_markers([]) == []


def test_description_chapters() -> None:
    description = "\n".join(
        [
            "Great video about things.",
            "2:00 is my favourite part",  # before the 0:00 line: not a chapter
            "",
            "Timestamps:",
            "0:00 Intro",
            "- 1:30 - The middle part",
            "[03:00] Details: more",
            "(1:02:03) \u2013 Finale",
            "Thanks for watching! 1:00",
        ]
    )
    chapters = chapters_from_description(description, duration_sec=3800)
    assert [(c.title, c.start_sec, c.end_sec) for c in chapters] == [
        ("Intro", 0.0, 90.0),
        ("The middle part", 90.0, 180.0),
        ("Details: more", 180.0, 3723.0),
        ("Finale", 3723.0, 3800),
    ]


def test_description_chapters_without_duration_leave_the_last_open() -> None:
    chapters = chapters_from_description("00:00\n0:10 Two\n0:20 Three")
    assert [(c.title, c.end_sec) for c in chapters] == [("Chapter 1", 10.0), ("Two", 20.0), ("Three", None)]


@pytest.mark.parametrize(
    ("description", "duration"),
    [
        ("0:05 Intro\n1:00 Two\n2:00 Three", None),  # not starting at 0:00
        ("0:00 Intro\n1:00 Two", None),  # fewer than three
        ("0:00 Intro\n2:00 Two\n1:00 Three", None),  # not ascending
        ("0:00 Intro\n0:05 Two\n1:00 Three", None),  # a chapter shorter than 10 s
        ("0:00 Intro\n1:00 Two\n1:55 Three", 120),  # the last shorter than 10 s
        ("0:00 Intro\n1:00 Two\n3:00 Three", 120),  # past the end
        ("0:00 Intro\n1:00 Two\n1:00 Three", None),  # a repeated time
        ("0:00 Intro\n1:75 Two\n2:00 Three", None),  # 75 seconds is not a time: two left
        ("no timestamps at all", None),
        ("", None),
        (None, None),
    ],
)
def test_invalid_description_lists_are_ignored(description: str | None, duration: float | None) -> None:
    assert chapters_from_description(description, duration) == []


def test_description_used_when_no_uploader_markers() -> None:
    chapters = choose_chapters(
        description="0:00 a\n0:30 b\n1:00 c", auto_markers=[_macro("Auto", "0:05")], duration_sec=120
    )
    assert [c.title for c in chapters] == ["a", "b", "c"]
    chapters = choose_chapters(description="0:00 a", auto_markers=[_macro("Auto", "0:05")], duration_sec=120)
    assert [(c.title, c.start_sec, c.end_sec) for c in chapters] == [("Auto", 5.0, 120)]


def test_fill_ends() -> None:
    chapters = [Chapter(title="a", start_sec=0), Chapter(title="b", start_sec=10)]
    assert [c.end_sec for c in fill_ends(chapters, 5)] == [10, None]  # a duration before the start is ignored
    assert fill_ends([]) == []
