"""Move a collection between backends as a bundle of JSON Lines files, through the store protocol only.

A bundle is a directory:

- `manifest.json`: format name and version, counts, the embedder from meta, when it was made;
- `meta.json`: the collection's meta keys (which embedder, build settings, ...), its schema version aside;
- `documents.jsonl`: one document a line, with its status, meta, when it was added, its pages (size,
  OCR and vision flags) and chunks (the `Document` fields), and what reconciliation counted in it;
- `entities.jsonl` / `hyperedges.jsonl`: hypergraph items with the chunk ids they came from;
- `vectors.jsonl`: every vector of every space (chunks, entities, hyperedges, concepts, relations,
  themes) with its item and document, as base64 float32 (little-endian), so search is exactly as before;
- `decisions.jsonl`, `builds.jsonl`, `stage_times.jsonl`, `refine_state.jsonl`: the bookkeeping;
- `model_replies.jsonl`, `model_usage.json`: the model-call cache and accounting (when exported from a
  collection), so a rebuild after import costs no model calls already paid for;
- `hypergraph.hif.json` (the Hypergraph Interchange Format) and `hypergraph.graphml` (the bipartite
  incidence graph), for other tools; import ignores them.

A bundle without `vectors.jsonl` (written by hand, or trimmed) can still be imported: given an
`embed` function, import re-embeds the chunk vectors; graph vectors then need a graph rebuild.
Import is all or nothing: when it fails, what it had written is removed again.
"""

from __future__ import annotations

import base64
import json
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from hyperfolio.errors import StoreError
from hyperfolio.model import Chunk, Decision, Document, Entity, Hyperedge, Page
from hyperfolio.store.base import SPACES, STAGE_PARSED, ModelRecordStore, Store
from hyperfolio.store.sql.keywords import LOCAL_META

BUNDLE_FORMAT = "hyperfolio-bundle"
BUNDLE_VERSION = 1
EMBED_BATCH = 64
IMAGES = "images"  # the collection folder's picture files, by relative image_path
VECTORS = "vectors.jsonl"

# Stores the vectors of these chunks of the store (the collection passes its own chunk embedding, so the
# imported meta - which embedder the bundle was indexed with - decides the model).
Embed = Callable[[Store, list[Chunk]], object]


class BundleError(StoreError):
    """A bundle cannot be written or read into this store."""


@dataclass
class BundleReport:
    """What moved, and what could not (so a caller can say it rather than pretend a faithful copy)."""

    directory: Path
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            count += 1
    return count


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        return
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise BundleError(
                        f"{path} line {number}: not valid JSON ({exc.msg}); nothing was imported"
                    ) from exc


def _chunk_dict(chunk: Chunk) -> dict[str, Any]:
    row = asdict(chunk)
    row.pop("image", None)  # transient bytes; the file stays at image_path beside the collection
    return row


def _chunk_of(row: dict[str, Any]) -> Chunk:
    row = dict(row)
    if row.get("bbox") is not None:
        row["bbox"] = tuple(row["bbox"])
    return Chunk(**row)


def _graph_items(store: Store, doc_ids: list[str]) -> tuple[list[Entity], list[Hyperedge]]:
    entity_ids: dict[str, None] = {}
    edge_ids: dict[str, None] = {}
    for doc_id in doc_ids:
        entity_ids.update(dict.fromkeys(store.document_entities(doc_id)))
        edge_ids.update(dict.fromkeys(store.document_hyperedges(doc_id)))
    return store.get_entities(list(entity_ids)), store.get_hyperedges(list(edge_ids))


def _chunks_of(prov: list[tuple[str, str, int]]) -> list[str]:
    return list(dict.fromkeys(chunk for chunk, _, _ in prov))


def hif_of(entities: list[Entity], edges: list[Hyperedge]) -> dict[str, Any]:
    """The hypergraph in HIF: entities are nodes, hyperedges are edges, members with roles are incidences."""
    return {
        "network-type": "undirected",
        "metadata": {"source": "hyperfolio"},
        "nodes": [
            {"node": e.entity_id, "attrs": {"name": e.name, "type": e.type, "concept": e.concept}} for e in entities
        ],
        "edges": [
            {"edge": h.edge_id, "attrs": {"level": h.level, "description": h.description, "relation": h.relation}}
            for h in edges
        ],
        "incidences": [
            {"node": entity_id, "edge": h.edge_id, "attrs": {"role": role}}
            for h in edges
            for entity_id, role in h.members
        ],
    }


