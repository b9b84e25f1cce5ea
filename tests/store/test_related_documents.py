"""Related documents leave a collection that checks clean, whatever order they are added in, on both backends.

Each document's concept namer reads only that document, so one entity can be offered a different concept by
each ("Aurora Bay is a port" here, "Aurora Bay is a vessel" there). An entity keeps the concept it was first
given; the concept the later document offered must then leave no row behind (it once did: a concept without
entities, which `hyperfolio check` reported on a collection no one had interrupted).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperfolio import Collection
from hyperfolio.store.sql.layers import concept_id

BACKENDS = ["sqlite", "postgres"]

# The smallest shape found that shows it: one shared name, a different category in each document. The
# category sentence is not the first one: the chunk's heading is read with it, and would join the subject.
HARBOUR = "# Harbour Notes\n\nGrain ships call in spring. Aurora Bay is a port on the northern coast.\n"
FLEET = "# Fleet Notes\n\nThe fleet sails in spring. Aurora Bay is a vessel of the northern fleet.\n"
CONCEPT_OF = {"harbour.md": "Port", "fleet.md": "Vessel"}


def _location(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return str(tmp_path / "col") if backend == "sqlite" else request.getfixturevalue("pg_url")


def _problems(col: Collection) -> list[tuple[str, int, list[str]]]:
    return [(f.kind, f.count, f.examples) for f in col.check().findings]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "order", [("harbour.md", "fleet.md"), ("fleet.md", "harbour.md")], ids=["port-first", "vessel-first"]
)
def test_an_entity_named_differently_by_two_documents_checks_clean(backend, order, request, tmp_path, embedder):
    (tmp_path / "harbour.md").write_text(HARBOUR)
    (tmp_path / "fleet.md").write_text(FLEET)
    first, second = order
    with Collection(_location(backend, request, tmp_path), embedder=embedder, folder=tmp_path / "folder") as col:
        for name in order:
            assert col.add([tmp_path / name]).results[0].status == "added"
            assert _problems(col) == [], f"after adding {name}"
        entities = col.store.get_entities(col.store.document_entities(col.resolve(second).doc_id))
        assert [e.concept for e in entities if e.name == "Aurora Bay"] == [CONCEPT_OF[first]]  # the first is kept
        assert col.store.concept_names([concept_id(CONCEPT_OF[second])]) == {}  # the other left no row
        col.remove(str(tmp_path / first))
        assert _problems(col) == [], f"after removing {first}"


PORTS = (
    "# Port Report\n\nRotterdam is a port on the North Sea. Aurora Bay is a port of the northern coast.\n\n"
    "| Port | Operator |\n| --- | --- |\n| Rotterdam | Osprey Shipping |\n| Aurora Bay | Northern Lines |\n"
)


# Reconciling the second drops the first's figure (stated in more places): an earlier document's rows change.
FIGURES = {
    "report.md": "# Fleet Report\n\n## Operations\n\nThe Osprey fleet capacity is 412,000 TEU.\n\f\n## Summary\n\n"
    "As reported, the Osprey fleet capacity is 412,000 TEU.\n",
    "update.md": "# Fleet Update\n\n## Fleet\n\nThe Osprey fleet capacity is 398,000 TEU.\n\f\n## Outlook\n\n"
    "The Osprey fleet capacity is 398,000 TEU.\n\f\n## Summary\n\n"
    "As reported, the Osprey fleet capacity is 398,000 TEU.\n",
}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_new_document_s_concept_rows_are_those_a_full_rebuild_gives(backend, request, tmp_path, embedder):
    """Adding a document rebuilds only its own rows of the concepts it touches, and those of the documents
    whose facts its reconciliation changed (rebuilding every row of "Port" or "Amount" for each new
    document grew with the collection): they must be what a rebuild of everything gives."""
    names = {"harbour.md": HARBOUR, "fleet.md": FLEET, "ports.md": PORTS, **FIGURES}
    with Collection(_location(backend, request, tmp_path), embedder=embedder, folder=tmp_path / "folder") as col:
        for name, text in names.items():
            (tmp_path / name).write_text(text)
            assert col.add([tmp_path / name]).results[0].status == "added"
        docs = [col.resolve(str(tmp_path / name)).doc_id for name in names]
        store = col.store

        def rows() -> dict[str, tuple[list, list]]:
            out = {}
            for doc in docs:
                concepts = [c for c, _ in store.concepts_in(doc)]
                chunks = sorted(store.concept_chunk_pairs(concepts, [doc]))
                out[doc] = (chunks, sorted(store.concept_edges_for(store.relations_in(doc), [doc])))
            return out

        assert any(d.decision == "dropped" and d.evidence[0].startswith(docs[-2]) for d in store.decisions(docs[-1]))
        built = rows()
        assert all(chunks for chunks, _ in built.values()) and any(edges for _, edges in built.values())
        every = sorted({c for doc in docs for c in store.document_concepts(doc)})
        store.rebuild_concepts(every)
        assert rows() == built
        store.rebuild_concepts(every, doc_id=docs[-1])  # one document's rows only: the same again
        assert rows() == built
        assert _problems(col) == []
