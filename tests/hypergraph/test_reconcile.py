"""The holistic view: planted contradictions are detected, resolved and recorded, and the evidence
index follows; the concept layer and concept retrieval built over it."""

from __future__ import annotations

import itertools
import random
import re
import sqlite3

import pytest

from hyperfolio import Collection, Settings
from hyperfolio.errors import ConfigError
from hyperfolio.hypergraph import reconcile as reconcile_module
from hyperfolio.hypergraph.extract import FACT
from hyperfolio.hypergraph.facts_offline import years_in
from hyperfolio.hypergraph.merge import MergedEdge, MergedEntity, MergedGraph
from hyperfolio.hypergraph.reconcile import Fact, FactView, candidate_groups, reconcile
from hyperfolio.hypergraph.reconcile_offline import MAX_RIVALS, OfflineDetector, OfflineResolver
from hyperfolio.model import Chunk, Entity, FactRow
from hyperfolio.phrases import content_words, first_number, normalize_name

# Page 1 states a figure and assigns a route to its system in a table; page 2 contradicts both
# (the figure, and the route assigned to another system - the paper's Rhine-Ruhr case) and gives
# revenue for another year; page 3 repeats the page-1 figure.
REPORT = (
    "# Fleet Report\n\n## Operations\n\n"
    "The Osprey fleet capacity is 412,000 TEU. The Osprey Shipping Company operates container vessels from "
    "Rotterdam.\n\n"
    "| Route | System |\n| --- | --- |\n| Dusseldorf-Neuss | Dusseldorf Stadtbahn |\n"
    "| Essen-Mulheim | Essen Stadtbahn |\n\n"
    "## Revenue\n\nOsprey revenue was $5.2 million in 2022.\n"
    "\f\n## Outlook\n\n"
    "The Osprey fleet capacity is 390,000 TEU. The Dusseldorf-Neuss route belongs to the Essen Stadtbahn. "
    "Osprey revenue was $6.1 million in 2023.\n"
    "\f\n## Summary\n\nAs reported, the Osprey fleet capacity is 412,000 TEU. The company also runs feeders.\n"
)
PORTS = "# Port Notes\n\n## Europe\n\nRotterdam handled record volumes for the Maersk Line.\n"


def rows(col: Collection, sql: str, *params) -> list[tuple]:
    db = sqlite3.connect(col.store.path)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def facts(col: Collection) -> set[tuple[str, str, str]]:
    return set(
        rows(
            col,
            "SELECT h.name, f.relation, t.name FROM facts f JOIN entities h ON h.entity_id = f.head_id"
            " JOIN entities t ON t.entity_id = f.tail_id",
        )
    )


@pytest.fixture
def report(tmp_path, embedder):
    (tmp_path / "report.md").write_text(REPORT)
    col = Collection(tmp_path / "col", embedder=embedder)
    result = col.add([tmp_path / "report.md"]).results[0]
    assert result.status == "added", result.reason
    yield col, result.doc_id, tmp_path
    col.close()


def test_a_figure_stated_differently_keeps_the_better_supported_one(report):
    col, _, _ = report
    kept = facts(col)
    assert ("fleet capacity", "is", "412,000 TEU") in kept
    assert ("fleet capacity", "is", "390,000 TEU") not in kept
    dropped = [d for d in col.store.decisions() if d.decision == "dropped" and "390,000" in d.fact]
    assert len(dropped) == 1 and dropped[0].kind == "mutual"
    assert "stated in 2 chunks against 1" in dropped[0].reason
    assert dropped[0].evidence and dropped[0].evidence[0].endswith(":2:0")  # the page-2 chunk


def test_an_entity_assigned_to_two_groups_keeps_the_table_assignment(report):
    col, _, _ = report
    kept = facts(col)
    assert ("Dusseldorf-Neuss", "system", "Dusseldorf Stadtbahn") in kept
    assert not any(h == "Dusseldorf-Neuss" and t == "Essen Stadtbahn" for h, _, t in kept)
    decision = next(d for d in col.store.decisions() if d.decision == "dropped" and "Essen Stadtbahn" in d.fact)
    assert "assigned to two different System entities" in decision.reason
    assert "table cell" in decision.reason


