"""Reranking on this machine with fastembed's cross-encoder (``TextCrossEncoder``; local only).

The model is ``VID2CONTEXT_RERANK_MODEL`` (default ``Xenova/ms-marco-MiniLM-L-6-v2``, about 80 MB,
quick on a CPU; ``BAAI/bge-reranker-base`` is the model Workers AI serves, about 1 GB), downloaded
once into ``$VID2CONTEXT_HOME/models/fastembed`` on first use: a machine without a network path
to the model's host cannot load it, and the rung then fails with ``no-provider``, handing over to
the next rung. Like the local embedder it loads lazily and scores in a worker thread.

Not tested against a real model: no cross-encoder ships inside a package the tests can install
offline, so the tests cover the Workers AI rungs (over a stand-in that answers as documented) and
this rung's refusal to run without its model.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from typing import Any

from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..providers.speech import Tier

__all__ = ["DEFAULT_RERANK_MODEL", "LocalReranker", "is_installed"]

DEFAULT_RERANK_MODEL = "Xenova/ms-marco-MiniLM-L-6-v2"


def is_installed() -> bool:
    """Whether fastembed (the ``local`` extra) can be imported."""
    return importlib.util.find_spec("fastembed") is not None


class LocalReranker:
    service = "fastembed"
    tier: Tier = "local"
    requires: tuple[str, ...] = ()
    max_contexts = 100

    def __init__(self, *, model: str | None = None, cache_dir: str | None = None) -> None:
        self.model = model or DEFAULT_RERANK_MODEL
        self.id = f"rerank/fastembed/{self.model}"
        self.enabled = is_installed()
        self._cache_dir = cache_dir
        self._encoder: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._encoder is None:
                from fastembed.rerank.cross_encoder import TextCrossEncoder

                try:
                    self._encoder = TextCrossEncoder(model_name=self.model, cache_dir=self._cache_dir)
                except Exception as exc:  # a missing download, an unknown name: the model is not here
                    raise VidError(
                        ErrorCode.NO_PROVIDER,
                        f"The local reranking model {self.model[:80]} could not be loaded ({type(exc).__name__}).",
                        hint="Let this machine download it once (into $VID2CONTEXT_HOME/models), set "
                        "VID2CONTEXT_RERANK_MODEL to a fastembed cross-encoder it has, or search without rerank.",
                    ) from None
            return self._encoder

    async def rerank(self, query: str, texts: list[str], ctx: Ctx) -> list[float]:
        ctx.check()

        def work() -> list[float]:
            encoder = self._load()
            return [float(score) for score in encoder.rerank(query, texts, batch_size=len(texts) or 1)]

        return await asyncio.to_thread(work)
