"""Answers built with language models: the LLM ladder (``llm/``) and what uses it (``translate``;
``grounding`` and ``citations``, on which ``ask`` (``/ask``, ``/chat``, MCP ``ask``) is built; briefs
and the rest with the issues that follow).

Kept empty on purpose: each module is imported by name, so the Worker loads only what it uses.
"""

__all__: list[str] = []