def test_the_evidence_index_drops_links_only_the_dropped_fact_supported(report):
    col, doc_id, _ = report
    page2 = f"{doc_id}:2:0"
    linked = {
        name
        for (name,) in rows(
            col,
            "SELECT e.name FROM provenance p JOIN entities e ON e.entity_id = p.item_id"
            " WHERE p.item_kind = 'entity' AND p.chunk_id = ?",
            page2,
        )
    }
    assert "Essen Stadtbahn" not in linked  # its only tie to page 2 was the dropped assignment
    assert "Osprey" in linked  # still supported there by the revenue fact
    # ... and the concept index follows: the System concept no longer reaches page 2 through it.
    system_chunks = {
        c
        for (c,) in rows(
            col,
            "SELECT ce.chunk_id FROM concept_evidence ce JOIN concepts c ON c.concept_id = ce.concept_id"
            " WHERE c.name = 'System'",
        )
    }
    assert system_chunks and page2 not in system_chunks


def test_figures_for_different_years_are_revised_not_dropped(report):
    col, _, _ = report
    relations = {r for h, r, t in facts(col) if h == "Osprey" and t.startswith("$")}
    assert relations == {"revenue [2022]", "revenue [2023]"}
    revised = [d for d in col.store.decisions() if d.decision == "revised"]
    assert len(revised) == 2 and all(d.kind == "temporal" for d in revised)


def test_graph_report_counts_and_concepts(report):
    col, _, _ = report
    graph = col.last_graph_report
    assert graph.reconcile.conflicts == 3 and graph.reconcile.dropped == 2 and graph.reconcile.revised == 2
    assert graph.reconcile.merged >= 1  # the 412,000 TEU figure, stated twice
    concepts = dict(
        rows(
            col,
            "SELECT e.name, c.name FROM entity_concepts ec JOIN entities e USING (entity_id)"
            " JOIN concepts c USING (concept_id)",
        )
    )
    assert concepts["Dusseldorf-Neuss"] == "Route" and concepts["Essen Stadtbahn"] == "System"
    # A name's head noun is its concept when the text also uses the noun as a word ("the company").
    assert concepts["Osprey Shipping Company"] == "Company"
    assert "2022" not in concepts  # a year is a value: a fact's tail or nothing, never a vertex of its own
    edges = set(
        rows(
            col,
            "SELECT h.name, e.relation, t.name FROM concept_edges e JOIN concepts h ON"
            " h.concept_id = e.head_id JOIN concepts t ON t.concept_id = e.tail_id",
        )
    )
    assert ("Route", "system", "System") in edges
    stats = col.stats()
    assert stats["concepts"] >= 5 and stats["conflict_decisions"]["dropped"] == 2
    assert stats["reconciliation"]["conflicts"] == 3 and stats["reconciliation"]["groups"] >= 3


def test_concept_retrieval_reaches_chunks_through_concepts_grouped_by_modality(report):
    col, doc_id, _ = report
    evidence = col.retrieve("Which system serves the Dusseldorf-Neuss route?", mode="concept", doc=doc_id)
    anchors = [name for name, _ in evidence.meta["concepts"]]
    assert "Route" in anchors
    assert any(r[1] == "system" for r in evidence.meta["relations"])
    assert any(item.sources.get("concept") for item in evidence.items)  # reached through the concept index
    modalities = [item.chunk.modality for item in evidence.items]
    assert "table" in modalities
    order = {"text": 0, "formula": 0, "table": 1, "image": 2}
    assert modalities == sorted(modalities, key=order.__getitem__)  # text, then tables, then images
    table = next(item for item in evidence.items if item.chunk.modality == "table")
    assert "Dusseldorf Stadtbahn" in table.chunk.text


def test_answers_do_not_repeat_a_statement_dropped_as_contradicted(report):
    col, doc_id, _ = report
    answer = col.ask("Which system serves the Dusseldorf-Neuss route?", mode="concept", doc=doc_id)
    assert "Dusseldorf Stadtbahn" in answer.text
    assert "belongs to the Essen Stadtbahn" not in answer.text  # page 2's claim lost against the table
    disputed = answer.evidence.meta["disputed"]
    assert any("Essen Stadtbahn" in d["fact"] and d["chunks"] == [f"{doc_id}:2:0"] for d in disputed)


