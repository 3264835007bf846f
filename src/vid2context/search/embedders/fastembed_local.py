"""Embeddings on this machine with fastembed (ONNX Runtime, no PyTorch; local only, the ``local`` extra).

Two ways to name the model:

- ``VID2CONTEXT_EMBED_MODEL``: a fastembed model name (default ``BAAI/bge-small-en-v1.5``, CLS
  pooling, 384 dimensions: the model Workers AI serves as ``@cf/baai/bge-small-en-v1.5``),
  downloaded once into ``$VID2CONTEXT_HOME/models/fastembed``. fastembed's copy of bge-small is
  an int8-quantised export, so its vectors are close to, not equal to, Workers AI's.
- ``VID2CONTEXT_EMBED_MODEL_DIR``: a folder holding ``model.onnx`` (a BERT-style encoder whose
  first output is the token vectors), ``tokenizer.json``, ``config.json``,
  ``tokenizer_config.json`` and ``special_tokens_map.json``. Nothing is downloaded. Pooling is
  ``VID2CONTEXT_EMBED_POOLING``, else what the folder's ``1_Pooling/config.json`` (a
  sentence-transformers export) says, else ``cls``.

Which space the vectors belong to (``model_id``), so that vectors of different models never mix:

- a named model: its name (``BAAI/bge-small-en-v1.5``), the name every other rung of that model
  uses too;
- a folder with ``VID2CONTEXT_EMBED_MODEL`` also set: that name. Naming a folder is a promise that
  it holds that model: its vectors are compared with that model's from any rung;
- a folder alone: ``local:`` and 16 hex digits of the SHA-256 of its ``model.onnx`` and
  ``tokenizer.json``, the two files that decide the vectors. The same files anywhere are the same
  space; any change to either is a new one. Hashing takes about 25 ms for a 23 MB model, once per
  process, when the id is first asked for.

fastembed is synchronous and CPU-bound: the model is loaded on first use and every batch runs
in a worker thread (``asyncio.to_thread``), one batch at a time, so the event loop keeps serving
and a canceled call stops between batches. A single text (a search's query) runs on a second
session of one thread, loaded on first use (``_run`` says why). Texts longer than the model's 512 tokens are cut there.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import os
import threading
from collections.abc import Sequence
from functools import cached_property
from typing import Any

from ...ctx import Ctx
from ...errors import ErrorCode, VidError
from ...models import Pooling
from ...providers.speech import Tier

__all__ = ["DEFAULT_MODEL", "FOLDER_FILES", "FastEmbedder", "is_installed"]

DEFAULT_MODEL = "BAAI/bge-small-en-v1.5"
FOLDER_FILES = (
    "model.onnx",
    "tokenizer.json",
    "config.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
)
"""What a model folder must hold (fastembed reads the tokenizer and its three config files)."""
KNOWN: dict[str, tuple[int, Pooling]] = {
    "BAAI/bge-small-en-v1.5": (384, "cls"),
    "BAAI/bge-base-en-v1.5": (768, "cls"),
    "BAAI/bge-large-en-v1.5": (1024, "cls"),
    "sentence-transformers/all-MiniLM-L6-v2": (384, "mean"),
    "nomic-ai/nomic-embed-text-v1.5": (768, "mean"),
}
"""Dimension and pooling of fastembed models worth knowing without importing fastembed (about a
second); any other name is looked up in fastembed's own registry when the rung is built."""
MAX_BATCH = 32
"""Texts per thread hop: about a tenth of a second of 250-word windows on two cores."""
_HINT = (
    "Point VID2CONTEXT_EMBED_MODEL_DIR at a folder with model.onnx and tokenizer.json (nothing is "
    "downloaded), or set VID2CONTEXT_EMBED_MODEL to a fastembed model name this machine can download."
)


def is_installed() -> bool:
    """Whether fastembed (the ``local`` extra) can be imported."""
    return importlib.util.find_spec("fastembed") is not None


def _setting_error(message: str, hint: str = _HINT) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)


def _folder_pooling(folder: str) -> Pooling | None:
    """The pooling a sentence-transformers export names in ``1_Pooling/config.json``, if any."""
    path = os.path.join(folder, "1_Pooling", "config.json")
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError):
        return None
    if config.get("pooling_mode_cls_token"):
        return "cls"
    if config.get("pooling_mode_mean_tokens"):
        return "mean"
    return None


