"""Push, pull and sync against another vid2context server (the edge, usually).

YouTube refuses the edge's addresses; the user's own machine is not refused. So the local
runtime reads each video with everything it has (captions through the user's own address,
yt-dlp, local files, speech-to-text: the normal pipeline) and puts the context on the server
(``PUT /api/v1/library/{id}``), where it is searchable like any video that server read itself.
``pull`` brings what a server holds into the local library, and ``sync`` reconciles collections
both ways: the copy with the newest ``updatedAt`` wins.

``RemoteServer`` is the one client of the other server's REST API; every failure it meets is a
``VidError`` (the server's own code and message when it answered one, ``upstream`` or
``timeout`` when it could not be reached), so one video that fails is one line of the report and
never stops the others. The key travels in ``Authorization`` only and is never part of a
message, a report or a log line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

import httpx
import msgspec

from . import library, pipeline
from .collections_io import CollectionSummary
from .ctx import Ctx
from .errors import ErrorCode, VidError
from .inputs import is_list
from .library_put import put_video
from .models import Base, VideoContext, VideoRef
from .runtime import Runtime

__all__ = [
    "CollectionMove",
    "ItemReport",
    "PullReport",
    "PushReport",
    "RemoteServer",
    "SyncReport",
    "pull",
    "push",
    "sync",
]

_ENCODE = msgspec.json.Encoder().encode
OnItem = Callable[["ItemReport"], None]


class ItemReport(Base):
    """One video of a push or pull: ``ok`` (moved), ``skipped`` (already there) or ``error``."""

    input: str
    outcome: Literal["ok", "skipped", "error"]
    id: str | None = None
    title: str | None = None
    detail: str | None = None
    code: str | None = None
    message: str | None = None


class PushReport(Base):
    to: str
    items: list[ItemReport] = []
    collection: str | None = None
    """The collection on the server that now holds the videos (``--collection``)."""

    @property
    def failed(self) -> int:
        return sum(item.outcome == "error" for item in self.items)


class PullReport(Base):
    source: str = msgspec.field(name="from")
    items: list[ItemReport] = []
    collections: list[str] = []

    @property
    def failed(self) -> int:
        return sum(item.outcome == "error" for item in self.items)


class CollectionMove(Base):
    """What ``sync`` did with one collection: copied ``to-remote`` or ``to-local`` (``created`` or
    ``updated``, the newer ``updatedAt`` winning), ``same`` on both, or ``error``."""

    name: str
    direction: Literal["to-remote", "to-local", "same", "error"]
    action: Literal["created", "updated", "none"] = "none"
    videos: int = 0
    message: str | None = None


class SyncReport(Base):
    with_: str = msgspec.field(name="with")
    collections: list[CollectionMove] = []

    @property
    def failed(self) -> int:
        return sum(move.direction == "error" for move in self.collections)


def _shown_url(url: str) -> str:
    """The server's URL as reports show it: no credentials, no query."""
    parts = httpx.URL(url)
    return str(parts.copy_with(username=None, password=None, query=None, fragment=None)).rstrip("/")