def test_concept_retrieval_knobs_and_ablations(report):
    col, doc_id, _ = report
    flat = col.retrieve("Which system serves the route?", mode="concept", doc=doc_id, options={"use_graph": False})
    assert "concepts" not in flat.meta and all("concept" not in i.sources for i in flat.items)
    mixed = col.retrieve("fleet capacity", mode="concept", doc=doc_id, options={"by_modality": False})
    assert [i.score for i in mixed.items] == sorted((i.score for i in mixed.items), reverse=True)
    strict = col.retrieve("fleet capacity", mode="concept", doc=doc_id, options={"threshold": 0.99})
    assert strict.meta["concepts"] == []
    with pytest.raises(ConfigError, match="no_such_knob"):  # one line naming the knob, as on every face
        col.retrieve("fleet capacity", mode="concept", options={"no_such_knob": 1})
    # The modality-aware layout is a shared step any strategy can ask for.
    plain = col.retrieve("Dusseldorf Stadtbahn route fleet", mode="bm25", doc=doc_id)
    grouped = col.retrieve("Dusseldorf Stadtbahn route fleet", mode="bm25", doc=doc_id, options={"by_modality": True})
    assert [i.chunk.modality for i in plain.items][0] == "table"  # BM25 ranks the table first ...
    assert [i.chunk.modality for i in grouped.items][-1] == "table"  # ... the layout puts text first
    assert grouped.meta["by_modality"] and [i.rank for i in grouped.items] == list(range(1, len(grouped.items) + 1))


def test_a_new_document_is_checked_against_accepted_facts_and_removal_updates_the_layer(report, tmp_path):
    col, _, _ = report
    (tmp_path / "update.md").write_text(
        "# Update\n\n## Fleet\n\nThe Osprey fleet capacity is 398,000 TEU, and the fleet capacity of rivals is lower."
        "\n\n" + PORTS.split("\n\n", 2)[2]
    )
    update = col.add([tmp_path / "update.md"]).results[0]
    decisions = col.store.decisions(update.doc_id)
    assert any(d.decision == "dropped" and "398,000" in d.fact for d in decisions)  # the view spans documents
    assert ("fleet capacity", "is", "412,000 TEU") in facts(col)
    companies = rows(col, "SELECT COUNT(*) FROM concept_evidence WHERE doc_id = ?", update.doc_id)[0][0]
    assert companies > 0
    col.remove(update.doc_id)
    assert rows(col, "SELECT COUNT(*) FROM concept_evidence WHERE doc_id = ?", update.doc_id)[0][0] == 0
    assert col.store.decisions(update.doc_id) == []
    assert "Maersk Line" not in {n for (n,) in rows(col, "SELECT name FROM entities")}


def test_without_reconciliation_every_fact_is_accepted(tmp_path, embedder):
    (tmp_path / "report.md").write_text(REPORT)
    settings = Settings.load(None, build={"reconcile": False})
    with Collection(tmp_path / "col", settings=settings, embedder=embedder) as col:
        col.add([tmp_path / "report.md"])
        kept = facts(col)
        assert ("fleet capacity", "is", "390,000 TEU") in kept and col.store.decisions() == []


def fact(edge: str, head: str, relation: str, tail: str, **kw) -> Fact:
    return Fact(edge, head, relation, tail, head, tail, **kw)


