"""The local runtime's ``LiveSource``: the manifest checked with httpx, the audio read by ffmpeg.

Local only (``LOCAL_ONLY``): a subprocess and a temporary folder.

``probe`` fetches the manifest (``playlists.read_manifest``); a page (a YouTube URL, or an HTML
answer) is read by yt-dlp for its live stream's manifest first (``pages``), which is
then checked as if it had been given. An HLS master playlist is followed
to its first variant, a finished playlist (video on demand) or a dynamic-less MPD is refused with
a hint to read it as a video, and a live playlist with no segment yet is fetched again every
``poll_s`` until one appears or ``start_timeout_s`` passes.

``pieces`` is the pipelined long-audio path of ``providers/audio_local`` pointed at the stream:
one ffmpeg pass reads HLS or DASH as the server publishes it and writes 16 kHz mono PCM with its
silences, ``decode_pieces`` hands on each piece as soon as its cut is settled (``eager``: at the
first pause that ends inside the cut window, not after waiting for a longer one), and
``FfmpegPrep.load`` encodes it for the ladder. ffmpeg stops by itself at ``-t`` (``maxMinutes``)
or when the stream ends (``#EXT-X-ENDLIST``, or ``HOLD_RELOADS`` reloads without a new segment);
leaving the ``async with`` (a client gone, a failure) stops its process group and removes the
folder.

Public mode: the URL, the manifest a page led to and the variant are checked by ``egress`` before
anything is fetched (yt-dlp reads the page through the same filtering proxy), the
manifest is read through its guarded client, and ffmpeg fetches through its filtering proxy
(``-http_proxy``), with only the network protocols and stream demuxers allowed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import httpx

from ..chunking import AudioChunk
from ..ctx import Ctx
from ..errors import ErrorCode, VidError, per_surface
from ..providers.audio_local import FfmpegPrep, decode_pieces
from ..providers.speech import AudioInput
from .core import LivePiece
from .pages import PageReader, not_a_stream, resolve_page
from .playlists import Manifest, read_manifest

__all__ = ["HOLD_RELOADS", "FfmpegLive"]

HOLD_RELOADS = 30
"""Reloads of an HLS playlist that brings nothing new before ffmpeg counts the stream as ended."""
MANIFEST_BYTES = 2 * 1024 * 1024
_NETWORK = "http,https,tcp,tls,crypto,httpproxy"
_STREAM_DEMUXERS = "hls,dash,mpegts,mov,aac,mp3,matroska,webm,ogg,flac,wav"


class FfmpegLive:
    """Live HLS and DASH through ffmpeg; ``http`` is the runtime's client (a guarded one from
    ``egress`` is used instead in public mode)."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        egress: Any = None,
        pages: PageReader | None = None,
        start_timeout_s: float = 30.0,
        poll_s: float = 1.0,
    ) -> None:
        self._http = http
        self._egress = egress
        self._pages = pages
        self.start_timeout_s = start_timeout_s
        self.poll_s = poll_s
        self._kinds: dict[str, str] = {}

    async def probe(self, url: str, ctx: Ctx, *, page: bool = False) -> str:
        client = self._egress.client() if self._egress is not None else self._http
        try:
            manifest = None if page else await self._manifest(client, url, ctx)
            if manifest is None or (manifest.kind == "page" and self._pages is not None):
                url = await resolve_page(self._pages, url, ctx)
                manifest = await self._manifest(client, url, ctx)
            media = url
            if manifest.kind == "hls-master":
                if manifest.variant is None:
                    raise not_a_stream()
                media = manifest.variant
                manifest = await self._manifest(client, media, ctx)
            if manifest.kind in ("other", "page", "hls-master"):
                raise not_a_stream()
            if not manifest.live:
                raise _not_live()
            waited = 0.0
            while manifest.segments == 0:
                if waited >= self.start_timeout_s:
                    raise _never_started(self.start_timeout_s)
                await asyncio.sleep(self.poll_s)
                waited += self.poll_s
                ctx.check()
                manifest = await self._manifest(client, media, ctx)
                if not manifest.live and manifest.segments == 0:
                    raise _never_started(waited)
        finally:
            if client is not self._http:
                await client.aclose()
        if len(self._kinds) >= 256:  # probes whose watch never started
            self._kinds.clear()
        self._kinds[media] = manifest.kind
        return media

    async def _manifest(self, client: httpx.AsyncClient, url: str, ctx: Ctx) -> Manifest:
        ctx.check()
        if self._egress is not None:
            await self._egress.check_url(url, subject="the stream")
        try:
            async with client.stream("GET", url, timeout=min(30.0, ctx.remaining or 30.0)) as response:
                body = b""
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) >= MANIFEST_BYTES:  # no manifest is this large: a media file, a page
                        break
        except httpx.HTTPError:
            raise VidError(
                ErrorCode.UPSTREAM,
                "The stream's manifest could not be fetched (no answer from its server).",
                hint="Check the address; if it is right, tell the user the stream's server does not answer, and "
                "do not retry.",
            ) from None
        if response.status_code in (404, 410):
            raise VidError(
                ErrorCode.NOT_FOUND,
                f"The stream's manifest is not there (HTTP {response.status_code}).",
                hint="Check the address; the stream may have ended or not started yet.",
            )
        if response.status_code >= 400:
            raise VidError(
                ErrorCode.UPSTREAM,
                f"The stream's server refused the manifest (HTTP {response.status_code}).",
                hint="Tell the user the stream's server refused it; do not retry.",
            )
        manifest = read_manifest(body[:MANIFEST_BYTES].decode("utf-8", "replace"), str(response.url))
        if manifest.kind == "other" and "html" in response.headers.get("content-type", "").lower():
            return Manifest(kind="page")
        return manifest

    def pieces(
        self, media: str, ctx: Ctx, *, length_sec: float, piece_sec: float
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[LivePiece]]:
        options: list[str] = ["-rw_timeout", "15000000"]
        if self._kinds.pop(media, None) == "hls-media":
            # From the newest segment (ffmpeg's default is three back, three segments more delay),
            # and a connection per segment: over a server without keep-alive ffmpeg's persistent
            # reads held the audio back by seconds (measured: 8 s bursts on loopback).
            options += ["-live_start_index", "-1", "-m3u8_hold_counters", str(HOLD_RELOADS)]
            options += ["-http_persistent", "0"]
        return _Reading(self._egress, media, options, ctx, length_sec=length_sec, piece_sec=piece_sec)


