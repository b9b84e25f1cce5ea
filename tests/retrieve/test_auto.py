"""`auto`: candidates from every source, their features, the learned ranker, pages, and tuning."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hyperfolio import Collection
from hyperfolio.eval.datasets import EvalQuestion
from hyperfolio.eval.ranker_training import AUTO_VARIANTS, QuestionRows, assign_folds, cross_validate, fit
from hyperfolio.eval.tune import load_labelled, tune
from hyperfolio.model import Chunk
from hyperfolio.retrieve.auto import rank_pages
from hyperfolio.retrieve.feature_table import FEATURE_INDEX, FEATURES, SOURCES
from hyperfolio.retrieve.features import Candidates
from hyperfolio.retrieve.ranker import COLLECTION_FILE, LinearRanker, RankerSet, layout_of, load_ranker

FLEET = [
    "# Fleet overview\nThe Osprey Shipping Company runs container ships between Rotterdam and Singapore.",
    "# Vessels\nThe Aurora carries 8,500 TEU and entered service in 2019. The Borealis carries 6,200 TEU.",
    "# Crew\nEach vessel sails with a crew of twenty-two; training happens at the Delft academy.",
    "# Outlook\nIn 2024 the company expects to carry 450,000 TEU and to order two LNG-powered ships.",
]
PARKS = [
    "# Parks of the city\nThe city keeps forty parks; Vondel Park is the largest at 47 hectares.",
    "# Trees\nThe parks hold 12,000 plane trees and 3,000 elms, surveyed by the forestry office.",
    "# Visitors\nVondel Park receives ten million visitors a year, most of them in summer.",
    "# Budget\nThe parks department spends 31 million euros a year on maintenance and planting.",
]
LABELLED = [
    ("How many TEU does the Aurora carry?", "fleet.pdf", [2]),
    ("How large is the crew of each vessel?", "fleet.pdf", [3]),
    ("How much cargo does the company expect to carry in 2024?", "fleet.pdf", [4]),
    ("Which ports does the Osprey Shipping Company connect?", "fleet.pdf", [1]),
    ("How many plane trees grow in the parks?", "parks.pdf", [2]),
    ("How many visitors does Vondel Park receive?", "parks.pdf", [3]),
    ("What does the parks department spend on maintenance?", "parks.pdf", [4]),
    ("How large is Vondel Park?", "parks.pdf", [1]),
]


@pytest.fixture(scope="module")
def collection(tmp_path_factory, embedder, pdf_writer):
    root = tmp_path_factory.mktemp("auto")
    pdf_writer(root / "fleet.pdf", FLEET, title="Fleet report")
    pdf_writer(root / "parks.pdf", PARKS, title="Parks report")
    col = Collection(root / "col", embedder=embedder)
    report = col.add([root / "fleet.pdf", root / "parks.pdf"])
    assert not report.failed, [r.reason for r in report.failed]
    yield col
    col.close()


def test_candidates_are_the_union_of_every_source_with_their_features(collection):
    found = collection.candidates("How many TEU does the Aurora carry?", doc="fleet.pdf")
    assert found.matrix.shape == (len(found.chunks), len(FEATURES))
    assert {c.doc_id for c in found.chunks} == {collection.resolve("fleet.pdf").doc_id}  # scoped
    seen = {s for sources in found.sources for s in sources}
    assert {"bm25", "dense", "entity"} <= seen and seen <= set(SOURCES)
    for row, sources in zip(found.matrix, found.sources, strict=True):
        for source in SOURCES:  # an explicit "absent": present flag set exactly when the source found it
            assert row[FEATURE_INDEX[f"{source}_in"]] == float(source in sources)
    best = found.chunks[int(np.argmax(found.matrix[:, FEATURE_INDEX["bm25_score"]]))]
    assert best.page == 2 and "Aurora" in best.text


def test_an_ablation_drops_its_features_and_the_candidates_only_it_found(collection):
    question = "What do the forestry office surveys count?"
    full = collection.candidates(question, doc="parks.pdf")
    excluded = AUTO_VARIANTS["auto-nograph"]  # the hypergraph's paths and walk, concepts and themes
    flat = collection.candidates(question, doc="parks.pdf", exclude=excluded)
    graph_columns = [i for i, (_, group) in enumerate(FEATURES) if group in excluded]
    assert not flat.matrix[:, graph_columns].any()
    assert all(set(s) <= {"bm25", "dense"} and s for s in flat.sources)
    assert {c.chunk_id for c in flat.chunks} <= {c.chunk_id for c in full.chunks}


def test_auto_ranks_chunks_and_pages_with_the_packaged_ranker(collection):
    evidence = collection.retrieve("How many TEU does the Aurora carry?", mode="auto", k=5, doc="fleet.pdf")
    assert evidence.strategy == "auto" and evidence.items
    assert [i.score for i in evidence.items] == sorted((i.score for i in evidence.items), reverse=True)
    assert evidence.ranked_pages[0].page == 2  # the page that states it comes first
    pages = [(p.doc_id, p.page) for p in evidence.ranked_pages]
    assert len(pages) == len(set(pages))
    assert evidence.page_ranking(1) == [(evidence.ranked_pages[0].doc_id, 2)]


def test_pages_rank_by_their_best_chunk():
    page_of = {"a": ("d", 1), "b": ("d", 2), "c": ("d", 1), "e": ("d", 3)}
    pages = rank_pages([("b", 3.0), ("a", 2.0), ("e", 1.5), ("c", 1.0)], page_of)
    assert [(p.page, p.score, p.chunk_ids) for p in pages] == [(2, 3.0, ["b"]), (1, 2.0, ["a", "c"]), (3, 1.5, ["e"])]


def _rows(seed: int, docs: int = 6, per_doc: int = 4) -> list[QuestionRows]:
    """Synthetic questions whose one evidence candidate stands out on lex_cover; the rest is noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(docs):
        for q in range(per_doc):
            chunks = [Chunk(page=i + 1, order=0, modality="text", text="", chunk_id=f"d{d}:{i}") for i in range(8)]
            matrix = rng.random((8, len(FEATURES)))
            gold = int(rng.integers(8))
            matrix[gold, FEATURE_INDEX["lex_cover"]] += 1.0
            labels = np.zeros(8)
            labels[gold] = 1.0
            question = EvalQuestion(f"q{d}-{q}", f"doc{d}", "?", [])
            rows.append(QuestionRows(question, f"doc{d}", Candidates(chunks, matrix, [{}] * 8), labels))
    return rows


