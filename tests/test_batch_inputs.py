"""``batch_inputs.request_inputs``: the one check of what /pack, /bundle, the exports and the
duplicates check name, each surface in its own words, its collection in its own place."""

from __future__ import annotations

import pytest

from vid2context import library
from vid2context.api.packs import PackRequest, _body_inputs
from vid2context.errors import VidError
from vid2context.exports.gather import named_inputs
from vid2context.integrations.duplicates import check_inputs

from .duplicate_cases import talk
from .runtimes import Runtimes
from .test_indexing import QUIET

pytestmark = pytest.mark.anyio

MANY = [f"vid{i:08d}" for i in range(101)]
SPLIT = "Give inputs of at most 100 videos per request, and send the rest in further requests."


async def with_collection(runtimes: Runtimes) -> tuple[object, str]:
    runtime = await runtimes.build(QUIET)
    for name, topic in (("Saved000001", "for"), ("Saved000002", "while")):
        await runtime.storage.put_context(talk(name, topic))
    made = await library.create_collection(runtime, "Two talks")
    await library.add_to_collection(runtime, made.id, ["Saved000001", "Saved000002"])
    return runtime, made.id


async def test_each_surface_refuses_too_many_in_its_own_words(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)
    with pytest.raises(VidError) as pack:
        await _body_inputs(runtime, PackRequest(inputs=MANY))
    with pytest.raises(VidError) as export:
        await named_inputs(runtime, MANY, None)
    with pytest.raises(VidError) as compare:
        await check_inputs(runtime, MANY, None)
    assert (pack.value.code.value, pack.value.message, pack.value.hint) == (
        "too-large", "This request names 101 videos; the limit is 100.", SPLIT
    )  # fmt: skip
    assert (export.value.code.value, export.value.message, export.value.hint) == (
        "too-large", "This export names 101 videos; the limit is 100.", SPLIT
    )  # fmt: skip
    assert compare.value.message == "This request names 101 videos; at most 100 are compared at once."
    assert compare.value.hint_for("rest") == (
        "Split the inputs (with the collectionId's videos) into requests of at most 100."
    )
    assert (
        compare.value.hint_for("mcp")
        == "Split the urls (with the collection's videos) into calls of at most 100."
    )


async def test_each_surface_refuses_nothing_in_its_own_words(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)
    messages = []
    for call in (
        _body_inputs(runtime, PackRequest(inputs=[])),
        named_inputs(runtime, ["", "  "], None),
        check_inputs(runtime, [], None),
    ):
        with pytest.raises(VidError) as caught:
            await call
        assert caught.value.code.value == "bad-request" and caught.value.hint
        messages.append(caught.value.message)
    assert messages == [
        "No videos to read.",
        "No videos to export.",
        "No videos to compare: neither inputs nor a collection with videos was given.",
    ]


async def test_the_collection_goes_where_each_surface_puts_it(runtimes: Runtimes) -> None:
    runtime, collection = await with_collection(runtimes)
    saved = ["youtube:Saved000001", "youtube:Saved000002"]
    assert await _body_inputs(runtime, PackRequest(inputs=["Given000001"], collection_id=collection)) == [
        "Given000001", *saved
    ]  # fmt: skip
    assert await named_inputs(runtime, ["Given000001"], collection) == ([*saved, "Given000001"], "Two talks")
    assert await named_inputs(runtime, ["Given000001"], None) == (["Given000001"], "vid2context export")
    assert await check_inputs(runtime, ["Given000001", "youtube:Saved000001"], collection) == [
        *saved, "Given000001"
    ]  # fmt: skip
    with pytest.raises(VidError) as unknown:
        await named_inputs(runtime, [], "col_unknown")
    assert unknown.value.code.value == "not-found"


async def test_the_whole_is_counted_again_where_it_was_before(runtimes: Runtimes) -> None:
    runtime, collection = await with_collection(runtimes)
    given = MANY[:99]
    with pytest.raises(VidError) as pack:
        await _body_inputs(runtime, PackRequest(inputs=given, collection_id=collection))
    assert pack.value.message == "This request names 101 videos; the limit is 100."
    inputs, _ = await named_inputs(runtime, given, collection)  # lists are bounded when read, not here
    assert len(inputs) == 101
