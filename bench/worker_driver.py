"""Run ``worker/entry.py`` under CPython the way the Worker runs it, in a fresh ``python -S``.

    python -S [-X importtime] bench/worker_driver.py SPEC.json

The spec (written by ``bench_worker.py`` or ``tests/test_worker_bundle.py``) says which folders
form ``sys.path`` (the Worker's upload: ``entry.py`` with the package copy beside it, then
``python_modules/``; then the ``workers`` stand-in), which modules to refuse at import (what
wrangler.toml's ``[python_modules] exclude`` leaves out), where Miniflare runs, where the site
is, and the steps: ``import`` (the module graph the isolate loads at start-up), ``preload`` (the
spec's ``preload`` modules: what ``entry.py`` could import at its top), ``app`` (the API app the
first API request builds), then requests through ``Default.fetch``: ``health``, ``openapi``,
``site``, ``mcp_initialize``, ``mcp_tools_list``, ``mcp_tool_call``. It prints one JSON line:
each step's status, wall and CPU milliseconds, the top-level modules loaded (and any loaded from
outside ``sys.path``'s spec folders and the standard library), and the refused imports attempted.

Speech-to-text on the Worker (the test's steps, not the benchmark's): ``no_groq`` fails unless the
``groq`` SDK is absent, as it is from the upload, so the Groq rung is the plain-httpx one;
``stt_health`` is ``health`` keeping the speech-to-text providers it lists and the class of each
rung the runtime built; ``upload`` posts the spec's ``upload`` file (multipart, field ``file``);
``transcript`` asks ``/api/v1/transcript?format=text`` (mode auto) for that upload and keeps the text.

``-S`` keeps the virtualenv's site-packages off ``sys.path``, so only what would be uploaded can
be imported. Nothing is imported before ``entry`` but ``sys`` and ``time`` (and the ``-X
importtime`` markers go to stderr, between the steps), so the import figures count the whole graph.
"""

import sys
import time

STARTED = time.perf_counter()
ORIGIN = "https://vid2context.example.workers.dev"
MCP_HEADERS = [("content-type", "application/json"), ("accept", "application/json, text/event-stream")]
MCP_VERSION = "2025-11-25"
STT_STEPS = ("stt_health", "upload", "transcript")


class Refuse:
    """A ``sys.meta_path`` finder that refuses the excluded packages, as if they were not uploaded."""

    def __init__(self, names):
        self.names = frozenset(names)
        self.attempts = []

    def find_spec(self, name, path=None, target=None):
        parts = name.split(".")
        for end in range(1, len(parts) + 1):
            if ".".join(parts[:end]) in self.names:
                self.attempts.append(name)
                raise ModuleNotFoundError(
                    f"{name} is excluded from the Worker upload (wrangler.toml [python_modules])", name=name
                )


def _tops(names):
    return sorted({name.split(".")[0] for name in names})


def _outside(paths):
    """Top-level modules loaded from a file neither in ``paths`` nor in the standard library
    (this driver, ``__main__``, aside; the test bindings are loaded without entering sys.modules)."""
    import os

    roots = [os.path.realpath(p) + os.sep for p in paths]
    roots.append(os.path.realpath(os.path.dirname(os.__file__)) + os.sep)
    outside = set()
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if (
            name != "__main__"
            and origin
            and not any(os.path.realpath(origin).startswith(root) for root in roots)
        ):
            outside.add(name.split(".")[0])
    return sorted(outside)


class _Timer:
    def __init__(self, steps, name):
        self.step = {"name": name}
        steps.append(self.step)

    def __enter__(self):
        sys.stderr.write(f"##step {self.step['name']}\n")
        sys.stderr.flush()
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self.step

    def __exit__(self, kind, error, tb):
        self.step["wall_ms"] = round((time.perf_counter() - self.wall) * 1000, 3)
        self.step["cpu_ms"] = round((time.process_time() - self.cpu) * 1000, 3)
        sys.stderr.write("##end\n")
        sys.stderr.flush()
        if error is not None:
            self.step["error"] = f"{kind.__name__}: {error}"
            return False
        return None