def test_fit_finds_the_feature_that_carries_the_label():
    ranker = fit(_rows(1))
    weights = ranker.weights()
    assert max(weights, key=weights.get) == "lex_cover"
    assert ranker.meta["questions"] == 24
    ablated = fit(_rows(1), exclude=("layout",))
    assert "lex_cover" not in ablated.features and set(ablated.exclude) == {"layout"}


def test_cross_validation_never_fits_on_the_documents_it_scores():
    rows = _rows(2)
    folds = assign_folds([r.group for r in rows], 3)
    assert len(set(folds.values())) == 3 and folds == assign_folds([r.group for r in reversed(rows)], 3)
    held = cross_validate(rows, folds=3)
    assert set(held.ranking) == {r.question.qid for r in rows}
    for fold, ranker in enumerate(held.rankers):
        trained_on = sum(1 for r in rows if folds[r.group] != fold)
        assert ranker.meta["questions"] == trained_on < len(rows)
    top_hits = [r.labels[held.ranking[r.question.qid][0][0]] for r in rows]
    assert np.mean(top_hits) > 0.7  # the learnable signal carries over to unseen documents


def test_ranker_weights_round_trip_and_refuse_unknown_features(tmp_path):
    ranker = fit(_rows(3))
    again = LinearRanker.from_json(ranker.save(tmp_path / "r.json").read_text())
    matrix = np.random.default_rng(0).random((5, len(FEATURES)))
    assert np.allclose(again.score(matrix), ranker.score(matrix))
    data = json.loads(ranker.to_json())
    data["features"][0] = "no_such_feature"
    with pytest.raises(Exception, match="no_such_feature"):
        LinearRanker.from_json(json.dumps(data))


def test_packaged_rankers_serve_each_layout_and_use_hypergraph_features():
    rankers = load_ranker()
    assert set(rankers.rankers) == {"paged", "flowing"} and not rankers.exclude
    for ranker in rankers.rankers.values():
        groups = {group for name, group in FEATURES if name in ranker.features}
        assert {"flat", "graph", "concept", "theme", "layout"} <= groups
        assert ranker.meta["held_out_recall"]  # shipped with its cross-validated figures
    assert rankers.for_layout(layout_of("pdf")) is rankers.rankers["paged"]
    assert rankers.for_layout(layout_of("markdown")) is rankers.rankers["flowing"]


def test_a_single_rankers_weights_serve_every_layout(tmp_path):
    ranker = fit(_rows(4))
    rankers = RankerSet.from_json(ranker.to_json())
    assert rankers.for_layout("paged") is rankers.for_layout("flowing")
    again = RankerSet.from_json(RankerSet({"paged": ranker}).save(tmp_path / "set.json").read_text())
    assert again.for_layout("flowing").weights() == ranker.weights()  # tuned on one layout: it serves both


