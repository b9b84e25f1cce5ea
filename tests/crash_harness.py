"""Crash-at-every-stage harness: SIGKILL an `add` at a stage boundary or inside a stage, `add` again, and
compare the store with an uninterrupted run's, row by row, by content.

Shared by `tests/test_crash_stages.py` (bounded, for CI) and `benchmarks/crash_stages.py` (more kill
points, a table); both load this file by path, as the fuzzing benchmark loads its test module. It is
also the driver script each killed process runs (`python tests/crash_harness.py --collection DIR --file
F --kill STAGE:N`), so the product code carries no test hooks:

- the driver installs `sys.settrace` for call events only and counts the calls of functions defined in
  the hyperfolio package, in order; a stage starts at the first call of its entry function (`STAGES`,
  in the order one `add` meets them) and lasts until the next stage starts. At the N-th call of the
  chosen stage (0: the entry call itself, a stage boundary) it sends itself SIGKILL; every call of the
  package counts, store methods included, so kill points fall between and inside transactions. In
  `--counts` mode it runs to the end and writes how many calls each stage made (the range random kill
  points are drawn from) and which of them entered or left a store transaction (kill points where what
  is on disk changes). `PYTHONHASHSEED` is fixed so a run makes the same calls as the counting run.
- `dump_sqlite` reads every table of a collection into sorted rows keyed by content (documents by
  content hash, chunks by (document, page, order), entities by name and type, hyperedges by level,
  member names and description, ...), ids replaced by those keys, timestamps left out
  (`EXCLUDED_COLUMNS`), vectors compared within a tolerance; `compare` lists the first differing rows.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Container, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import numpy as np

HERE = Path(__file__).resolve()
HASH_SEED = "0"  # the driver's PYTHONHASHSEED: a killed run makes the same calls as the counting run
VECTOR_TOLERANCE = 1e-4  # largest difference allowed per vector component (embedding batches differ)
SHOWN = 5  # differing rows shown per table
RANDOM_META = ("documents_epoch", "graph_epoch", "keywords_owner")  # the store's LOCAL_META that are random


# --------------------------------------------------------------------------- the fixture document

FIXTURE_PAGES: list[tuple[str, list[str]]] = [
    (
        "Osprey Fleet Report",
        [
            "The Osprey fleet capacity is 412,000 TEU. The Osprey Shipping Company operates container vessels "
            "from Rotterdam.",
            "Osprey revenue was $5.2 million in 2022. Rotterdam remains the home port of the Osprey fleet.",
        ],
    ),
    ("Routes", ["The Osprey fleet serves Rotterdam, Hamburg and Antwerp on weekly loops.", "Table 1: Route systems"]),
    (
        "Outlook",
        [
            "The Osprey fleet capacity is 390,000 TEU. The Dusseldorf-Neuss route belongs to the Essen Stadtbahn.",
            "Osprey revenue was $6.1 million in 2023. Hamburg and Rotterdam gain two berths for the Osprey fleet.",
        ],
    ),
    (
        "Summary",
        [
            "As reported, the Osprey fleet capacity is 412,000 TEU. The Osprey Shipping Company also runs feeders "
            "to Hamburg.",
            "Figure 1: Osprey vessel arrivals per quarter",
        ],
    ),
]
FIXTURE_TABLE = [
    ("Route", "System"),
    ("Dusseldorf-Neuss", "Dusseldorf Stadtbahn"),
    ("Essen-Mulheim", "Essen Stadtbahn"),
]
# A second document that shares entities and facts with the first: adding the first after it makes
# reconciliation and refinement reach across documents (a fact of this one relabelled or dropped), and
# offers another concept for an entity this one gave one first (Rotterdam: a plain name here, "the home
# port" there; the entity keeps its first). Written as a PDF by `write_fixture(path, SETUP_PAGES)`.
SETUP_PAGES: list[tuple[str, list[str]]] = [
    ("Port Notes", ["Rotterdam handled record volumes for the Osprey fleet. Osprey revenue was $4.8 million in 2021."]),
    ("Capacity", ["The Osprey fleet capacity is 398,000 TEU. Hamburg and Antwerp signed new terminal contracts."]),
    ("Hinterland", ["The Dusseldorf-Neuss route belongs to the Rhine Stadtbahn. Trains link Rotterdam to Hamburg."]),
]
_FIXED_DATE = "D:20250101000000Z"


def _figure_png() -> bytes:
    """A small picture of text (OCR reads it): the figure chunk of the fixture."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=360, height=120)
    page.insert_text((20, 50), "Arrivals Q1 42  Q2 57", fontsize=22, fontname="helv")
    page.insert_text((20, 95), "Osprey Rotterdam", fontsize=22, fontname="helv")
    data: bytes = page.get_pixmap(dpi=100).tobytes("png")
    doc.close()
    return data


