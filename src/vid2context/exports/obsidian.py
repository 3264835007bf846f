"""Obsidian notes on the user's disk: one note per video and an index note, under allowed roots.

Local only (it writes files): the MCP ``export_obsidian`` tool imports this module inside the tool,
refuses calls that arrive over HTTP, and the Worker never loads it.

Where files may go. The vault path the caller gives must lie inside one of the allowed roots
(``VID2CONTEXT_FILE_ROOTS``, comma-separated; by default the current directory), judged after
resolving ``..`` and every symlink, so ``../x``, an absolute path elsewhere, or a symlink inside a
root that points outside are all refused. A relative vault path is taken relative to the first
root. The notes and their names come from ``exports/notes.py`` (what ``POST
/api/v1/exports/obsidian`` answers on both runtimes), and each note is written to a temporary file
in the vault and moved into place, so a symlink planted at a note's name is replaced, never
followed.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from ..errors import ErrorCode, VidError
from ..models import VideoContext
from .notes import safe_name, vault_notes

__all__ = ["allowed_roots", "export_notes", "resolve_vault", "write_notes"]

_ROOTS_HINT = (
    "Give a folder inside {roots} as vaultPath, or tell the user to add its parent to "
    "VID2CONTEXT_FILE_ROOTS (comma-separated)."
)


def allowed_roots(setting: str | None) -> list[Path]:
    """The folders exports may write under, resolved (symlinks followed); the current directory
    when ``setting`` is unset. Roots that do not exist are left out."""
    raw = [part.strip() for part in (setting or "").split(",") if part.strip()] or [os.getcwd()]
    roots = []
    for part in raw:
        root = Path(os.path.realpath(os.path.expanduser(part)))
        if root.is_dir() and root not in roots:
            roots.append(root)
    return roots


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def resolve_vault(vault_path: str, roots: Sequence[Path]) -> Path:
    """The vault folder for ``vault_path``, created if missing; ``forbidden`` outside the roots."""
    shown = ", ".join(str(root) for root in roots) or "(none)"
    if (
        not isinstance(vault_path, str)
        or not vault_path.strip()
        or "\x00" in vault_path
        or len(vault_path) > 4096
    ):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "vaultPath must be a folder path.",
            hint="Give the folder of your Obsidian vault (or a folder inside it).",
        )
    if not roots:
        raise VidError(
            ErrorCode.FORBIDDEN,
            "No allowed root exists, so nothing may be written.",
            hint="Tell the user to set VID2CONTEXT_FILE_ROOTS to existing folders (comma-separated); do not retry "
            "until then.",
        )
    given = Path(os.path.expanduser(vault_path.strip()))
    candidate = given if given.is_absolute() else roots[0] / given
    real = Path(os.path.realpath(candidate))
    if not any(_inside(real, root) for root in roots):
        raise VidError(
            ErrorCode.FORBIDDEN,
            f"vaultPath {vault_path.strip()[:200]!r} is outside the folders this server may write to.",
            hint=_ROOTS_HINT.format(roots=shown),
        )
    if real.exists() and not real.is_dir():
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"vaultPath {vault_path.strip()[:200]!r} is not a folder.",
            hint="Give a folder, not a file.",
        )
    real.mkdir(parents=True, exist_ok=True)
    checked = Path(os.path.realpath(real))  # a component swapped for a symlink meanwhile is caught here
    if not any(_inside(checked, root) for root in roots):
        raise VidError(
            ErrorCode.FORBIDDEN,
            f"vaultPath {vault_path.strip()[:200]!r} is outside the folders this server may write to.",
            hint=_ROOTS_HINT.format(roots=shown),
        )
    return checked


def write_notes(vault: Path, notes: Sequence[tuple[str, str]]) -> list[Path]:
    """Write ``(name, text)`` notes as ``<vault>/<name>.md``; each goes to a temporary file first and
    is moved into place, so nothing is written through a symlink."""
    written = []
    for name, text in notes:
        safe = safe_name(name)
        if not safe:
            raise VidError(ErrorCode.BAD_REQUEST, "A note name is empty after removing unsafe characters.")
        target = vault / f"{safe}.md"
        if target.parent != vault:  # pragma: no cover - _safe leaves no separator
            raise VidError(ErrorCode.FORBIDDEN, "A note name tried to leave the vault.")
        temporary = vault / f".{safe[:40]}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        descriptor = os.open(temporary, flags, 0o644)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
            os.replace(temporary, target)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        written.append(target)
    return written


def export_notes(
    vault_path: str,
    roots_setting: str | None,
    contexts: Sequence[VideoContext],
    *,
    title: str,
    failed: Sequence[tuple[str, VidError]] = (),
) -> tuple[Path, list[Path]]:
    """Write one note per video and the index note ``title``; the vault and the paths written."""
    vault = resolve_vault(vault_path, allowed_roots(roots_setting))
    return vault, write_notes(vault, vault_notes(contexts, title=title, failed=failed))
