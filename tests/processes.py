"""The running processes a test leaves behind, read from ``/proc`` (no psutil in the lock)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["command_lines"]


def command_lines(naming: str) -> dict[int, str]:
    """Pid to command line of every running process (zombies excluded) whose command line holds
    ``naming``."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            line = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if naming in line and state != "Z":
            found[int(entry)] = line
    return found
