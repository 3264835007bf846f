"""Shared test fixtures.

The recorded upstream material lives beside the project, in ``../shared/fixtures`` (see its
README); tests read it from there and never touch the network.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"


@pytest.fixture
def anyio_backend() -> str:
    """``@pytest.mark.anyio`` tests run on asyncio only (the Worker's event loop)."""
    return "asyncio"


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """``../shared/fixtures`` relative to the project root; fails loudly when it is missing."""
    if not (SHARED_FIXTURES / "README.md").is_file():
        pytest.fail(f"shared fixtures not found at {SHARED_FIXTURES}")
    return SHARED_FIXTURES


# The Miniflare harness (real D1, KV and R2 offline): fixtures `miniflare` (session), `cloudflare_env`.
from .miniflare_harness import cloudflare_env, miniflare  # noqa: F401

# Runtimes of every kind (memory, sqlite, worker) for the contract suites: `runtime_kind`, `runtimes`.
from .runtimes import runtime_kind, runtimes  # noqa: F401
