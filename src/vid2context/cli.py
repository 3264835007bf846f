"""The ``vid2context`` command.

The result goes to stdout and nothing else does, so ``vid2context get URL > talk.md`` is clean;
progress and errors (code, message, hint) go to stderr, and the exit status says which happened:
0 success, 1 an error we could explain, 2 a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import msgspec

from . import __version__
from .cli_frame import on_local_runtime, print_error
from .ctx import Ctx
from .errors import VidError
from .formats import FORMATTERS, RenderOptions, get_formatter, render_view
from .models import VideoContext
from .outline import get_section
from .runtime import Runtime, build_local_runtime
from .settings import SETTINGS, load_settings

__all__ = ["local_app", "main", "served_app"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vid2context",
        description="Turn any video into context an AI agent can use.",
        epilog="Settings come from environment variables; `vid2context settings` lists them.",
    )
    parser.add_argument("--version", action="version", version=f"vid2context {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    get = commands.add_parser(
        "get",
        help="print a video's transcript with a header",
        description=(
            "Print a video's transcript (platform captions first) to stdout, with a header naming the "
            "source. Progress and errors go to stderr."
        ),
    )
    get.add_argument("url", help="a YouTube URL or id, any page yt-dlp understands, or a local media file")
    get.add_argument(
        "-f", "--format", default="text", help="output format (see `vid2context formats`); default text"
    )
    get.add_argument(
        "-t", "--timestamps", action="store_true", help="prefix lines with [m:ss] where the format allows"
    )
    get.add_argument("-l", "--lang", help="preferred transcript language, BCP-47 (en, de, pt-BR)")
    get.add_argument(
        "-m",
        "--mode",
        default="auto",
        choices=["auto", "captions", "stt", "video"],
        help="auto (captions, then speech-to-text), captions, stt or video; default auto",
    )
    get.add_argument("--from", dest="from_", metavar="TIME", help="start of a section: 90, 1:30, 1h2m5s")
    get.add_argument("--to", metavar="TIME", help="end of a section")
    get.add_argument("--chapter", help="a chapter by outline index or title (exact, prefix, then substring)")
    get.add_argument("--refresh", action="store_true", help="ignore the saved copy and fetch again")
    get.add_argument("--no-header", action="store_true", help="omit the header in text output")
    get.add_argument("-q", "--quiet", action="store_true", help="print nothing on stderr but errors")

    find = commands.add_parser(
        "search",
        help="search the saved videos by keyword and by meaning",
        description=(
            "Search the library (or a collection, or the given videos, read and saved first) and "
            "print the hits, best first, each with its [m:ss-m:ss] and link; the status line goes "
            'to stderr. "quoted phrases" stay together, -word excludes. --json prints exactly the '
            "body of GET /api/v1/search."
        ),
    )
    find.add_argument("query", help="the words to find")
    find.add_argument("-m", "--mode", default="hybrid", help="hybrid (default), keyword or vector")
    find.add_argument("-c", "--collection", help="a collection's id or name")
    find.add_argument("-u", "--url", action="append", metavar="URL", help="search this video (repeatable)")
    find.add_argument("-n", "--limit", type=int, default=10, help="how many hits, 1 to 100; default 10")
    find.add_argument("--rerank", action="store_true", help="rerank the top 20 hits with a cross-encoder")
    find.add_argument("--json", action="store_true", help="print the REST body (hits and meta) as JSON")

    index = commands.add_parser(
        "index",
        help="embed saved videos for search (a library saved before embeddings were set up)",
        description=(
            "Embed the transcript windows of every saved video not indexed yet in the library's "
            "embedding space, a video at a time, with progress on stderr and a JSON summary on "
            "stdout. Safe to stop and run again: indexed videos are skipped."
        ),
    )
    index.add_argument("--video", action="append", metavar="ID", help="only this saved video (repeatable)")
    index.add_argument("-q", "--quiet", action="store_true", help="print nothing on stderr but errors")

    commands.add_parser("formats", help="list the output formats")
    commands.add_parser("settings", help="list the environment variables vid2context reads")
    commands.add_parser(
        "mcp",
        help="run the MCP server over stdio (Claude Desktop, Claude Code, Cursor, VS Code)",
        description="Serve MCP over stdio with the local runtime: stdout is the protocol, logs go to stderr.",
    )

    from .cli_remote import add_commands

    add_commands(commands)  # push, pull, sync

    serve = commands.add_parser("serve", help="run the HTTP API locally")
    serve.add_argument(
        "--host",
        default=None,
        help=(
            f"address to bind; default {DEFAULT_HOST}, or {KEYED_HOST} when VID2CONTEXT_API_KEYS is set "
            "or VID2CONTEXT_HOSTED=1"
        ),
    )
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port; default {DEFAULT_PORT}")
    serve.add_argument(
        "--allow-open",
        action="store_true",
        help="serve on a non-loopback address without API keys (anyone who can reach it can use it)",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=None,
        help=f"server processes sharing the port and the SQLite file, 1 to {MAX_WORKERS} (this machine "
        f"has {_default_workers()} cores); default 1, since MCP long runs and sessions live in one process",
    )
    serve.add_argument(
        "--no-scheduler",
        action="store_true",
        help="do not refresh due watch lists in this server (use `vid2context refresh --due` from cron)",
    )
    refresh = commands.add_parser(
        "refresh",
        help="refresh watch lists: --due refreshes every collection whose schedule is due (for cron)",
        description=(
            "Refresh each collection whose watch schedule is due, once even when several runs "
            "overlap, and print one JSON line per refresh: the collection and the ids of the "
            "videos it added. Exit status 1 when a refresh failed."
        ),
    )
    refresh.add_argument("--due", action="store_true", required=True, help="the collections that are due")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "get":
            return asyncio.run(_get(args, sys.stdout, sys.stderr))
        if args.command == "search":
            return asyncio.run(_search(args, sys.stdout, sys.stderr))
        if args.command == "index":
            return asyncio.run(_index(args, sys.stdout, sys.stderr))
        if args.command == "formats":
            return _formats(sys.stdout)
        if args.command == "settings":
            return _settings(sys.stdout)
        if args.command == "serve":
            return _serve(args)
        if args.command == "refresh":
            return asyncio.run(_refresh_due(sys.stdout, sys.stderr))
        if args.command == "mcp":
            return _mcp()
        if args.command in ("push", "pull", "sync"):
            from .cli_remote import run

            return asyncio.run(run(args, sys.stdout, sys.stderr))
    except VidError as error:
        print_error(error, sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 2  # pragma: no cover - argparse enforces a known command


async def _get(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .pipeline import get_context  # imported late: start-up of other commands stays fast

    formatter = get_formatter(args.format)  # an unknown format fails before any network call

    async def work(runtime: Runtime) -> int:
        ctx = Ctx(timeout=runtime.settings.request_timeout_ms / 1000)
        if not args.quiet:
            print(f"vid2context: reading {args.url[:200]}", file=err)
        context = await get_context(
            runtime, args.url, mode=args.mode, lang=args.lang, refresh=args.refresh, ctx=ctx
        )
        if not args.quiet:
            _print_summary(context, err)
        out.write(_render(context, args, formatter.id))
        out.flush()
        return 0

    return await on_local_runtime(work, err)


async def _search(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import msgspec

    from .batch import read_videos
    from .search.engine import SearchRequest, search

    async def work(runtime: Runtime) -> int:
        ctx = Ctx(timeout=runtime.settings.request_timeout_ms / 1000)
        request = SearchRequest(
            query=args.query, collection=args.collection, limit=args.limit, mode=args.mode, rerank=args.rerank
        )
        if args.url:
            found = await read_videos(runtime, args.url, ctx=ctx)
            for label, error in found.failed:
                print(
                    f"vid2context: could not read {label[:200]}: {error.code.value}: {error.message}",
                    file=err,
                )
            found.raise_if_empty("Give video URLs or ids.")
            request.video_ids = [context.id for context in found.contexts]
        result = await search(runtime, request, ctx)
        if args.json:
            out.write(msgspec.json.encode(result).decode() + "\n")
            return 0
        from .search.render import render_hits, status_line

        if result.hits:
            out.write(render_hits(result) + "\n")
        print(status_line(result), file=err)
        return 0

    return await on_local_runtime(work, err)


async def _index(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import msgspec

    from .library import normalize_video_id
    from .search.indexing import index_library

    async def work(runtime: Runtime) -> int:

        def progress(event: dict) -> None:
            if not args.quiet:
                print(f"vid2context: {event.get('message', '')}", file=err)

        def item(event: dict) -> None:
            if event.get("outcome") == "error":
                error = event.get("error") or {}
                print(f"vid2context: {event['id']}: {error.get('code')}: {error.get('message')}", file=err)

        ids = [normalize_video_id(v) for v in args.video] if args.video else None
        summary = await index_library(runtime, video_ids=ids, on_item=item, on_progress=progress)
        out.write(msgspec.json.encode(summary).decode() + "\n")
        return 1 if summary.failed and not summary.indexed and not summary.skipped else 0

    return await on_local_runtime(work, err)


def _render(context: VideoContext, args: argparse.Namespace, format_id: str) -> str:
    section_line = ""
    if args.chapter is not None or args.from_ is not None or args.to is not None:
        section = get_section(context, chapter=args.chapter, from_=args.from_, to=args.to)
        section_line = section.section_line()
        context = section.context
    formatter = FORMATTERS[format_id]
    options = RenderOptions(timestamps=args.timestamps, asked=args.lang)
    if args.no_header:
        body = formatter.render(context, options)
        return body if body.endswith("\n") else body + "\n"
    return render_view(context, formatter, options, section_line)


def _print_summary(context: VideoContext, err: TextIO) -> None:
    transcript = context.transcript
    steps = ", ".join(f"{a.id} {a.stage} {a.ms} ms" for a in context.attempts)
    if transcript is None:
        print(f"vid2context: {context.metadata.title} (no transcript) [{steps}]", file=err)
        return
    print(
        f"vid2context: {context.metadata.title}: {transcript.origin} {transcript.language or '?'}, "
        f"{len(transcript.segments)} segments [{steps}]",
        file=err,
    )
    if transcript.note:
        print(f"vid2context: {transcript.note}", file=err)


def _formats(out: TextIO) -> int:
    width = max(len(f.id) for f in FORMATTERS.values())
    for formatter in FORMATTERS.values():
        combined = " (several videos)" if formatter.combines_videos else ""
        print(
            f"{formatter.id:<{width}}  {formatter.mime_type:<32}  {formatter.description}{combined}", file=out
        )
    return 0


def _settings(out: TextIO) -> int:
    for setting in SETTINGS:
        default = "" if setting.default is None else f" (default {setting.default})"
        print(f"{setting.env}{default}\n    {setting.help}", file=out)
    return 0


def _mcp() -> int:
    """Serve MCP over stdio until the client closes stdin; nothing but the protocol on stdout."""
    import logging

    from .mcp.stdio import serve_stdio  # imported late: the SDK is only needed here

    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="vid2context mcp: %(levelname)s %(message)s"
    )
    asyncio.run(serve_stdio(build_local_runtime()))
    return 0


def local_app(scheduler: bool = True):  # type: ignore[no-untyped-def]
    """The local ASGI app: the API, and the docs site beside it when this install has one.

    A factory, so the server builds it in its own worker process. Requests split as on the
    Worker (``site.is_app_path``), and the site answers Markdown or HTML by ``Accept`` the same way.
    """
    from .api import create_app
    from .site import SiteApp, site_and_app
    from .site_files import SiteFiles, default_site_dir
    from .watch import WithScheduler

    runtime = build_local_runtime()
    app = create_app(runtime)
    if scheduler:
        app = WithScheduler(app, runtime)  # due watch lists refresh while the server runs
    site_dir = default_site_dir()
    if site_dir is None:
        return app
    return site_and_app(app, SiteApp(SiteFiles(site_dir)))


def served_app(scheduler: bool = True):  # type: ignore[no-untyped-def]
    """``local_app`` as ``serve`` starts it in each worker, with what starting made frozen out of
    the garbage collector's reach (``gc.freeze``): it lives as long as the process, and a full
    collection walking all of it stopped the event loop for 100-300 ms under load (every request
    in flight then waited; most of the p99 of a cached read over sockets)."""
    app = local_app(scheduler)
    gc.freeze()
    return app


def served_app_without_scheduler():  # type: ignore[no-untyped-def]
    """``served_app`` for ``serve --no-scheduler``."""
    return served_app(scheduler=False)


async def _refresh_due(out: TextIO, err: TextIO) -> int:
    """``vid2context refresh --due``: queue the due refreshes (claimed, so overlapping runs do
    each once), wait for them, one JSON line per refresh."""
    from .watch import refresh_due

    async def work(runtime: Runtime) -> int:
        failed = 0
        for job in await refresh_due(runtime):
            done = await runtime.jobs.wait(runtime, job.id)
            line: dict[str, Any] = {"job": done.id, "status": done.status, "collectionId": None, "added": []}
            if done.status == "succeeded":
                summary = done.result["summary"]
                line.update(collectionId=summary["collectionId"], added=[v["id"] for v in summary["added"]])
            else:
                failed += 1
                line["error"] = msgspec.to_builtins(done.error)
            print(json.dumps(line), file=out)
        return 1 if failed else 0

    return await on_local_runtime(work, err)


KEYED_HOST = "0.0.0.0"  # only with API keys set, or when --host asks for it
MAX_WORKERS = 256


def _default_workers() -> int:
    """The cores this process may run on (its CPU affinity where the system has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def _serve(args: argparse.Namespace) -> int:
    """Run the API under granian until SIGTERM or SIGINT.

    Binds 127.0.0.1 unless API keys are set (then all interfaces) or ``--host`` says otherwise;
    an open API on a non-loopback address needs ``--allow-open``. On SIGTERM/SIGINT granian
    closes the listening socket at once, lets in-flight requests finish, then runs the app's
    lifespan shutdown (closing the runtime's store and clients); a worker still busy after
    ``VID2CONTEXT_SHUTDOWN_TIMEOUT_MS`` (rounded up to whole seconds, granian's unit, 1 to 1800)
    is killed, and its requests are cut.

    ``--workers N`` (default 1) runs N processes on the one port, each with its own
    runtime over the same SQLite file, which WAL mode lets them share: readers never wait, writers
    take turns (the busy timeout), migrations are applied once. What a process keeps to itself
    becomes per worker: the rate-limit buckets (a client whose requests spread over N workers may
    get up to N times the burst), the rendered-answer cache (each retired by any commit, whoever
    made it), and the jobs a worker runs (the others read their state, but cannot cancel them).
    MCP's long runs and sessions are kept in the process that started them, so another worker
    cannot answer ``get_job`` for them: that is why the default is one worker, not the core count
    (``--workers N`` suits a read-heavy REST server), and why session mode refuses more than one.
    """
    import math

    from granian import Granian
    from granian.constants import Interfaces

    from .api.middleware import parse_api_keys

    if not 0 < args.port < 65536:
        print(f"error: bad-request: port {args.port} is not 1 to 65535", file=sys.stderr)
        return 2
    workers = 1 if args.workers is None else args.workers
    if not 0 < workers <= MAX_WORKERS:
        print(f"error: bad-request: --workers {workers} is not 1 to {MAX_WORKERS}", file=sys.stderr)
        return 2
    settings = load_settings(os.environ)  # fail fast on a bad setting, before the server starts
    if settings.mcp_sessions and workers > 1:
        print(
            f"error: bad-request: --workers {workers} with VID2CONTEXT_MCP_SESSIONS=1: a session lives in the "
            "process that opened it, so another worker would answer it 404\n"
            "hint: serve sessions with --workers 1, or turn VID2CONTEXT_MCP_SESSIONS off",
            file=sys.stderr,
        )
        return 2
    keys = parse_api_keys(settings.api_keys)  # and on a malformed key entry
    closed = bool(keys) or settings.hosted  # hosted mode: only sign-in is open
    host = args.host or (KEYED_HOST if closed else DEFAULT_HOST)
    if not closed and not _is_loopback(host):
        if not args.allow_open:
            print(
                f"error: bad-request: refusing to serve an open API on {host}: "
                "VID2CONTEXT_API_KEYS is not set\n"
                "hint: set VID2CONTEXT_API_KEYS, bind 127.0.0.1, or pass --allow-open if anyone "
                "who can reach this address may use it",
                file=sys.stderr,
            )
            return 2
        print(
            f"vid2context: warning: no API keys; anyone who can reach {host} can use the API", file=sys.stderr
        )
    kill_timeout = min(1800, max(1, math.ceil(settings.shutdown_timeout_ms / 1000)))
    shown = f"[{host}]" if ":" in host else host
    print(f"vid2context {__version__}: serving http://{shown}:{args.port}/api/v1/health", file=sys.stderr)
    Granian(
        "vid2context.cli:served_app_without_scheduler" if args.no_scheduler else "vid2context.cli:served_app",
        factory=True,
        address=host,
        port=args.port,
        interface=Interfaces.ASGI,
        workers=workers,
        log_access=False,  # the app writes its own JSON access log
        workers_kill_timeout=kill_timeout,
        working_dir=Path.cwd(),
    ).serve()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
