"""The pure rules of the library and its collections: what a video id, a name, a schedule, a
source, an ingest's limits or a definition file may be, and when a watched collection is next due.
No storage, no network; ``library.py`` does the work.

A collection definition arrives from outside (an upload, a pasted file, an agent), so it is read
strictly: the ``format`` and ``version`` are checked first, then unknown fields are refused and
every field's type is checked, and each failure is a ``bad-request`` whose hint names the field.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from urllib.parse import unquote

import msgspec

from .errors import ErrorCode, VidError, steps
from .inputs import is_list, parse_input
from .models import Base, Collection, CollectionDefinition, RefreshSummary, Schedule

__all__ = [
    "DEFINITION_FORMAT",
    "DEFINITION_VERSION",
    "MAX_CONCURRENCY",
    "MAX_DEFINITION_BYTES",
    "MAX_DESCRIPTION_CHARS",
    "MAX_NAME_CHARS",
    "MAX_SOURCES",
    "MAX_VIDEOS",
    "CollectionList",
    "CollectionResult",
    "CollectionSummary",
    "Watch",
    "WatchState",
    "check_description",
    "check_name",
    "check_run",
    "check_schedule",
    "check_sources",
    "check_video_key",
    "check_videos",
    "is_int_in",
    "next_due",
    "normalize_video_id",
    "parse_definition",
    "summary_of",
    "watch_of",
]

DEFINITION_FORMAT = "vid2context.collection"
DEFINITION_VERSION = 1
MAX_VIDEOS = 5_000
MAX_SOURCES = 100
MAX_NAME_CHARS = 200
MAX_DESCRIPTION_CHARS = 5_000
MAX_CONCURRENCY = 16
MAX_DEFINITION_BYTES = 2 * 1024 * 1024
"""5,000 video URLs are about 250 kB; anything far larger is not a collection file."""

_FIELDS = ("format", "version", "name", "description", "sources", "videos", "schedule")
_ENCODED_PREFIX = re.compile(r"[a-z]+%(?:25)*3a", re.IGNORECASE)
_AT = re.compile(r"(?:[01]\d|2[0-3]):[0-5]\d")
_MAX_MINUTES = 366 * 24 * 60


class _ScheduleIn(Base, forbid_unknown_fields=True):
    """``Schedule`` as read from a caller: unknown fields refused."""

    every: Literal["hourly", "daily", "weekly"] | int
    at: str | None = None
    enabled: bool = True


class _DefinitionIn(Base, forbid_unknown_fields=True):
    format: str
    version: int
    name: str
    description: str | None = None
    sources: list[str] = msgspec.field(default_factory=list)
    videos: list[str] = msgspec.field(default_factory=list)
    schedule: _ScheduleIn | None = None


def _bad(message: str, field: str, fix: str) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=f"Fix the `{field}` field: {fix}")


def is_int_in(value: object, low: int, high: int) -> bool:
    """A whole number (not a bool) from ``low`` to ``high``."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def normalize_video_id(raw: object) -> str:
    """The storage key for ``raw``: an id (``youtube:jNQXAC9IVRw``), an id URL-encoded once more
    (``youtube%3AjNQXAC9IVRw``, as a double-encoded path leaves it), or any video input."""
    if not isinstance(raw, str) or not raw.strip() or len(raw) > 2048:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "A video id of 1 to 2048 characters is required.",
            hint="Give an id such as youtube:jNQXAC9IVRw, or a video URL.",
        )
    text = raw.strip()
    for _ in range(3):
        if not _ENCODED_PREFIX.match(text):
            break
        text = unquote(text)
    try:
        ref = parse_input(text)
    except VidError:
        return text
    return ref.id if ref.kind == "video" else text


def check_video_key(raw: object, field: str) -> str:
    """``normalize_video_id`` for an id that must name a video."""
    key = normalize_video_id(raw)
    try:
        ref = parse_input(key)
    except VidError:
        ref = None
    if ref is None or ref.kind != "video":
        raise _bad(f"{field} ({key[:80]}) is not a video id.", field, "give ids such as youtube:jNQXAC9IVRw.")
    return key