def _folder_dim(folder: str) -> int:
    try:
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as handle:
            dim = json.load(handle).get("hidden_size")
    except (OSError, ValueError):
        dim = None
    if not isinstance(dim, int) or dim < 1:
        raise _setting_error(
            f"The embedding model folder {os.path.basename(folder)} has no hidden_size in its config.json.",
            hint="Use the config.json that came with model.onnx (a BERT-style encoder's).",
        )
    return dim


def _fastembed_pooling(cls: type, name: str) -> Pooling | None:
    """How the fastembed class ``cls`` pools ``name``: ``cls``, ``mean``, or ``None`` for a
    kind of model (image, sparse, last-token) this rung does not run."""
    from fastembed.text.custom_text_embedding import CustomTextEmbedding
    from fastembed.text.onnx_embedding import OnnxTextEmbedding
    from fastembed.text.pooled_embedding import PooledEmbedding

    if issubclass(cls, CustomTextEmbedding):
        config = cls.POSTPROCESSING_MAPPING.get(name)
        kind = getattr(getattr(config, "pooling", None), "value", None)
        return {"CLS": "cls", "MEAN": "mean"}.get(str(kind))
    if issubclass(cls, PooledEmbedding):
        return "mean"
    if cls is OnnxTextEmbedding:
        return "cls"
    return None