class RemoteServer:
    """The other server's REST API, as far as push, pull and sync need it."""

    def __init__(self, url: str, key: str | None, client: httpx.AsyncClient) -> None:
        if not url or not url.lower().startswith(("http://", "https://")):
            raise VidError(
                ErrorCode.BAD_REQUEST,
                "The server's URL must start with http:// or https://.",
                hint="Give the server as --to/--from/--with https://..., or set VID2CONTEXT_REMOTE_URL.",
            )
        self.url = _shown_url(url)
        self._client = client
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}

    def _path(self, *parts: str) -> str:
        return f"{self.url}/api/v1/" + "/".join(quote(part, safe="") for part in parts)

    async def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The answer; a ``GET`` may answer ``404`` (the caller asks whether something is there),
        any other error status is the server's ``VidError``."""
        try:
            response = await self._client.request(
                method, path, headers={**self._headers, **kwargs.pop("headers", {})}, **kwargs
            )
        except httpx.HTTPError as error:
            raise self._unreachable(error) from None
        missing_ok = response.status_code == 404 and method == "GET"
        if response.status_code >= 400 and not missing_ok:
            raise _remote_error(self.url, response)
        return response

    def _unreachable(self, error: httpx.HTTPError) -> VidError:
        if isinstance(error, httpx.TimeoutException):
            return VidError(
                ErrorCode.TIMEOUT,
                f"{self.url} did not answer in time.",
                hint="Repeat the call once (run the command again): what was moved stays moved.",
            )
        return VidError(
            ErrorCode.UPSTREAM,
            f"Could not reach {self.url}: {type(error).__name__}.",
            hint="Check the server's URL (--to, --from, --with or VID2CONTEXT_REMOTE_URL) and the network.",
        )

    async def has_video(self, video_id: str) -> bool:
        """Whether the server holds ``video_id``: ``If-None-Match: *`` answers ``304`` with no body
        when it does, so asking costs no transcript."""
        response = await self._call("GET", self._path("library", video_id), headers={"If-None-Match": "*"})
        if response.status_code == 404:
            return False
        if response.status_code in (200, 304):
            return True
        raise _remote_error(self.url, response)

    async def put_video(self, context: VideoContext) -> dict[str, Any]:
        response = await self._call(
            "PUT",
            self._path("library", context.id),
            content=_ENCODE(context),
            headers={"Content-Type": "application/json"},
        )
        return response.json()

    async def get_video_bytes(self, video_id: str) -> bytes:
        response = await self._call("GET", self._path("library", video_id))
        if response.status_code == 404:
            raise _remote_error(self.url, response)
        return response.content

    async def collections(self) -> list[dict[str, Any]]:
        response = await self._call("GET", self._path("collections"))
        return list(response.json().get("collections") or [])

    async def collection(self, reference: str) -> dict[str, Any] | None:
        """The collection's view (with ``videos``), ``None`` when the server has none by that id or name."""
        response = await self._call("GET", self._path("collections", reference))
        return None if response.status_code == 404 else response.json()

    async def create_collection(
        self, name: str, description: str | None, sources: list[str]
    ) -> dict[str, Any]:
        body = {"name": name, "description": description, "sources": sources}
        return (await self._call("POST", self._path("collections"), json=body)).json()

    async def update_collection(
        self, collection_id: str, description: str | None, sources: list[str]
    ) -> None:
        body = {"description": description, "sources": sources}
        await self._call("PATCH", self._path("collections", collection_id), json=body)

    async def add_videos(self, collection_id: str, video_ids: list[str]) -> None:
        """Add saved videos to a collection and wait for the server's ingest job: every id is in
        the server's library already, so the job reads each from there and calls no platform."""
        response = await self._call(
            "POST", self._path("collections", collection_id, "items"), json={"inputs": video_ids}
        )
        job = response.json()
        if response.status_code == 202 and isinstance(job.get("id"), str):
            await self._wait(job["id"])

    async def remove_videos(self, collection_id: str, video_ids: list[str]) -> None:
        await self._call(
            "DELETE", self._path("collections", collection_id, "items"), json={"videoIds": video_ids}
        )

    async def _wait(self, job_id: str) -> None:
        """Follow a job's event stream to its end (the server closes it when the job ends)."""
        try:
            async with self._client.stream(
                "GET", self._path("jobs", job_id, "events"), headers=self._headers
            ) as events:
                async for _ in events.aiter_lines():
                    pass
        except httpx.HTTPError as error:
            raise self._unreachable(error) from None
        job = (await self._call("GET", self._path("jobs", job_id))).json()
        if job.get("status") != "succeeded":
            error = job.get("error") or {}
            raise VidError(
                ErrorCode.UPSTREAM,
                f"{self.url}'s job {job_id[:40]} ended {job.get('status')}: {str(error.get('message'))[:200]}",
                hint="Repeat the call once (run the command again): what was moved stays moved.",
            )


