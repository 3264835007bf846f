"""What a request for several videos names: the caller's inputs and/or a collection's, checked
before any video is read.

``/pack`` and ``/bundle``, the exports (REST and MCP) and the duplicates check each refused too
many inputs and no inputs with their own copy of the same few lines; this is the one copy. Each
keeps its own words (``Refusals``), which agents have been shown and tests assert. A collection
adds what reading it reads (``CollectionView.inputs``: saved videos in added order, then pending).
Lists are not expanded here: ``batch.read_videos`` bounds the distinct videos they hold.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import library
from .batch import MAX_VIDEOS
from .errors import ErrorCode, Hint, VidError
from .runtime import Runtime

__all__ = ["Refusals", "request_inputs"]


@dataclass(frozen=True, slots=True)
class Refusals:
    """One surface's words for a request that names too many videos or none."""

    none: str
    """The ``bad-request`` message when nothing is left to read."""
    hint: Hint
    """The ``bad-request`` hint: how to name videos."""
    names: str = "This request"
    """What the ``too-large`` message says names the videos."""
    limit: str = f"the limit is {MAX_VIDEOS}"
    """The ``too-large`` message's second half."""
    split: Hint = (
        f"Give inputs of at most {MAX_VIDEOS} videos per request, and send the rest in further requests."
    )
    """The ``too-large`` hint."""

    def too_many(self, count: int) -> VidError:
        return VidError(
            ErrorCode.TOO_LARGE, f"{self.names} names {count} videos; {self.limit}.", hint=self.split
        )

    def check_count(self, inputs: list[str]) -> None:
        """``too-large`` when ``inputs`` are more than ``MAX_VIDEOS``."""
        if len(inputs) > MAX_VIDEOS:
            raise self.too_many(len(inputs))


async def request_inputs(
    runtime: Runtime,
    given: list[str],
    collection_id: str | None,
    words: Refusals,
    *,
    collection_first: bool = True,
    distinct: bool = False,
    recount: bool = True,
) -> tuple[list[str], library.CollectionView | None]:
    """The inputs to read and the collection they came with (``None`` without one).

    ``given`` (already cleaned by the caller) is refused beyond ``MAX_VIDEOS`` before the
    collection is looked up (``not-found`` for an unknown one). The collection's inputs go before
    ``given`` or, with ``collection_first=False``, after; ``distinct`` keeps the first of each
    repeated input. Nothing at all is ``bad-request``; with ``recount`` the whole is counted again.
    """
    words.check_count(given)
    view = None
    inputs = list(given)
    if collection_id is not None:
        view = await library.get_collection_view(runtime, collection_id)
        inputs = view.inputs + inputs if collection_first else inputs + view.inputs
        if distinct:
            inputs = list(dict.fromkeys(inputs))
    if not inputs:
        raise VidError(ErrorCode.BAD_REQUEST, words.none, hint=words.hint)
    if recount:
        words.check_count(inputs)
    return inputs, view
