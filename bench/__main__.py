"""Run every benchmark (or those named on the command line) and write ``bench/results/<name>.json``."""

from __future__ import annotations

import importlib
import json
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    names = argv or sorted(p.stem for p in HERE.glob("bench_*.py"))
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        started = time.perf_counter()
        figures = module.run()
        report = {
            "benchmark": name,
            "python": platform.python_version(),
            "machine": platform.machine(),
            "seconds": round(time.perf_counter() - started, 2),
            "figures": figures,
        }
        path = out / f"{name}.json"
        path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(json.dumps(report, indent=2))
        print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