def _remote_error(url: str, response: httpx.Response) -> VidError:
    """The server's error body as ours (its code, message and hint), or ``upstream``."""
    try:
        body = response.json()["error"]
        code = ErrorCode(body["code"])
        return VidError(code, f"{url}: {str(body['message'])[:300]}", hint=body.get("hint"))
    except (ValueError, KeyError, TypeError):
        return VidError(
            ErrorCode.UPSTREAM,
            f"{url} answered HTTP {response.status_code}, not a vid2context error.",
            hint="Check that VID2CONTEXT_REMOTE_URL (or --to, --from, --with) names a vid2context server, "
            "whose GET /api/v1/health answers.",
        )


def _report_error(text: str, error: VidError, video_id: str | None = None) -> ItemReport:
    return ItemReport(
        input=text,
        outcome="error",
        id=video_id,
        code=error.code.value,
        message=error.message,
        detail=error.hint,
    )


async def _expand(runtime: Runtime, text: str, ctx: Ctx) -> list[VideoRef]:
    """The videos an input names: a list's videos (``list_items``), or the video itself."""
    ref = pipeline.resolve(runtime, text)
    if is_list(ref) or ref.list_id is not None:
        return await pipeline.list_items(runtime, ref, ctx=ctx)
    return [ref]


async def push(
    runtime: Runtime,
    remote: RemoteServer,
    inputs: list[str],
    *,
    refresh: bool = False,
    collection: str | None = None,
    mode: str = "auto",
    lang: str | None = None,
    on_item: OnItem | None = None,
) -> PushReport:
    """Read each input here and put its context on ``remote``. Lists are expanded; a video the
    server already holds is skipped unless ``refresh`` (then it is read again here and replaces
    the server's copy); ``collection`` (a name or id) is created on the server when missing and
    gets every pushed or skipped video."""
    report = PushReport(to=remote.url)
    on_item = on_item or (lambda item: None)
    landed: list[str] = []
    for text in inputs:
        try:
            refs = await _expand(runtime, text, Ctx(timeout=runtime.settings.request_timeout_ms / 1000))
        except VidError as error:
            report.items.append(item := _report_error(text, error))
            on_item(item)
            continue
        for ref in refs:
            item = await _push_one(runtime, remote, ref, refresh=refresh, mode=mode, lang=lang)
            report.items.append(item)
            on_item(item)
            if item.outcome != "error" and item.id:
                landed.append(item.id)
    if collection is not None:
        report.collection = await _remote_collection(remote, collection, landed, report)
    return report


async def _push_one(
    runtime: Runtime, remote: RemoteServer, ref: VideoRef, *, refresh: bool, mode: str, lang: str | None
) -> ItemReport:
    shown = ref.url or ref.id
    try:
        if not refresh and await remote.has_video(ref.id):
            return ItemReport(input=shown, outcome="skipped", id=ref.id, detail="already there")
        context = await pipeline.get_context(runtime, ref, mode=mode, lang=lang, refresh=refresh)
        answer = await remote.put_video(context)
    except VidError as error:
        return _report_error(shown, error, ref.id)
    segments = len(context.transcript.segments) if context.transcript else 0
    how = "created" if answer.get("created") else "replaced"
    return ItemReport(
        input=shown,
        outcome="ok",
        id=context.id,
        title=context.metadata.title,
        detail=f"{how}, {segments} segments, vectors {answer.get('vectors', 'skipped')}",
    )


