"""The Cloudflare Worker: cold start of its module graph, its first responses, and its upload size.

(a) ``import``: ``python -X importtime`` in a fresh ``python -S`` importing ``worker/entry.py``
    through the ``workers`` stand-in (``tests/workers_standin``), from the files wrangler uploads:
    the total and the 15 most expensive top-level packages (cumulative, and each package's own
    share); then the lazy part, ``api_app(env)``: the runtime and the Litestar app with the MCP
    server, which the first API request builds. Without ``-X importtime`` (which slows every import
    down), the same two steps in wall and CPU milliseconds; ``app_build_after_preload``: the lazy
    part when everything it imports short of the MCP SDK (``PRELOAD``) is imported first, as
    ``entry.py`` could do at its top; ``app_build_without_imports``: with the MCP SDK imported
    too, what is left is building the runtime, the MCP server and the Litestar app.
(b) ``first_response``: fresh processes answering, through ``Default.fetch`` with D1, KV and R2 in
    Miniflare (``tests/miniflare_harness.py``) and the ``ASSETS`` stand-in over ``site/``: the
    first ``GET /api/v1/health``, the second, the first MCP ``initialize`` (then ``tools/list`` and
    a tool call), the first site page, the OpenAPI document; and a process whose first request is
    a site page. Every
    binding call is an HTTP round trip to 127.0.0.1 (``binding_round_trip_ms``), which a deployed
    Worker does not pay.
``BENCH_WORKER_BASE=<git revision>`` adds ``first_response_vs_base``: the same upload with the
    package and ``entry.py`` as they were at that revision (``git archive``, copied as the build
    step copies them), both run alternately, so a change's before and after come from one run.
(c) ``bundle``: ``wrangler deploy --dry-run`` (tests/miniflare's pinned wrangler, offline) on a
    copy of the project whose ``python_modules/`` holds the Worker's dependency closure, with and
    without wrangler.toml's ``[python_modules] exclude``; the biggest packages of each. The closure
    is ``[project].dependencies`` under Pyodide's environment markers at the versions in uv.lock
    (``scripts/worker_deps.py``, what ``make deploy`` pins), copied from this virtualenv: CPython wheels stand in for the Pyodide builds ``pywrangler`` vendors (the
    pure-Python files are the same; compiled extensions differ in size). ``pyodide_wheels`` then
    swaps in the ``pyemscripten_2026_0_wasm32`` wheels PyPI has for the compiled packages (fetched
    with ``pip download``, cached under ``bench/results/pyodide-wheels``) for a more faithful figure.

Why the split matters: Cloudflare runs ``entry.py``'s top level once, at deploy, and restores every
new isolate from a memory snapshot taken after it; what the first request imports is paid again by
each new isolate. CPython is not Pyodide (WebAssembly): these figures rank the parts, they do not
predict Cloudflare's milliseconds. ``BENCH_WORKER_RUNS`` sets the fresh processes per figure
(default 5); ``BENCH_WORKER_OFFLINE=1`` skips the wheel download.

The helpers here (the closure, the project copy, running wrangler, the exclude globs) are shared
with ``tests/test_worker_bundle.py``, which proves the excludes safe and the upload under the limit.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
import zlib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from scripts.worker_deps import locked_closure

ROOT = Path(__file__).resolve().parents[1]
DRIVER = Path(__file__).resolve().with_name("worker_driver.py")
STANDIN = ROOT / "tests" / "workers_standin"
BINDINGS = ROOT / "tests" / "cloudflare_bindings.py"
WRANGLER = ROOT / "tests" / "miniflare" / "node_modules" / ".bin" / "wrangler"
WHEEL_CACHE = Path(__file__).resolve().parent / "results" / "pyodide-wheels"
LIMIT_BYTES = 10 * 1024 * 1024
"""Cloudflare's Worker size limit on a paid plan, after gzip (3 MiB on the free plan)."""
TARGET_BYTES = int(9.5 * 1024 * 1024)
"""Our own ceiling (issue 15): half a MiB under the limit, so an issue's code cannot creep up to it."""

