"""The import rule of ARCHITECTURE.md, enforced.

The core must run on Cloudflare Python Workers (Pyodide: no subprocess, no sqlite3, no threads, no
filesystem). Only the modules that exist for one platform may import those things, and nothing the
Worker imports may reach them at import time. This reads the source with ``ast`` rather than
importing it, so it also catches imports on branches a test never runs.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "vid2context"


def _build_worker_script():  # type: ignore[no-untyped-def]
    path = PACKAGE.parents[1] / "scripts" / "build_worker.py"
    spec = importlib.util.spec_from_file_location("build_worker", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Modules that exist for the local platform only (relative to the package, without ".py"): one
# list, in the script that leaves them out of the Worker's upload.
LOCAL_ONLY = set(_build_worker_script().LOCAL_ONLY)
# Modules that exist for the Worker only: the one place `js`, `workers` and `pyodide` may appear.
WORKER_ONLY = {
    "storage/cloudflare",
    "storage/cloudflare_queue",
    "storage/cloudflare_runs",
    "storage/vectorize",
}

LOCAL_IMPORTS = {
    "subprocess",
    "sqlite3",
    "sqlite_vec",
    "yt_dlp",
    "youtube_transcript_api",
    "threading",
    "multiprocessing",
    "concurrent",
    "pathlib",
    "shutil",
    "tempfile",
    "granian",
    "faster_whisper",
    "fastembed",
    "onnxruntime",
    "glob",
    "socket",
}
WORKER_IMPORTS = {"js", "workers", "pyodide"}
FILESYSTEM_CALLS = {"open"}
FILESYSTEM_OS_ATTRS = {
    "listdir",
    "stat",
    "remove",
    "unlink",
    "mkdir",
    "makedirs",
    "scandir",
    "walk",
    "rename",
    "replace",
    "chdir",
    "getcwd",
    "rmdir",
    "open",
    "lstat",
    "readlink",
    "symlink",
}


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


def _import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each module -> the in-package modules it imports at module level."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        _, internal = _top_level_imports(ast.parse(path.read_text(encoding="utf-8")), name)
        graph[name] = {r for c in internal if (r := _resolve(c, modules))}
    return graph


def _reachable(starts: set[str], graph: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    stack = list(starts)
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        stack.extend(graph.get(current, ()))
    return seen


def test_worker_reachable_graph_never_reaches_local_modules() -> None:
    """Follow module-level imports from every portable module: no path may lead to a local one."""
    modules = _modules()
    graph = _import_graph(modules)
    for start in _portable_modules():
        reached = {m for m in _reachable({start}, graph) if m in LOCAL_ONLY or m in WORKER_ONLY}
        assert not reached, f"{start} reaches {reached} at import time"


# What the Worker calls (worker/entry.py): their lazy imports load on the Worker too.
WORKER_ENTRY_POINTS = {("runtime", "build_worker_runtime"), ("api/app", "create_app")}


def _lazy_imports(name: str, function: str, modules: dict[str, Path]) -> set[str]:
    """In-package modules imported inside ``function`` of module ``name``, and inside the functions
    of that module it calls by name, transitively."""
    tree = ast.parse(modules[name].read_text(encoding="utf-8"))
    functions = {
        node.name: node for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    found: set[str] = set()
    todo, done = [function], set()
    while todo:
        current = todo.pop()
        if current in done or current not in functions:
            continue
        done.add(current)
        body = ast.Module(body=list(ast.walk(functions[current])), type_ignores=[])
        _, internal = _top_level_imports(body, name)
        found |= {r for c in internal if (r := _resolve(c, modules))}
        todo += [
            n.func.id
            for n in ast.walk(functions[current])
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        ]
    return found


def test_what_the_worker_builds_never_reaches_local_modules() -> None:
    """``build_worker_runtime`` and ``create_app`` import platform modules lazily: none may be
    local-only, nor lead to one at import time."""
    modules = _modules()
    graph = _import_graph(modules)
    for name, function in sorted(WORKER_ENTRY_POINTS):
        lazy = _lazy_imports(name, function, modules)
        reached = _reachable(lazy, graph) & LOCAL_ONLY
        assert not reached, f"{name}.{function} reaches {reached}"
    assert "storage/cloudflare" in _lazy_imports("runtime", "build_worker_runtime", modules)


def test_the_worker_rule_sees_a_violation() -> None:
    """The local builder, were the Worker to call it, reaches local-only modules."""
    modules = _modules()
    lazy = _lazy_imports("runtime", "build_local_runtime", modules)
    assert {"storage/sqlite", "providers/ytdlp"} <= _reachable(lazy, _import_graph(modules)) & LOCAL_ONLY


def test_the_rule_sees_a_violation(tmp_path: Path) -> None:
    """The checker itself must be able to fail."""
    tree = ast.parse("import subprocess\nfrom .storage import sqlite\n")
    external, internal = _top_level_imports(tree, "pipeline")
    assert "subprocess" in external
    assert "storage/sqlite" in internal