def main(spec_path):
    import json  # the Worker's graph imports json too (msgspec, litestar); read the spec first

    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    sys.path[:0] = spec["paths"]
    refuse = Refuse(spec.get("refuse", ()))
    sys.meta_path.insert(0, refuse)
    report = {"steps": [], "started_cpu_ms": round(time.process_time() * 1000, 3)}
    before = set(sys.modules)
    try:
        with _Timer(report["steps"], "import"):
            import entry  # noqa: F401  (the Worker's main module)
        report["modules_after_import"] = _tops(set(sys.modules) - before)
        if len(spec["steps"]) > 1:
            _serve(spec, report, before)
    except BaseException as error:  # noqa: BLE001 - reported, never hidden
        import traceback

        report["error"] = "".join(traceback.format_exception(error))[-6000:]
    report["modules"] = _tops(set(sys.modules) - before)
    report["outside_upload"] = _outside(spec["paths"])
    report["refused_attempts"] = sorted(set(refuse.attempts))
    report["wall_since_start_ms"] = round((time.perf_counter() - STARTED) * 1000, 3)
    report["cpu_since_start_ms"] = round(time.process_time() * 1000, 3)
    print(json.dumps(report))
    return 0 if "error" not in report else 1


def _serve(spec, report, before):
    import asyncio
    import importlib.util

    import entry
    import workers

    loaded = set(sys.modules)
    env = _Env(spec.get("vars", {}))
    cloudflare = None
    if spec.get("miniflare"):
        # The test bindings (tests/cloudflare_bindings.py) import httpx, which vid2context.runtime
        # imports at its top anyway; what they load first is reported apart.
        module_spec = importlib.util.spec_from_file_location("cloudflare_bindings", spec["bindings"])
        bindings = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(bindings)
        cloudflare = bindings.CloudflareEnv(spec["miniflare"])
        env.DB, env.KV, env.BUCKET = cloudflare.DB, cloudflare.KV, cloudflare.BUCKET
    report["modules_first_loaded_by_harness"] = _tops(set(sys.modules) - loaded)
    if spec.get("site"):
        from pathlib import Path

        import assets_binding  # the ASSETS stand-in, beside the workers stand-in

        env.ASSETS = assets_binding.AssetsBinding(Path(spec["site"]))
    worker = entry.Default(_Context(), env)

    async def run():
        try:
            for name in spec["steps"][1:]:
                with _Timer(report["steps"], name) as step:
                    if name == "app":
                        entry.api_app(env)
                        step["status"] = 0
                    elif name == "preload":
                        _preload(spec.get("preload", ()), step)
                    elif name == "no_groq":
                        _no_groq(step)
                    elif name in STT_STEPS:
                        await _stt_request(worker, name, step, report, spec)
                    else:
                        await _request(worker, name, step, report)
            if workers.pending:
                await asyncio.gather(*workers.pending, return_exceptions=True)
        finally:
            if cloudflare is not None:
                await cloudflare.aclose()

    asyncio.run(run())


async def _request(worker, name, step, report):
    import json

    from workers import Request

    if name == "health":
        request = Request(f"{ORIGIN}/api/v1/health", headers=[("accept", "application/json")])
    elif name == "openapi":  # the schema generation path (litestar's OpenAPI plugins)
        request = Request(f"{ORIGIN}/api/v1/openapi.json", headers=[("accept", "application/json")])
    elif name == "site":
        request = Request(f"{ORIGIN}/", headers=[("accept", "text/html")])
    elif name.startswith("mcp_"):
        message = _mcp_message(name, report)
        headers = list(MCP_HEADERS)
        if name != "mcp_initialize":
            headers.append(("mcp-protocol-version", MCP_VERSION))
        request = Request(f"{ORIGIN}/mcp", method="POST", headers=headers, body=json.dumps(message).encode())
    else:
        raise ValueError(f"unknown step {name!r}")
    response = await worker.fetch(request)
    step["status"] = response.status
    step["bytes"] = len(response.body)
    if name.startswith("mcp_") and response.status == 200:
        answer = json.loads(response.body)
        result = answer.get("result") or {}
        if name == "mcp_tools_list":
            report["tools"] = [tool["name"] for tool in result.get("tools", [])]
            step["tools"] = len(report["tools"])
        elif name == "mcp_tool_call":
            step["is_error"] = bool(result.get("isError")) or "error" in answer
            step["tool"] = message["params"]["name"]
        else:
            step["protocol_version"] = result.get("protocolVersion")
        if "error" in answer:
            step["rpc_error"] = answer["error"]