class FastEmbedder:
    """``Embedder`` with a fastembed model on the CPU."""

    service = "fastembed"
    provider = "embed-local"
    name = "Local embeddings (fastembed)"
    tier: Tier = "local"
    requires: tuple[str, ...] = ()
    """Nothing: the default model works as installed (it downloads once)."""

    def __init__(
        self,
        *,
        model: str | None = None,
        folder: str | None = None,
        pooling: Pooling | None = None,
        cache_dir: str | None = None,
        threads: int | None = None,
        max_batch: int = MAX_BATCH,
    ) -> None:
        """Checks the settings at once (a folder's files, a pooling the model cannot have):
        ``bad-request`` naming the variable, which stops start-up as a malformed setting does."""
        self.enabled = True
        self.max_batch = max(1, max_batch)
        self._named = model.strip() if model and model.strip() else None
        self._folder = os.path.abspath(os.path.expanduser(folder)) if folder else None
        self._cache_dir = cache_dir
        self._threads = threads
        self._asked_pooling = pooling
        self._loaded: Any = None
        self._single: Any = None
        self._lock = threading.Lock()  # not an asyncio lock: the rung outlives event loops in tests
        self._single_lock = threading.Lock()
        if self._folder is not None:
            missing = [name for name in FOLDER_FILES if not os.path.isfile(os.path.join(self._folder, name))]
            if not os.path.isdir(self._folder) or missing:
                what = "does not exist" if not os.path.isdir(self._folder) else "lacks " + ", ".join(missing)
                raise _setting_error(f"VID2CONTEXT_EMBED_MODEL_DIR {self._folder} {what}.")
            self.model = self._named or os.path.basename(self._folder.rstrip(os.sep)) or "model"
            self.dim: int | None = _folder_dim(self._folder)
            self.pooling: Pooling = pooling or _folder_pooling(self._folder) or "cls"
        else:
            self.model = self._named or DEFAULT_MODEL
            known = KNOWN.get(self.model)
            if known is not None and pooling is not None and pooling != known[1]:
                raise _setting_error(
                    f"fastembed's {self.model} pools with {known[1]}, and VID2CONTEXT_EMBED_POOLING "
                    f"asks for {pooling}.",
                    hint="Unset VID2CONTEXT_EMBED_POOLING, or load the model from a folder "
                    "(VID2CONTEXT_EMBED_MODEL_DIR), where the pooling is yours to choose.",
                )
            self.dim = known[0] if known else None
            self.pooling = known[1] if known else (pooling or "cls")
            if known is None:
                self._describe_named()  # any other name: fastembed's registry says (imports it)
        self.id = f"embed/fastembed/{self.model}"

    def _describe_named(self) -> None:
        from fastembed import TextEmbedding

        for cls in TextEmbedding.EMBEDDINGS_REGISTRY:
            for description in cls._list_supported_models():
                if description.model.lower() != self.model.lower():
                    continue
                own = _fastembed_pooling(cls, description.model)
                if own is None:
                    raise _setting_error(
                        f"VID2CONTEXT_EMBED_MODEL={self.model} is not a text model pooled with cls or mean."
                    )
                if self._asked_pooling is not None and self._asked_pooling != own:
                    raise _setting_error(
                        f"fastembed's {self.model} pools with {own}, and VID2CONTEXT_EMBED_POOLING asks "
                        f"for {self._asked_pooling}.",
                        hint="Unset VID2CONTEXT_EMBED_POOLING, or load the model from a folder "
                        "(VID2CONTEXT_EMBED_MODEL_DIR), where the pooling is yours to choose.",
                    )
                self.model, self.dim, self.pooling = description.model, description.dim, own
                return
        raise _setting_error(f"fastembed knows no model named {self.model[:80]}.")

    @cached_property
    def model_id(self) -> str:
        if self._folder is None or self._named is not None:
            return self.model
        digest = hashlib.sha256()
        for name in ("model.onnx", "tokenizer.json"):
            with open(os.path.join(self._folder, name), "rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
        return "local:" + digest.hexdigest()[:16]

    def _load(self, *, single: bool = False) -> Any:
        """The model's session: ``single``, the one-thread session that embeds one text at a time
        (a search's query; see ``_run``), else the one for batches (``threads`` of them)."""
        with self._lock:
            if single and self._threads is None:
                if self._single is None:
                    self._single = self._session(1)
                return self._single
            if self._loaded is None:
                self._loaded = self._session(self._threads)
            return self._loaded

    def _session(self, threads: int | None) -> Any:
        from fastembed import TextEmbedding
        from loguru import logger

        # fastembed logs each failed download to stderr itself; the failure reaches the caller
        # as this rung's error with its hint, and a CLI's stderr stays its own.
        logger.disable("fastembed")
        try:
            if self._folder is not None:
                return TextEmbedding(
                    model_name=self._register_folder(TextEmbedding),
                    specific_model_path=self._folder,
                    threads=threads,
                )
            return TextEmbedding(model_name=self.model, cache_dir=self._cache_dir, threads=threads)
        except Exception as exc:  # noqa: BLE001  onnxruntime, tokenizers and the hub raise many kinds
            raise VidError(
                ErrorCode.NO_PROVIDER,
                f"The local embedding model {self.model} could not be loaded ({type(exc).__name__}).",
                hint=_HINT,
            ) from None

    def _register_folder(self, text_embedding: Any) -> str:
        """The folder's model registered with fastembed under a name of its own: fastembed keeps
        one registry per process and refuses a name twice, so the name is the space's."""
        from fastembed.common.model_description import ModelSource, PoolingType

        name = f"vid2context/{self.model_id.replace(':', '-')}-{self.pooling}"
        if not any(d["model"].lower() == name.lower() for d in text_embedding.list_supported_models()):
            text_embedding.add_custom_model(
                model=name,
                pooling=PoolingType.CLS if self.pooling == "cls" else PoolingType.MEAN,
                normalization=True,
                sources=ModelSource(hf=name),
                dim=self.dim,
                model_file="model.onnx",
            )
        return name

    def _run(self, texts: list[str]) -> list[Any]:
        # One text (a search's query) goes through a session of one thread: ONNX Runtime's pool
        # spins its threads between runs, which for a single sentence doubled the CPU a search
        # took (bench_search: hybrid CPU median 62 -> 37 ms) and took a core from the keyword
        # side running beside it. The sentence alone takes longer on one thread (6.7 against
        # 4.1 ms), the hybrid search less. Batches keep every thread.
        single = len(texts) == 1 and self._threads is None
        model = self._load(single=single)
        with self._single_lock if single else self._lock:
            return list(model.embed(texts, batch_size=len(texts)))

    async def embed(self, texts: list[str], ctx: Ctx) -> Sequence[Sequence[float]]:
        ctx.check()
        try:
            return await asyncio.to_thread(self._run, texts)
        except VidError:
            raise
        except Exception as exc:  # noqa: BLE001  a model that loads but cannot run these inputs
            raise VidError(
                ErrorCode.NO_PROVIDER,
                f"The local embedding model {self.model} failed ({type(exc).__name__}).",
                hint=_HINT,
            ) from None