def test_detector_rules_on_their_own():
    detector = OfflineDetector()
    # Different relations over one head with unrelated tails: grouped (same head) but no conflict.
    a = fact("f1", "Osprey", "operates_from", "Rotterdam", tail_concept="Port")
    b = fact("f2", "Osprey", "founded_in", "1998", description="Osprey was founded in 1998")
    groups = candidate_groups([b], [a, b])
    assert groups == [[a, b]]
    assert detector.confirm(groups) == []
    # Granularity: one value contains the other.
    c = fact("f3", "Osprey", "based_in", "Rotterdam", tail_concept="City", description="Osprey is based in Rotterdam.")
    d = fact(
        "f4",
        "Osprey",
        "based_in",
        "Rotterdam Port Area",
        tail_concept="City",
        description="Osprey is based in the Rotterdam Port Area.",
    )
    (conflict,) = detector.confirm([[c, d]])
    assert conflict.kind == "granularity"
    assert {r.decision for r in OfflineResolver().resolve(conflict, {})} == {"kept"}
    # Two sentences that do not make the same claim are not compared without a model ...
    g = fact("f7", "Democrats", "share", "88%", description="Among young voters, Democrats share is 88%.")
    h = fact("f8", "Democrats", "share", "33%", description="Of all rural counties polled, Democrats share is 33%.")
    assert detector.confirm([[g, h]]) == []
    # ... nor are two table cells (two tables, or two rows of one, are two breakdowns).
    t1 = fact("f9", "Openness", "score", "63.07", chunks=["d:6:1"], from_table=True)
    t2 = fact("f10", "Openness", "score", "62.62", chunks=["d:6:1"], from_table=True)
    assert detector.confirm([[t1, t2]]) == []
    # Accepted facts alone are never re-litigated.
    e = fact("f5", "Osprey", "based_in", "Hamburg", tail_concept="City", new=False)
    f = fact("f6", "Osprey", "based_in", "Bremen", tail_concept="City", new=False)
    assert detector.confirm([[e, f]]) == []


def test_offline_resolver_keeps_both_when_nothing_shows_which_holds():
    detector, resolver = OfflineDetector(), OfflineResolver()
    a = fact(
        "f1", "fleet", "capacity", "412,000 TEU", description="The fleet capacity is 412,000 TEU.", chunks=["d:1:0"]
    )
    b = fact(
        "f2", "fleet", "capacity", "390,000 TEU", description="The fleet capacity is 390,000 TEU.", chunks=["d:4:0"]
    )
    (conflict,) = detector.confirm([[a, b]])
    resolutions = resolver.resolve(conflict, {})
    assert all(r.decision == "kept" and r.unresolved for r in resolutions)
    # A later statement that presents itself as an update wins.
    c = fact(
        "f3",
        "fleet",
        "capacity",
        "390,000 TEU",
        description="The fleet capacity is now revised to 390,000 TEU.",
        chunks=["d:4:0"],
    )
    (conflict,) = detector.confirm([[a, c]])
    decided = {r.fact.edge_id: r.decision for r in resolver.resolve(conflict, {})}
    assert decided == {"f1": "dropped", "f3": "kept"}


def test_a_year_in_the_section_path_scopes_the_facts_under_it(tmp_path, embedder):
    (tmp_path / "years.md").write_text(
        "# Annual Review\n\n## 2022 results\n\nOsprey revenue was $5.2 million.\n\n"
        "## 2023 results\n\nOsprey revenue was $6.1 million.\n"
    )
    with Collection(tmp_path / "col", embedder=embedder) as col:
        col.add([tmp_path / "years.md"])
        relations = {r for h, r, t in facts(col) if h == "Osprey"}
        assert relations == {"revenue [2022]", "revenue [2023]"}  # dated by their headings, not dropped
        assert {d.kind for d in col.conflicts()} == {"temporal"}


@pytest.mark.needs("graphviz")
def test_theme_layer_and_top_down_retrieval(report):
    col, doc_id, _ = report
    themes = rows(col, "SELECT h.description FROM hyperedges h WHERE h.level = 'theme'")
    chunks = [c for c in col.store.iter_chunks(doc_id) if c.text.strip()]
    assert len(themes) == len(chunks)  # one theme per chunk
    assert any("Dusseldorf-Neuss" in d and "Operations" in d for (d,) in themes)
    evidence = col.retrieve("Which system serves the Dusseldorf-Neuss route?", mode="topdown", doc=doc_id)
    assert evidence.items[0].chunk.modality == "table"
    assert "Operations" in evidence.meta["themes"][0][0]  # the route table's theme comes first
    assert any(hit.entity.name == "Dusseldorf-Neuss" for hit in evidence.entities)
    drawn = col.retrieve("Which system serves the route?", mode="topdown", doc=doc_id, options={"render": True})
    assert drawn.meta["render_seconds"] > 0 and drawn.meta["picture"].endswith(".png")
    # Themes live in their own space: dual's hyperedge search never returns them.
    dual = col.retrieve("Which system serves the route?", mode="dual", doc=doc_id)
    assert all(hit.hyperedge.level != "theme" for hit in dual.hyperedges)


