"""The Python binding shims against Miniflare: what D1, KV and R2 really do, pinned down.

These tests record the platform behaviour ``storage/cloudflare.py`` relies on (batch atomicity,
FTS5, the KV TTL floor, D1's limits and type rules), so a Miniflare upgrade that changes any of
it fails here first, with a plain message, rather than deep inside the storage suite.
"""

from __future__ import annotations

import time

import pytest

from .cloudflare_bindings import JsArrayBuffer, JsException
from .miniflare_harness import MIGRATIONS_DIR, MiniflareHarness, apply_migrations, split_sql

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def env(cloudflare_env):
    return cloudflare_env


# --- D1 ----------------------------------------------------------------------------------------


async def test_d1_create_insert_select(env) -> None:
    db = env.DB
    await db.prepare("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL)").run()
    run = await db.prepare("INSERT INTO t (name, score) VALUES (?, ?)").bind("Ada", 1.5).run()
    assert run.meta.changes == 1
    assert run.meta.last_row_id == 1
    await db.prepare("INSERT INTO t (name, score) VALUES (?, ?)").bind("Ünïcødé ✓", 12.0).run()

    result = await db.prepare("SELECT id, name, score FROM t ORDER BY id").all()
    assert result.success is True
    assert result.to_py()["results"] == [
        {"id": 1, "name": "Ada", "score": 1.5},
        {"id": 2, "name": "Ünïcødé ✓", "score": 12},  # integral REAL reads back as int (JS number)
    ]
    assert isinstance(result.results[1].score, int)
    with pytest.raises(TypeError):
        result["results"]
    assert {"duration", "changes", "last_row_id", "rows_read"} <= set(result.meta.to_py())


async def test_d1_first_and_raw(env) -> None:
    db = env.DB
    await db.prepare("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)").run()
    await db.prepare("INSERT INTO t VALUES (?, ?), (?, ?)").bind("a", 1, "b", 2).run()
    row = await db.prepare("SELECT * FROM t WHERE k = ?").bind("b").first()
    assert row.to_py() == {"k": "b", "v": 2}
    assert row.v == 2
    assert await db.prepare("SELECT v FROM t WHERE k = ?").bind("a").first("v") == 1
    assert await db.prepare("SELECT * FROM t WHERE k = ?").bind("zzz").first() is None
    assert (await db.prepare("SELECT k, v FROM t ORDER BY k").raw()).to_py() == [["a", 1], ["b", 2]]


async def test_d1_batch_returns_one_result_per_statement(env) -> None:
    db = env.DB
    await db.exec("CREATE TABLE t (k TEXT PRIMARY KEY)")
    results = await db.batch(
        [
            db.prepare("INSERT INTO t VALUES (?)").bind("a"),
            db.prepare("INSERT INTO t VALUES (?)").bind("b"),
            db.prepare("SELECT count(*) AS n FROM t"),
        ]
    )
    assert [r.meta.changes for r in results[:2]] == [1, 1]
    assert results[2].results[0].n == 2


async def test_d1_batch_is_atomic(env) -> None:
    """A failing statement rolls back the whole batch, including the statements before it."""
    db = env.DB
    await db.exec("CREATE TABLE t (k TEXT PRIMARY KEY)")
    await db.prepare("INSERT INTO t VALUES ('kept')").run()
    with pytest.raises(JsException, match="UNIQUE constraint failed"):
        await db.batch(
            [
                db.prepare("INSERT INTO t VALUES (?)").bind("new-1"),
                db.prepare("DELETE FROM t WHERE k = ?").bind("kept"),
                db.prepare("INSERT INTO t VALUES (?)").bind("new-1"),  # duplicate: fails
                db.prepare("INSERT INTO t VALUES (?)").bind("new-2"),
            ]
        )
    rows = (await db.prepare("SELECT k FROM t ORDER BY k").all()).to_py()["results"]
    assert rows == [{"k": "kept"}]


async def test_d1_sql_error_raises_with_the_message(env) -> None:
    with pytest.raises(JsException) as caught:
        await env.DB.prepare("SELECT * FROM missing_table").all()
    assert "D1_ERROR" in caught.value.message
    assert "no such table: missing_table" in caught.value.message