def incidence_graph(entities: list[Entity], edges: list[Hyperedge]) -> nx.Graph:
    """The bipartite incidence graph (entity and hyperedge nodes), with GraphML-safe string attributes."""
    graph = nx.Graph()
    for e in entities:
        graph.add_node(f"entity:{e.entity_id}", bipartite=0, kind="entity", name=e.name, type=e.type)
    for h in edges:
        graph.add_node(f"edge:{h.edge_id}", bipartite=1, kind="hyperedge", level=h.level, description=h.description)
        for entity_id, role in h.members:
            graph.add_edge(f"entity:{entity_id}", f"edge:{h.edge_id}", role=role)
    return graph


def export_bundle(
    store: Store, out_dir: Path, files: Path | None = None, records: ModelRecordStore | None = None
) -> BundleReport:
    """Write the whole store as a bundle in `out_dir` (created; it must be empty if it exists).

    `files`: the collection's folder, whose `images/` (chunk pictures, named by relative
    `image_path`) the store does not hold and so are copied beside the JSON; `records`: its
    model-call records.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise BundleError(f"{out_dir} is not empty; export into a new directory")
    out_dir.mkdir(parents=True, exist_ok=True)
    report = BundleReport(out_dir)
    doc_ids = _export_documents(store, out_dir, report)
    entities, edges = _export_graph(store, out_dir, report, doc_ids)
    meta = {key: value for key, value in store.meta_items().items() if key not in LOCAL_META}
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")

    (out_dir / "hypergraph.hif.json").write_text(json.dumps(hif_of(entities, edges)), encoding="utf-8")
    nx.write_graphml(incidence_graph(entities, edges), out_dir / "hypergraph.graphml")

    if files is not None and (Path(files) / IMAGES).is_dir():
        shutil.copytree(Path(files) / IMAGES, out_dir / IMAGES)
        report.counts["images"] = sum(1 for p in (out_dir / IMAGES).rglob("*") if p.is_file())
    report.counts["vectors"] = _write_jsonl(out_dir / VECTORS, _vector_rows(store))
    if records is not None:
        report.counts["model_replies"] = _write_jsonl(
            out_dir / "model_replies.jsonl", (asdict(reply) | {"key": key} for key, reply in records.replies())
        )
        (out_dir / "model_usage.json").write_text(json.dumps(records.usage(), indent=2), encoding="utf-8")
    manifest = {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "embedder": meta.get("embedder"),
        "counts": report.counts,
        "vectors": True,
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return report


def _export_documents(store: Store, out_dir: Path, report: BundleReport) -> list[str]:
    """documents.jsonl (each document with its pages and chunks); the ids of the documents written."""
    infos = store.list_documents()

    def documents() -> Iterator[dict[str, Any]]:
        for info in infos:
            chunks = list(store.iter_chunks(info.doc_id))
            pages = [
                {**asdict(page), "chunks": [_chunk_dict(c) for c in chunks if c.page == page.number]}
                for page in store.get_pages(info.doc_id)
            ]
            yield {
                "doc_id": info.doc_id,
                "source": info.source,
                "title": info.title,
                "kind": info.kind,
                "content_hash": info.content_hash,
                "status": info.status,
                "added_at": info.added_at,
                "meta": info.meta,
                "reconcile_counts": store.reconcile_counts(info.doc_id),
                "pages": pages,
            }

    report.counts["documents"] = _write_jsonl(out_dir / "documents.jsonl", documents())
    report.counts["chunks"] = store.count_chunks()
    return [info.doc_id for info in infos]


def _export_graph(
    store: Store, out_dir: Path, report: BundleReport, doc_ids: list[str]
) -> tuple[list[Entity], list[Hyperedge]]:
    """The hypergraph items with their chunks, and the bookkeeping beside them; the items written."""
    entities, edges = _graph_items(store, doc_ids)
    entity_prov = store.provenance("entity", [e.entity_id for e in entities])
    edge_prov = store.provenance("hyperedge", [h.edge_id for h in edges])
    report.counts["entities"] = _write_jsonl(
        out_dir / "entities.jsonl",
        ({**asdict(e), "chunks": _chunks_of(entity_prov.get(e.entity_id, []))} for e in entities),
    )
    report.counts["hyperedges"] = _write_jsonl(
        out_dir / "hyperedges.jsonl",
        ({**asdict(h), "chunks": _chunks_of(edge_prov.get(h.edge_id, []))} for h in edges),
    )
    signatures = store.refine_signatures([e.entity_id for e in entities])
    report.counts["refine_state"] = _write_jsonl(
        out_dir / "refine_state.jsonl",
        ({"anchor_id": a, "signature": s, "edge_ids": ids} for a, (s, ids) in sorted(signatures.items())),
    )
    report.counts["decisions"] = _write_jsonl(out_dir / "decisions.jsonl", (asdict(d) for d in store.decisions()))
    report.counts["builds"] = _write_jsonl(
        out_dir / "builds.jsonl",
        ({"doc_id": d, "stage": s, "item": i, "how": h, "reason": r} for d, s, i, h, r in store.builds()),
    )
    report.counts["stage_times"] = _write_jsonl(
        out_dir / "stage_times.jsonl",
        ({"doc_id": doc_id, "seconds": times} for doc_id in doc_ids if (times := store.stage_times(doc_id))),
    )
    return entities, edges


def _vector_rows(store: Store) -> Iterator[dict[str, Any]]:
    """Every space's vectors, exact: float32 little-endian bytes in base64."""
    for space in SPACES:
        for item_id, doc_id, vector in store.iter_vectors(space):
            data = np.asarray(vector, dtype="<f4").tobytes()
            yield {"space": space, "item_id": item_id, "doc_id": doc_id, "vector": base64.b64encode(data).decode()}


