"""Search hits as text: what the MCP tool fences and the CLI prints, and the status line after them.

Portable and pure; the MCP tool adds its own next step after the status line.
"""

from __future__ import annotations

from ..models import SearchResult, SearchResultHit
from ..timecode import format_timestamp

__all__ = ["render_hits", "status_line"]


def _range(hit: SearchResultHit) -> str:
    start = hit.window_start_sec if hit.window_start_sec is not None else hit.start_sec
    end = hit.window_end_sec if hit.window_end_sec is not None else hit.end_sec
    return f"[{format_timestamp(start)}-{format_timestamp(end)}]"


def render_hits(result: SearchResult) -> str:
    """The hits as the agent reads them: one block per hit, best first."""
    blocks = []
    for n, hit in enumerate(result.hits, 1):
        where = f' · chapter {hit.chapter_index}: "{hit.chapter_title}"' if hit.chapter_title else ""
        moment = "" if hit.window_start_sec is None else f" best at {format_timestamp(hit.start_sec)}"
        link = f" {hit.url}" if hit.url else ""
        found = "+".join(hit.sources) + (" · on screen" if hit.kind == "on_screen" else "")
        blocks.append(
            f"{n}. {hit.title or hit.video_id} ({hit.video_id}) {_range(hit)}{moment}{link}{where} · {found}\n"
            f"   {hit.snippet}"
        )
    return "\n".join(blocks)


def status_line(result: SearchResult, read: int = 0, failed: list[str] | None = None) -> str:
    """One line of ours: how many hits, which sides ran, the model, why the vector side did not."""
    meta = result.meta
    sides = " and ".join(meta.sides) or "none"
    parts = [f"Search: {len(result.hits)} hits for {meta.query[:200]!r} ({meta.mode}; ran {sides})"]
    if meta.embedding is not None and "vector" in meta.sides:
        parts.append(f"embedding model {meta.embedding.model}")
    vector = f"vector {meta.vector}"
    if meta.vector != "ok" and meta.vector_reason:
        vector += f": {meta.vector_reason}"
        if meta.vector_hint:
            vector += f" {meta.vector_hint}"
    parts.append(vector)
    if meta.rerank != "off":
        parts.append(f"rerank {meta.rerank}" + (f": {meta.rerank_reason}" if meta.rerank_reason else ""))
    parts.append(f"{meta.videos} videos searched, {meta.indexed} indexed")
    if read:
        parts.append(f"{read} read and saved first")
    if failed:
        parts.append(f"could not read {len(failed)}: {', '.join(failed[:5])}")
    parts.append(f"{meta.timings.total_ms} ms")
    return "; ".join(parts) + "."