async def test_d1_fts5_is_available(env) -> None:
    db = env.DB
    await db.prepare(
        "CREATE VIRTUAL TABLE docs USING fts5 (body, tag UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')"
    ).run()
    await db.batch(
        [
            db.prepare("INSERT INTO docs (rowid, body, tag) VALUES (?, ?, ?)").bind(
                1, "the rate limit is low", "a"
            ),
            db.prepare("INSERT INTO docs (rowid, body, tag) VALUES (?, ?, ?)").bind(2, "Café crème", "b"),
            db.prepare("INSERT INTO docs (rowid, body, tag) VALUES (?, ?, ?)").bind(
                3, "limit the rate, rate after rate", "c"
            ),
        ]
    )
    hits = (
        await db.prepare("SELECT rowid, tag, bm25(docs) AS score FROM docs WHERE docs MATCH ? ORDER BY score")
        .bind('"rate" AND "limit"')
        .all()
    )
    assert [row["tag"] for row in hits.to_py()["results"]] == ["c", "a"]
    accent = await db.prepare("SELECT tag FROM docs WHERE docs MATCH ?").bind('"cafe"').first("tag")
    assert accent == "b"
    snippet = (
        await db.prepare("SELECT snippet(docs, 0, '[', ']', '…', 4) AS s FROM docs WHERE docs MATCH ?")
        .bind('"creme"')
        .first("s")
    )
    assert snippet == "Café [crème]"


async def test_d1_has_the_porter_tokenizer_and_the_fts5_averages_record(env) -> None:
    """What keyword search relies on at the edge: ``porter`` stems, external content rebuilt from
    its table, and FTS5's averages record readable (rows, then tokens per column)."""
    db = env.DB
    await db.exec("CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT)")
    await db.prepare("INSERT INTO rows (id, body) VALUES (1, 'two kickstands'), (2, 'she baked bread')").run()
    await db.prepare(
        "CREATE VIRTUAL TABLE stems USING fts5 (body, content = 'rows', content_rowid = 'id', "
        "tokenize = 'porter unicode61 remove_diacritics 2')"
    ).run()
    await db.prepare("INSERT INTO stems (stems) VALUES ('rebuild')").run()
    found = (
        await db.prepare("SELECT rowid FROM stems WHERE stems MATCH ? ORDER BY rowid")
        .bind('"kickstand"')
        .raw()
    )
    assert found.to_py() == [[1]]
    assert (
        await db.prepare("SELECT rowid FROM stems WHERE stems MATCH ?").bind('"baking"').first("rowid") == 2
    )
    averages = await db.prepare("SELECT hex(block) AS h FROM stems_data WHERE id = 1").first("h")
    assert averages == "0205"  # two rows, five tokens


async def test_d1_json_functions(env) -> None:
    """``json_each`` and ``json_extract`` work: many rows (nulls included) bind as one parameter."""
    db = env.DB
    await db.exec("CREATE TABLE t (a TEXT, b REAL)")
    await (
        db.prepare(
            "INSERT INTO t (a, b) SELECT json_extract(value, '$.a'), json_extract(value, '$.b') FROM json_each(?)"
        )
        .bind('[{"a": "x", "b": 1.5}, {"a": null, "b": 2}]')
        .run()
    )
    rows = (await db.prepare("SELECT a, b FROM t ORDER BY b").all()).to_py()["results"]
    assert rows == [{"a": "x", "b": 1.5}, {"a": None, "b": 2}]


async def test_d1_bind_rejects_what_pyodide_cannot_pass(env) -> None:
    """None reaches JS as undefined; bytes and dicts as PyProxies; huge ints as BigInt."""
    stmt = env.DB.prepare("SELECT ? AS v")
    for value, kind in [(None, "undefined"), (b"x", "object"), ({"a": 1}, "object"), (2**60, "bigint")]:
        with pytest.raises(JsException, match=f"D1_TYPE_ERROR: Type '{kind}'"):
            stmt.bind(value)
    assert await env.DB.prepare("SELECT ? AS v").bind(True).first("v") == 1