def _put_vectors(store: Store, rows: Iterable[dict[str, Any]]) -> int:
    """Write exported vectors back, a space and a batch at a time; returns how many."""
    count = 0
    batch: list[dict[str, Any]] = []

    def flush() -> None:
        if batch:
            vectors = np.vstack([np.frombuffer(base64.b64decode(r["vector"]), dtype="<f4") for r in batch])
            store.put_vectors(batch[0]["space"], [(r["item_id"], r["doc_id"]) for r in batch], vectors)
            batch.clear()

    for row in rows:
        if batch and (row["space"] != batch[0]["space"] or len(batch) >= EMBED_BATCH):
            flush()
        batch.append(row)
        count += 1
    flush()
    return count


def read_manifest(bundle_dir: Path) -> dict[str, Any]:
    """The bundle's manifest, checked for format and version before anything is written."""
    path = Path(bundle_dir) / "manifest.json"
    if not path.is_file():
        raise BundleError(f"{bundle_dir}: no manifest.json, not a hyperfolio bundle")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{bundle_dir}: not a hyperfolio bundle (format {manifest.get('format')!r})")
    if manifest.get("version") != BUNDLE_VERSION:
        raise BundleError(
            f"{bundle_dir}: bundle version {manifest.get('version')!r}, this hyperfolio reads version {BUNDLE_VERSION}"
        )
    return manifest


def import_bundle(
    store: Store,
    bundle_dir: Path,
    embed: Embed | None = None,
    files: Path | None = None,
    records: ModelRecordStore | None = None,
) -> BundleReport:
    """Load a bundle into an empty store; `embed` (store, chunks) re-makes and stores the chunk vectors,
    the bundle's images go to the collection folder `files` and its model calls into `records`.

    Without `embed` the documents stay at stage `parsed`, so nothing claims to be searchable by
    vector when it is not; with it they get their exported status back. When anything fails, the
    documents and graph written so far are removed and the error is raised.
    """
    bundle_dir = Path(bundle_dir)
    read_manifest(bundle_dir)
    if store.list_documents():
        raise BundleError("the target collection is not empty; import into a new one")
    try:
        with store.bulk():
            return _import(store, bundle_dir, embed, files, records)
    except BaseException:
        for info in store.list_documents():
            store.remove_document(info.doc_id)
        store.clear_graph()
        raise


def _import(
    store: Store, bundle_dir: Path, embed: Embed | None, files: Path | None, records: ModelRecordStore | None
) -> BundleReport:
    report = BundleReport(bundle_dir)
    meta = (
        json.loads((bundle_dir / "meta.json").read_text(encoding="utf-8"))
        if (bundle_dir / "meta.json").is_file()
        else {}
    )
    for key, value in meta.items():
        if key not in LOCAL_META:
            store.set_meta(key, value)

    has_vectors = (bundle_dir / VECTORS).is_file()
    statuses = _import_documents(store, bundle_dir, report, None if has_vectors else embed)
    _import_graph(store, bundle_dir, report)
    _import_bookkeeping(store, bundle_dir, report)

    if has_vectors:  # every space's vectors as exported; then each document is as searchable as it was
        report.counts["vectors"] = _put_vectors(store, _read_jsonl(bundle_dir / VECTORS))
        for doc_id, status in statuses.items():
            if status and status != STAGE_PARSED:
                store.set_stage(doc_id, status)

    if records is not None:
        _import_records(records, bundle_dir, report)
    if files is not None and (bundle_dir / IMAGES).is_dir():
        shutil.copytree(bundle_dir / IMAGES, Path(files) / IMAGES, dirs_exist_ok=True)
    if not has_vectors and embed is None:
        report.notes.append("no vectors imported: documents stay 'parsed' until re-embedded")
    elif not has_vectors:
        report.notes.append("chunk vectors re-embedded; graph vectors (entity, hyperedge, concept, theme) are not")
    return report


