"""The Worker's Python dependencies, read from ``uv.lock``.

The Worker vendors the closure of ``[project].dependencies`` (the portable core: nothing of the
``local`` extra) under Pyodide's environment markers. Reading it from the lock, not from whatever a
resolver picks on deploy day, keeps the edge on the versions the tests ran: ``make lock`` writes
``worker/constraints.txt`` from here, and ``make deploy`` hands it to pywrangler's resolver as
``UV_CONSTRAINT``. The bundle test and the benchmark fill ``python_modules/`` from the same closure.

``python scripts/worker_deps.py`` writes the file; ``--check`` fails when it is stale.
Standard library and ``packaging`` only: it runs before anything else is installed.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from typing import Any

from packaging.markers import Marker
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "uv.lock"
CONSTRAINTS = ROOT / "worker" / "constraints.txt"
PROJECT = "vid2context"
# pywrangler adds the runtime SDK to what it vendors; the lock has it through the deploy group.
RUNTIME_SDK = "workers-runtime-sdk"

# The environment pywrangler resolves [project].dependencies in: Python 3.14 on Pyodide.
PYODIDE_MARKERS = {
    "sys_platform": "emscripten",
    "platform_system": "Emscripten",
    "platform_machine": "wasm32",
    "os_name": "posix",
    "python_version": "3.14",
    "python_full_version": "3.14.0",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}

HEADER = """\
# The Worker's Python dependencies at the versions in uv.lock: the closure of
# [project].dependencies and workers-runtime-sdk under Pyodide's markers. Written by `make lock`
# (scripts/worker_deps.py); `make deploy` passes it to pywrangler as UV_CONSTRAINT.
"""


def _applies(marker: str | None, markers: dict[str, str], extra: str = "") -> bool:
    return marker is None or Marker(marker).evaluate({**markers, "extra": extra})


def _entry(entries: list[dict[str, Any]], wanted: dict[str, Any], markers: dict[str, str]) -> dict[str, Any]:
    """The lock entry a dependency means here: its pinned version, else the fork these markers select."""
    if "version" in wanted:
        return next(entry for entry in entries if entry["version"] == wanted["version"])
    if len(entries) == 1:
        return entries[0]
    return next(
        entry
        for entry in entries
        if any(_applies(fork, markers) for fork in entry.get("resolution-markers", []))
    )


def locked_closure(lock: Path = LOCK, markers: dict[str, str] = PYODIDE_MARKERS) -> dict[str, str]:
    """``{canonical name: locked version}`` for everything ``[project].dependencies`` and the runtime SDK
    need under ``markers``."""
    with lock.open("rb") as handle:
        packages = tomllib.load(handle)["package"]
    by_name: dict[str, list[dict[str, Any]]] = {}
    for package in packages:
        by_name.setdefault(canonicalize_name(package["name"]), []).append(package)
    (project,) = by_name[PROJECT]
    found: dict[str, tuple[str, frozenset[str]]] = {}
    roots = project.get("dependencies", []) + ([{"name": RUNTIME_SDK}] if RUNTIME_SDK in by_name else [])
    stack = [dep for dep in roots if _applies(dep.get("marker"), markers)]
    while stack:
        wanted = stack.pop()
        name = canonicalize_name(wanted["name"])
        extras = frozenset(wanted.get("extra", []))
        if name in found and extras <= found[name][1]:
            continue
        entry = _entry(by_name[name], wanted, markers)
        extras |= found[name][1] if name in found else frozenset()
        found[name] = (entry["version"], extras)
        needs = list(entry.get("dependencies", []))
        for extra in extras:
            needs += entry.get("optional-dependencies", {}).get(extra, [])
        stack += [dep for dep in needs if _applies(dep.get("marker"), markers)]
    return {name: found[name][0] for name in sorted(found)}


def constraints_text(closure: dict[str, str]) -> str:
    return HEADER + "".join(f"{name}=={version}\n" for name, version in closure.items())


def main(argv: list[str]) -> int:
    text = constraints_text(locked_closure())
    if "--check" in argv:
        if not CONSTRAINTS.is_file() or CONSTRAINTS.read_text(encoding="utf-8") != text:
            print(f"{CONSTRAINTS.relative_to(ROOT)} is stale: run `make lock`.", file=sys.stderr)
            return 1
        return 0
    CONSTRAINTS.write_text(text, encoding="utf-8")
    print(f"wrote {CONSTRAINTS.relative_to(ROOT)}: {text.count('==')} packages", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
