"""The Cloudflare stores (D1, KV, R2) against Miniflare: the whole conformance suite, plus what only
the edge has (R2 for large contexts, D1's limits, the Pyodide boundary).

Each test starts from a fresh deployment: Miniflare emptied (``harness.reset()``) and the
migrations applied through the D1 binding, as ``wrangler d1 migrations apply`` would.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import msgspec
import pytest

from tests.test_storage_conformance import *  # noqa: F403 (the conformance suite runs again here)
from tests.test_storage_conformance import (
    LEGACY_TWINS_SQL,
    FakeClock,
    check_legacy_twins,
    make_context,
    rich_context,
)
from vid2context.errors import ErrorCode, VidError
from vid2context.models import Collection, CollectionItem
from vid2context.storage.base import BlobStore, KvStore, Storage, summarize
from vid2context.storage.cloudflare import (
    INLINE_CONTEXT_BYTES,
    KV_MIN_TTL,
    CloudflareKv,
    CloudflareStorage,
    R2Blobs,
    _inline_nulls,
)

from .cloudflare_bindings import CloudflareEnv
from .miniflare_harness import MIGRATIONS_DIR, MiniflareHarness, apply_migrations

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


class _Deployment:
    """The harness of the running test (set by the autouse fixture below)."""

    harness: MiniflareHarness | None = None

    @classmethod
    def env(cls) -> CloudflareEnv:
        assert cls.harness is not None, "the miniflare fixture did not run"
        return cls.harness.env


@pytest.fixture(autouse=True)
def _fresh_deployment(miniflare: MiniflareHarness) -> MiniflareHarness:
    miniflare.reset()
    _Deployment.harness = miniflare
    return miniflare


@asynccontextmanager
async def cloudflare_storage(tmp_path: Path) -> AsyncIterator[Storage]:
    env = _Deployment.env()
    await apply_migrations(env.DB)
    store = CloudflareStorage(env.DB, bucket=env.BUCKET)
    try:
        yield store
    finally:
        await store.close()
        await env.aclose()


@asynccontextmanager
async def cloudflare_kv(tmp_path: Path, clock: FakeClock) -> AsyncIterator[KvStore]:
    env = _Deployment.env()
    try:
        yield CloudflareKv(env.KV)  # KV keeps its own (real) time
    finally:
        await env.aclose()


@asynccontextmanager
async def cloudflare_blobs(tmp_path: Path) -> AsyncIterator[BlobStore]:
    env = _Deployment.env()
    try:
        yield R2Blobs(env.BUCKET)
    finally:
        await env.aclose()


BACKENDS = {"cloudflare": cloudflare_storage}
KV_BACKENDS = {"cloudflare": cloudflare_kv}
BLOB_BACKENDS = {"cloudflare": cloudflare_blobs}
NO_FAKE_CLOCK = {"cloudflare"}  # Miniflare's KV expires keys by its own clock


# --- what only the edge has -------------------------------------------------------------------------


@pytest.fixture
async def env(cloudflare_env: CloudflareEnv) -> CloudflareEnv:
    await apply_migrations(cloudflare_env.DB)
    return cloudflare_env


def _large_context():  # type: ignore[no-untyped-def]
    texts = [f"segment {i} of a long talk about distributed systems and consensus" for i in range(9_000)]
    texts[4_321] = "the unusual word quux appears once"
    context = make_context(7, texts)
    assert len(msgspec.json.encode(context)) > INLINE_CONTEXT_BYTES
    return context


async def test_a_large_context_lives_in_r2_and_its_row_names_it(env: CloudflareEnv) -> None:
    store = CloudflareStorage(env.DB, bucket=env.BUCKET)
    context = _large_context()
    await store.put_context(context)
    row = await env.DB.prepare("SELECT context, blob_key FROM videos WHERE id = ?").bind(context.id).first()
    assert row.context is None and row.blob_key == f"contexts/{context.id}.json"
    blob = await env.BUCKET.get(row.blob_key)
    assert blob.httpMetadata.contentType == "application/json"
    assert await store.get_context(context.id) == context
    (hit,) = await store.search("quux")
    assert hit.start_sec == 4_321 * 5.0
    # Replaced by a small one: the row holds it again and the blob goes.
    small = make_context(7, ["short now"])
    await store.put_context(small)
    assert await store.get_context(context.id) == small
    assert await env.BUCKET.head(row.blob_key) is None
    # Large again, then deleted: the blob goes with the row.
    await store.put_context(context)
    assert await env.BUCKET.head(row.blob_key) is not None
    assert await store.delete_context(context.id) is True
    assert await env.BUCKET.head(row.blob_key) is None


async def test_a_large_context_without_a_bucket_is_too_large(env: CloudflareEnv) -> None:
    store = CloudflareStorage(env.DB)
    with pytest.raises(VidError) as caught:
        await store.put_context(_large_context())
    assert caught.value.code is ErrorCode.TOO_LARGE
    assert "R2" in (caught.value.hint or "")
    assert (await store.list_videos()).items == []
    await store.put_context(make_context(1, ["small is fine"]))
    assert await store.get_context("youtube:vid1") is not None


async def test_a_row_whose_blob_vanished_reads_as_not_saved(env: CloudflareEnv) -> None:
    store = CloudflareStorage(env.DB, bucket=env.BUCKET)
    context = _large_context()
    await store.put_context(context)
    await env.BUCKET.delete(f"contexts/{context.id}.json")
    assert await store.get_context(context.id) is None  # so the pipeline fetches it again
    await store.put_context(context)
    assert await store.get_context(context.id) == context


async def test_a_save_is_one_batch_all_or_nothing(env: CloudflareEnv) -> None:
    store = CloudflareStorage(env.DB, bucket=env.BUCKET)
    await store.put_context(make_context(1, ["first words"]))
    # Sabotage the last statement of the next save: nothing of it may land.
    await env.DB.exec("DROP TABLE segments_fts")
    with pytest.raises(Exception, match="no such table: segments_fts"):
        await store.put_context(make_context(1, ["second words"], title="Second"))
    rows = await env.DB.prepare("SELECT title FROM videos").raw()
    assert rows.to_py() == [["Video 1"]]
    texts = await env.DB.prepare("SELECT text FROM segments").raw()
    assert texts.to_py() == [["first words"]]


async def test_nulls_are_sent_as_sql_not_as_undefined(env: CloudflareEnv) -> None:
    """The bindings refuse ``None`` (Pyodide makes it ``undefined``): every optional field still saves."""
    store = CloudflareStorage(env.DB, bucket=env.BUCKET)
    context = make_context(1)  # no transcript: origin, language, url, channel ... are None
    await store.put_context(context)
    assert await store.get_summaries([context.id]) == [summarize(context)]
    row = await env.DB.prepare("SELECT url, channel, origin FROM videos").first()
    assert row.to_py() == {"url": None, "channel": None, "origin": None}


def test_inline_nulls_rewrites_only_placeholders() -> None:
    sql = "SELECT '?', \"?\", ? /* ? */, ? -- ?\n, ?"
    assert _inline_nulls(sql, ("a", None, 3)) == ("SELECT '?', \"?\", ? /* ? */, NULL -- ?\n, ?", ("a", 3))
    assert _inline_nulls("SELECT ?", (1,)) == ("SELECT ?", (1,))


async def test_transcripts_are_written_in_few_statements_within_d1_limits(env: CloudflareEnv) -> None:
    """600 segments go in as a handful of statements, each under D1's parameter and size limits
    (the harness enforces them, so a breach would fail the save)."""
    store = CloudflareStorage(env.DB, bucket=env.BUCKET)
    texts = [f"segment {i} " + "wörds " * 20 for i in range(600)]
    await store.put_context(make_context(1, texts))
    assert await env.DB.prepare("SELECT count(*) AS n FROM segments").first("n") == 600
    assert await env.DB.prepare("SELECT count(*) AS n FROM segments_fts").first("n") == 600
    assert len(await store.search("segment 599")) == 1


async def test_seq_cursor_beyond_javascript_integers_is_still_a_page(env: CloudflareEnv) -> None:
    from vid2context.storage.common import encode_cursor

    store = CloudflareStorage(env.DB)
    await store.put_context(make_context(1))
    page = await store.list_videos(cursor=encode_cursor(2**62))
    assert [s.id for s in page.items] == ["youtube:vid1"]


async def test_items_upsert_survives_many_rows(env: CloudflareEnv) -> None:
    store = CloudflareStorage(env.DB)
    await store.put_collection(Collection(id="c1", name="big"))
    items = [
        CollectionItem(
            video_id=f"youtube:v{i:05d}", input="x" * 100, added_at=f"2026-01-01T00:00:{i % 60:02d}Z"
        )
        for i in range(3_000)
    ]
    await store.put_items("c1", items)
    listed = await store.list_items("c1")
    assert len(listed) == 3_000
    assert (await store.get_collection("c1")).video_count == 3_000  # type: ignore[union-attr]


async def test_rich_context_summary_numbers_are_floats(env: CloudflareEnv) -> None:
    """D1 hands back ``19.0`` as the JS number 19; summaries and hits still carry floats."""
    store = CloudflareStorage(env.DB)
    await store.put_context(rich_context())
    (summary,) = await store.get_summaries(["youtube:jNQXAC9IVRw"])
    assert isinstance(summary.duration_sec, float)
    assert msgspec.json.encode(summary) == msgspec.json.encode(summarize(rich_context()))
    (hit,) = await store.search("elephants")
    assert isinstance(hit.start_sec, float) and isinstance(hit.end_sec, float)


# --- KV: TTL as Cloudflare has it ------------------------------------------------------------------


async def test_kv_ttl_is_recorded_with_the_60_second_floor(env: CloudflareEnv) -> None:
    kv = CloudflareKv(env.KV)
    before = int(time.time())
    await kv.put("short", "v", ttl=5)  # raised to KV's minimum
    await kv.put("hour", "v", ttl=3600)
    after = int(time.time())  # KV counts from its own reading of this clock, in whole seconds
    await kv.put("forever", "v")
    keys = {k["name"]: k for k in (await env.KV.list()).to_py()["keys"]}
    assert before + KV_MIN_TTL <= keys["short"]["expiration"] <= after + KV_MIN_TTL
    assert before + 3600 <= keys["hour"]["expiration"] <= after + 3600
    assert "expiration" not in keys["forever"]
    assert await kv.get("short") == "v"


async def test_kv_incr_keeps_the_expiry_of_the_first_write(env: CloudflareEnv) -> None:
    start = 1_900_000_000
    clock = FakeClock(start)
    kv = CloudflareKv(env.KV, clock=clock)
    assert await kv.incr("rate", ttl=600) == 1
    clock.advance(100)
    assert await kv.incr("rate", ttl=600) == 2
    before = int(time.time())
    assert await kv.incr("rate", 5) == 7  # the last write: KV's expiry counts from it
    after = int(time.time())
    (key,) = (await env.KV.list(prefix="rate")).to_py()["keys"]
    assert key["metadata"]["expiration"] == start + 600  # not pushed back by the later increments
    # KV itself holds the remaining 500 s, counted on its own clock (a relative TTL, so clock skew
    # between the isolate and KV can never make KV refuse the write).
    assert before + 500 <= key["expiration"] <= after + 500
    assert await kv.get("rate") == "7"


async def test_kv_incr_is_atomic_across_tasks_of_one_isolate(env: CloudflareEnv) -> None:
    kv = CloudflareKv(env.KV)
    results = await asyncio.gather(*(kv.incr("hits", ttl=60) for _ in range(20)), kv.incr("other"))
    assert sorted(results[:-1]) == list(range(1, 21)) and results[-1] == 1


async def test_collections_made_before_names_were_unique_migrate_and_stay_usable(
    cloudflare_env: CloudflareEnv, tmp_path: Path
) -> None:
    """A D1 database with twin names (made before the rule) takes the migration as ``wrangler d1
    migrations apply`` runs it, and the store keeps working with the twins."""
    first_only = tmp_path / "migrations"
    first_only.mkdir()
    (first_only / "0001_init.sql").write_text((MIGRATIONS_DIR / "0001_init.sql").read_text(encoding="utf-8"))
    assert await apply_migrations(cloudflare_env.DB, first_only) == ["0001_init.sql"]
    for statement in LEGACY_TWINS_SQL:
        await cloudflare_env.DB.prepare(statement).run()
    later = sorted(p.name for p in MIGRATIONS_DIR.glob("*.sql"))[1:]
    assert await apply_migrations(cloudflare_env.DB) == later
    await check_legacy_twins(CloudflareStorage(cloudflare_env.DB, bucket=cloudflare_env.BUCKET))


async def test_libraries_saved_before_stemming_are_found_by_stems(
    cloudflare_env: CloudflareEnv, tmp_path: Path
) -> None:
    """On D1 as ``wrangler d1 migrations apply`` runs it: 0003 builds the stemmed index from the
    segments saved before it, in the same batch, and the store keeps both indexes in step."""
    from tests.test_storage_conformance import check_legacy_search, legacy_video_sql

    before = tmp_path / "migrations"
    before.mkdir()
    for name in ("0001_init.sql", "0002_collection_names.sql"):
        (before / name).write_text((MIGRATIONS_DIR / name).read_text(encoding="utf-8"))
    await apply_migrations(cloudflare_env.DB, before)
    db = cloudflare_env.DB
    await db.batch(
        [db.prepare(sql).bind(*params) if params else db.prepare(sql) for sql, params in legacy_video_sql()]
    )
    assert "0003_keyword_stems.sql" in await apply_migrations(db)
    await check_legacy_search(CloudflareStorage(db, bucket=cloudflare_env.BUCKET))
    for index in ("segments_fts", "segments_stem"):
        await db.prepare(f"INSERT INTO {index} ({index}) VALUES ('integrity-check')").run()
