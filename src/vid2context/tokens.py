"""Token estimates that agree with how agents budget context.

A tokenizer would be exact for one model and wrong for the next, and too heavy for the Worker, so
this is the usual English heuristic: about four characters per token, never fewer tokens than a
third of the words (short words and numbers cost a token each). Speech comes out near 12k tokens
per hour, the figure the contracts quote.
"""

from __future__ import annotations

__all__ = ["estimate_tokens"]


def estimate_tokens(text: str) -> int:
    """Estimated tokens in ``text``; 0 only for the empty string."""
    if not text:
        return 0
    by_chars = (len(text) + 3) // 4
    by_words = (len(text.split()) * 3 + 3) // 4
    return max(1, by_chars, by_words)