_CLEANUPS: set[asyncio.Future[None]] = set()
"""Cleanups still running, held so that none is collected before it ends."""


class _Reading:
    """One ffmpeg pass over a stream, as an ``async with`` (a class, not a generator: its exit
    runs the same way whether the block ended, failed, or was closed from a generator's
    ``aclose``)."""

    def __init__(
        self, egress: Any, media: str, options: list[str], ctx: Ctx, *, length_sec: float, piece_sec: float
    ) -> None:
        self._egress = egress
        self._media = media
        self._options = options
        self._ctx = ctx
        self._length_sec = length_sec
        self._piece_sec = piece_sec
        self._folder: str | None = None
        self._stack = contextlib.AsyncExitStack()
        self._decoded: AsyncGenerator[tuple[float, float, float]] | None = None
        self._loaded: AsyncGenerator[LivePiece] | None = None
        self._guarded: AsyncGenerator[LivePiece] | None = None

    async def __aenter__(self) -> AsyncIterator[LivePiece]:
        self._folder = folder = await asyncio.to_thread(tempfile.mkdtemp, prefix="vid2context-live-")
        options = list(self._options)
        call = None
        try:
            if self._egress is not None:
                call = await self._stack.enter_async_context(self._egress.call())
                options += ["-http_proxy", call.proxy_url, "-protocol_whitelist", _NETWORK]
                options += ["-format_whitelist", _STREAM_DEMUXERS]
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        self._decoded = decode_pieces(
            self._media,
            os.path.join(folder, "audio.pcm"),
            self._ctx,
            what="the live stream",
            max_sec=self._piece_sec,
            inputs=[*options, "-i", self._media, "-flush_packets", "1"],  # PCM on disk as it is decoded
            length=self._length_sec,
            timeout=self._length_sec + 600.0,
            eager=True,
        )
        self._loaded = _loaded(self._decoded, folder, self._ctx)
        if call is None:
            return self._loaded
        self._guarded = _as_refusal(self._loaded, call)
        return self._guarded

    async def __aexit__(self, *exc: object) -> None:
        # In a task of its own, which a caller's cancellation cannot interrupt half-way: a client
        # gone from an MCP call is cancelled again at every await of the cleanup.
        cleanup = asyncio.ensure_future(self._cleanup())
        _CLEANUPS.add(cleanup)
        cleanup.add_done_callback(_CLEANUPS.discard)
        await asyncio.shield(cleanup)

    async def _cleanup(self) -> None:
        try:
            for generator in (self._guarded, self._loaded, self._decoded):
                if generator is not None:
                    with contextlib.suppress(Exception):
                        await generator.aclose()  # a decode pass still running: its group is killed
            await self._stack.aclose()
        finally:
            if self._folder is not None:
                await asyncio.to_thread(shutil.rmtree, self._folder, True)


async def _as_refusal(pieces: AsyncGenerator[LivePiece], call: Any) -> AsyncIterator[LivePiece]:
    """``pieces``, a failure after the proxy refused a fetch of this run (a segment or a variant
    at a private address, mid-stream) answered as that refusal: ffmpeg only says it could not
    read, and the class of address is what the caller can act on."""
    try:
        async for piece in pieces:
            yield piece
    except VidError as error:
        if call.refused is None or error.code in (ErrorCode.CANCELED, ErrorCode.TIMEOUT):
            raise
        raise call.refused.error("The live stream (or a segment or playlist it led to)") from None


async def _loaded(
    decoded: AsyncGenerator[tuple[float, float, float]], folder: str, ctx: Ctx
) -> AsyncIterator[LivePiece]:
    prep = FfmpegPrep()
    index = 0
    async for start, end, overlap in decoded:
        chunk = AudioChunk(
            index=index,
            start_sec=start,
            end_sec=end,
            overlap_sec=overlap,
            audio=AudioInput.from_path(os.path.join(folder, f"piece-{index:04d}.mp3"), mime="audio/mpeg"),
        )
        yield LivePiece(index=index, start_sec=start, end_sec=end, audio=await prep.load(chunk, ctx))
        index += 1


def _not_live() -> VidError:
    return VidError(
        ErrorCode.UNSUPPORTED_INPUT,
        "The stream is not live: its playlist is finished (video on demand).",
        hint=per_surface(
            rest="Read it as a video with GET /api/v1/transcript?url=<the same address>.",
            mcp="Read it as a video with get_transcript and the same url.",
        ),
    )


def _never_started(waited: float) -> VidError:
    return VidError(
        ErrorCode.TIMEOUT,
        f"The stream did not start: its playlist listed no media after {waited:g} s.",
        hint="Tell the user the stream has not started, and do not retry until it is on air.",
    )