def _document_of(row: dict[str, Any]) -> Document:
    """A documents.jsonl row as the `Document` it was exported from."""
    pages = [
        Page(
            p["number"],
            [_chunk_of(c) for c in p["chunks"]],
            width=p["width"],
            height=p["height"],
            ocr=p.get("ocr", False),
            vision_dominant=p.get("vision_dominant", False),
        )
        for p in row["pages"]
    ]
    return Document(
        row["doc_id"],
        row["source"],
        row["title"],
        row["kind"],
        pages,
        row["content_hash"],
        meta=row.get("meta") or {},
        added_at=row.get("added_at") or 0.0,
    )


def _import_documents(store: Store, bundle_dir: Path, report: BundleReport, embed: Embed | None) -> dict[str, str]:
    """Write the documents (re-embedded and given their status back when `embed` is given); their statuses."""
    docs = chunks = 0
    statuses: dict[str, str] = {}
    for row in _read_jsonl(bundle_dir / "documents.jsonl"):
        doc = _document_of(row)
        store.write_document(doc)
        if row.get("reconcile_counts"):
            store.save_reconcile_counts(doc.doc_id, row["reconcile_counts"])
        docs += 1
        chunks += len(doc.chunks)
        statuses[doc.doc_id] = row["status"]
        if embed is not None:
            embed(store, doc.chunks)
            if row["status"] and row["status"] != STAGE_PARSED:
                store.set_stage(doc.doc_id, row["status"])
    report.counts["documents"], report.counts["chunks"] = docs, chunks
    return statuses


def _import_graph(store: Store, bundle_dir: Path, report: BundleReport) -> None:
    entities: list[tuple[Entity, list[str]]] = []
    for row in _read_jsonl(bundle_dir / "entities.jsonl"):
        prov = row.pop("chunks")
        entities.append((Entity(**row), prov))
    edges: list[tuple[Hyperedge, list[str]]] = []
    for row in _read_jsonl(bundle_dir / "hyperedges.jsonl"):
        prov = row.pop("chunks")
        row["members"] = [tuple(m) for m in row["members"]]
        edges.append((Hyperedge(**row), prov))
    store.write_graph(entities, edges)
    concepts = store.concepts_of([e.entity_id for e, _ in entities])
    store.rebuild_concepts(sorted(set(concepts.values())))
    report.counts["entities"], report.counts["hyperedges"] = len(entities), len(edges)


def _import_bookkeeping(store: Store, bundle_dir: Path, report: BundleReport) -> None:
    """Refinement state, decisions, who built what and the stage times."""
    refine = list(_read_jsonl(bundle_dir / "refine_state.jsonl"))
    for row in refine:
        store.set_refine_signature(row["anchor_id"], row["signature"], row["edge_ids"])
    report.counts["refine_state"] = len(refine)
    decisions = [Decision(**row) for row in _read_jsonl(bundle_dir / "decisions.jsonl")]
    store.log_decisions(decisions)
    report.counts["decisions"] = len(decisions)
    builds: dict[str, list[tuple[str, str, str, str]]] = {}
    for row in _read_jsonl(bundle_dir / "builds.jsonl"):
        builds.setdefault(row["doc_id"], []).append((row["stage"], row["item"], row["how"], row["reason"]))
    for doc_id, rows in builds.items():
        store.record_builds(doc_id, rows)
    report.counts["builds"] = sum(len(rows) for rows in builds.values())
    times = list(_read_jsonl(bundle_dir / "stage_times.jsonl"))
    for row in times:
        store.add_stage_times(row["doc_id"], row["seconds"])
    report.counts["stage_times"] = len(times)


def _import_records(records: ModelRecordStore, bundle_dir: Path, report: BundleReport) -> None:
    replies = 0
    for row in _read_jsonl(bundle_dir / "model_replies.jsonl"):
        records.put_reply(row["key"], row["model"], row["response"], row["prompt_tokens"], row["completion_tokens"])
        replies += 1
    report.counts["model_replies"] = replies
    if (bundle_dir / "model_usage.json").is_file():
        for stage, counts in json.loads((bundle_dir / "model_usage.json").read_text(encoding="utf-8")).items():
            records.add_usage(stage, counts)
