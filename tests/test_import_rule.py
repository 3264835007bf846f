"""The import rule of ARCHITECTURE.md, enforced.

The core must run on Cloudflare Python Workers (Pyodide: no subprocess, no sqlite3, no threads, no
filesystem). Only the modules that exist for one platform may import those things, and nothing the
Worker imports may reach them at import time. This reads the source with ``ast`` rather than
importing it, so it also catches imports on branches a test never runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "vid2context"

# Modules that exist for the local platform only (relative to the package, without ".py").
LOCAL_ONLY = {
    "cli",
    "__main__",
    "providers/ytdlp",
    "providers/localfile",
    "providers/transcript_api",
    "providers/whisper_local",
    "providers/audio_local",
    "providers/process",
    "storage/sqlite",
    "exports/obsidian",
    "site_files",
}
# Modules that exist for the Worker only: the one place `js`, `workers` and `pyodide` may appear.
WORKER_ONLY = {"storage/cloudflare"}

LOCAL_IMPORTS = {"subprocess", "sqlite3", "sqlite_vec", "yt_dlp", "youtube_transcript_api", "threading",
                 "multiprocessing", "concurrent", "pathlib", "shutil", "tempfile", "granian", "faster_whisper",
                 "glob", "socket"}
WORKER_IMPORTS = {"js", "workers", "pyodide"}
FILESYSTEM_CALLS = {"open"}
FILESYSTEM_OS_ATTRS = {"listdir", "stat", "remove", "unlink", "mkdir", "makedirs", "scandir", "walk", "rename",
                       "replace", "chdir", "getcwd", "rmdir", "open", "lstat", "readlink", "symlink"}


def _modules() -> dict[str, Path]:
    return {str(p.relative_to(PACKAGE).with_suffix("")).replace("\\", "/"): p for p in PACKAGE.rglob("*.py")}


def _top_level_imports(tree: ast.Module, name: str) -> tuple[set[str], set[str]]:
    """(external top-level module names, in-package module names) imported at module level.

    Imports inside functions are deliberately lazy (the local runtime builder, the CLI's serve)
    and are not followed: they only run when that function is called.
    """
    external: set[str] = set()
    internal: set[str] = set()
    package_parts = name.split("/")[:-1]
    for node in tree.body:
        nodes = [node]
        if isinstance(node, (ast.If, ast.Try)):
            nodes = list(ast.walk(node))
        for sub in nodes:
            if isinstance(sub, ast.Import):
                for alias in sub.names:
                    if alias.name.startswith("vid2context"):
                        internal.add(alias.name.removeprefix("vid2context").lstrip(".").replace(".", "/"))
                    else:
                        external.add(alias.name.split(".")[0])
            elif isinstance(sub, ast.ImportFrom):
                if sub.level == 0:
                    if (sub.module or "").startswith("vid2context"):
                        base = sub.module.removeprefix("vid2context").lstrip(".").replace(".", "/")
                        internal.update(f"{base}/{a.name}".strip("/") for a in sub.names)
                        internal.add(base)
                    else:
                        external.add((sub.module or "").split(".")[0])
                else:
                    parts = package_parts[: len(package_parts) - (sub.level - 1)]
                    base = "/".join([*parts, *(sub.module.split(".") if sub.module else [])])
                    internal.add(base)
                    internal.update(f"{base}/{a.name}".strip("/") for a in sub.names)
    return external, internal


def _resolve(candidate: str, modules: dict[str, Path]) -> str | None:
    if candidate in modules:
        return candidate
    if f"{candidate}/__init__" in modules:
        return f"{candidate}/__init__"
    return None


def _portable_modules() -> list[str]:
    return sorted(m for m in _modules() if m not in LOCAL_ONLY and m not in WORKER_ONLY)


@pytest.mark.parametrize("name", _portable_modules())
def test_portable_module_imports_nothing_platform_specific(name: str) -> None:
    path = _modules()[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    external, _ = _top_level_imports(tree, name)
    assert not external & LOCAL_IMPORTS, f"{name} imports local-only {external & LOCAL_IMPORTS}"
    assert not external & WORKER_IMPORTS, f"{name} imports worker-only {external & WORKER_IMPORTS}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in FILESYSTEM_CALLS, f"{name}:{node.lineno} calls {node.func.id}()"
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os":
            assert node.attr not in FILESYSTEM_OS_ATTRS, f"{name}:{node.lineno} uses os.{node.attr}"
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for imported in names:
                root = imported.split(".")[0]
                assert root not in LOCAL_IMPORTS | WORKER_IMPORTS, (
                    f"{name}:{node.lineno} imports {imported}, even lazily; move that code to a platform module"
                )


def test_worker_reachable_graph_never_reaches_local_modules() -> None:
    """Follow module-level imports from every portable module: no path may lead to a local one."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        _, internal = _top_level_imports(ast.parse(path.read_text(encoding="utf-8")), name)
        graph[name] = {r for c in internal if (r := _resolve(c, modules))}
    for start in _portable_modules():
        seen: set[str] = set()
        stack = [start]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            stack.extend(graph.get(current, ()))
        reached = {m for m in seen if m in LOCAL_ONLY or m in WORKER_ONLY}
        assert not reached, f"{start} reaches {reached} at import time"


def test_the_rule_sees_a_violation(tmp_path: Path) -> None:
    """The checker itself must be able to fail."""
    tree = ast.parse("import subprocess\nfrom .storage import sqlite\n")
    external, internal = _top_level_imports(tree, "pipeline")
    assert "subprocess" in external
    assert "storage/sqlite" in internal