PYODIDE_PLATFORM = "pyemscripten_2026_0_wasm32"
# Exclude globs that name files, not modules (no import can reach them).
FILE_GLOBS = frozenset({"**/*.pyc", "**/*.pyi"})
# Every step a fresh process runs, in order (see worker_driver.py).
SERVE_STEPS = [
    "import",
    "health",
    "health",
    "mcp_initialize",
    "mcp_tools_list",
    "mcp_tool_call",
    "site",
    "openapi",
]
WORKER_VARS = {"VID2CONTEXT_PUBLIC": "1"}  # wrangler.toml's [vars]
# What api_app(env) imports short of the MCP SDK (which must stay out of the start-up snapshot).
PRELOAD = [
    "vid2context.api",
    "vid2context.runtime",
    "vid2context.storage.cloudflare",
    "vid2context.providers.whisper_workers_ai",
]


# --- the dependency closure ---------------------------------------------------------------------


def dependency_closure(lock: Path = ROOT / "uv.lock") -> tuple[list[metadata.Distribution], list[str]]:
    """The installed distributions of the Worker's locked closure (``scripts/worker_deps.py``), and the
    names this virtualenv lacks (Pyodide-only ones such as httpx2-jsfetch).

    Raises when an installed version differs from the lock: the upload would not be what deploys.
    """
    found, missing = [], []
    for name, version in locked_closure(lock).items():
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
            continue
        if distribution.version != version:
            raise RuntimeError(
                f"{name} {distribution.version} is installed, uv.lock has {version}: run make venv-dev"
            )
        found.append(distribution)
    return found, missing


def distribution_files(distribution: metadata.Distribution) -> list[str]:
    """The distribution's files inside site-packages, without bytecode (paths relative to it)."""
    files = []
    for entry in distribution.files or []:
        if entry.parts[0] == ".." or "__pycache__" in entry.parts or entry.suffix == ".pyc":
            continue
        if Path(distribution.locate_file(entry)).is_file():
            files.append(entry.as_posix())
    return sorted(files)


def fill_python_modules(target: Path, distributions: list[metadata.Distribution]) -> dict[str, list[str]]:
    """Copy each distribution's files into ``target`` (as pywrangler fills ``python_modules/``)."""
    owned = {}
    for distribution in distributions:
        files = distribution_files(distribution)
        for relative in files:
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(distribution.locate_file(relative), destination)
        owned[canonicalize_name(distribution.metadata["Name"])] = files
    return owned


# --- wrangler.toml's excludes -------------------------------------------------------------------


def exclude_globs(config: Path = ROOT / "wrangler.toml") -> list[str]:
    with config.open("rb") as handle:
        return list(tomllib.load(handle).get("python_modules", {}).get("exclude", ["**/*.pyc"]))


def wrangler_glob(pattern: str) -> re.Pattern[str]:
    """The pattern as wrangler matches it: glob-to-regexp 0.4.1 with ``globstar``, not ``extended``."""
    out = ""
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            previous = pattern[i - 1] if i else ""
            stars = 1
            while i + 1 < len(pattern) and pattern[i + 1] == "*":
                stars += 1
                i += 1
            following = pattern[i + 1] if i + 1 < len(pattern) else ""
            if stars > 1 and previous in ("/", "") and following in ("/", ""):
                out += "((?:[^/]*(?:/|$))*)"
                i += 1  # the slash after ** belongs to it
            else:
                out += "([^/]*)"
        else:
            out += re.escape(char)
        i += 1
    return re.compile(f"^{out}$")


def refused_modules(globs: list[str]) -> list[str]:
    """The modules the exclude globs leave out: ``pkg/**`` is ``pkg``, ``pkg/mod.*`` is ``pkg.mod``.

    Globs of ``.dist-info`` folders and of file kinds (``FILE_GLOBS``) name no module. Any other
    shape raises, so a new glob cannot slip past the test that refuses every excluded module.
    """
    modules = []
    for glob in globs:
        if glob in FILE_GLOBS or re.fullmatch(r"[A-Za-z0-9_]+-\*\.dist-info/\*\*", glob):
            continue
        if match := re.fullmatch(r"([A-Za-z_][A-Za-z0-9_/]*)(?:/\*\*|\.\*)", glob):
            modules.append(match[1].replace("/", "."))
        else:
            raise ValueError(f"exclude glob {glob!r} has a shape refused_modules does not know")
    return sorted(modules)


