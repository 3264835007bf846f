"""The tools, one module per group; each module's ``tools(deps)`` returns its tools in order."""

from __future__ import annotations

from ..toolkit import ContractTool, Deps
from . import (
    answers,
    ask,
    catalog,
    choose,
    collections,
    duplicates,
    exports,
    jobs,
    lists,
    live,
    packs,
    research,
    search,
    skips,
    transcripts,
    viewer,
)

__all__ = ["all_tools"]

MODULES = (
    search,
    ask,
    transcripts,
    lists,
    packs,
    catalog,
    collections,
    exports,
    jobs,
    research,
    answers,
    skips,
    duplicates,
    choose,
    viewer,
    live,
)


def all_tools(deps: Deps) -> list[ContractTool]:
    return [tool for module in MODULES for tool in module.tools(deps)]