async def test_d1_limits(env) -> None:
    db = env.DB
    placeholders = ", ".join("?" * 101)
    with pytest.raises(JsException, match="too many SQL variables"):
        await db.prepare(f"SELECT {placeholders}").bind(*range(101)).all()
    assert len((await db.prepare(f"SELECT {placeholders[:-3]}").bind(*range(100)).raw())[0]) == 100
    long_sql = "SELECT '" + "x" * 100_000 + "'"
    with pytest.raises(JsException, match="statement too long"):
        await db.prepare(long_sql).all()
    with pytest.raises(JsException, match="string or blob too big"):
        await db.prepare("SELECT ?").bind("x" * 2_000_001).all()


async def test_d1_enforces_foreign_keys(env) -> None:
    """D1 runs with foreign keys on: ``ON DELETE CASCADE`` fires, dangling references fail."""
    db = env.DB
    await db.exec("CREATE TABLE p (id TEXT PRIMARY KEY)")
    await db.exec("CREATE TABLE c (p TEXT REFERENCES p (id) ON DELETE CASCADE)")
    await db.batch([db.prepare("INSERT INTO p VALUES ('a')"), db.prepare("INSERT INTO c VALUES ('a')")])
    with pytest.raises(JsException, match="FOREIGN KEY constraint failed"):
        await db.prepare("INSERT INTO c VALUES ('nope')").run()
    await db.prepare("DELETE FROM p").run()
    assert await db.prepare("SELECT count(*) AS n FROM c").first("n") == 0


async def test_migrations_apply_once_like_wrangler(env, tmp_path) -> None:
    (tmp_path / "0001_a.sql").write_text(
        "-- a comment; with a semicolon\nCREATE TABLE a (x TEXT DEFAULT ';');\n"
        "CREATE VIRTUAL TABLE a_fts USING fts5 (x);\n\n-- trailing comment\n"
    )
    (tmp_path / "0002_b.sql").write_text("INSERT INTO a (x) VALUES ('one');\nCREATE TABLE b (y)")
    assert await apply_migrations(env.DB, tmp_path) == ["0001_a.sql", "0002_b.sql"]
    assert await apply_migrations(env.DB, tmp_path) == []
    names = await env.DB.prepare("SELECT name FROM d1_migrations ORDER BY id").raw()
    assert names.to_py() == [["0001_a.sql"], ["0002_b.sql"]]


async def test_a_failing_migration_leaves_nothing_behind(env, tmp_path) -> None:
    (tmp_path / "0001_bad.sql").write_text("CREATE TABLE a (x);\nCREATE TABLE a (x);\n")
    with pytest.raises(JsException, match="already exists"):
        await apply_migrations(env.DB, tmp_path)
    tables = await env.DB.prepare("SELECT name FROM sqlite_master WHERE name = 'a'").all()
    assert tables.results == []
    assert await env.DB.prepare("SELECT count(*) AS n FROM d1_migrations").first("n") == 0


def test_split_sql_keeps_triggers_and_strings_whole() -> None:
    text = (
        "CREATE TABLE t (x TEXT DEFAULT 'a;b'); -- note; here\n"
        "CREATE TRIGGER tr AFTER INSERT ON t BEGIN\n  UPDATE t SET x = 'y;';\n  SELECT 1;\nEND;\n"
        "-- only a comment;\n"
        "SELECT 2"
    )
    statements = split_sql(text)
    assert len(statements) == 3
    assert statements[1].startswith("CREATE TRIGGER") and statements[1].endswith("END;")
    assert statements[2] == "SELECT 2"


# --- KV ----------------------------------------------------------------------------------------


async def test_kv_round_trip_and_delete(env) -> None:
    kv = env.KV
    assert await kv.get("missing") is None
    await kv.put("k", "välue ✓")
    assert await kv.get("k") == "välue ✓"
    await kv.delete("k")
    assert await kv.get("k") is None
    await kv.delete("k")  # deleting a missing key is fine


async def test_kv_ttl_is_recorded_and_has_a_floor(env) -> None:
    kv = env.KV
    before = int(time.time())
    await kv.put("limited", "1", expirationTtl=60)
    await kv.put("forever", "2")
    listed = (await kv.list(prefix="")).to_py()
    keys = {k["name"]: k for k in listed["keys"]}
    assert before + 60 <= keys["limited"]["expiration"] <= int(time.time()) + 61
    assert "expiration" not in keys["forever"]
    assert listed["list_complete"] is True
    with pytest.raises(JsException, match="Expiration TTL must be at least 60"):
        await kv.put("too-short", "x", expirationTtl=59)


