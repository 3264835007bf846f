"""``worker/entry.py``'s top level draws no entropy the snapshot forbids, and keeps the ``mcp`` SDK out.

Cloudflare runs the entry's top level once, at deploy, and snapshots memory; while it does,
``os.urandom`` raises and the ``random`` module's functions are blocked (workerd's
``topLevelEntropy``). CPython has no such rule, so a fresh interpreter here counts every draw the
import makes (``os.urandom``, which ``uuid4`` and ``secrets`` use, ``random``'s functions and an
unseeded ``random.Random()``) with the first place outside the standard library that made it, the modules wrangler.toml leaves out of the
upload refused as the Worker lacks them. The only draws allowed are Litestar's own import-time
``uuid4()`` calls (ARCHITECTURE.md: verified allowed). The same counter on ``vid2context.mcp.server`` must see the
SDK's draws, which is why the SDK stays lazy, and proves the counter sees them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bench.bench_worker import exclude_globs, refused_modules

ROOT = Path(__file__).resolve().parents[1]
PATHS = [ROOT / "tests" / "workers_standin", ROOT / "src", ROOT / "worker"]
ALLOWED_SITES = {"litestar/constants.py", "litestar/openapi/controller.py"}
"""Where Litestar calls ``uuid4()`` at import (allowed, ARCHITECTURE.md)."""

COUNTER = r"""
import json, os, random, sys, traceback
PATHS, REFUSED, MODULE = json.loads(sys.argv[1])
sys.path[:0] = PATHS

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in REFUSED or name in REFUSED:
            raise ModuleNotFoundError(f"{name} is not uploaded", name=name)

sys.meta_path.insert(0, Refuse())
draws = []

def record(kind):
    frames = [f for f in traceback.extract_stack()[:-2] if "importlib" not in f.filename]
    outside = [f for f in frames if not f.filename.startswith(os.path.dirname(os.__file__))]
    site = outside[-1] if outside else frames[-1]
    roots = sorted((os.path.join(p, "") for p in sys.path if p), key=len, reverse=True)
    root = next((r for r in roots if site.filename.startswith(r)), os.path.dirname(site.filename) + os.sep)
    draws.append({"kind": kind, "site": site.filename[len(root):].replace(os.sep, "/"), "line": site.lineno})

urandom = os.urandom
def guarded_urandom(n):
    record("os.urandom")
    return urandom(n)
os.urandom = random._urandom = guarded_urandom

def guard(name):
    function = getattr(random, name)
    def guarded(*args, **kwargs):
        record(f"random.{name}")
        return function(*args, **kwargs)
    setattr(random, name, guarded)
for name in ("random", "randint", "randrange", "choice", "choices", "sample", "shuffle",
             "uniform", "getrandbits", "randbytes", "seed"):
    guard(name)

init = random.Random.__init__
def guarded_init(self, x=None):
    if x is None and not isinstance(self, random.SystemRandom):
        record("random.Random()")
    init(self, x)
random.Random.__init__ = guarded_init

__import__(MODULE)
entry = sys.modules.get("entry")
print(json.dumps({
    "draws": draws,
    "loaded": sorted({name.split(".")[0] for name in sys.modules}),
    "modules": sorted(sys.modules),
    "snapshot_deps": list(getattr(entry, "SNAPSHOT_MCP_DEPS", ())),
}))
"""


def _count(module: str) -> dict:
    refused = [name for name in refused_modules(exclude_globs()) if "." not in name]
    spec = json.dumps([[str(p) for p in PATHS], refused, module])
    done = subprocess.run(
        [sys.executable, "-c", COUNTER, spec], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def entry() -> dict:
    return _count("entry")


def test_entry_top_level_draws_only_litestars_allowed_entropy(entry: dict) -> None:
    sites = {draw["site"] for draw in entry["draws"]}
    assert sites <= ALLOWED_SITES, entry["draws"]


def test_the_mcp_sdk_and_what_draws_entropy_stay_out_of_the_snapshot(entry: dict) -> None:
    assert not {"mcp", "opentelemetry", "uvicorn", "multiprocessing"} & set(entry["loaded"])


def test_the_sdks_entropy_free_dependencies_are_in_the_snapshot(entry: dict) -> None:
    assert entry["snapshot_deps"], "entry.SNAPSHOT_MCP_DEPS names what it imports for the SDK"
    assert set(entry["snapshot_deps"]) <= set(entry["modules"])


def test_the_counter_sees_the_sdks_draws() -> None:
    """Importing ``mcp`` at top level would draw entropy: why it stays lazy (and the counter works)."""
    draws = _count("vid2context.mcp.server")["draws"]  # what the first MCP message imports
    sites = {draw["site"] for draw in draws} - ALLOWED_SITES
    assert any(site.startswith("opentelemetry/") for site in sites), draws
