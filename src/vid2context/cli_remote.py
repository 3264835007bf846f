"""``vid2context push``, ``pull`` and ``sync``: the local library and another server's.

A command of its own module, so ``cli.py`` stays the small dispatcher it is. Each prints one
progress line per video on stderr and a summary on stdout (``--json``: the whole report), and
exits 1 when anything failed: one video's failure never stops the others. The server and key
default to ``VID2CONTEXT_REMOTE_URL`` and ``VID2CONTEXT_REMOTE_KEY``; the key is sent in
``Authorization`` only and never printed (the URL is printed without credentials).
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

import httpx
import msgspec

from .cli_frame import on_local_runtime
from .errors import ErrorCode, VidError
from .remote import ItemReport, RemoteServer, pull, push, sync
from .runtime import Runtime

__all__ = ["COMMANDS", "add_commands", "run"]

COMMANDS = frozenset({"push", "pull", "sync"})
_TIMEOUT_S = 120.0


def add_commands(commands: Any) -> None:
    """The three subcommands, on ``cli._parser``'s subparsers."""
    push_cmd = commands.add_parser(
        "push",
        help="read videos here and put them on another vid2context server (the edge)",
        description=(
            "Read each input with the local runtime (captions through your own address, yt-dlp, local "
            "files, speech-to-text) and upload its context to the server (PUT /api/v1/library/{id}). "
            "Playlists and channels are expanded; videos the server already holds are skipped unless "
            "--refresh. One line per video on stderr, a summary on stdout; exit status 1 when any failed."
        ),
    )
    push_cmd.add_argument(
        "inputs", nargs="+", metavar="INPUT", help="videos, playlists, channels or local files"
    )
    _server(push_cmd, "--to", "write")
    push_cmd.add_argument(
        "-c", "--collection", metavar="NAME", help="also put the videos in this collection there"
    )
    push_cmd.add_argument(
        "--refresh", action="store_true", help="read again and replace what the server holds"
    )
    push_cmd.add_argument("-m", "--mode", default="auto", choices=["auto", "captions", "stt", "video"])
    push_cmd.add_argument("-l", "--lang", help="preferred transcript language, BCP-47")
    push_cmd.add_argument("--json", action="store_true", help="print the whole report as JSON")

    pull_cmd = commands.add_parser(
        "pull",
        help="bring videos and collections from another server into the local library",
        description=(
            "Copy saved videos (by id) or collections (--collection, repeatable) from the server into "
            "the local library; with neither, every collection and its videos."
        ),
    )
    pull_cmd.add_argument(
        "ids", nargs="*", metavar="ID", help="saved video ids (youtube:jNQXAC9IVRw) or URLs"
    )
    _server(pull_cmd, "--from", "read")
    pull_cmd.add_argument(
        "-c", "--collection", action="append", metavar="ID", help="a collection's id or name"
    )
    pull_cmd.add_argument("--json", action="store_true", help="print the whole report as JSON")

    sync_cmd = commands.add_parser(
        "sync",
        help="reconcile collections with another server, both ways (newest updatedAt wins)",
        description=(
            "Collections only here go there (their videos from the local library), collections only "
            "there come here, and one on both sides that differs takes the newer side's videos, "
            "description and sources. Prints what moved which way."
        ),
    )
    _server(sync_cmd, "--with", "write")
    sync_cmd.add_argument("--json", action="store_true", help="print the whole report as JSON")


def _server(parser: argparse.ArgumentParser, flag: str, scope: str) -> None:
    parser.add_argument(flag, dest="url", metavar="URL", help="the server; default VID2CONTEXT_REMOTE_URL")
    parser.add_argument(
        "--key",
        help=f"an API key with the {scope} scope there; default VID2CONTEXT_REMOTE_KEY (never printed)",
    )


def _line(item: ItemReport, err: TextIO, number: int) -> None:
    what = item.id or item.input
    if item.outcome == "error":
        print(f"[{number}] failed {what[:200]}: {item.code}: {item.message}", file=err)
        if item.detail:
            print(f"    hint: {item.detail}", file=err)
        return
    title = f" {item.title[:80]!r}" if item.title else ""
    print(f"[{number}] {item.outcome} {what[:200]}{title} ({item.detail})", file=err)


async def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ``push``, ``pull`` or ``sync``; 0 when everything moved, 1 when anything failed."""

    async def work(runtime: Runtime) -> int:
        url = args.url or runtime.settings.remote_url
        key = args.key or runtime.settings.remote_key
        if not url:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                "No server to talk to.",
                hint="Give the server's URL (--to, --from or --with), or set VID2CONTEXT_REMOTE_URL.",
            )
        async with httpx.AsyncClient(timeout=_TIMEOUT_S, follow_redirects=False) as client:
            remote = RemoteServer(url, key, client)
            count = 0

            def each(item: ItemReport) -> None:
                nonlocal count
                count += 1
                _line(item, err, count)

            if args.command == "push":
                report: Any = await push(
                    runtime,
                    remote,
                    args.inputs,
                    refresh=args.refresh,
                    collection=args.collection,
                    mode=args.mode,
                    lang=args.lang,
                    on_item=each,
                )
                summary = _counts(report.items, "pushed") + f" -> {remote.url}"
                if report.collection:
                    summary += f" (collection {report.collection})"
            elif args.command == "pull":
                report = await pull(runtime, remote, args.ids, collections=args.collection, on_item=each)
                summary = _counts(report.items, "pulled") + f" <- {remote.url}"
                if report.collections:
                    summary += " (collections: " + ", ".join(report.collections) + ")"
            else:
                report = await sync(runtime, remote)
                for move in report.collections:
                    arrow = {"to-remote": "->", "to-local": "<-", "same": "==", "error": "!!"}[move.direction]
                    extra = f": {move.message}" if move.message else ""
                    print(f"{arrow} {move.name} ({move.action}, {move.videos} videos){extra}", file=err)
                moved = {
                    d: sum(m.direction == d for m in report.collections)
                    for d in ("to-remote", "to-local", "same", "error")
                }
                summary = (
                    f"sync with {remote.url}: {moved['to-remote']} to the server, {moved['to-local']} to here, "
                    f"{moved['same']} the same, {moved['error']} failed"
                )
        out.write((msgspec.json.encode(report).decode() if args.json else summary) + "\n")
        return 1 if report.failed else 0

    return await on_local_runtime(work, err, attempts=False)


def _counts(items: list[ItemReport], verb: str) -> str:
    done = sum(i.outcome == "ok" for i in items)
    skipped = sum(i.outcome == "skipped" for i in items)
    failed = sum(i.outcome == "error" for i in items)
    return f"{done} {verb}, {skipped} skipped (already there), {failed} failed"