async def _stt_request(worker, name, step, report, spec):
    """The speech-to-text steps: health's ladder, an upload, its transcript (see the docstring)."""
    import json
    from urllib.parse import urlencode

    import entry
    from workers import Request

    if name == "stt_health":
        request = Request(f"{ORIGIN}/api/v1/health", headers=[("accept", "application/json")])
    elif name == "upload":
        body, content_type = _multipart(spec["upload"])
        request = Request(
            f"{ORIGIN}/api/v1/uploads",
            method="POST",
            body=body,
            headers=[("content-type", content_type), ("accept", "application/json")],
        )
    else:
        query = urlencode({"url": report["upload"]["input"], "format": "text"})
        request = Request(f"{ORIGIN}/api/v1/transcript?{query}", headers=[("accept", "text/plain")])
    response = await worker.fetch(request)
    step["status"] = response.status
    step["bytes"] = len(response.body)
    if name == "stt_health":
        answer = json.loads(response.body) if response.status == 200 else {}
        report["stt_providers"] = [p for p in answer.get("providers", []) if p["kind"] == "stt"]
        report["stt_rungs"] = [
            {
                "id": rung.id,
                "provider": rung.provider,
                "enabled": rung.enabled,
                "class": f"{type(rung).__module__}.{type(rung).__qualname__}",
            }
            for rung in entry._api.state.runtime.stt
        ]
    elif name == "upload":
        report["upload"] = json.loads(response.body) if response.status == 201 else {}
    else:
        report["transcript"] = response.body.decode("utf-8", "replace")


def _multipart(path):
    """A ``multipart/form-data`` body with the file at ``path`` as field ``file``, and its type."""
    import mimetypes
    import os

    with open(path, "rb") as handle:
        data = handle.read()
    name = os.path.basename(path)
    mime = mimetypes.guess_type(name)[0] or "application/octet-stream"
    boundary = "worker-driver-boundary-7d1e"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
        f"Content-Type: {mime}\r\n\r\n"
    ).encode()
    return head + data + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def _no_groq(step):
    """Fail unless the groq SDK is out of reach, as on the Worker (the Groq rung is then httpx's)."""
    import importlib.util

    if importlib.util.find_spec("groq") is not None:
        raise AssertionError("groq is importable in the driver: the Worker's Groq rung would not be tested")
    try:
        import groq  # noqa: F401
    except ModuleNotFoundError:
        step["status"] = 0
    else:
        raise AssertionError("import groq succeeded in the driver")


def _preload(modules, step):
    """Import what the API app needs short of the MCP SDK, as if ``entry.py`` did at its top."""
    import importlib

    for module in modules:
        importlib.import_module(module)
    step["status"] = 0
    step["mcp_loaded"] = "mcp" in sys.modules


def _mcp_message(name, report):
    if name == "mcp_initialize":
        params = {
            "protocolVersion": MCP_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "worker-driver", "version": "1"},
        }
        return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    if name == "mcp_tools_list":
        return {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    tools = report.get("tools") or []
    # A tool that reads D1 through the same storage the REST API uses, with no outbound request.
    candidates = ("list_collections", "list_formats", "list_models")
    tool = next((name for name in candidates if name in tools), candidates[0])
    return {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": tool, "arguments": {}}}


class _Env:
    """The Worker's ``env``: bindings and vars as attributes (a missing one raises AttributeError)."""

    def __init__(self, variables):
        for key, value in variables.items():
            setattr(self, key, value)


class _Context:
    """The Worker's ``ctx``; ``waitUntil`` as the runtime offers it (the shim uses ``workers.wait_until``)."""

    def waitUntil(self, awaitable):
        from workers import wait_until

        wait_until(awaitable)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
