"""The lock file is the one source of versions: the virtualenv, and the Worker's dependency set.

``make test`` installs with ``uv sync --locked`` (which refuses a lock older than pyproject.toml);
these tests check what that cannot: that ``worker/constraints.txt`` (what ``make deploy`` pins) is
the Worker's closure read from ``uv.lock`` now, and how that closure is read.
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from scripts import worker_deps
from scripts.worker_deps import PYODIDE_MARKERS, constraints_text, locked_closure

ROOT = Path(__file__).resolve().parents[1]


def test_the_worker_constraints_are_the_lock_read_now() -> None:
    committed = (ROOT / "worker" / "constraints.txt").read_text(encoding="utf-8")
    assert committed == constraints_text(locked_closure()), "run `make lock` (or scripts/worker_deps.py)"
    assert worker_deps.main(["--check"]) == 0


def test_the_worker_closure_is_the_portable_core_at_the_installed_versions() -> None:
    closure = locked_closure()
    for name in ("msgspec", "httpx", "litestar", "mcp", "workers-runtime-sdk"):
        assert name in closure
    # Nothing of the local extra, and nothing that the Pyodide markers leave out.
    for local_only in ("yt-dlp", "youtube-transcript-api", "granian", "sqlite-vec", "groq", "uvicorn"):
        assert local_only not in closure
    # What this virtualenv has of it is exactly what the lock says (make test synced it).
    for name, version in closure.items():
        try:
            assert metadata.version(name) == version, name
        except metadata.PackageNotFoundError:
            assert name in {"httpx2-jsfetch", "workers-runtime-sdk"}, f"{name} is locked but not installed"


def test_every_locked_core_dependency_is_in_the_closure() -> None:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        declared = tomllib.load(handle)["project"]["dependencies"]
    names = {text.split(">")[0].split("=")[0].split("<")[0].strip().lower() for text in declared}
    assert names <= set(locked_closure())


LOCK = """
version = 1
requires-python = ">=3.11"
resolution-markers = ["python_full_version >= '3.14'", "python_full_version < '3.14'"]

[[package]]
name = "vid2context"
version = "0.1.0"
source = { editable = "." }
dependencies = [
  { name = "web" },
  { name = "fork" },
  { name = "native", marker = "sys_platform != 'emscripten'" },
]

[[package]]
name = "web"
version = "1.0"
dependencies = [{ name = "shim", marker = "sys_platform == 'emscripten'" }, { name = "extras", extra = ["fast"] }]

[[package]]
name = "shim"
version = "0.1"

[[package]]
name = "native"
version = "9.9"

[[package]]
name = "fork"
version = "2.0"
resolution-markers = ["python_full_version >= '3.14'"]

[[package]]
name = "fork"
version = "1.0"
resolution-markers = ["python_full_version < '3.14'"]

[[package]]
name = "extras"
version = "3.0"
[package.optional-dependencies]
fast = [{ name = "speedup" }]
slow = [{ name = "never" }]

[[package]]
name = "speedup"
version = "4.0"

[[package]]
name = "never"
version = "5.0"
"""


def test_markers_forks_and_extras_are_read_as_pyodide_would(tmp_path: Path) -> None:
    lock = tmp_path / "uv.lock"
    lock.write_text(LOCK, encoding="utf-8")
    assert locked_closure(lock) == {
        "extras": "3.0",
        "fork": "2.0",  # the 3.14 fork, not the other
        "shim": "0.1",  # emscripten only
        "speedup": "4.0",  # through the extra asked for; `slow` is not
        "web": "1.0",
    }
    cpython = {
        **PYODIDE_MARKERS,
        "sys_platform": "linux",
        "python_full_version": "3.11.7",
        "python_version": "3.11",
    }
    assert locked_closure(lock, cpython) == {
        "extras": "3.0",
        "fork": "1.0",
        "native": "9.9",
        "speedup": "4.0",
        "web": "1.0",
    }
