"""The Miniflare harness: real D1, KV and R2 on 127.0.0.1 for the tests, offline.

``start_harness()`` runs ``node tests/miniflare/server.mjs`` (installing its ``node_modules`` with
``npm ci`` first when they are missing), waits for its ``READY <port>`` line and returns a
``MiniflareHarness`` whose ``env`` holds the ``DB``, ``KV`` and ``BUCKET`` bindings as a Python
Worker sees them (``cloudflare_bindings.py``). ``apply_migrations(env.DB)`` creates the schema the
way ``wrangler d1 migrations apply`` does: each file in one batch (atomic), recorded in
``d1_migrations``.

Fixtures (registered in ``conftest.py``):

- ``miniflare`` (session): one harness for the whole run, in memory.
- ``cloudflare_env`` (per test, async): ``miniflare.env`` after ``reset()`` (D1, KV and R2 empty,
  no tables), closed at the end of the test. Tests that use ``miniflare.env`` directly call
  ``reset()`` and ``await env.aclose()`` themselves.

Without Node.js the fixture fails with a message saying what to install; it never skips, because
``make test`` provides everything it needs.
"""

from __future__ import annotations

import asyncio
import os
import queue
import shutil
import sqlite3
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .cloudflare_bindings import CloudflareEnv, HarnessSyncTransport, WorkersAi

__all__ = [
    "HARNESS_DIR",
    "MIGRATIONS_DIR",
    "MiniflareHarness",
    "apply_migrations",
    "cloudflare_env",
    "miniflare",
    "split_sql",
    "start_harness",
]

HARNESS_DIR = Path(__file__).resolve().parent / "miniflare"
MIGRATIONS_DIR = Path(__file__).resolve().parents[1] / "migrations"

# The table and DDL wrangler uses to record applied migrations (its default `migrations_table`).
_MIGRATIONS_TABLE = (
    "CREATE TABLE IF NOT EXISTS d1_migrations("
    "id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, "
    "applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)"
)


class HarnessError(RuntimeError):
    """The harness could not be installed or started; the message says why and what to do."""


class MiniflareHarness:
    """A running ``server.mjs``: its port, an ``env`` of bindings, ``reset()`` and ``stop()``."""

    def __init__(
        self,
        process: subprocess.Popen[str],
        port: int,
        stderr_lines: list[str],
        answers: queue.Queue[str] | None = None,
    ) -> None:
        self.process = process
        self._answers: queue.Queue[str] = answers if answers is not None else queue.Queue()
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self.env = CloudflareEnv(self.base_url)
        self._stderr_lines = stderr_lines

    def new_env(
        self,
        *,
        keepalive: bool = True,
        vars: dict[str, str] | None = None,
        ai: WorkersAi | None = None,
        vectors: Any = None,
        queue: bool = False,
    ) -> CloudflareEnv:
        """Bindings with their own HTTP client (same D1, KV and R2 underneath), with the Worker's
        ``vars`` as attributes and, when given, an ``AI`` binding and a ``VECTORS`` stand-in."""
        return CloudflareEnv(
            self.base_url, keepalive=keepalive, vars=vars, ai=ai, vectors=vectors, queue=queue
        )

    def set_consumer(self, url: str | None) -> None:
        """Where the queue's batches and the cron events go (``tests/queue_bridge.py``); ``None``
        leaves them undelivered (retried later)."""
        with httpx.Client(transport=HarnessSyncTransport(), timeout=30) as admin:
            admin.post(f"{self.base_url}/admin/consumer", json={"url": url}).raise_for_status()

    async def scheduled(self, cron: str, *, count: int = 1) -> list[str]:
        """Fire ``count`` overlapping Cron events through Miniflare; each one's outcome."""
        assert self.process.stdin is not None
        self.process.stdin.write(f"SCHEDULED {count} {cron}\n")
        self.process.stdin.flush()
        line = await asyncio.to_thread(self._answers.get, True, 120)
        return line.split()[1].split(",")

    def reset(self) -> None:
        """Drop every table and empty KV and R2, as a fresh deployment would be.

        Through the harness transport, so a test's ``httpx_mock`` never sees (or refuses) it.
        """
        with httpx.Client(transport=HarnessSyncTransport(), timeout=60) as admin:
            response = admin.post(f"{self.base_url}/admin/reset", json={})
        if response.status_code != 200:
            raise HarnessError(f"reset failed: {response.text}")

    @property
    def log(self) -> str:
        """What the server wrote on stderr so far (warnings, crashes)."""
        return "".join(self._stderr_lines)

    def stop(self, timeout: float = 10) -> None:
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=timeout)
        finally:
            for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
                if stream is not None:
                    stream.close()


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        raise HarnessError(
            "Node.js (>= 20) is required for the Cloudflare tests (Miniflare runs D1, KV and R2 "
            "locally) but `node` is not on PATH. Install Node.js 20 or newer, then run `make test`."
        )
    return node