# ---------------------------------------------------------------- blocked detection, against all pairs
# The rule every pair was once put to, written out plainly (no blocks, nothing cached): the blocked
# detector must find exactly what it finds, in the same order.
REFERENCE_WORDS = {"section", "page", "no", "id"}
FUNCTIONAL_WORDS = {"based", "part", "owned"}


def reference_pair(a: Fact, b: Fact) -> tuple[str, str, str, str] | None:
    def words(f: Fact) -> set[str]:
        tail = set(content_words(f.tail_name))
        return {w for w in content_words(re.sub(r"^\[[^\]]*\]\s*", "", f.description)) if w not in tail}

    def number(f: Fact) -> float | None:
        return first_number(f.tail_name) if re.search(r"\d", f.tail_name) else None

    def one_valued(f: Fact) -> bool:
        return f.from_table or bool(set(f.relation.split("_")) & FUNCTIONAL_WORDS)

    def label(f: Fact) -> bool:
        return bool(set(f.relation.split("_")) & REFERENCE_WORDS)

    if a.head != b.head or a.tail == b.tail or label(a) or label(b):
        return None
    if a.from_table and b.from_table:
        return None
    if not (a.from_table or b.from_table):
        wa, wb = words(a), words(b)
        if not (wa and wb) or len(wa & wb) / len(wa | wb) < 0.5:
            return None
    va, vb = number(a), number(b)
    if va is not None and vb is not None:
        unit = [re.sub(r"[\d.,\s]+", " ", f.tail_name).strip().lower() for f in (a, b)]
        if a.relation != b.relation or va == vb or unit[0] != unit[1]:
            return None
        ya, yb = (years_in(f.description) - years_in(f.tail_name) for f in (a, b))
        return ("temporal" if ya and yb and ya != yb else "mutual", a.edge_id, b.edge_id, "")
    if va is not None or vb is not None:
        return None
    ta, tb = (set(normalize_name(f.tail_name).split()) for f in (a, b))
    nested = bool(ta and tb and (ta < tb or tb < ta))
    if a.relation == b.relation and one_valued(a):
        return ("granularity" if nested else "mutual", a.edge_id, b.edge_id, "")
    generic = a.tail_concept in ("", "Name", "Number")
    if a.relation != b.relation and one_valued(a) and one_valued(b) and not generic and not nested:
        return ("mutual", a.edge_id, b.edge_id, "") if a.tail_concept == b.tail_concept else None
    return None


def reference_conflicts(earlier: list[Fact], batch: list[Fact]) -> list[tuple[str, str, str, str]]:
    """Every pair with a new fact in each candidate group (head and relation, head and tail, head),
    groups in the order the batch's facts open them."""
    pool = earlier + batch
    groups, seen = [], set()
    for fact in batch:
        for key in (lambda f: (f.head, f.relation), lambda f: (f.head, f.tail), lambda f: f.head):
            group = [f for f in pool if key(f) == key(fact)]
            ids = frozenset(f.edge_id for f in group)
            if len(group) > 1 and ids not in seen:
                seen.add(ids)
                groups.append(group)
    found: dict[frozenset[str], tuple[str, str, str, str]] = {}
    for group in groups:
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                key = frozenset((a.edge_id, b.edge_id))
                if (a in batch or b in batch) and key not in found and (hit := reference_pair(a, b)):
                    found[key] = hit
    return list(found.values())


TAILS = [
    ("Rotterdam", "City"), ("Rotterdam Port", "City"), ("Hamburg", "City"), ("Essen Stadtbahn", "System"),
    ("Stadtbahn", "System"), ("Osprey", "Name"), ("412,000 TEU", "Number"), ("390,000 TEU", "Number"),
    ("$5.2 million", "Amount"), ("$6.1 million", "Amount"), ("12%", "Number"), ("5.2", "Number"), ("", ""),
]  # fmt: skip
RELATIONS = ["capacity", "revenue", "based_in", "part_of", "owned_by", "is", "page", "section_no", "runs"]
WORDS = ["fleet", "capacity", "revenue", "grew", "port", "company", "route", "system", "annual", "total"]