def write_fixture(path: Path, pages: Sequence[tuple[str, list[str]]] = FIXTURE_PAGES, title: str = "") -> Path:
    """A small PDF (same bytes every time) that exercises every build stage: an entity on every page
    (anchors to refine), contradicting and dated figures (reconciliation drops and revises), a ruled
    table and a figure."""
    import pymupdf

    doc = pymupdf.open()
    for number, (heading, paragraphs) in enumerate(pages, 1):
        page = doc.new_page()
        page.insert_text((72, 90), heading, fontsize=18, fontname="hebo")
        y = 110.0
        for paragraph in paragraphs:
            page.insert_textbox(pymupdf.Rect(72, y, 540, y + 80), paragraph, fontsize=11, fontname="helv")
            y += 80
        if pages is FIXTURE_PAGES and number == 2:
            _ruled_table(page, y)
        if pages is FIXTURE_PAGES and number == 4:
            page.insert_image(pymupdf.Rect(72, y, 432, y + 120), stream=_figure_png())
    metadata = {"title": title or pages[0][0], "creationDate": _FIXED_DATE, "modDate": _FIXED_DATE}
    doc.set_metadata(metadata)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path, garbage=3, deflate=True, no_new_id=True)
    doc.close()
    return path


def _ruled_table(page: Any, top: float) -> None:
    xs, height = [72.0, 232.0, 432.0], 22.0
    shape = page.new_shape()
    for i in range(len(FIXTURE_TABLE) + 1):
        shape.draw_line((xs[0], top + i * height), (xs[-1], top + i * height))
    for x in xs:
        shape.draw_line((x, top), (x, top + height * len(FIXTURE_TABLE)))
    shape.finish(color=(0, 0, 0), width=0.8)
    shape.commit()
    for r, row in enumerate(FIXTURE_TABLE):
        for c, cell in enumerate(row):
            font = "hebo" if r == 0 else "helv"
            page.insert_text((xs[c] + 6, top + r * height + 15), cell, fontsize=10, fontname=font)


# --------------------------------------------------------------------------- stages and the driver


@dataclass(frozen=True)
class Stage:
    """A stage of one `add`, entered by the first call (after the previous stage's) of its entry function."""

    name: str
    module: str  # file of the entry function, relative to the package; "store/" is any store backend
    qualname: str  # the entry function's qualified name; "*.name": a method of any class

    def matches(self, module: str, qualname: str) -> bool:
        where = module.startswith(self.module) if self.module.endswith("/") else module == self.module
        if not where:
            return False
        return qualname.endswith(self.qualname[1:]) if self.qualname.startswith("*.") else qualname == self.qualname


# In the order one `add` of a new document meets them (collection.py, ingest/, hypergraph/pipeline.py).
STAGES: tuple[Stage, ...] = (
    Stage("open", "collection.py", "Collection.__init__"),  # settings, the store and its schema
    Stage("read", "ingest/pipeline.py", "IngestPipeline._prepare"),  # the file read and hashed, the store asked
    Stage("parse", "ingest/parse_ahead.py", "ParseAhead.document"),  # pages read (here: one small PDF), assembled
    Stage("write", "ingest/pipeline.py", "IngestPipeline._write"),  # images, document and chunks: one transaction
    Stage("chunk-embedding", "ingest/pipeline.py", "IngestPipeline._index"),  # chunk vectors, batch by batch
    Stage("extraction", "hypergraph/pipeline.py", "build_document_graph"),
    Stage("merge", "hypergraph/merge.py", "merge"),
    Stage("reconcile", "hypergraph/reconcile.py", "reconcile"),
    Stage("graph-writes", "store/", "*.write_graph"),
    Stage("refine", "hypergraph/refine.py", "refine_anchors"),
    Stage("graph-embedding", "hypergraph/pipeline.py", "embed_graph_items"),
    Stage("concepts", "hypergraph/layers.py", "update_concept_layer"),
    Stage("themes", "hypergraph/layers.py", "build_theme_layer"),
    Stage("finish", "store/", "*.record_builds"),  # build record, stages graphed and ready, stage times, claim
)
STAGE_NAMES = tuple(s.name for s in STAGES)