def ensure_node_modules() -> None:
    """Install the harness's pinned npm packages (``npm ci``) once, when they are missing."""
    if (HARNESS_DIR / "node_modules" / "miniflare" / "package.json").is_file():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise HarnessError(
            "tests/miniflare/node_modules is missing and `npm` is not on PATH: install Node.js "
            "(with npm) and run `npm ci --prefix tests/miniflare` (or `make test`)."
        )
    result = subprocess.run(
        [npm, "ci", "--prefix", str(HARNESS_DIR), "--no-audit", "--no-fund"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode != 0:
        raise HarnessError(f"`npm ci --prefix tests/miniflare` failed:\n{result.stderr[-4000:]}")


def start_harness(*, persist: Path | None = None, timeout: float = 60) -> MiniflareHarness:
    """Start ``server.mjs`` on a free port and return once it answers."""
    node = _node()
    ensure_node_modules()
    command = [node, str(HARNESS_DIR / "server.mjs"), "--port", "0"]
    if persist is not None:
        command += ["--persist", str(persist)]
    process = subprocess.Popen(
        command,
        cwd=HARNESS_DIR,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    stderr_lines: list[str] = []
    drain = threading.Thread(target=_drain, args=(process.stderr, stderr_lines), daemon=True)
    drain.start()
    ready: list[str] = []
    answers: queue.Queue[str] = queue.Queue()
    got_ready = threading.Event()
    reader = threading.Thread(
        target=_read_stdout, args=(process.stdout, ready, got_ready, answers, stderr_lines), daemon=True
    )
    reader.start()
    got_ready.wait(timeout)
    if not ready:
        process.kill()
        process.wait()
        drain.join(10)  # the pipe is at its end: what it said is all in stderr_lines
        raise HarnessError(
            f"Miniflare did not print READY within {timeout:.0f}s (exit code {process.returncode}):\n"
            + "".join(stderr_lines)[-4000:]
        )
    harness = MiniflareHarness(process, int(ready[0]), stderr_lines, answers)
    with httpx.Client(transport=HarnessSyncTransport(), timeout=30) as admin:  # even under httpx_mock
        admin.post(f"{harness.base_url}/admin/ping", json={}).raise_for_status()
    return harness


def _read_stdout(
    stream: Any, ready: list[str], got_ready: threading.Event, answers: queue.Queue[str], log: list[str]
) -> None:
    """``READY <port>``, then the answers to control lines (``SCHEDULED ...``); Miniflare's own
    messages on stdout (``[mf:warn] ...``) join the log. Read to the end, so it never blocks."""
    for line in stream:
        if line.startswith("READY ") and not ready:
            ready.append(line.split()[1])
            got_ready.set()
        elif line.startswith("SCHEDULED "):
            answers.put(line)
        else:
            log.append(line)
            del log[:-200]
    got_ready.set()


def _drain(stream: Any, lines: list[str]) -> None:
    for line in stream:
        lines.append(line)
        del lines[:-200]


# --- migrations ---------------------------------------------------------------------------------


def split_sql(text: str) -> list[str]:
    """Split a migration file into statements (``CREATE TRIGGER ... BEGIN ...; END;`` kept whole).

    SQLite's own ``complete_statement`` decides where a statement ends, so semicolons inside
    strings, comments and trigger bodies do not split it. Comments between statements are dropped.
    """
    statements: list[str] = []
    buffer = ""
    for line in text.splitlines(keepends=True):
        if not buffer and (not line.strip() or line.lstrip().startswith("--")):
            continue  # blank lines and comments between statements
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return [s for s in statements if _has_code(s)]


def _has_code(statement: str) -> bool:
    lines = (line.split("--", 1)[0].strip() for line in statement.splitlines())
    return any(line and line != ";" for line in lines)


async def apply_migrations(db: Any, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply ``directory/*.sql`` not yet applied, in name order; return the names applied.

    Like ``wrangler d1 migrations apply``: one batch per file (all of it or none of it), with the
    file name inserted into ``d1_migrations`` in the same batch.
    """
    await db.prepare(_MIGRATIONS_TABLE).run()
    done = {
        row["name"] for row in (await db.prepare("SELECT name FROM d1_migrations").all()).to_py()["results"]
    }
    applied = []
    for path in sorted(directory.glob("*.sql")):
        if path.name in done:
            continue
        statements = [db.prepare(sql) for sql in split_sql(path.read_text(encoding="utf-8"))]
        statements.append(db.prepare("INSERT INTO d1_migrations (name) VALUES (?)").bind(path.name))
        await db.batch(statements)
        applied.append(path.name)
    return applied


# --- fixture ------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def miniflare() -> Iterator[MiniflareHarness]:
    """One Miniflare for the session (in memory); tests call ``reset()`` for a clean slate."""
    harness: MiniflareHarness | str
    try:
        harness = start_harness()
    except HarnessError as error:
        harness = str(error)  # failed outside the except block, so the report shows only the message
    if isinstance(harness, str):
        pytest.fail(harness, pytrace=False)
    try:
        yield harness
    finally:
        harness.stop()


@pytest.fixture
async def cloudflare_env(miniflare: MiniflareHarness, anyio_backend: str) -> AsyncIterator[CloudflareEnv]:
    """Fresh, empty bindings for one test (no tables: ``apply_migrations`` creates ours)."""
    miniflare.reset()
    env = miniflare.env
    try:
        yield env
    finally:
        await env.aclose()
