"""The keyword engine ranks as exact BM25 does: FTS5's `bm25()` over a `porter unicode61` table is the oracle.

The corpus is large enough that most questions match more chunks than the engine rescores (`depth(k)`),
so the pruning is exercised: the engine's top k must be FTS5's top k, in order, with the same scores.
"""

from __future__ import annotations

import random
import re
import sqlite3

import pytest

from hyperfolio.store.keywords.engine import KeywordIndex, KeywordRow, depth
from hyperfolio.store.keywords.tokens import query_terms, terms, tokens

VOCABULARY = (
    "turbine wind offshore capacity revenue growth fleet vessel harbour energy solar panel grid storage battery "
    "report annual quarter fiscal margin operating income segment europe asia market share customers network "
    "technology technological assembly assemble possibly possible generation generated generating maintenance "
    "north sea baltic denmark germany spain café naïve résumé city cities running runs ran connected connection"
).split()


def _corpus(n: int, seed: int = 5) -> list[KeywordRow]:
    """Chunks of Zipf-distributed words (a few words in most chunks, most in a few), with headings."""
    rng = random.Random(seed)
    weights = [1 / (i + 1) for i in range(len(VOCABULARY))]
    rows = []
    for i in range(n):
        doc = f"doc{i // 25:03d}"
        words = rng.choices(VOCABULARY, weights, k=rng.randint(5, 60))
        heading = " / ".join(rng.choices(VOCABULARY, k=rng.randint(0, 3)))
        rows.append(KeywordRow(f"{doc}:{i % 25 // 5 + 1}:{i % 5}", doc, " ".join(words), heading))
    return rows


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    rows = _corpus(2500)
    fts = sqlite3.connect(":memory:")
    fts.execute(
        "CREATE VIRTUAL TABLE chunks_fts USING fts5(chunk_id UNINDEXED, doc_id, text, heading,"
        " tokenize = 'porter unicode61')"
    )
    fts.executemany(
        "INSERT INTO chunks_fts VALUES (?, ?, ?, ?)", [(r.chunk_id, r.doc_id, r.text, r.heading) for r in rows]
    )
    index = KeywordIndex(tmp_path_factory.mktemp("keywords"), "test")
    by_doc: dict[str, list[KeywordRow]] = {}
    for row in rows:
        by_doc.setdefault(row.doc_id, []).append(row)
    assert index.apply("epoch-1", [(doc, "v1", chunks) for doc, chunks in by_doc.items()])
    return index, fts, sorted(by_doc)


def _fts5(fts: sqlite3.Connection, question: str, k: int, docs: list[str] | None) -> list[tuple[str, float]]:
    match = (
        "{text heading}: (" + " OR ".join(f'"{t}"' for t in dict.fromkeys(re.findall(r"\w+", question.lower()))) + ")"
    )
    if docs:
        match += " AND doc_id: (" + " OR ".join(f'"{d}"' for d in docs) + ")"
    rows = fts.execute(
        "SELECT chunk_id, -bm25(chunks_fts, 0.0, 0.0, 1.0, 0.5) FROM chunks_fts WHERE chunks_fts MATCH ?"
        " ORDER BY bm25(chunks_fts, 0.0, 0.0, 1.0, 0.5), rowid LIMIT ?",
        (match, k),
    ).fetchall()
    return [(c, float(s)) for c, s in rows]


def test_the_engine_ranks_as_fts5_even_where_it_prunes(indexed):
    index, fts, docs = indexed
    rng = random.Random(11)
    pruned = 0
    for _ in range(120):
        question = " ".join(rng.sample(VOCABULARY, rng.randint(1, 6)))
        scope = rng.sample(docs, 3) if rng.random() < 0.3 else None
        for k in (1, 10, 30):
            want = _fts5(fts, question, k, scope)
            got = index.search(question, k, scope)
            assert [c for c, _ in got] == [c for c, _ in want], (question, scope, k)
            assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9, abs=1e-12)
        matching = _fts5(fts, question, 10_000, scope)
        pruned += len(matching) > depth(30)
    assert pruned > 60  # most questions matched more chunks than were rescored


def test_removed_and_changed_documents_leave_the_ranking(indexed, tmp_path):
    rows = _corpus(300, seed=8)
    index = KeywordIndex(tmp_path / "small", "test")
    first = [r for r in rows if r.doc_id == "doc000"]
    assert index.apply("e1", [("doc000", "v1", first), ("doc001", "v1", [r for r in rows if r.doc_id == "doc001"])])
    assert {c.split(":")[0] for c, _ in index.search("turbine wind", 100)} == {"doc000", "doc001"}
    changed = [KeywordRow(first[0].chunk_id, "doc000", "lighthouse keeper", "")]
    assert index.apply("e2", [("doc000", "v2", changed), ("doc001", None, [])])
    assert index.search("turbine wind", 100) == []
    assert [c for c, _ in index.search("lighthouse", 5)] == [first[0].chunk_id]
    manifest = index.manifest()
    assert manifest.epoch == "e2" and manifest.chunks == 1 and set(manifest.docs) == {"doc000"}
    # Another object on the same folder (another process) reads the same state.
    again = KeywordIndex(tmp_path / "small", "test")
    assert [c for c, _ in again.search("lighthouse keeper", 5)] == [first[0].chunk_id]
    # A folder of another database is made anew, not searched.
    assert KeywordIndex(tmp_path / "small", "other").search("lighthouse", 5) == []


def test_tokens_and_stems_are_fts5s():
    assert tokens("Café 168.4 North-Sea foo_bar x² Ωmega ḗ") == [
        "cafe",
        "168",
        "4",
        "north",
        "sea",
        "foo",
        "bar",
        "x²",
        "ωmega",
        "ḗ",
    ]
    # Porter's published departures that FTS5 follows: -bli -> -ble, -logi -> -log
    assert terms("assembly technology technological possibly running") == [
        "assembl",
        "technolog",
        "technolog",
        "possibl",
        "run",
    ]
    assert terms("us is a") == ["us", "is", "a"]  # under three letters: left alone
    assert query_terms("What is the café's capacity?") == ["cafe", "s", "capac"]
    assert query_terms("the of") == ["the", "of"]  # stop words only: searched as they are


def test_a_damaged_index_is_made_again(tmp_path):
    rows = [r for r in _corpus(50) if r.doc_id == "doc000"]
    index = KeywordIndex(tmp_path / "k", "test")
    assert index.apply("e1", [("doc000", "v1", rows)])
    for file in (tmp_path / "k").glob("*.idx"):
        file.write_bytes(b"\0" * 10)
    (tmp_path / "k" / "meta.json").write_text("{not json")
    again = KeywordIndex(tmp_path / "k", "test")
    assert again.search("turbine", 5) == [] and again.manifest().docs == {}  # empty, to be filled again
    assert again.apply("e2", [("doc000", "v1", rows)])
    assert again.search("turbine wind", 5)