def generated_fact(rng: random.Random, n: int, new: bool) -> Fact:
    tail, concept = rng.choice(TAILS)
    tail = tail or rng.choice(["Bremen", "7 ships", "Essen"])
    words = rng.sample(WORDS, rng.randint(2, 4)) + rng.sample(["2021", "2022", ""], 1)
    return Fact(
        f"f{n}",
        rng.choice(["Osprey", "Fleet", "Route"]),
        rng.choice(RELATIONS),
        normalize_name(tail),
        "x",
        tail,
        concept,
        rng.choice(["", "[Results 2023] "]) + " ".join(words + [tail]),
        [f"d:{n}:0"],
        from_table=rng.random() < 0.3,
        new=new,
    )


@pytest.mark.parametrize("seed", range(40))
def test_blocked_detection_finds_what_every_pair_finds(seed):
    rng, ids = random.Random(seed), itertools.count()
    earlier = [generated_fact(rng, next(ids), new=False) for _ in range(rng.randint(0, 40))]
    view = FactView(earlier)
    detector = OfflineDetector(max_rivals=10_000)  # no bound: exactly the rule
    for _ in range(4):  # batches, with revisions and drops between them as reconciliation makes them
        batch = [generated_fact(rng, next(ids), new=True) for _ in range(rng.randint(1, 12))]
        view.add(batch)
        detection = detector.detect(view, batch)
        found = [(c.kind, c.facts[0].edge_id, c.facts[1].edge_id, "") for c in detection.conflicts]
        assert found == reference_conflicts(earlier, batch) and detection.capped == 0
        earlier += batch
        for fact in rng.sample(earlier, min(3, len(earlier))):
            view.relabel(fact, rng.choice([fact.relation + " [2022]", rng.choice(RELATIONS)]))
        gone = rng.sample(earlier, min(2, len(earlier)))
        view.remove(gone)
        earlier = [f for f in earlier if f not in gone]


def test_the_rules_reasons_are_kept():
    a = fact("f1", "fleet", "capacity", "412,000 TEU", description="The fleet capacity is 412,000 TEU in 2022.")
    b = fact("f2", "fleet", "capacity", "390,000 TEU", description="The fleet capacity is 390,000 TEU in 2023.")
    view = FactView([a])
    view.add([b])
    (conflict,) = OfflineDetector().detect(view, [b]).conflicts
    assert conflict.kind == "temporal" and conflict.facts == (a, b)
    assert conflict.reason == "capacity of fleet is given for different years (2022, 2023)"


# ---------------------------------------------------------------- reconciling against a grown collection
class FactStore:
    """Just what `reconcile` reads of a store: accepted facts, their entities and chunks."""

    def __init__(self, facts: list[Fact]) -> None:
        self.facts = facts

    def facts_about(self, heads):
        return [FactRow(f.edge_id, f.head, f.relation, f.tail, f.description, f.chunks) for f in self.facts]

    def get_entities(self, ids):
        names = {i: n for f in self.facts for i, n in ((f.head, f.head_name), (f.tail, f.tail_name))}
        return [Entity(i, names[i]) for i in ids if i in names]

    def get_chunks(self, ids):
        return [Chunk(int(c.split(":")[1]), 0, "text", "", chunk_id=c) for c in ids]

    def get_hyperedges(self, ids):
        return []

    def provenance(self, kind, ids):
        return {}


def merged_graph(facts: list[Fact]) -> MergedGraph:
    graph = MergedGraph()
    for f in facts:
        for key, name in ((f.head, f.head_name), (f.tail, f.tail_name)):
            graph.entities[key] = MergedEntity(key, name, key, "", "text", chunks=list(f.chunks))
        members = [(f.head, "head"), (f.tail, "tail")]
        graph.edges[f.edge_id] = MergedEdge(f.edge_id, FACT, f.description, [], 1.0, members, f.chunks, f.relation)
    return graph


def fleet_figure(n: int, doc: str, page: int) -> Fact:
    """The same claim with another figure: every two of them are rivals."""
    figure = f"{400_000 + n:,} TEU"
    return fact(
        f"{doc}{n}",
        "fleet",
        "capacity",
        figure,
        description=f"The fleet capacity is {figure}.",
        chunks=[f"{doc}:{page}:0"],
    )