# --- the project copy and wrangler --------------------------------------------------------------


def project_files(root: Path = ROOT) -> list[str]:
    """What a checkout holds: tracked files and untracked ones git does not ignore (read-only git)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted({name for name in listed.split("\0") if name and (root / name).is_file()})


def copy_project(target: Path, root: Path = ROOT) -> Path:
    for name in project_files(root):
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / name, destination)
    return target


def without_excludes(config: Path) -> None:
    """Drop the ``[python_modules]`` table from a copied wrangler.toml (wrangler's default applies)."""
    text = config.read_text(encoding="utf-8")
    config.write_text(re.sub(r"(?ms)^\[python_modules\]\n.*?(?=^\[|\Z)", "", text), encoding="utf-8")


def wrangler_env() -> dict[str, str]:
    """No telemetry, no error reports, no banner (its update check is a request to npm), and an
    npm registry on a closed local port in case anything still asks: the dry run stays offline."""
    return {
        **os.environ,
        "WRANGLER_SEND_METRICS": "false",
        "WRANGLER_SEND_ERROR_REPORTS": "false",
        "WRANGLER_HIDE_BANNER": "true",
        "npm_config_registry": "http://127.0.0.1:9/",
        "NO_COLOR": "1",
        "FORCE_COLOR": "0",
    }


def run_wrangler(project: Path, outdir: Path, *, timeout: float = 600) -> dict[str, Any]:
    """``wrangler deploy --dry-run --outdir``: the upload's size as wrangler reports it."""
    if not WRANGLER.is_file():
        raise FileNotFoundError(
            f"{WRANGLER} is missing: run `npm ci --prefix tests/miniflare` (or `make test`), which "
            "installs the pinned wrangler from tests/miniflare/package-lock.json."
        )
    started = time.perf_counter()
    result = subprocess.run(
        [str(WRANGLER), "deploy", "--dry-run", "--outdir", str(outdir)],
        cwd=project,
        env=wrangler_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = result.stdout + result.stderr
    total = re.search(r"Total Upload: ([\d.]+) KiB / gzip: ([\d.]+) KiB", output)
    if result.returncode != 0 or total is None:
        raise RuntimeError(f"wrangler deploy --dry-run failed ({result.returncode}):\n{output[-4000:]}")
    modules = re.search(r"Total \((\d+) modules\)", output)
    vendored = re.search(r"Vendored Modules\s*│\s*│\s*([\d.]+) KiB", output)
    return {
        "raw_kib": float(total[1]),
        "gzip_kib": float(total[2]),
        "modules": int(modules[1]) if modules else None,
        "vendored_kib": float(vendored[1]) if vendored else None,
        "wrangler_seconds": round(time.perf_counter() - started, 1),
    }


def package_sizes(python_modules: Path, owned: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Each distribution's share of ``python_modules`` as uploaded: raw, and gzip of its files
    alone (wrangler gzips all modules as one stream at zlib's default level)."""
    rows = []
    for name, files in owned.items():
        present = [python_modules / f for f in files if (python_modules / f).is_file()]
        if not present:
            continue
        data = b"".join(path.read_bytes() for path in present)
        rows.append(
            {
                "package": name,
                "files": len(present),
                "raw_kib": round(len(data) / 1024, 1),
                "gzip_kib": round(len(zlib.compress(data, 6)) / 1024, 1),
            }
        )
    return sorted(rows, key=lambda row: -row["gzip_kib"])


def build_upload(
    workdir: Path, *, excludes: bool = True, wheels: dict[str, Path] | None = None
) -> dict[str, Any]:
    """Copy the project to ``workdir``, fill ``python_modules/``, run the dry run into ``workdir/out``.

    ``wheels`` replaces distributions (by canonical name) with the contents of those wheels, and
    adds the ones not installed here. Returns wrangler's figures, the per-package sizes of what
    was uploaded, the distributions the closure names but this virtualenv lacks, and ``outdir``.
    """
    project = copy_project(workdir / "project")
    if not excludes:
        without_excludes(project / "wrangler.toml")
    distributions, missing = dependency_closure(project / "uv.lock")
    modules = project / "python_modules"
    owned = fill_python_modules(
        modules, [d for d in distributions if canonicalize_name(d.metadata["Name"]) not in (wheels or {})]
    )
    for name, wheel in (wheels or {}).items():
        owned[name] = _unpack_wheel(wheel, modules)
    outdir = workdir / "out"
    figures = run_wrangler(project, outdir)
    figures["packages"] = package_sizes(outdir / "python_modules", owned)
    figures["not_installed"] = [name for name in missing if name not in (wheels or {})]
    figures["outdir"] = str(outdir)
    return figures


def _unpack_wheel(wheel: Path, target: Path) -> list[str]:
    names = []
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            if info.is_dir() or info.filename.endswith(".pyc") or "__pycache__" in info.filename:
                continue
            archive.extract(info, target)
            names.append(info.filename)
    return names


# --- running the driver -------------------------------------------------------------------------


def driver_spec(
    outdir: Path,
    *,
    steps: list[str],
    refuse: list[str] = (),
    miniflare: str | None = None,
    site: Path | None = None,
    preload: list[str] = (),
    variables: dict[str, str] | None = None,
    upload: Path | None = None,
) -> dict[str, Any]:
    """A spec for ``worker_driver.py``: the upload in ``outdir`` on ``sys.path``, then the stand-in.

    ``variables`` are vars and secrets added to wrangler.toml's; ``upload`` is the file the
    driver's ``upload`` step posts.
    """
    return {
        "paths": [str(outdir), str(outdir / "python_modules"), str(STANDIN)],
        "refuse": list(refuse),
        "miniflare": miniflare,
        "bindings": str(BINDINGS),
        "site": str(site) if site else None,
        "vars": {**WORKER_VARS, **(variables or {})},
        "steps": steps,
        "preload": list(preload),
        "upload": str(upload) if upload else None,
    }


def run_driver(
    spec: dict[str, Any], workdir: Path, *, importtime: bool = False, timeout: float = 300
) -> tuple[dict[str, Any], str]:
    """Run the driver in a fresh ``python -S``; returns its report and its stderr."""
    path = workdir / f"spec-{os.getpid()}-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    command = [sys.executable, "-S", *(["-X", "importtime"] if importtime else []), str(DRIVER), str(path)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VID2CONTEXT_", "PYTHON"))}
    result = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    lines = result.stdout.strip().splitlines()
    try:
        report = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        report = {"error": f"driver exited {result.returncode}: {result.stderr[-4000:]}"}
    return report, result.stderr


def write_site(target: Path) -> Path:
    """A two-file site for the ``ASSETS`` stand-in when ``site/`` has no built pages."""
    target.mkdir(parents=True, exist_ok=True)
    (target / "index.html").write_text("<!doctype html><title>vid2context</title><h1>vid2context</h1>\n")
    (target / "index.md").write_text("# vid2context\n")
    return target


# --- (a) import times ---------------------------------------------------------------------------


def parse_importtime(stderr: str) -> dict[str, list[tuple[str, int, int, int]]]:
    """``-X importtime`` lines grouped by the driver's step markers: (module, self us, cumulative us,
    nesting depth), in the order Python prints them (a module after everything it imported)."""
    sections: dict[str, list[tuple[str, int, int, int]]] = {}
    current = None
    for line in stderr.splitlines():
        if line.startswith("##step "):
            current = sections.setdefault(line.split(" ", 1)[1], [])
        elif line.startswith("##end"):
            current = None
        elif current is not None and line.startswith("import time:"):
            fields = line[len("import time:") :].split("|")
            if len(fields) == 3 and fields[0].strip().isdigit():
                name = fields[2].rstrip()
                depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
                current.append((name.strip(), int(fields[0]), int(fields[1]), depth))
    return sections


def summarize_imports(lines: list[tuple[str, int, int, int]], top: int = 15) -> dict[str, Any]:
    """The total, and per top-level package: ``cumulative_ms``, the time of every import that
    entered the package from outside it (with all it imported in turn), and ``own_ms``, the time
    spent in its own modules alone (the own times add up to the total)."""
    own: dict[str, int] = {}
    cumulative: dict[str, int] = {}
    above: dict[int, str] = {}  # depth -> package of the enclosing import, walking backwards
    for module, self_us, cumulative_us, depth in reversed(lines):
        package = module.split(".")[0]
        own[package] = own.get(package, 0) + self_us
        if depth == 0 or above.get(depth - 1) != package:
            cumulative[package] = cumulative.get(package, 0) + cumulative_us
        above[depth] = package
    ranked = sorted(cumulative, key=lambda name: -cumulative[name])[:top]
    return {
        "total_ms": round(sum(own.values()) / 1000, 1),
        "modules": len(lines),
        "top_packages": [
            {
                "package": name,
                "cumulative_ms": round(cumulative[name] / 1000, 1),
                "own_ms": round(own[name] / 1000, 1),
            }
            for name in ranked
        ],
    }


def _stats(walls: list[float], cpus: list[float]) -> dict[str, float]:
    """Wall ms (median, best, p90) and CPU ms (median) over fresh processes, as timing.measure."""
    ordered = sorted(walls)
    return {
        "median_ms": round(statistics.median(ordered), 1),
        "best_ms": round(ordered[0], 1),
        "p90_ms": round(ordered[max(0, int(len(ordered) * 0.9) - 1)], 1),
        "cpu_median_ms": round(statistics.median(cpus), 1),
    }


def _step_figures(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Per step, by position (a name that repeats gets its index: ``health_1``, ``health_2``)."""
    names = [step["name"] for step in reports[0]["steps"]]
    figures: dict[str, Any] = {}
    for index, name in enumerate(names):
        label = name if names.count(name) == 1 else f"{name}_{names[: index + 1].count(name)}"
        steps = [report["steps"][index] for report in reports]
        figures[label] = {
            **_stats([s["wall_ms"] for s in steps], [s["cpu_ms"] for s in steps]),
            "status": steps[-1].get("status"),
        }
    return figures


# --- run ----------------------------------------------------------------------------------------


@dataclass
class _Runs:
    """Fresh driver processes against one upload and one Miniflare, each on an empty migrated D1."""

    outdir: Path
    work: Path
    harness: Any
    site: Path
    count: int
    migrate: Any

    def spec(self, steps: list[str], **options: Any) -> dict[str, Any]:
        return driver_spec(
            self.outdir, steps=steps, miniflare=self.harness.base_url, site=self.site, **options
        )

    def one(self, spec: dict[str, Any], *, importtime: bool = False) -> tuple[dict[str, Any], str]:
        self.harness.reset()
        asyncio.run(_migrate(self.harness, self.migrate))
        report, stderr = run_driver(spec, self.work, importtime=importtime)
        if "error" in report:
            raise RuntimeError(report["error"])
        return report, stderr


def run() -> dict[str, Any]:
    _ensure_harness_on_path()
    from tests.miniflare_harness import apply_migrations, start_harness

    figures: dict[str, Any] = {"runs": int(os.environ.get("BENCH_WORKER_RUNS", "5"))}
    with tempfile.TemporaryDirectory(prefix="bench-worker-") as tmp:
        work = Path(tmp)
        upload = build_upload(work / "with", excludes=True)
        built = ROOT / "site" / "index.html"
        site = built.parent if built.is_file() else write_site(work / "site")
        harness = start_harness()
        try:
            runs = _Runs(Path(upload["outdir"]), work, harness, site, figures["runs"], apply_migrations)
            figures["binding_round_trip_ms"] = asyncio.run(_round_trip(harness))
            measures = [("import", _import_figures), ("first_response", _response_figures)]
            if os.environ.get("BENCH_WORKER_BASE"):
                measures.append(("first_response_vs_base", _versus_base))
            for key, measure in measures:
                try:
                    figures[key] = measure(runs)
                except RuntimeError as error:
                    figures[key] = {"error": str(error)}
        finally:
            harness.stop()
        figures["bundle"] = _bundle_figures(work, upload)
    return figures


def _import_figures(runs: _Runs) -> dict[str, Any]:
    plain = runs.spec(["import", "app"])
    preload = runs.spec(["import", "preload", "app"], preload=PRELOAD)
    everything = runs.spec(["import", "preload", "app"], preload=[*PRELOAD, "vid2context.mcp.http"])
    traced, timed, preloaded, constructed = [], [], [], []
    for _ in range(runs.count):
        traced.append(parse_importtime(runs.one(plain, importtime=True)[1]))
        timed.append(runs.one(plain)[0])
        preloaded.append(runs.one(preload)[0])
        constructed.append(runs.one(everything)[0])
    # The run whose lazy part is the median stands for all (package lists need one run).
    middle = sorted(traced, key=lambda s: sum(line[1] for line in s.get("app", [])))[len(traced) // 2]
    steps, split = _step_figures(timed), _step_figures(preloaded)
    return {
        "importtime_entry": summarize_imports(middle.get("import", [])),
        "importtime_app": summarize_imports(middle.get("app", [])),
        "entry_import": steps["import"],
        "app_build": steps["app"],
        "app_build_after_preload": {
            **split["app"],
            "preload": split["preload"],
            "preloaded": PRELOAD,
            "mcp_loaded_by_preload": preloaded[-1]["steps"][1].get("mcp_loaded"),
        },
        "app_build_without_imports": _step_figures(constructed)["app"],
        "interpreter_start_cpu_ms": round(statistics.median(r["started_cpu_ms"] for r in timed), 1),
        "packages_after_entry_import": timed[-1].get("modules_after_import"),
        "packages_after_app_build": timed[-1].get("modules"),
        "note": "CPython on x86-64 with -S; importtime figures carry its own overhead. The workers "
        "stand-in imports asyncio, which the real runtime has loaded before entry.py.",
    }


def _response_figures(runs: _Runs) -> dict[str, Any]:
    refuse = refused_modules(exclude_globs())  # absent from the upload anyway; this names the attempts
    figures: dict[str, Any] = {"site": str(runs.site)}
    for label, steps in (("api_first", SERVE_STEPS), ("site_first", ["import", "site", "health"])):
        spec = runs.spec(steps, refuse=refuse)
        reports = [runs.one(spec)[0] for _ in range(runs.count)]
        figures[label] = _step_figures(reports)
        cpu = statistics.median(report["cpu_since_start_ms"] for report in reports)
        figures[label]["process_cpu_ms"] = round(cpu, 1)
        if label == "api_first":
            last = reports[-1]
            figures["tools"] = len(last.get("tools", []))
            figures["packages_imported"] = last["modules"]
            figures["packages_first_loaded_by_harness"] = last.get("modules_first_loaded_by_harness")
            figures["refused_attempts"] = last["refused_attempts"]
    return figures


def base_upload(outdir: Path, revision: str, target: Path) -> Path:
    """A copy of the upload in ``outdir`` whose package and ``entry.py`` are those of ``revision``
    (the dependencies stay: a base with other dependencies needs its own ``build_upload``)."""
    import io
    import tarfile

    from scripts.build_worker import build

    archive = subprocess.run(
        ["git", "archive", revision, "src/vid2context", "worker/entry.py"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    tree = target.with_name(target.name + "-tree")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tree, filter="data")
    shutil.copytree(outdir, target)
    build(target / "vid2context", tree / "src" / "vid2context")
    shutil.copyfile(tree / "worker" / "entry.py", target / "entry.py")
    return target


def _versus_base(runs: _Runs) -> dict[str, Any]:
    """The first responses of this upload and of ``BENCH_WORKER_BASE``'s, run alternately."""
    revision = os.environ["BENCH_WORKER_BASE"]
    base = base_upload(runs.outdir, revision, runs.work / "base")
    refuse = refused_modules(exclude_globs())
    specs = {
        "ours": runs.spec(SERVE_STEPS, refuse=refuse),
        "base": {**runs.spec(SERVE_STEPS, refuse=refuse), "paths": driver_spec(base, steps=[])["paths"]},
    }
    reports: dict[str, list[dict[str, Any]]] = {"ours": [], "base": []}
    for _ in range(runs.count):
        for side, spec in specs.items():
            reports[side].append(runs.one(spec)[0])
    return {"base": revision, **{side: _step_figures(found) for side, found in reports.items()}}


def _bundle_figures(work: Path, upload: dict[str, Any]) -> dict[str, Any]:
    bare = build_upload(work / "without", excludes=False)
    figures: dict[str, Any] = {
        "limit_kib": LIMIT_BYTES / 1024,
        "target_kib": TARGET_BYTES / 1024,
        "with_excludes": _upload_summary(upload),
        "without_excludes": _upload_summary(bare),
        "excluded_globs": exclude_globs(),
        "stand_in": "CPython wheels from .venv stand in for the Pyodide builds pywrangler vendors",
    }
    if os.environ.get("BENCH_WORKER_OFFLINE") == "1":
        figures["pyodide_wheels"] = {"skipped": "BENCH_WORKER_OFFLINE=1"}
        return figures
    wheels, attempts = fetch_pyodide_wheels()
    figures["pyodide_wheels"] = {"attempts": attempts}
    if wheels:
        faithful = build_upload(work / "pyodide", excludes=True, wheels=wheels)
        figures["pyodide_wheels"].update(_upload_summary(faithful))
        figures["pyodide_wheels"]["wheels"] = {name: wheel.name for name, wheel in wheels.items()}
    return figures


def _upload_summary(upload: dict[str, Any]) -> dict[str, Any]:
    return {
        "raw_kib": upload["raw_kib"],
        "gzip_kib": upload["gzip_kib"],
        "gzip_mib": round(upload["gzip_kib"] / 1024, 2),
        "modules": upload["modules"],
        "vendored_kib": upload["vendored_kib"],
        "top_packages": upload["packages"][:15],
        "packages": len(upload["packages"]),
        "not_installed": upload["not_installed"],
    }


def fetch_pyodide_wheels() -> tuple[dict[str, Path], dict[str, str]]:
    """Pyodide wheels from PyPI for the uploaded compiled packages and for what is not installed
    here (``pip download --platform``; network). Returns the wheels found and what each try said."""
    distributions, missing = dependency_closure()
    excluded = refused_modules(exclude_globs())
    wanted: dict[str, str] = {name: name for name in missing}
    for distribution in distributions:
        name = canonicalize_name(distribution.metadata["Name"])
        files = distribution_files(distribution)
        tops = {f.split("/")[0] for f in files if not f.split("/")[0].endswith(".dist-info")}
        if all(top.split(".")[0] in excluded for top in tops):
            continue  # not uploaded anyway
        if any(f.endswith((".so", ".pyd")) for f in files):
            wanted[name] = f"{name}=={distribution.version}"
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    found: dict[str, Path] = {}
    attempts: dict[str, str] = {}
    for name, requirement in sorted(wanted.items()):
        if _cached_wheel(name, requirement) is None:
            command = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--retries",
                "1",
                "--platform",
                PYODIDE_PLATFORM,
                "--python-version",
                "3.14",
                "--implementation",
                "cp",
                "--abi",
                "cp314",
                "--abi",
                "abi3",
                "--abi",
                "none",
                "-d",
                str(WHEEL_CACHE),
                requirement,
            ]
            result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
            attempts[name] = (result.stderr.strip().splitlines() or ["no wheel"])[-1]
        if (wheel := _cached_wheel(name, requirement)) is not None:
            found[name] = wheel
            attempts[name] = wheel.name
    return found, attempts


def _cached_wheel(name: str, requirement: str) -> Path | None:
    version = requirement.partition("==")[2]
    prefix = (name.replace("-", "_") + "-" + (f"{version}-" if version else "")).lower()
    matches = sorted(p for p in WHEEL_CACHE.glob("*.whl") if p.name.lower().startswith(prefix))
    return matches[-1] if matches else None


async def _migrate(harness: Any, apply_migrations: Any) -> None:
    env = harness.new_env(keepalive=False)
    try:
        await apply_migrations(env.DB)
    finally:
        await env.aclose()


async def _round_trip(harness: Any) -> float:
    """Median ms of a ``SELECT 1`` through the test bindings: the floor every binding call pays here."""
    env = harness.new_env(keepalive=True)
    try:
        samples = []
        for _ in range(50):
            started = time.perf_counter()
            await env.DB.prepare("SELECT 1").all()
            samples.append((time.perf_counter() - started) * 1000)
        return round(statistics.median(samples), 2)
    finally:
        await env.aclose()


def _ensure_harness_on_path() -> None:
    if str(ROOT) not in sys.path:  # the harness lives in tests/, beside this package
        sys.path.insert(0, str(ROOT))