def check_run(limit: object, concurrency: object) -> tuple[int | None, int]:
    """An ingest's ``limit`` (``None`` or 1 to 5,000) and ``concurrency`` (1 to 16)."""
    if limit is not None and not is_int_in(limit, 1, MAX_VIDEOS):
        raise _bad(
            f"limit must be 1 to {MAX_VIDEOS}, not {str(limit)[:20]}.", "limit", "leave it out for all."
        )
    if not is_int_in(concurrency, 1, MAX_CONCURRENCY):
        raise _bad(f"concurrency must be 1 to {MAX_CONCURRENCY}.", "concurrency", "leave it at 4.")
    return limit, concurrency  # type: ignore[return-value]


def check_name(name: object) -> str:
    """The collection name, stripped: 1 to 200 characters."""
    if not isinstance(name, str) or not name.strip():
        raise _bad(
            "A collection needs a name.",
            "name",
            f"give a non-empty string of at most {MAX_NAME_CHARS} characters.",
        )
    name = name.strip()
    if len(name) > MAX_NAME_CHARS:
        raise _bad(
            f"The name has {len(name)} characters; at most {MAX_NAME_CHARS} are allowed.",
            "name",
            "shorten it.",
        )
    return name


def check_description(description: object) -> str | None:
    """``None`` or a stripped string of at most 5,000 characters (empty becomes ``None``)."""
    if description is None:
        return None
    if not isinstance(description, str):
        raise _bad("The description must be a string.", "description", "give text, or leave it out.")
    description = description.strip()
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise _bad(
            f"The description has {len(description)} characters; at most {MAX_DESCRIPTION_CHARS} are allowed.",
            "description",
            "shorten it.",
        )
    return description or None


def check_schedule(schedule: object, field: str = "schedule") -> Schedule | None:
    """A ``Schedule`` from a Struct or a JSON-like dict; ``{"minutes": n}`` is accepted for ``every``.

    ``every`` in minutes is 1 to a year; ``at`` (``HH:MM`` UTC) only for daily and weekly schedules.
    """
    if schedule is None:
        return None
    raw = msgspec.to_builtins(schedule) if isinstance(schedule, msgspec.Struct) else schedule
    if isinstance(raw, dict) and isinstance(raw.get("every"), dict) and set(raw["every"]) == {"minutes"}:
        raw = {**raw, "every": raw["every"]["minutes"]}
    try:
        checked = msgspec.convert(raw, _ScheduleIn)
    except msgspec.ValidationError as error:
        raise _bad(
            f"The {field} is not valid: {_where(error, field)}.",
            field,
            'give {"every": "hourly" | "daily" | "weekly" | minutes, "at": "HH:MM" (UTC, optional), "enabled": true}.',
        ) from None
    every = checked.every
    if not isinstance(every, str) and not is_int_in(every, 1, _MAX_MINUTES):
        raise _bad(
            f"{field}.every must be 1 to {_MAX_MINUTES} minutes, not {every}.",
            f"{field}.every",
            "give minutes in that range, or hourly, daily or weekly.",
        )
    if checked.at is not None:
        if every not in ("daily", "weekly"):
            raise _bad(
                f"{field}.at only applies to daily and weekly schedules.",
                f"{field}.at",
                "leave it out, or use every: daily or weekly.",
            )
        if not _AT.fullmatch(checked.at):
            raise _bad(
                f"{field}.at must be HH:MM (UTC), not {checked.at[:20]!r}.",
                f"{field}.at",
                'give a time such as "06:30".',
            )
    return Schedule(every=every, at=checked.at, enabled=checked.enabled)


def check_sources(sources: object, *, public: bool, field: str = "sources") -> list[str]:
    """Each source as its list URL, duplicates dropped; a watch URL with ``list=`` stands for its
    playlist. A single video is ``bad-request``: it belongs in the items, not the sources."""
    if sources is None:
        return []
    if not isinstance(sources, (list, tuple)):
        raise _bad(f"{field} must be a list of playlist or channel URLs.", field, "give an array of strings.")
    if len(sources) > MAX_SOURCES:
        raise _bad(f"{len(sources)} sources given; at most {MAX_SOURCES} are allowed.", field, "keep fewer.")
    out: list[str] = []
    for index, source in enumerate(sources):
        where = f"{field}[{index}]"
        try:
            ref = parse_input(source, public=public)  # type: ignore[arg-type]
        except VidError as error:
            raise VidError(error.code, f"{where}: {error.message}", hint=error.hints) from None
        if ref.kind == "video" and ref.list_id and ref.platform == "youtube":
            ref = parse_input(f"youtube:playlist:{ref.list_id}")
        if not is_list(ref):
            what = "a single video" if ref.platform == "youtube" else "read as a single video here"
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"{where} ({str(source)[:80]}) is {what}, not a YouTube playlist or channel.",
                hint=steps(
                    "Sources are lists whose new videos a refresh adds; add a single video with {add_videos} instead."
                ),
            )
        canonical = ref.url or ref.id
        if canonical not in out:
            out.append(canonical)
    return out


