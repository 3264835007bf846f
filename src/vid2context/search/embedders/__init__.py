"""Embedders: texts in, vectors out, each tagged with the space it belongs to.

``base`` holds the ``Embedder`` protocol and the runner every rung's work goes through; ``rungs``
builds the portable ladder; ``ladder`` picks the rungs of a library's space and walks them
(``pick_embedder``, ``embed_texts``). One module per rung: ``fastembed_local`` (local only),
``workers_ai``, ``openai_compat``. Modules are imported by name (``ladder`` needs the runtime,
which needs ``base``), so this file imports nothing.
"""

__all__: list[str] = []
