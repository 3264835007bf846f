"""Chapters for videos that have none (``POST /api/v1/chapters``).

``core.make_chapters`` is the one entry point; ``texttiling`` finds where the subject changes,
``lexical`` the words that carry it (cohesion and key-phrase titles), ``titles`` asks the
language-model ladder to name the chapters.
"""

from .core import PRODUCER, ChaptersRequest, ChaptersResult, make_chapters

__all__ = ["PRODUCER", "ChaptersRequest", "ChaptersResult", "make_chapters"]
