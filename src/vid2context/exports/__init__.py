"""Exports to other tools: ``obsidian.py`` writes Markdown notes into a vault (local only).

Nothing is imported here, so importing the package never reaches the filesystem module; callers
import ``exports.obsidian`` inside the function that needs it.
"""