async def _remote_collection(
    remote: RemoteServer, name: str, video_ids: list[str], report: PushReport
) -> str | None:
    """The server's collection ``name`` (created when missing) with ``video_ids`` added; a
    failure is one more error line of the report."""
    try:
        found = await remote.collection(name)
        if found is None:
            found = await remote.create_collection(name, None, [])
        if video_ids:
            await remote.add_videos(found["id"], video_ids)
        return str(found["id"])
    except VidError as error:
        report.items.append(_report_error(f"collection {name}", error))
        return None


# --- pull ---------------------------------------------------------------------------------------


async def _pull_one(runtime: Runtime, remote: RemoteServer, video_id: str) -> ItemReport:
    """One video from the server into the local library, checked and indexed as any put is."""
    try:
        body = await remote.get_video_bytes(video_id)
        result = await put_video(
            runtime, video_id, body, ctx=Ctx(timeout=runtime.settings.request_timeout_ms / 1000)
        )
    except VidError as error:
        return _report_error(video_id, error, video_id)
    return ItemReport(
        input=video_id,
        outcome="ok",
        id=result.id,
        detail=f"{'created' if result.created else 'replaced'}, {result.segments} segments, vectors {result.vectors}",
    )


async def pull(
    runtime: Runtime,
    remote: RemoteServer,
    video_ids: list[str],
    *,
    collections: list[str] | None = None,
    on_item: OnItem | None = None,
) -> PullReport:
    """The videos ``video_ids`` and the ``collections`` (ids or names; ``[]`` with no ids: every
    collection) from ``remote`` into the local library; a pulled collection's local twin (same
    name) is created or updated to match it."""
    report = PullReport(source=remote.url)
    on_item = on_item or (lambda item: None)
    for video_id in video_ids:
        report.items.append(item := await _pull_one(runtime, remote, video_id))
        on_item(item)
    wanted = collections
    if wanted is None and not video_ids:
        wanted = []
    if wanted is not None:
        try:
            names = wanted or [c["id"] for c in await remote.collections()]
        except VidError as error:
            report.items.append(_report_error("collections", error))
            return report
        for reference in names:
            try:
                view = await remote.collection(reference)
                if view is None:
                    raise VidError(ErrorCode.NOT_FOUND, f"{remote.url} has no collection {reference[:80]!r}.")
            except VidError as error:
                report.items.append(item := _report_error(f"collection {reference}", error))
                on_item(item)
                continue
            await _copy_to_local(runtime, remote, view, report.items, on_item)
            report.collections.append(view["name"])
    return report


async def _copy_to_local(
    runtime: Runtime, remote: RemoteServer, view: dict[str, Any], items: list[ItemReport], on_item: OnItem
) -> str:
    """The server's collection ``view`` made local: its missing videos pulled, the local twin
    created or updated (description, sources, videos; videos it no longer has leave it)."""
    wanted = [video["id"] for video in view.get("videos") or []]
    for video_id in wanted:
        if await runtime.storage.get_context(video_id) is None:
            items.append(item := await _pull_one(runtime, remote, video_id))
            on_item(item)
    local = await _local_collection(runtime, view["name"])
    if local is None:
        local = await library.create_collection(
            runtime,
            view["name"],
            description=view.get("description"),
            sources=list(view.get("sources") or []),
        )
        action = "created"
    else:
        await library.update_collection(
            runtime, local.id, description=view.get("description"), sources=list(view.get("sources") or [])
        )
        action = "updated"
    present = [v for v in wanted if await runtime.storage.get_context(v) is not None]
    if present:
        await library.add_to_collection(runtime, local.id, present)
    held = [v.id for v in (await library.get_collection_view(runtime, local.id)).videos]
    extra = [v for v in held if v not in set(wanted)]
    if extra:
        await library.remove_from_collection(runtime, local.id, extra)
    return action


async def _local_collection(runtime: Runtime, name: str) -> CollectionSummary | None:
    try:
        return await library.resolve_collection(runtime, name)
    except VidError as error:
        if error.code == ErrorCode.NOT_FOUND:
            return None
        raise


# --- sync ---------------------------------------------------------------------------------------