def check_videos(videos: list[str], *, public: bool, field: str = "videos") -> dict[str, str]:
    """``{video id: input}`` for a definition's videos, first of each id kept; lists are refused."""
    found: dict[str, str] = {}
    for index, text in enumerate(videos):
        try:
            ref = parse_input(text, public=public)
        except VidError as error:
            raise VidError(error.code, f"{field}[{index}]: {error.message}", hint=error.hints) from None
        if is_list(ref):
            raise _bad(
                f"{field}[{index}] ({text[:80]}) is a {ref.kind}, not a video.",
                field,
                "put lists in `sources`.",
            )
        found.setdefault(ref.id, text.strip())
    return found


def parse_definition(definition: bytes | str | dict[str, Any] | CollectionDefinition) -> CollectionDefinition:
    """A ``vid2context.collection`` v1 definition, checked strictly.

    Accepts the file's bytes (or text), its parsed JSON object, or a ``CollectionDefinition``.
    Raises ``too-large`` for a file over 2 MB and ``bad-request`` naming the field for anything
    else: not JSON, not an object, another format or version, an unknown field, a missing name,
    a wrong type, or more than 5,000 videos. ``sources`` and ``videos`` are not parsed here.
    """
    raw: object = definition
    if isinstance(definition, CollectionDefinition):
        raw = msgspec.to_builtins(definition)
    elif isinstance(definition, (bytes, bytearray, memoryview, str)):
        data = definition.encode() if isinstance(definition, str) else bytes(definition)
        if len(data) > MAX_DEFINITION_BYTES:
            raise VidError(
                ErrorCode.TOO_LARGE,
                f"The collection file is {len(data):,} bytes; at most {MAX_DEFINITION_BYTES:,} are read.",
                hint=f"A collection holds at most {MAX_VIDEOS:,} videos; split it into several files.",
            )
        try:
            raw = msgspec.json.decode(data)
        except msgspec.DecodeError:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                "The collection file is not valid JSON.",
                hint=f'Give the JSON object that export wrote: {{"format": "{DEFINITION_FORMAT}", "version": 1, "name": ...}}.',
            ) from None
    if not isinstance(raw, dict):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"A collection definition is a JSON object, not {type(raw).__name__}.",
            hint=f'Give {{"format": "{DEFINITION_FORMAT}", "version": 1, "name": ...}}.',
        )
    if raw.get("format") != DEFINITION_FORMAT:
        shown = str(raw.get("format"))[:40] if "format" in raw else "missing"
        raise _bad(
            f"This is not a vid2context collection (format: {shown}).",
            "format",
            f'it must be "{DEFINITION_FORMAT}".',
        )
    version = raw.get("version")
    if version != DEFINITION_VERSION or isinstance(version, bool):
        raise _bad(
            f"Collection format version {str(version)[:20]} is not supported.",
            "version",
            f"this server reads version {DEFINITION_VERSION}; export the collection again from a matching version.",
        )
    unknown = [str(key)[:40] for key in raw if key not in _FIELDS]
    if unknown:
        raise _bad(
            f"Unknown field {unknown[0]!r} in the collection definition.",
            unknown[0],
            "remove it; the fields are " + ", ".join(_FIELDS) + ".",
        )
    if "name" not in raw:
        raise _bad("The collection definition has no name.", "name", "add a name of 1 to 200 characters.")
    videos = raw.get("videos")
    if isinstance(videos, list) and len(videos) > MAX_VIDEOS:
        raise _bad(
            f"The definition lists {len(videos):,} videos; at most {MAX_VIDEOS:,} are allowed.",
            "videos",
            "split it into several collections.",
        )
    sources = raw.get("sources")
    if isinstance(sources, list) and len(sources) > MAX_SOURCES:
        raise _bad(
            f"The definition lists {len(sources)} sources; at most {MAX_SOURCES} are allowed.",
            "sources",
            "keep the ones you need.",
        )
    try:
        checked = msgspec.convert(raw, _DefinitionIn)
    except msgspec.ValidationError as error:
        field = _field_of(error)
        raise _bad(
            f"The collection definition is not valid: {_where(error, 'definition')}.",
            field,
            "see the message for the expected type.",
        ) from None
    return CollectionDefinition(
        name=check_name(checked.name),
        description=check_description(checked.description),
        sources=checked.sources,
        videos=checked.videos,
        schedule=check_schedule(checked.schedule),
    )


