"""Build the optional C module ``_vid2context_captions`` into the wheel, when a compiler is there.

The classic timedtext parse is five times youtube-transcript-api's speed only in C (issue #17; the
pure-Python path is at its floor, ``site/_src/speed.md``). Installing must still never need a
compiler, so, as markupsafe does with its ``_speedups``, a build that cannot compile the module
warns and goes on without it: ``providers/captions.py`` then parses in Python, as it always does on
the Worker (Pyodide loads no C module of ours). setuptools is only the compiler driver here: it
knows each platform's compiler and flags; hatchling still builds the wheel.

The module is top-level, not inside the package: an editable install (``uv sync``) puts the
package's source folder on ``sys.path``, so a built file can be importable only beside it, at the
root of ``site-packages``. ``VID2CONTEXT_PURE_PYTHON=1`` at build time leaves it out.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MODULE = "_vid2context_captions"
SOURCE = f"src/{MODULE}.c"


class CaptionsSpeedups(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or os.environ.get("VID2CONTEXT_PURE_PYTHON"):
            return
        self._temp = tempfile.mkdtemp(prefix="vid2context-build-")
        try:
            built = _compile(Path(self.root), Path(self._temp))
        except Exception as exc:  # no compiler, no headers: the pure-Python parse serves
            self.app.display_warning(f"{MODULE} not built ({exc}); captions parse in pure Python")
            return
        if version == "editable":
            # An editable wheel takes this map instead of the configured one: keep both.
            build_data["force_include_editable"] = {
                **self.build_config.get_force_include(),
                str(built): built.name,
            }
        else:
            build_data["force_include"][str(built)] = built.name
            build_data["pure_python"] = False
            build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        temp = getattr(self, "_temp", None)
        if temp:
            shutil.rmtree(temp, ignore_errors=True)


def _compile(root: Path, out: Path) -> Path:
    """The built module's path under ``out``: setuptools' ``build_ext``, which raises when the
    compiler is missing or fails."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    extension = Extension(MODULE, [str(root / SOURCE)])
    command = build_ext(Distribution({"name": MODULE, "ext_modules": [extension]}))
    command.build_lib = str(out)
    command.build_temp = str(out / "objects")
    command.ensure_finalized()
    command.run()
    return Path(command.get_ext_fullpath(MODULE))
