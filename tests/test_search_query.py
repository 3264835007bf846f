"""The keyword query language (``search/query.py``), the Porter stems (``search/porter.py``) and the
pure parts of keyword ranking (``storage/keyword.py``), checked against the SQLite they imitate.

Whatever the memory store computes in Python, SQLite and D1 compute in FTS5; so each Python piece
is compared with FTS5 itself on the SQLite this runs on: tokens and stems through ``fts5vocab``,
expressions by running them, BM25 against ``bm25()``. Hypothesis supplies the inputs nobody would
think of (derandomized, so a failure repeats).
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from types import ModuleType

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vid2context.errors import ErrorCode, VidError
from vid2context.search.porter import stem
from vid2context.search.query import (
    MAX_QUERY_CHARS,
    MAX_QUERY_PHRASES,
    count_phrase,
    fts_expression,
    highlight_spans,
    parse_query,
    stems,
    token_spans,
    tokenize,
)
from vid2context.storage.keyword import (
    WINDOW,
    LibraryStats,
    bm25,
    estimate_rows_with,
    parse_averages,
)

FUZZ = settings(
    max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# Text that exercises the tokenizers: ASCII words, digits, accents, other scripts, punctuation
# that is FTS5 syntax, control characters, private use, emoji.
_ALPHABET = st.sampled_from(
    list("abcdefghijklmnopqrstuvwxyzAEIOUY0123456789  -\"'*^:()+,.{}_\t\n\x00\x01\x7f")
    + list("éèêëïöüñçÉÀ") + ["\u0301", "\ue000", "ß", "ı", "İ", "ﬁ", "Ⅻ", "①", "ⓡ", "中", "ש", "م", "🐘", "\u200d"]
)  # fmt: skip
TEXT = st.text(_ALPHABET, max_size=60)
WORDS = st.text(st.sampled_from(list("aeiouybcdlmnrstxwzg")), min_size=1, max_size=14)


def _drivers() -> list[ModuleType]:
    """This Python's ``sqlite3`` and, when installed, ``pysqlite3`` (the newer SQLite the local
    extra brings for sqlite-vec, which opens the same library file)."""
    try:
        from pysqlite3 import dbapi2
    except ImportError:
        return [sqlite3]
    return [sqlite3, dbapi2]


@pytest.fixture(scope="module", params=_drivers(), ids=lambda driver: f"sqlite-{driver.sqlite_version}")
def fts(request: pytest.FixtureRequest) -> Iterator[sqlite3.Connection]:
    """Both tokenizers our indexes use, each with an ``fts5vocab`` that lists what it indexed."""
    conn = request.param.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE exact USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2')")
    conn.execute(
        "CREATE VIRTUAL TABLE stem USING fts5 (text, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    conn.execute("CREATE VIRTUAL TABLE exact_terms USING fts5vocab (exact, 'instance')")
    conn.execute("CREATE VIRTUAL TABLE stem_terms USING fts5vocab (stem, 'instance')")
    yield conn
    conn.close()


def indexed(conn: sqlite3.Connection, table: str, text: str) -> list[str]:
    conn.execute(f"DELETE FROM {table}")
    conn.execute(f"INSERT INTO {table} (rowid, text) VALUES (1, ?)", (text,))
    rows = conn.execute(f"SELECT term FROM {table}_terms ORDER BY offset").fetchall()
    return [row[0] for row in rows]


# --- words and stems ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("kickstands", "kickstand"), ("kickstand", "kickstand"), ("baking", "bake"), ("baked", "bake"),
        ("bake", "bake"), ("bakes", "bake"), ("caresses", "caress"), ("ponies", "poni"), ("cats", "cat"),
        ("agreed", "agre"), ("hopping", "hop"), ("falling", "fall"), ("filing", "file"), ("happy", "happi"),
        ("relational", "relat"), ("generalizations", "gener"), ("sky", "sky"), ("at", "at"), ("uniq42s", "uniq42"),
        ("naive", "naiv"), ("東京s", "東京"), ("a" * 65 + "s", "a" * 65 + "s"),
    ],
)  # fmt: skip
def test_porter_stems_known_words(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_porter_agrees_with_fts5_on_every_suffix_rule(fts: sqlite3.Connection) -> None:
    """Stems of many made-up stems times every suffix the algorithm knows, in batches."""
    rng = random.Random(3)
    suffixes = (
        "s es sses ies ed eed ing at bl iz y ational tional enci anci izer logi bli alli entli eli ousli "
        "ization ation ator alism iveness fulness ousness aliti iviti biliti icate ative alize iciti ical "
        "ful ness al ance ence er ic able ible ant ement ment ent ion ou ism ate iti ous ive ize e ll lled"
    ).split()
    bases = ["".join(rng.choice("aeiouybcdlmnrstxwzg") for _ in range(rng.randint(0, 6))) for _ in range(300)]
    words = sorted({base + suffix for base in bases for suffix in suffixes} - {""})
    for start in range(0, len(words), 2000):
        batch = words[start : start + 2000]
        assert indexed(fts, "stem", " ".join(batch)) == [stem(w) for w in batch]


@FUZZ
@given(WORDS)
def test_porter_agrees_with_fts5_on_any_word(fts: sqlite3.Connection, word: str) -> None:
    assert indexed(fts, "stem", word) == [stem(word)]


@FUZZ
@given(st.text(st.characters(), min_size=1, max_size=70))
@example("\u1000ing")
@example("\ud800ings")
@example("a\u1000\u1000ing")
def test_a_stem_keeps_its_words_first_letter(word: str) -> None:
    """What lets ``stems(..., initials)`` skip words: checked on any text, not only real tokens."""
    assert stem(word)[:1] == word[:1]


@FUZZ
@given(TEXT)
@example("Café NAÏVE ﬁne İstanbul straße ①②")
@example("e-mail 3.14 text:foo NEAR(a b) \x00null")
def test_tokens_and_stems_agree_with_fts5(fts: sqlite3.Connection, text: str) -> None:
    words = tokenize(text)
    assert indexed(fts, "exact", text) == words
    assert indexed(fts, "stem", text) == stems(words)
    assert [token for token, _, _ in token_spans(text)] == words


def test_token_spans_point_into_the_text() -> None:
    text = "Baking, café-crème 🐘 and e\u0301clairs"
    assert [(token, text[start:end]) for token, start, end in token_spans(text)] == [
        ("baking", "Baking"), ("cafe", "café"), ("creme", "crème"), ("and", "and"),
        ("eclairs", "e\u0301clairs"),
    ]  # fmt: skip


# --- the query language ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "required", "excluded"),
    [
        ("rate limit", [("rate",), ("limit",)], []),
        ('"rate limit" api', [("rate", "limit"), ("api",)], []),
        ('api "rate limit', [("api",), ("rate", "limit")], []),  # an unclosed quote runs to the end
        ('rate -api -"too many"', [("rate",)], [("api",), ("too", "many")]),
        ("rate-limit e-mail 3.14", [("rate", "limit"), ("e", "mail"), ("3", "14")], []),
        ("NEAR AND NOT OR", [("near",), ("and",), ("not",), ("or",)], []),  # words, not operators
        ("NEAR(rate limit, 2)", [("near", "rate"), ("limit",), ("2",)], []),
        ("text:foo video_id:x", [("text", "foo"), ("video", "id", "x")], []),
        ("gate* ^rate {text}: (a)", [("gate",), ("rate",), ("text",), ("a",)], []),
        ("rate\x00limit\x01\x7f", [("rate", "limit")], []),  # control characters separate
        ("rate\tlimit\nagain", [("rate",), ("limit",), ("again",)], []),
        ("rate rate RATE", [("rate",)], []),
        ("Café NAÏVE", [("cafe",), ("naive",)], []),
        ("- rate", [("rate",)], []),
        ("'; DROP TABLE videos; --", [("drop",), ("table",), ("videos",)], []),
    ],
)
def test_queries_parse_into_phrases(query: str, required: list, excluded: list) -> None:
    parsed = parse_query(query)
    assert (list(parsed.required), list(parsed.excluded)) == (required, excluded)


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("", "empty"),
        ("   \t\n", "empty"),
        ("-", "no words"),
        ('""', "no words"),
        ('"   "', "no words"),
        ("* : ( ) ^ {} + '", "no words"),
        ("🎉 ✨", "no words"),
        ("\x00\x01", "no words"),
        ("-foo", "only excludes"),
        ('-"rate limit" -x', "only excludes"),
        ("a" * (MAX_QUERY_CHARS + 1), "characters long"),
        ("x" * 10_000, "characters long"),
        (" ".join(f"w{i}" for i in range(MAX_QUERY_PHRASES + 1)), "words and phrases"),
    ],
)
def test_queries_with_nothing_to_find_are_bad_requests_with_a_hint(query: str, says: str) -> None:
    with pytest.raises(VidError) as caught:
        parse_query(query)
    assert caught.value.code is ErrorCode.BAD_REQUEST
    assert says in caught.value.message, caught.value.message
    assert caught.value.hint
    assert "fts5" not in (caught.value.message + caught.value.hint).lower()


def test_a_query_that_is_not_text_is_a_bad_request() -> None:
    for value in (None, 42, b"rate", ["rate"]):
        with pytest.raises(VidError) as caught:
            parse_query(value)  # type: ignore[arg-type]
        assert caught.value.code is ErrorCode.BAD_REQUEST and caught.value.hint


def test_stems_of_a_query() -> None:
    parsed = parse_query('"baking breads" -kickstands')
    assert parsed.required_stems == (("bake", "bread"),)
    assert parsed.excluded_stems == (("kickstand",),)


def test_expressions_quote_every_phrase() -> None:
    parsed = parse_query('NEAR "rate limit" -not -"or and"')
    assert (
        fts_expression(parsed.required, parsed.excluded)
        == '("near" AND "rate limit") NOT ("not" OR "or and")'
    )


@FUZZ
@given(st.text(_ALPHABET, max_size=80))
@example('"')
@example('NEAR("a" b, 2) * ^c text:d -')
@example("\ud800 lone surrogate")
def test_no_query_makes_fts5_fail(fts: sqlite3.Connection, query: str) -> None:
    """Every query either is a bad request or becomes an expression both indexes run (no guard
    in between: an OperationalError here would be one a user could cause)."""
    try:
        parsed = parse_query(query)
    except VidError as error:
        assert error.code is ErrorCode.BAD_REQUEST and error.hint
        return
    expression = fts_expression(parsed.required, parsed.excluded)
    for table in ("exact", "stem"):
        fts.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (expression,)).fetchall()
        for phrase in parsed.required:
            fts.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (fts_expression((phrase,)),))


# --- matching and highlights ----------------------------------------------------------------------


def test_phrases_are_counted_as_fts5_counts_them() -> None:
    words = tokenize("rate limit, the rate limit and the rate")
    assert count_phrase(words, ("rate",)) == 3
    assert count_phrase(words, ("rate", "limit")) == 2
    assert count_phrase(words, ("limit", "rate")) == 0
    assert count_phrase(words, ("the", "rate", "limit", "and")) == 1


def test_highlights_mark_the_words_of_each_occurrence() -> None:
    text = "Baked bread: we baked the BREAD, then baking breads."
    exact = highlight_spans(text, (("bread",),), stemmed=False)
    assert [text[a:b] for a, b in exact] == ["bread", "BREAD"]
    stemmed = highlight_spans(text, (("bake", "bread"),), stemmed=True)
    assert [text[a:b] for a, b in stemmed] == ["Baked", "bread", "baking", "breads"]
    assert highlight_spans(text, (("missing",),), stemmed=False) == []


# --- ranking pieces -------------------------------------------------------------------------------


def test_averages_record_is_read_as_fts5_writes_it() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5 (text, tag UNINDEXED)")
    assert parse_averages(None) == (0, 0)
    texts = [" ".join(["word"] * n) for n in range(1, 400)]  # totals that need multi-byte varints
    conn.executemany("INSERT INTO t (text, tag) VALUES (?, 'x')", [(t,) for t in texts])
    conn.commit()  # FTS5 writes its totals when the transaction ends
    (record,) = conn.execute("SELECT hex(block) FROM t_data WHERE id = 1").fetchone()
    assert parse_averages(record) == (len(texts), sum(range(1, 400)))
    conn.close()


def test_bm25_is_fts5s_bm25() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5 (text)")
    rng = random.Random(8)
    vocabulary = "alpha beta gamma delta epsilon zeta eta theta".split()
    texts = [" ".join(rng.choices(vocabulary, k=rng.randint(1, 25))) for _ in range(300)]
    conn.executemany("INSERT INTO t (rowid, text) VALUES (?, ?)", list(enumerate(texts, 1)))
    for query in (("alpha",), ("beta", "theta"), ("gamma", "gamma delta")):
        phrases = [tuple(p.split()) for p in query]
        match = fts_expression(tuple(phrases))
        expected = conn.execute("SELECT rowid, -bm25(t) FROM t WHERE t MATCH ?", (match,)).fetchall()
        rows_with = [sum(1 for t in texts if count_phrase(tokenize(t), p)) for p in phrases]
        total = sum(len(tokenize(t)) for t in texts)
        for rowid, score in expected:
            words = tokenize(texts[rowid - 1])
            counts = [count_phrase(words, p) for p in phrases]
            assert bm25(counts, rows_with, len(texts), len(words), total / len(texts)) == pytest.approx(
                score, rel=1e-12
            ), query
    conn.close()


def test_document_frequency_is_exact_below_the_window_and_estimated_above() -> None:
    stats = LibraryStats(rows=100_000, tokens=1_600_000, first_id=1, last_id=100_000)
    assert estimate_rows_with(0, None, stats) == 0
    assert estimate_rows_with(WINDOW - 1, 5, stats) == WINDOW - 1
    # The newest WINDOW matches span the newest tenth of the rowids: about ten windows in all.
    assert estimate_rows_with(WINDOW, 90_001, stats) == pytest.approx(10 * WINDOW)
    # Never more rows than there are, never fewer than were counted.
    assert estimate_rows_with(WINDOW, 99_999, stats) == stats.rows
    assert estimate_rows_with(WINDOW, 1, stats) == WINDOW