@dataclass(frozen=True)
class KillPoint:
    stage: str
    at: int  # calls into the stage: 0 is its boundary (the entry call itself)
    kind: str = "given"  # why it was chosen: "boundary", "transaction", "random"

    @property
    def label(self) -> str:
        return f"{self.stage}:{self.at}"

    @classmethod
    def parse(cls, text: str) -> KillPoint:
        stage, _, at = text.rpartition(":")
        if stage not in STAGE_NAMES or not at.isdigit():
            raise ValueError(f"a kill point is STAGE:N with STAGE one of {', '.join(STAGE_NAMES)}: {text!r}")
        return cls(stage, int(at))


class CallCounter:
    """A `sys.settrace` function (call events only: it returns None, so no line tracing) that follows the
    stages through the package's calls and kills this process at a kill point."""

    def __init__(self, package: Path, stages: Sequence[Stage], kill: KillPoint | None = None) -> None:
        self.root = str(package) + os.sep
        self.stages = list(stages)
        self.kill = (STAGE_NAMES.index(kill.stage), kill.at) if kill is not None else None
        self.counts = [0] * len(stages)
        self.commits: list[list[int]] = [[] for _ in stages]  # per stage, the calls that entered or left a transaction
        self.current = -1  # the stage now running
        self.calls = 0  # calls into it so far, its entry call being call 0
        self._modules: dict[CodeType, str | None] = {}

    def _module(self, code: CodeType) -> str | None:
        known = self._modules.get(code, "")
        if known != "":
            return known
        name = code.co_filename
        module = name[len(self.root) :].replace(os.sep, "/") if name.startswith(self.root) else None
        self._modules[code] = module
        return module

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        code = frame.f_code
        module = self._module(code)
        if module is None:
            return None
        following = self.current + 1
        if following < len(self.stages) and self.stages[following].matches(module, code.co_qualname):
            self.current, self.calls = following, 0
        elif self.current < 0:
            return None
        else:
            self.calls += 1
        self.counts[self.current] += 1
        if code.co_name == "transaction" and module.startswith("store/"):
            self.commits[self.current].append(self.calls)
        if self.kill == (self.current, self.calls):
            os.kill(os.getpid(), signal.SIGKILL)
        return None


def drive(argv: Sequence[str] | None = None) -> int:
    """The child: add the setup documents untraced, then add the document with the call counter on."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--collection", required=True)
    parser.add_argument("--file", required=True)
    parser.add_argument("--setup", action="append", default=[], help="added first, without tracing")
    parser.add_argument("--kill", type=KillPoint.parse, help="STAGE:N")
    parser.add_argument("--counts", help="write the calls each stage made to this JSON file")
    args = parser.parse_args(argv)

    import hyperfolio
    from hyperfolio import Collection

    if args.setup:
        with Collection(args.collection) as setup:
            failed = [r for r in setup.add(args.setup).results if not r.ok]
        if failed:
            print(f"setup failed: {failed}", file=sys.stderr)
            return 2
    counter = CallCounter(Path(hyperfolio.__file__).resolve().parent, STAGES, args.kill)
    sys.settrace(counter)
    try:
        col = Collection(args.collection)  # what `hyperfolio add` does: open, then add the files
        report = col.add([args.file])
    finally:
        sys.settrace(None)
    col.close()
    failed = [r for r in report.results if not r.ok]
    if failed:
        print(f"add failed: {failed}", file=sys.stderr)
        return 2
    if args.counts:
        calls = dict(zip(STAGE_NAMES, counter.counts, strict=True))
        commits = dict(zip(STAGE_NAMES, counter.commits, strict=True))
        Path(args.counts).write_text(json.dumps({"calls": calls, "transactions": commits}, indent=1))
    return 0 if args.kill is None else 3  # 3: the kill point was never reached


def driver_env(config_home: Path) -> dict[str, str]:
    """The driver's environment: a fixed hash seed, no user settings (defaults, as `Settings()`), the
    model cache kept (the embedders are prepared once, by `prepare_models`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPERFOLIO_") or k == "HYPERFOLIO_CACHE"}
    config_home.mkdir(parents=True, exist_ok=True)
    env.update(PYTHONHASHSEED=HASH_SEED, XDG_CONFIG_HOME=str(config_home), PYTHONUNBUFFERED="1")
    return env


def run_driver(
    collection: Path,
    file: Path,
    setup: Sequence[Path] = (),
    kill: KillPoint | None = None,
    counts: Path | None = None,
    timeout: float = 300.0,
) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(HERE), "--collection", str(collection), "--file", str(file)]
    for path in setup:
        cmd += ["--setup", str(path)]
    if kill is not None:
        cmd += ["--kill", kill.label]
    if counts is not None:
        cmd += ["--counts", str(counts)]
    env = driver_env(collection.parent / "config-home")
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