@dataclass
class _Side:
    name: str
    updated_at: str
    description: str | None
    sources: list[str]
    videos: list[str] = field(default_factory=list)
    id: str = ""


async def _local_sides(runtime: Runtime) -> dict[str, _Side]:
    sides = {}
    for summary in await library.list_collections(runtime):
        view = await library.get_collection_view(runtime, summary.id)
        sides[summary.name.strip().lower()] = _Side(
            summary.name,
            summary.updated_at,
            summary.description,
            list(summary.sources),
            [v.id for v in view.videos],
            summary.id,
        )
    return sides


async def _remote_sides(remote: RemoteServer) -> dict[str, _Side]:
    sides = {}
    for summary in await remote.collections():
        view = await remote.collection(summary["id"]) or {}
        sides[summary["name"].strip().lower()] = _Side(
            summary["name"],
            summary.get("updatedAt") or "",
            summary.get("description"),
            list(summary.get("sources") or []),
            [v["id"] for v in view.get("videos") or []],
            summary["id"],
        )
    return sides


def _same(a: _Side, b: _Side) -> bool:
    return (a.description, sorted(a.sources), sorted(a.videos)) == (
        b.description,
        sorted(b.sources),
        sorted(b.videos),
    )


async def sync(runtime: Runtime, remote: RemoteServer) -> SyncReport:
    """Collections both ways: one only here goes there (its videos pushed from the local library,
    never read again), one only there comes here (pulled), one on both sides that differs takes
    the side with the newest ``updatedAt``."""
    report = SyncReport(with_=remote.url)
    local = await _local_sides(runtime)
    there = await _remote_sides(remote)
    for key in sorted(set(local) | set(there)):
        mine, theirs = local.get(key), there.get(key)
        name = (mine or theirs).name  # type: ignore[union-attr]
        try:
            if mine is not None and theirs is not None and _same(mine, theirs):
                report.collections.append(
                    CollectionMove(name=name, direction="same", videos=len(mine.videos))
                )
            elif theirs is None or (mine is not None and mine.updated_at > theirs.updated_at):
                assert mine is not None
                action = await _copy_to_remote(runtime, remote, mine, theirs)
                report.collections.append(
                    CollectionMove(name=name, direction="to-remote", action=action, videos=len(mine.videos))
                )
            else:
                view = await remote.collection(theirs.id) or {}
                items: list[ItemReport] = []
                action = await _copy_to_local(runtime, remote, view, items, lambda item: None)
                failed = [i for i in items if i.outcome == "error"]
                report.collections.append(
                    CollectionMove(
                        name=name,
                        direction="to-local" if not failed else "error",
                        action=action,  # type: ignore[arg-type]
                        videos=len(theirs.videos),
                        message=failed[0].message if failed else None,
                    )
                )
        except VidError as error:
            report.collections.append(CollectionMove(name=name, direction="error", message=error.message))
    return report


async def _copy_to_remote(
    runtime: Runtime, remote: RemoteServer, mine: _Side, theirs: _Side | None
) -> Literal["created", "updated"]:
    """The local collection made the server's: videos it lacks put from the local library, the
    collection created or updated, videos the local one no longer has removed there."""
    for video_id in mine.videos:
        if not await remote.has_video(video_id):
            context = await runtime.storage.get_context(video_id)
            if context is not None:
                await remote.put_video(context)
    if theirs is None:
        created = await remote.create_collection(mine.name, mine.description, mine.sources)
        collection_id, action = str(created["id"]), "created"
    else:
        await remote.update_collection(theirs.id, mine.description, mine.sources)
        collection_id, action = theirs.id, "updated"
    if mine.videos:
        await remote.add_videos(collection_id, mine.videos)
    extra = [v for v in (theirs.videos if theirs else []) if v not in set(mine.videos)]
    if extra:
        await remote.remove_videos(collection_id, extra)
    return action  # type: ignore[return-value]
