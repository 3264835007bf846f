"""Language models: conversations in, text out, as a ladder of rungs.

``base`` holds the ``LanguageModel`` protocol and its shapes (``Completion``, ``Delta``,
``LlmOptions``); ``rungs`` builds the portable rungs and the policies' orders; ``ladder`` picks
the rungs of one request (``plan_llm``) and walks them (``complete``, ``stream``). One module per
rung: ``groq`` (the SDK, local), ``openai_compat`` (httpx; Groq on the Worker too),
``workers_ai`` (REST and the binding), ``sampling`` (the MCP client's model); ``sse`` reads the
event streams they answer. Modules are imported by name (``ladder`` needs the runtime, which needs
``rungs``), so this file imports nothing.
"""

__all__: list[str] = []
