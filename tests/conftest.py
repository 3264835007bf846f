"""Shared test fixtures.

The recorded upstream material lives in ``tests/fixtures`` (its README says what each file is and
where it came from); tests read it from there and never touch the network.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# fastembed (and the Hugging Face hub under it) read only what is on disk: a test that reaches a
# named model's download fails at once, in this process and in every CLI or server it starts.
os.environ["HF_HUB_OFFLINE"] = "1"

# The offline embedding test model's folder (all-MiniLM-L6-v2 from two dev packages): `embed_model_dir`.
from .embed_model import embed_model_dir  # noqa: F401

# The Miniflare harness (real D1, KV and R2 offline): fixtures `miniflare` (session), `cloudflare_env`.
from .miniflare_harness import cloudflare_env, miniflare  # noqa: F401

# Runtimes of every kind (memory, sqlite, worker) for the contract suites: `runtime_kind`, `runtimes`.
from .runtimes import runtime_kind, runtimes  # noqa: F401

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def _logging_stays_enabled() -> Iterator[None]:
    """Fail the test that leaves ``logging.disable`` in force. It is process-wide: every later test
    on the same xdist worker would log nothing, and a test that checks a warning fails far from
    the cause, only when the two files share a worker (a build script run in-process did this)."""
    yield
    left = logging.root.manager.disable
    if left:
        logging.disable(logging.NOTSET)
        pytest.fail(f"the test left logging.disable({left}) in force: restore the level it found")


@pytest.fixture
def anyio_backend() -> str:
    """``@pytest.mark.anyio`` tests run on asyncio only (the Worker's event loop)."""
    return "asyncio"


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """``tests/fixtures``: recorded responses and media; fails loudly when it is missing."""
    if not (FIXTURES / "README.md").is_file():
        pytest.fail(f"test fixtures not found at {FIXTURES}")
    return FIXTURES
