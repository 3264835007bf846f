"""The local deployment kit in ``local/``: what it ships must match the code it configures.

``.env.example`` names every setting once with a default the settings loader accepts; the systemd
unit is the one the self-hosting page shows; ``entry.py`` gives any ASGI server the local app.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from vid2context.settings import SETTINGS, load_settings

ROOT = Path(__file__).resolve().parents[1]
LOCAL = ROOT / "local"
ASSIGNMENT = re.compile(r"^# ([A-Z][A-Z0-9_]*)=(.*)$")


def _example() -> dict[str, str]:
    found: dict[str, str] = {}
    for line in (LOCAL / ".env.example").read_text(encoding="utf-8").splitlines():
        assert not line or line.startswith("#"), f"an active line in .env.example: {line!r}"
        if match := ASSIGNMENT.match(line):
            assert match.group(1) not in found, f"{match.group(1)} twice"
            found[match.group(1)] = match.group(2)
    return found


def test_env_example_names_every_setting_and_nothing_else() -> None:
    assert set(_example()) == {setting.env for setting in SETTINGS}


def test_env_example_defaults_load_when_uncommented() -> None:
    values = {name: value for name, value in _example().items() if value}
    assert load_settings(values) == load_settings({})


def test_the_systemd_unit_is_the_one_the_docs_show() -> None:
    page = (ROOT / "site" / "_src" / "self-hosting.md").read_text(encoding="utf-8")
    shown = re.search(r"```ini\n(.*?)```", page, re.S)
    assert shown is not None
    unit = (LOCAL / "vid2context.service").read_text(encoding="utf-8")
    assert shown.group(1) == unit
    assert "ExecStart=/srv/vid2context/.venv/bin/vid2context serve" in unit


def test_entry_gives_an_asgi_server_the_local_app(tmp_path: Path) -> None:
    code = "import runpy\napp = runpy.run_path('local/entry.py')['app']\nassert callable(app)\nprint('ok')\n"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"VID2CONTEXT_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
