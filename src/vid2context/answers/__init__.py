"""Answers built with language models: the LLM ladder (``llm/``) and what uses it (``translate``;
ask, chat, briefs and the rest with the issues that follow).

Kept empty on purpose: each module is imported by name, so the Worker loads only what it uses.
"""

__all__: list[str] = []