def _where(error: msgspec.ValidationError, root: str) -> str:
    """msgspec's message with ``$`` replaced by the name the caller knows."""
    return str(error).replace("`$.", f"`{root}.").replace("`$`", f"`{root}`").replace("`$[", f"`{root}[")


def _field_of(error: msgspec.ValidationError) -> str:
    match = re.search(r"at `\$\.?([^`]*)`", str(error))
    if match and match.group(1):
        return match.group(1)
    match = re.search(r"field `([^`]+)`", str(error))
    return match.group(1) if match else "definition"


# --- watch state ----------------------------------------------------------------------------------

_PERIODS = {"hourly": timedelta(hours=1), "daily": timedelta(days=1), "weekly": timedelta(days=7)}


class WatchState(Base):
    next_due_at: str | None = None
    """When the schedule next wants a refresh (in the past: overdue); ``None`` when disabled or unknown.
    The last refresh is the collection's ``checkedAt``."""


class Watch(Base):
    schedule: Schedule
    state: WatchState


class CollectionSummary(Base, kw_only=True):
    """A collection as every answer shows it, REST and MCP alike (a list, a create, an update,
    a result's ``collection``); ``get_collection`` adds its videos and pending inputs.

    The stored ``Collection`` keeps its ``schedule``; here it is ``watch``, the schedule with its
    state, as the contract names it (and as ``POST``/``PATCH`` take it).
    """

    id: str
    name: str
    description: str | None = None
    sources: list[str] = []
    """Lists (playlists, channels, feeds) whose new videos a refresh adds."""
    video_count: int = 0
    """Saved videos (pending inputs not counted)."""
    created_at: str = ""
    updated_at: str = ""
    checked_at: str | None = None
    """When the sources were last checked for new videos (the last refresh)."""
    watch: Watch | None = None
    """The schedule and when it is next due; ``None`` when the collection is not watched."""


class CollectionList(Base):
    """Every collection, most recently updated first (``GET /collections``, ``list_collections``)."""

    collections: list[CollectionSummary]


class CollectionResult(Base, omit_defaults=True):
    """A collection after work on it, and what the work did: adding videos, a refresh, an import
    with ``refresh``, a create that follows sources (REST jobs, REST import, MCP tools alike)."""

    collection: CollectionSummary
    summary: RefreshSummary | None = None


def summary_of(collection: Collection) -> CollectionSummary:
    """The public shape of a stored collection."""
    return CollectionSummary(
        id=collection.id,
        name=collection.name,
        description=collection.description,
        sources=list(collection.sources),
        video_count=collection.video_count,
        created_at=collection.created_at,
        updated_at=collection.updated_at,
        checked_at=collection.checked_at,
        watch=watch_of(collection),
    )


def next_due(schedule: Schedule, since: datetime) -> datetime:
    """When ``schedule`` next wants a refresh after one at ``since``: a period later, or for daily
    and weekly schedules with ``at``, the first ``HH:MM`` (UTC) after that day or week began."""
    if schedule.at and schedule.every in ("daily", "weekly"):
        base = since + timedelta(days=6 if schedule.every == "weekly" else 0)
        hour, minute = (int(part) for part in schedule.at.split(":"))
        due = base.replace(hour=hour, minute=minute, second=0, microsecond=0)
        return due if due > base else due + timedelta(days=1)
    if isinstance(schedule.every, str):
        return since + _PERIODS[schedule.every]
    return since + timedelta(minutes=schedule.every)


def watch_of(collection: Collection) -> Watch | None:
    """The schedule and its state, or ``None`` when the collection is not watched."""
    schedule = collection.schedule
    if schedule is None:
        return None
    last = collection.checked_at
    due = None
    if schedule.enabled:
        try:
            since = datetime.fromisoformat(last or collection.created_at).astimezone(UTC)
        except ValueError:
            since = None
        due = next_due(schedule, since).strftime("%Y-%m-%dT%H:%M:%SZ") if since else None
    return Watch(schedule=schedule, state=WatchState(next_due_at=due))