async def test_kv_metadata_and_prefix_list(env) -> None:
    kv = env.KV
    await kv.put("rate:a", "1", expiration=int(time.time()) + 120, metadata={"exp": 123})
    await kv.put("rate:b", "2")
    await kv.put("other", "3")
    got = await kv.getWithMetadata("rate:a")
    assert got.value == "1" and got.metadata.to_py() == {"exp": 123}
    missing = await kv.getWithMetadata("nope")
    assert missing.value is None and missing.metadata is None
    names = [k.name for k in (await kv.list(prefix="rate:")).keys]
    assert names == ["rate:a", "rate:b"]


async def test_kv_positional_options_are_refused(env) -> None:
    with pytest.raises(TypeError, match="keyword arguments"):
        await env.KV.put("k", "v", {"expirationTtl": 60})


# --- R2 ----------------------------------------------------------------------------------------


async def test_r2_round_trips_binary_data(env) -> None:
    bucket = env.BUCKET
    data = bytes(range(256)) * 4096  # 1 MiB, every byte value
    stored = await bucket.put("uploads/a.bin", data, httpMetadata={"contentType": "application/x-test"})
    assert stored.size == len(data)
    got = await bucket.get("uploads/a.bin")
    body = await got.arrayBuffer()
    assert isinstance(body, JsArrayBuffer) and body.to_bytes() == data
    assert got.httpMetadata.contentType == "application/x-test"
    assert got.size == len(data)


async def test_r2_text_head_list_delete(env) -> None:
    bucket = env.BUCKET
    await bucket.put("contexts/b.json", '{"a": "ü"}', httpMetadata={"contentType": "application/json"})
    await bucket.put("contexts/a.json", b"{}")
    await bucket.put("other/x", b"")
    got = await bucket.get("contexts/b.json")
    assert await got.text() == '{"a": "ü"}'
    assert (await got.json()).to_py() == {"a": "ü"}
    assert (await bucket.head("contexts/a.json")).size == 2
    assert await bucket.head("missing") is None
    assert await bucket.get("missing") is None
    listed = await bucket.list(prefix="contexts/")
    assert [o.key for o in listed.objects] == ["contexts/a.json", "contexts/b.json"]
    assert listed.truncated is False
    no_type = await bucket.get("contexts/a.json")
    with pytest.raises(AttributeError):
        no_type.httpMetadata.contentType  # noqa: B018 - unset in JS: the property is missing
    await bucket.delete("contexts/a.json")
    await bucket.delete(["contexts/b.json", "never-there"])
    assert [o.key for o in (await bucket.list()).objects] == ["other/x"]


async def test_r2_refuses_python_objects_it_cannot_store(env) -> None:
    with pytest.raises(TypeError, match="parameter 2"):
        await env.BUCKET.put("k", {"a": 1})


# --- harness -----------------------------------------------------------------------------------


async def test_reset_forgets_everything(miniflare: MiniflareHarness, cloudflare_env) -> None:
    env = cloudflare_env
    await apply_migrations(env.DB)  # the real schema: FTS5, foreign keys, indexes
    await env.DB.exec("CREATE TABLE t (x)")
    await env.DB.exec("CREATE VIEW v AS SELECT x FROM t")
    await env.DB.exec("CREATE TRIGGER tr AFTER INSERT ON t BEGIN DELETE FROM t WHERE x IS NULL; END")
    await env.DB.batch(
        [
            env.DB.prepare(
                "INSERT INTO videos (id, seq, title, platform, context) VALUES ('a', 1, 't', 'web', '{}')"
            ),
            env.DB.prepare(
                "INSERT INTO segments (video_id, idx, start_sec, end_sec, text) VALUES ('a', 0, 0, 1, 'x')"
            ),
        ]
    )
    await env.KV.put("k", "v")
    await env.BUCKET.put("b", b"x")
    miniflare.reset()
    objects = await env.DB.prepare(
        "SELECT name FROM sqlite_master WHERE name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%'"
    ).all()
    assert objects.results == []
    assert await env.KV.get("k") is None
    assert await env.BUCKET.get("b") is None
    assert await apply_migrations(env.DB) == sorted(p.name for p in MIGRATIONS_DIR.glob("*.sql"))