def prepare_models() -> None:
    """Build the embedders' cached files once (the ONNX graph, the distilled static model), so that no run
    spends its calls preparing them and every run makes the same calls."""
    from hyperfolio.config import Settings
    from hyperfolio.embed.local import MiniLMEmbedder, Model2VecEmbedder, make_embedder

    MiniLMEmbedder().embed(["warm up"])
    make_embedder(Settings().embedder).embed(["warm up"])
    Model2VecEmbedder().embed(["warm up"])


# --------------------------------------------------------------------------- the canonical dump

# Columns left out of the comparison, and why. Every other column of every table is compared.
EXCLUDED_COLUMNS: dict[str, str] = {
    "documents.added_at": "wall-clock time of the write",
    "doc_status.updated_at": "wall-clock time of the last stage change",
    "refine_state.updated_at": "wall-clock time of the refinement",
    "conflict_log.created_at": "wall-clock time of the decision",
    "conflict_log.id": "insertion counter (rows are compared as a multiset, duplicates count)",
    "claims.owner": "host, process id and a random token of the worker",
    "claims.expires_at": "wall-clock time",
    "model_cache.created_at": "wall-clock time",
    "model_usage.seconds": "time spent",
    "model_servers.probed_at": "wall-clock time",
    "conversations.conversation_id": "a random token",
    "conversations.created_at": "wall-clock time",
    "conversations.updated_at": "wall-clock time",
    "conversation_turns.conversation_id": "the conversation's random token",
}
# Tables not compared at all, and why.
EXCLUDED_TABLES: dict[str, str] = {
    "stage_times": "seconds per stage; a killed run records none and its resumption only what it redid",
    "vector_deletions": "a change log for readers' in-memory matrices (pruned on commit), not content",
    "sqlite_sequence": "AUTOINCREMENT counters: how many rows were ever inserted, not what is stored",
}


@dataclass
class StoreDump:
    """A collection's content: per table, sorted rows of content keys; vectors by content key."""

    tables: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    vectors: dict[tuple[str, ...], np.ndarray] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {name: len(rows) for name, rows in self.tables.items()}