def test_tune_fits_a_users_questions_and_keeps_the_weights(collection, tmp_path):
    path = tmp_path / "labelled.jsonl"
    path.write_text("\n".join(json.dumps({"question": q, "doc": d, "evidence_pages": p}) for q, d, p in LABELLED))
    questions = load_labelled(path)
    before = collection.ranker
    report = tune(collection, questions, folds=2)
    assert report.questions == 8 and report.documents == 2 and report.evidence == "pages"
    assert report.changed and report.ranker.weights("paged") != before.weights("paged")
    assert report.ranker.rankers["flowing"] is before.rankers["flowing"]  # no flowing documents asked about
    for k in (1, 5, 10):  # on the set it was fitted to, recall does not drop
        assert report.fitted[k] >= report.before[k]
    assert report.held_out is not None and set(report.held_out) == {1, 5, 10}
    assert (collection.path / COLLECTION_FILE).exists()
    assert load_ranker(collection.path).weights("paged") == report.ranker.weights("paged")
    assert "| before |" in report.table()
    collection.use_ranker(None, save=True)  # back to the packaged ranker
    assert not (collection.path / COLLECTION_FILE).exists()


def test_tune_names_the_line_of_a_bad_row(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"question": "Where?", "doc": "fleet.pdf", "evidence_pages": [1]}) + "\n{oops\n")
    with pytest.raises(Exception, match="bad.jsonl:2"):
        load_labelled(path)


def test_tune_command_reports_before_and_after(collection, tmp_path):
    from typer.testing import CliRunner

    from hyperfolio.cli import app

    path = tmp_path / "labelled.jsonl"
    path.write_text("\n".join(json.dumps({"question": q, "doc": d, "evidence_pages": p}) for q, d, p in LABELLED))
    result = CliRunner().invoke(app, ["tune", "--questions", str(path), "-c", str(collection.path), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "8 questions over 2 documents" in result.output and "before" in result.output
    assert "held-out" in result.output and "dry run" in result.output
    assert not (collection.path / COLLECTION_FILE).exists()  # a dry run keeps the ranker in use
    bad = CliRunner().invoke(app, ["tune", "--questions", str(tmp_path / "missing.jsonl"), "-c", str(collection.path)])
    assert bad.exit_code == 1 and "missing.jsonl" in bad.output


def _column(found: Candidates, name: str) -> np.ndarray:
    return found.matrix[:, FEATURE_INDEX[name]]


def test_document_features_tell_documents_apart_only_when_several_are_asked(collection):
    question = "How many visitors does Vondel Park receive?"
    scoped = collection.candidates(question, doc="parks.pdf")
    for name in ("doc_best", "doc_rr", "doc_share", "doc_idf_cover", "doc_pages"):
        assert len(set(_column(scoped, name))) == 1, name  # one document: one value, no say in the order
    assert _column(scoped, "doc_rr")[0] == 1.0 and _column(scoped, "doc_share")[0] == pytest.approx(1.0)

    whole = collection.candidates(question)
    parks = collection.resolve("parks.pdf").doc_id
    by_doc: dict[str, dict[str, float]] = {}
    for i, chunk in enumerate(whole.chunks):
        by_doc[chunk.doc_id] = {name: _column(whole, name)[i] for name in ("doc_rr", "doc_share", "doc_idf_cover")}
    assert len(by_doc) == 2  # the other document put candidates in the pool too
    other = next(d for d in by_doc if d != parks)
    assert by_doc[parks]["doc_rr"] == 1.0 and by_doc[other]["doc_rr"] == 0.5
    assert by_doc[parks]["doc_share"] > by_doc[other]["doc_share"]
    assert by_doc[parks]["doc_idf_cover"] > by_doc[other]["doc_idf_cover"]
    assert sum({d: v["doc_share"] for d, v in by_doc.items()}.values()) == pytest.approx(1.0)


def test_page_position_is_a_share_of_the_document_and_the_flat_prior_is_hybrids_order(collection):
    found = collection.candidates("How many TEU does the Aurora carry?", doc="fleet.pdf")
    pages = collection.resolve("fleet.pdf").num_pages
    for i, chunk in enumerate(found.chunks):
        assert _column(found, "page_pos")[i] == pytest.approx((chunk.page - 1) / (pages - 1))
    hybrid = collection.retrieve("How many TEU does the Aurora carry?", mode="hybrid", k=50, doc="fleet.pdf")
    position = {item.chunk.chunk_id: item.rank for item in hybrid.items}
    for i, chunk in enumerate(found.chunks):
        expected = 1.0 / position[chunk.chunk_id] if chunk.chunk_id in position else 0.0
        assert _column(found, "flat_rr")[i] == pytest.approx(expected), chunk.chunk_id
    assert _column(found, "flat_logrank").max() == 1.0