def test_each_new_fact_meets_at_most_a_bounded_number_of_earlier_facts(monkeypatch):
    stored = [fleet_figure(n, "old", n + 1) for n in range(3 * MAX_RIVALS)]
    for f in stored:
        f.new = False
    new = [fleet_figure(1000 + n, "doc", n + 1) for n in range(3)]
    met: dict[str, list[str]] = {}
    pair = OfflineDetector.pair

    def counted(self, a, b):
        met.setdefault(b.edge_id if b.new else a.edge_id, []).append(a.edge_id if b.new else b.edge_id)
        return pair(self, a, b)

    monkeypatch.setattr(OfflineDetector, "pair", counted)
    report = reconcile(FactStore(stored), merged_graph(new), "doc", OfflineDetector(), OfflineResolver(), apply=False)
    assert set(met) == {f.edge_id for f in new}
    assert all(len(others) <= MAX_RIVALS for others in met.values())
    # What the bound gives up: the oldest statements. The latest ones (this document's first) are met.
    latest = {f.edge_id for f in stored[-MAX_RIVALS:]}
    assert set(met[new[0].edge_id]) == latest
    assert set(met[new[2].edge_id]) == {new[0].edge_id, new[1].edge_id} | set(sorted(latest)[2:])
    assert report.conflicts == sum(len(others) for others in met.values()) and report.capped == len(new)


def test_statement_words_are_read_once_per_fact(monkeypatch):
    stored = [fleet_figure(n, "old", n + 1) for n in range(30)]
    for f in stored:
        f.new = False
    new = [fleet_figure(1000 + n, "doc", n % 4 + 1) for n in range(20)]
    calls: list[str] = []
    words = reconcile_module.statement_words

    def counted(f):
        calls.append(f.edge_id)
        return words(f)

    monkeypatch.setattr(reconcile_module, "statement_words", counted)
    report = reconcile(FactStore(stored), merged_graph(new), "doc", OfflineDetector(), OfflineResolver(), apply=False)
    assert report.conflicts > 100  # many pairs were weighed ...
    assert len(calls) == len(set(calls)) <= len(stored) + len(new)  # ... each fact's words read once


def test_a_conflict_kept_unresolved_is_logged_once_not_again_with_every_later_chunk():
    a = fact("f1", "fleet", "capacity", "412,000 TEU", description="The fleet capacity is 412,000 TEU.")
    b = fact("f2", "fleet", "capacity", "390,000 TEU", description="The fleet capacity is 390,000 TEU.")
    a.chunks, b.chunks = ["doc:1:0"], ["doc:1:0"]
    later = [
        fact(
            f"g{p}",
            "fleet",
            f"sails_{p}",
            f"Port {p}",
            description=f"The fleet sails to Port {p}.",
            chunks=[f"doc:{p}:0"],
        )
        for p in range(2, 6)
    ]  # one fact about the fleet on each later page: the pair (a, b) is not weighed again
    report = reconcile(
        FactStore([]), merged_graph([a, b, *later]), "doc", OfflineDetector(), OfflineResolver(), apply=False
    )
    assert [(d.decision, d.fact) for d in report.decisions] == [
        ("kept", "fleet | capacity | 412,000 TEU"),
        ("kept", "fleet | capacity | 390,000 TEU"),
    ]
    assert report.conflicts == 1 and report.unresolved == 1


def test_a_model_detector_is_asked_about_groups_among_the_latest_facts_of_each_head():
    rng, ids = random.Random(7), itertools.count()
    earlier = [generated_fact(rng, next(ids), new=False) for _ in range(60)]
    batch = [generated_fact(rng, next(ids), new=True) for _ in range(5)]
    view = FactView(earlier)
    view.add(batch)
    assert view.groups(batch, 1000) == candidate_groups(batch, earlier + batch)  # unbounded: as before
    heads = {f.head for f in batch}
    latest = [f for head in heads for f in [e for e in earlier if e.head == head][-4:]]
    assert view.groups(batch, 4) == candidate_groups(batch, latest + batch)
    assert all(sum(not f.new for f in group) <= 4 for group in view.groups(batch, 4))