def _sorted(rows: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(rows, key=repr)


def _json(text: Any) -> Any:
    return json.loads(text) if isinstance(text, str) else text


class _Keys:
    """Content keys for the ids of one store."""

    def __init__(self, rows: Callable[[str], list[tuple[Any, ...]]]) -> None:
        self.docs = {d: f"doc:{h[:12]}" for d, h in rows("SELECT doc_id, content_hash FROM documents")}
        chunks = rows("SELECT chunk_id, doc_id, page, ord FROM chunks")
        self.chunks = {c: f"{self.doc(d)}/p{p}/o{o}" for c, d, p, o in chunks}
        named = rows("SELECT entity_id, name, type, norm_name FROM entities")
        labels = Counter(f"{name} [{kind}]" for _, name, kind, _ in named)
        self.entities = {
            e: f"{name} [{kind}]" if labels[f"{name} [{kind}]"] == 1 else f"{name} [{kind}] ~{norm}"
            for e, name, kind, norm in named
        }
        members: dict[str, list[str]] = {}
        for edge, entity in rows("SELECT edge_id, entity_id FROM incidence"):
            members.setdefault(edge, []).append(self.entity(entity))
        self.edges = {
            h: f"{level}<{', '.join(sorted(members.get(h, [])))}> {description}"
            for h, level, description in rows("SELECT edge_id, level, description FROM hyperedges")
        }
        self.concepts = dict(rows("SELECT concept_id, name FROM concepts"))

    def doc(self, doc_id: str) -> str:
        return self.docs.get(doc_id, f"missing-doc:{doc_id}")

    def chunk(self, chunk_id: str) -> str:
        return self.chunks.get(chunk_id, f"missing-chunk:{chunk_id}")

    def entity(self, entity_id: str) -> str:
        return self.entities.get(entity_id, f"missing-entity:{entity_id}")

    def edge(self, edge_id: str) -> str:
        return self.edges.get(edge_id, f"missing-edge:{edge_id}")

    def concept(self, concept_id: str) -> str:
        return self.concepts.get(concept_id, f"missing-concept:{concept_id}")

    def text(self, value: Any) -> Any:
        """A string with document ids replaced by their keys (image paths, item names)."""
        if not isinstance(value, str):
            return value
        for doc_id, key in self.docs.items():
            value = value.replace(doc_id, key)
        return value

    def vector_item(self, space: str, item: str, doc_id: str) -> str:
        if space == "chunk":
            return self.chunk(item)
        scoped, _, _ = item.rpartition("|" + doc_id)
        name = scoped or item
        if space == "entity":
            return self.entity(name)
        if space in ("hyperedge", "theme"):
            return self.edge(name)
        if space == "concept":
            return self.concept(name)
        return name  # relation: its label is its content


def dump_rows(rows: Callable[[str], list[tuple[Any, ...]]], k: _Keys, files: Path | None = None) -> StoreDump:
    """The content of a store through `rows(sql)` (statements both backends run), ids as content keys `k`;
    `files`: the collection folder, whose page images are compared too."""
    t: dict[str, list[tuple[Any, ...]]] = {}
    # The keyword index's epoch and owner are random tokens (store/sql/keywords.py): compared by presence.
    t["meta"] = _sorted(
        (key, "(random)" if key in RANDOM_META else value) for key, value in rows("SELECT key, value FROM meta")
    )
    t["claims"] = _sorted(rows("SELECT key FROM claims"))
    t["documents"] = _sorted(
        (k.doc(d), source, title, kind, content_hash, pages, json.dumps(_json(meta), sort_keys=True))
        for d, source, title, kind, content_hash, pages, meta in rows(
            "SELECT doc_id, source, title, kind, content_hash, num_pages, meta FROM documents"
        )
    )
    t["doc_status"] = _sorted((k.doc(d), stage) for d, stage in rows("SELECT doc_id, stage FROM doc_status"))
    t["pages"] = _sorted(
        (k.doc(d), n, w, h, bool(o), bool(v))
        for d, n, w, h, o, v in rows("SELECT doc_id, number, width, height, ocr, vision_dominant FROM pages")
    )
    t["chunks"] = _sorted(
        (k.chunk(r[0]), k.doc(r[1]), *r[2:6], k.text(r[6]), *r[7:12], k.text(r[12]), bool(r[13]), k.text(r[14]))
        for r in rows(
            "SELECT chunk_id, doc_id, page, ord, modality, text, bbox, section_path, table_cells, table_header_rows,"
            " caption, ocr_text, image_path, placeholder, meta FROM chunks"
        )
    )
    t["entities"] = _sorted(
        (k.entity(e), name, norm, kind, description, modality, tuple(_json(aliases)), json.dumps(_json(meta)))
        for e, name, norm, kind, description, modality, aliases, meta in rows(
            "SELECT entity_id, name, norm_name, type, description, modality, aliases, meta FROM entities"
        )
    )
    t["hyperedges"] = _sorted(
        (k.edge(h), level, description, tuple(_json(keywords)), round(float(strength), 9), json.dumps(_json(meta)))
        for h, level, description, keywords, strength, meta in rows(
            "SELECT edge_id, level, description, keywords, strength, meta FROM hyperedges"
        )
    )
    t["incidence"] = _sorted(
        (k.edge(h), k.entity(e), role) for h, e, role in rows("SELECT edge_id, entity_id, role FROM incidence")
    )
    t["provenance"] = _sorted(
        (kind, k.entity(item) if kind == "entity" else k.edge(item), k.chunk(c), k.doc(d), page)
        for kind, item, c, d, page in rows("SELECT item_kind, item_id, chunk_id, doc_id, page FROM provenance")
    )
    t["refine_state"] = _sorted(
        (k.entity(a), signature, tuple(sorted(k.edge(h) for h in _json(edges))))
        for a, signature, edges in rows("SELECT anchor_id, signature, edge_ids FROM refine_state")
    )
    t["model_builds"] = _sorted(
        (k.doc(d), stage, k.text(item), how, reason)
        for d, stage, item, how, reason in rows("SELECT doc_id, stage, item, how, reason FROM model_builds")
    )
    t["facts"] = _sorted(
        (k.edge(h), k.entity(head), relation, k.entity(tail))
        for h, head, relation, tail in rows("SELECT edge_id, head_id, relation, tail_id FROM facts")
    )
    t["concepts"] = _sorted((k.concept(c), name) for c, name in rows("SELECT concept_id, name FROM concepts"))
    t["entity_concepts"] = _sorted(
        (k.entity(e), k.concept(c)) for e, c in rows("SELECT entity_id, concept_id FROM entity_concepts")
    )
    t["concept_edges"] = _sorted(
        (k.concept(head), relation, k.concept(tail), k.doc(d), support)
        for head, relation, tail, d, support in rows(
            "SELECT head_id, relation, tail_id, doc_id, support FROM concept_edges"
        )
    )
    t["concept_evidence"] = _sorted(
        (k.concept(c), k.chunk(chunk), k.doc(d), page, n)
        for c, chunk, d, page, n in rows("SELECT concept_id, chunk_id, doc_id, page, entities FROM concept_evidence")
    )
    t["conflict_log"] = _sorted(
        (k.doc(d), kind, decision, fact, other, reason, tuple(k.chunk(c) for c in _json(evidence)), decided_by)
        for d, kind, decision, fact, other, reason, evidence, decided_by in rows(
            "SELECT doc_id, kind, decision, fact, other, reason, evidence, decided_by FROM conflict_log"
        )
    )
    t["reconcile_stats"] = _sorted(
        (k.doc(d), json.dumps(_json(counts), sort_keys=True))
        for d, counts in rows("SELECT doc_id, counts FROM reconcile_stats")
    )
    # Conversations: their ids and times are random and the clock's; compared by owner, title and turns.
    t["conversations"] = _sorted(rows("SELECT owner, title FROM conversations"))
    t["conversation_turns"] = _sorted(
        (n, json.dumps(_json(turn), sort_keys=True)) for n, turn in rows("SELECT n, turn FROM conversation_turns")
    )
    t["model_cache"] = _sorted(rows("SELECT key, model, response, prompt_tokens, completion_tokens FROM model_cache"))
    t["model_usage"] = _sorted(
        rows(
            "SELECT stage, calls, cache_hits, prompt_tokens, completion_tokens, estimated_calls, retries, rejected"
            " FROM model_usage"
        )
    )
    t["model_servers"] = _sorted(rows("SELECT key, profile FROM model_servers"))
    dump = StoreDump(t)
    for space, item, d, vec in rows("SELECT space, item_id, doc_id, vec FROM vectors"):
        key = (space, k.vector_item(space, item, d), k.doc(d))
        vector = np.frombuffer(vec, dtype=np.float32) if isinstance(vec, bytes) else np.asarray(vec, np.float32)
        if key in dump.vectors:  # two rows for one content key: keep both visible as a difference
            key = (*key, f"duplicate-{sum(1 for x in dump.vectors if x[:3] == key)}")
        dump.vectors[key] = vector
    t["vectors"] = _sorted(dump.vectors)
    if files is not None:
        t["files"] = _sorted(
            (k.text(str(p.relative_to(files))), hashlib.sha256(p.read_bytes()).hexdigest()[:16])
            for p in sorted((files / "images").rglob("*"))
            if p.is_file()
        )
    return dump


_SELECT = re.compile(r"SELECT (?P<columns>.+) FROM (?P<table>\w+)$")


def dump_sqlite(directory: Path) -> StoreDump:
    """A SQLite collection's content (its keyword index and page images included). Fails on a table or a
    column it does not know, so that a new one is either compared or excluded with a reason."""
    from hyperfolio.store.sqlite import SQLiteStore

    store = SQLiteStore(directory)  # its keyword index brought up to date, as the next search would
    try:
        store.catch_up_keywords()
    finally:
        store.close()
    db = sqlite3.connect(f"file:{directory / 'hyperfolio.db'}?mode=ro", uri=True)
    read: dict[str, set[str]] = {}  # the columns each table was read by
    try:

        def rows(sql: str) -> list[tuple[Any, ...]]:
            if found := _SELECT.match(sql):
                read.setdefault(found["table"], set()).update(c.strip() for c in found["columns"].split(","))
            return db.execute(sql).fetchall()

        keys = _Keys(rows)
        dump = dump_rows(rows, keys, directory)
        # The keyword index beside the database: which documents it holds, with their chunk and token counts.
        manifest = json.loads((Path(directory) / "keywords" / "manifest.json").read_text(encoding="utf-8"))
        dump.tables["keyword_index"] = _sorted((keys.doc(d), n, t) for d, (_, n, t) in manifest["docs"].items())
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        columns = {t: {r[1] for r in db.execute(f"PRAGMA table_info('{t}')")} for t in tables}
    finally:
        db.close()
    unknown = tables - set(dump.tables) - set(EXCLUDED_TABLES)
    if unknown:
        raise AssertionError(f"tables the dump does not know: {sorted(unknown)}; compare them or exclude them")
    unread = sorted(f"{t}.{c}" for t in tables - set(EXCLUDED_TABLES) for c in columns[t] - read.get(t, set()))
    unread = [name for name in unread if name not in EXCLUDED_COLUMNS]
    if unread:
        raise AssertionError(f"columns the dump does not read: {unread}; compare them or exclude them")
    return dump


def compare(expected: StoreDump, actual: StoreDump, tolerance: float = VECTOR_TOLERANCE) -> list[str]:
    """What differs, table by table, with the first differing rows of each (duplicates count)."""
    out: list[str] = []
    for table in sorted(set(expected.tables) | set(actual.tables)):
        want, got = Counter(expected.tables.get(table, [])), Counter(actual.tables.get(table, []))
        if want == got:
            continue
        missing, extra = _sorted((want - got).elements()), _sorted((got - want).elements())
        lines = [f"{table}: {sum(want.values())} rows expected, {sum(got.values())} found"]
        lines += [f"  only in the uninterrupted run: {row!r}" for row in missing[:SHOWN]]
        lines += [f"  only in the resumed run:       {row!r}" for row in extra[:SHOWN]]
        if len(missing) > SHOWN or len(extra) > SHOWN:
            lines.append(f"  ... {len(missing)} rows only in the uninterrupted run, {len(extra)} only in the resumed")
        out.append("\n".join(lines))
    worst, where = 0.0, None
    for key in set(expected.vectors) & set(actual.vectors):
        a, b = expected.vectors[key], actual.vectors[key]
        diff = float(np.max(np.abs(a - b))) if a.shape == b.shape else float("inf")
        if diff > worst:
            worst, where = diff, key
    if worst > tolerance:
        out.append(f"vectors: {where!r} differs by {worst:.2e} (tolerance {tolerance:.0e})")
    return out


# --------------------------------------------------------------------------- one kill point, end to end


@dataclass
class Outcome:
    point: KillPoint
    killed: bool = False
    after_kill: list[str] = field(default_factory=list)  # integrity problems found after the kill
    after_resume: list[str] = field(default_factory=list)  # ... and after `add` ran again
    unfinished: bool = False  # the kill left a document to finish
    resume_status: str = ""
    differences: list[str] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.killed and not self.after_resume and not self.differences and not self.error


def _problems(report: Any) -> list[str]:
    return [f"{f.kind} ({f.count}: {', '.join(f.examples[:3])})" for f in report.findings]


def baseline_problems(collection: Path) -> list[str]:
    """What the integrity check finds in the uninterrupted run's collection, a document left unfinished
    included: any of it is a fault of `add` itself, which no kill point is to be blamed for."""
    from hyperfolio import Collection, Settings

    with Collection(collection, settings=Settings()) as col:
        report = col.check()
    return _problems(report) + [f"unfinished ({u.status}: {u.source})" for u in report.unfinished]


@dataclass
class Profile:
    """The uninterrupted run: calls per stage, where in each stage a store transaction was entered or left
    (the calls to `transaction`), and the collection it built, the reference."""

    calls: dict[str, int]
    transactions: dict[str, list[int]]
    collection: Path


def count_stages(work: Path, fixture: Path, setup: Sequence[Path] = ()) -> Profile:
    """Run the driver uninterrupted, counting; its collection must pass the integrity check."""
    collection = work / "reference"
    counts = work / "counts.json"
    done = run_driver(collection, fixture, setup, counts=counts)
    if done.returncode != 0:
        raise RuntimeError(f"the uninterrupted run failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    found = json.loads(counts.read_text())
    missing = [name for name, n in found["calls"].items() if n == 0]
    if missing:
        raise RuntimeError(f"stages never entered in order: {missing} (see STAGES)")
    problems = baseline_problems(collection)
    if problems:
        raise RuntimeError(f"the uninterrupted run does not pass the integrity check: {'; '.join(problems)}")
    return Profile(found["calls"], found["transactions"], collection)


def plan(
    profile: Profile, random_points: int, seed: int, transactions: bool | Container[str] = True
) -> list[KillPoint]:
    """Per stage: its boundary, with `transactions` (True: in every stage; else the stages named) every call
    that enters or leaves a store transaction (the points where what is on disk changes: before BEGIN, and
    before COMMIT with the writes in the WAL uncommitted), and `random_points` distinct seeded points inside it."""
    import random

    rng = random.Random(seed)
    points = []
    for stage in STAGE_NAMES:
        chosen = {0: "boundary"}
        if transactions is True or (transactions is not False and stage in transactions):
            chosen.update((at, "transaction") for at in profile.transactions[stage] if at not in chosen)
        inside = range(1, profile.calls[stage])
        chosen.update((at, "random") for at in rng.sample(inside, min(random_points, len(inside))) if at not in chosen)
        points += [KillPoint(stage, at, kind) for at, kind in sorted(chosen.items())]
    return points


def kill_at(work: Path, fixture: Path, point: KillPoint, setup: Sequence[Path] = ()) -> tuple[Path, Outcome]:
    """The child run killed at `point`: its collection and what happened (no resumption yet)."""
    started = time.perf_counter()
    collection = work / point.label.replace(":", "-") / "col"
    collection.parent.mkdir(parents=True, exist_ok=True)
    outcome = Outcome(point)
    done = run_driver(collection, fixture, setup, kill=point)
    outcome.killed = done.returncode == -signal.SIGKILL
    if not outcome.killed:
        outcome.error = f"not killed (exit {done.returncode}): {done.stderr.strip()[-500:]}"
    outcome.seconds = time.perf_counter() - started
    return collection, outcome


def resume(collection: Path, fixture: Path, outcome: Outcome, reference: StoreDump, embedder: Any = None) -> Outcome:
    """Check the killed collection, `add` the document again in this process (`embedder`: a loaded chunk
    embedder to share; the defaults otherwise), check again and compare with the reference."""
    from hyperfolio import Collection, Settings

    started = time.perf_counter()
    try:
        col = Collection(collection, settings=Settings(), embedder=embedder)
        try:
            after_kill = col.check()
            outcome.after_kill = _problems(after_kill)
            outcome.unfinished = bool(after_kill.unfinished)
            result = col.add([fixture]).results[0]
            outcome.resume_status = result.status
            if not result.ok:
                outcome.error = f"resumed add failed: {result.reason}"
            outcome.after_resume = _problems(col.check())
        finally:
            col.close()
        outcome.differences = compare(reference, dump_sqlite(collection))
    except Exception as exc:  # reported per kill point; the run goes on with the others
        outcome.error = f"{type(exc).__name__}: {exc}"
    outcome.seconds += time.perf_counter() - started
    return outcome


def run_campaign(
    work: Path,
    fixture: Path,
    points: Sequence[KillPoint],
    reference: StoreDump,
    setup: Sequence[Path] = (),
    jobs: int = 2,
    embedder: Any = None,
    progress: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Every kill point: `jobs` killed children at a time, each resumed here as soon as it died (in plan
    order). A point that passes leaves no files; a failing one keeps its collection for inspection."""
    outcomes = []
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = [pool.submit(kill_at, work, fixture, point, setup) for point in points]
        for future in futures:
            collection, outcome = future.result()
            if outcome.killed:
                resume(collection, fixture, outcome, reference, embedder)
            if outcome.ok:
                shutil.rmtree(collection.parent, ignore_errors=True)
            outcomes.append(outcome)
            if progress is not None:
                progress(outcome)
    return outcomes


def summarise(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """Per stage: kill points tried, stores that differed, integrity problems after the kill and after resuming."""
    rows = []
    for stage in STAGE_NAMES:
        mine = [o for o in outcomes if o.point.stage == stage]
        rows.append(
            {
                "stage": stage,
                "tried": len(mine),
                "killed": sum(o.killed for o in mine),
                "differed": sum(bool(o.differences) for o in mine),
                "findings_after_kill": sum(bool(o.after_kill) for o in mine),
                "unfinished_after_kill": sum(o.unfinished for o in mine),
                "findings_after_resume": sum(bool(o.after_resume) for o in mine),
                "errors": sum(bool(o.error) for o in mine),
            }
        )
    return rows


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The summary as a Markdown table, with a total row."""
    columns = list(rows[0]) if rows else []
    total = {c: ("total" if c == "stage" else sum(int(r[c]) for r in rows)) for c in columns}
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(r[c]) for c in columns) + " |" for r in [*rows, total]]
    return "\n".join(lines)


def kinds(points: Sequence[KillPoint]) -> str:
    """'14 boundaries, 58 at transactions, 28 random'."""
    found = Counter(p.kind for p in points)
    names = {"boundary": "boundaries", "transaction": "at transactions", "random": "random", "given": "given"}
    return ", ".join(f"{n} {names[k]}" for k, n in found.items())


def describe(outcome: Outcome) -> str:
    """One kill point's failure, for an assertion message or the benchmark's report."""
    parts = [f"kill point {outcome.point.label}:"]
    if outcome.error:
        parts.append(f"  error: {outcome.error}")
    if outcome.after_resume:
        parts.append(f"  integrity after resuming: {outcome.after_resume}")
    parts += ["  " + d.replace("\n", "\n  ") for d in outcome.differences]
    return "\n".join(parts)


if __name__ == "__main__":
    sys.exit(drive())
