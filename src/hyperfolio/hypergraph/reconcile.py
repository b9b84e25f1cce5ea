"""The cross-modal holistic view: new facts checked against accepted ones (HVM-GraphRAG 3.1.2).

A document's facts are processed in reading order. For each chunk, its new facts meet the
accepted facts about the same heads (this document's so far and the collection's), held in a
`FactView`. A detector finds the real conflicts among them: the offline one compares a new fact
only with the facts its rules could call a rival (blocked by head, relation, unit or concept) and
with at most `max_candidates` of those, so the work per new fact does not grow with the
collection; a model detector is asked about groups sharing (head, relation), (head, tail) or head.
A resolver decides keep / merge / revise / drop using the chunks that support the facts. Dropped
facts leave the graph, and so do the entity -> chunk evidence links that only they supported.
Every decision is recorded.

The offline detector and resolver (deterministic rules) are in `reconcile_offline`, the
language-model ones in `reconcile_model`; both share these types, the view and its blocking.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import islice
from typing import Protocol

from hyperfolio.hypergraph.extract import FACT
from hyperfolio.hypergraph.facts_offline import years_in
from hyperfolio.hypergraph.merge import MergedGraph
from hyperfolio.model import Decision
from hyperfolio.phrases import content_words, first_number, normalize_name
from hyperfolio.store.base import RECONCILE_COUNTS, DocumentStore, HypergraphStore, Store

MUTUAL, TEMPORAL, GRANULARITY = "mutual", "temporal", "granularity"
KINDS = (MUTUAL, TEMPORAL, GRANULARITY)  # a conflict's kind; the first is the default
# Relations that give their head one value at a time: membership, place, identity, ownership.
_FUNCTIONAL_WORDS = {
    "belongs", "belong", "part", "member", "system", "network", "group", "owned", "owner", "operated",
    "operator", "assigned", "located", "based", "headquartered", "capital", "category", "type", "class",
    "born", "founded", "ceo", "chair", "president", "led", "run", "managed", "parent", "country", "city",
}  # fmt: skip


@dataclass
class Fact:
    edge_id: str
    head: str  # entity id
    relation: str
    tail: str
    head_name: str
    tail_name: str
    tail_concept: str = ""
    description: str = ""  # the sentence or table cell that states it
    chunks: list[str] = field(default_factory=list)
    from_table: bool = False
    new: bool = True  # extracted from the document being added (else: accepted earlier)

    @property
    def text(self) -> str:
        return f"{self.head_name} | {self.relation} | {self.tail_name}"

    @property
    def position(self) -> tuple[int, int]:
        """(page, order) of its first evidence: later sections come later."""
        return min((_chunk_position(c) for c in self.chunks), default=(0, 0))

    # What the rules read off a fact's text, computed once per fact: a document's facts meet many
    # others, and re-reading both statements for every pair was most of reconciliation's time.
    @cached_property
    def years(self) -> frozenset[str]:
        return frozenset(years_in(self.description) - years_in(self.tail_name))

    @cached_property
    def value(self) -> float | None:
        return first_number(self.tail_name) if re.search(r"\d", self.tail_name) else None

    @cached_property
    def words(self) -> frozenset[str]:
        return frozenset(statement_words(self))

    @cached_property
    def unit(self) -> str:
        return _unit(self.tail_name)

    @cached_property
    def tokens(self) -> frozenset[str]:
        return frozenset(normalize_name(self.tail_name).split())


def _chunk_position(chunk_id: str) -> tuple[int, int]:
    try:
        _, page, order = chunk_id.rsplit(":", 2)
        return int(page), int(order)
    except ValueError:
        return (0, 0)


@dataclass
class Conflict:
    kind: str  # MUTUAL, TEMPORAL or GRANULARITY
    facts: tuple[Fact, Fact]
    reason: str


@dataclass
class Resolution:
    fact: Fact
    decision: str  # "kept", "revised", "dropped"
    reason: str
    relation: str = ""  # the new relation when revised
    unresolved: bool = False  # kept because nothing showed which side holds


class ConflictDetector(Protocol):
    name: str

    def detect(self, view: FactView, batch: Sequence[Fact]) -> Detection:
        """The real conflicts between a batch of new facts (in `view` already) and the facts before them."""

    def confirm(self, groups: list[list[Fact]]) -> list[Conflict]:
        """The real conflicts among candidate groups (pairs of facts with a kind and a reason)."""


class ConflictResolver(Protocol):
    name: str

    def resolve(self, conflict: Conflict, evidence: dict[str, str]) -> list[Resolution]:
        """What to do with each fact of a confirmed conflict; `evidence` maps chunk id -> text."""


# Fallback concepts say nothing about what kind of thing an entity is: two "Name"s are not rivals.
GENERIC_CONCEPTS = frozenset(
    {"Name", "Thing", "Term", "Number", "Quantity", "Table", "Table column", "Figure", "Reference", "Year"}
)


# Relations whose values are labels or positions, not measurements: "section 1341", "qid Q212657".
_REFERENCE_WORDS = {
    "section", "sections", "paragraph", "paragraphs", "exhibit", "exhibits", "page", "pages", "chapter", "qid",
    "id", "no", "number", "item", "figure", "table", "equation", "step", "question", "appendix", "article", "p",
}  # fmt: skip


def _unit(name: str) -> str:
    return re.sub(r"[\d.,\s]+", " ", name).strip().lower()


def statement_words(fact: Fact) -> set[str]:
    """The claim's words without its value or its "[section path]" scope prefix."""
    tail = set(content_words(fact.tail_name))
    sentence = re.sub(r"^\[[^\]]*\]\s*", "", fact.description)
    return {w for w in content_words(sentence) if w not in tail}


@lru_cache(maxsize=4096)
def relation_marks(relation: str) -> tuple[bool, bool]:
    """(names a label or position, gives its head one value at a time) by the relation's words."""
    words = set(relation.split("_"))
    return bool(words & _REFERENCE_WORDS), bool(words & _FUNCTIONAL_WORDS)


def functional(fact: Fact) -> bool:
    return fact.from_table or relation_marks(fact.relation)[1]


def concept_of(fact: Fact) -> str:
    """The tail concept that makes two one-value relations rivals ("" for a generic one)."""
    return fact.tail_concept if fact.tail_concept not in GENERIC_CONCEPTS else ""


Block = tuple[str, ...]


def _filed_under(fact: Fact) -> list[Block]:
    """The blocks a fact is filed under: `OfflineDetector.pair` (in `reconcile_offline`) only ever
    calls two facts rivals when they share one (a head and relation with numbers in one unit; a head
    and relation without numbers; a head's one-value relations towards one concept). Cells and
    sentences apart."""
    if relation_marks(fact.relation)[0]:
        return []  # labels and positions never conflict
    cell = "table" if fact.from_table else "text"
    if fact.value is not None:
        return [("value", fact.head, fact.relation, fact.unit, cell)]
    blocks: list[Block] = [("relation", fact.head, fact.relation, cell)]
    if functional(fact) and concept_of(fact):
        blocks.append(("concept", fact.head, concept_of(fact), cell))
    return blocks


def _rival_blocks(fact: Fact) -> list[Block]:
    """The blocks where the earlier facts a new one may conflict with are filed (see `pair`): two
    cells are never compared, and without numbers an earlier fact must give one value at a time."""
    cells = ["text"] if fact.from_table else ["table", "text"]
    out = []
    for block in _filed_under(fact):
        kind = block[0]
        if kind == "relation" and not relation_marks(fact.relation)[1]:
            # Only a cell makes such a relation one-valued: a sentence's rival is an earlier cell.
            out += [] if fact.from_table else [(*block[:-1], "table")]
        else:
            out += [(*block[:-1], cell) for cell in cells]
    return out


_Entry = tuple[int, str, Fact]  # (entry order, edge id, fact): sorts by entry order


class FactView:
    """The facts new ones are checked against, in the order they entered (the collection's accepted
    facts first, then the document's, chunk by chunk), by head and by block (`_filed_under`)."""

    def __init__(self, facts: Sequence[Fact] = ()) -> None:
        self._order: dict[str, int] = {}
        self._next = 0
        self._heads: dict[str, dict[str, Fact]] = {}
        self._blocks: dict[Block, list[_Entry]] = {}
        self.add(facts)

    def __contains__(self, fact: Fact) -> bool:
        return fact.edge_id in self._order

    def order(self, fact: Fact) -> int:
        return self._order[fact.edge_id]

    def add(self, facts: Sequence[Fact]) -> None:
        for fact in facts:
            self._order[fact.edge_id] = self._next
            self._next += 1
            self._heads.setdefault(fact.head, {})[fact.edge_id] = fact
            self._file(fact)

    def remove(self, facts: Sequence[Fact]) -> None:
        for fact in facts:
            if fact in self:
                self._unfile(fact)
                del self._heads[fact.head][fact.edge_id]
                del self._order[fact.edge_id]

    def relabel(self, fact: Fact, relation: str) -> None:
        """Give a fact its revised relation, and file it where that relation belongs."""
        if fact not in self:
            fact.relation = relation
            return
        self._unfile(fact)
        fact.relation = relation
        self._file(fact)

    def rivals(self, fact: Fact, limit: int) -> tuple[list[Fact], bool]:
        """The facts that entered before `fact` in the blocks its rivals are filed under: the `limit`
        latest of them (so what a new fact costs does not grow with the collection), and whether
        there were more."""
        before = (self.order(fact),)
        latest: dict[str, _Entry] = {}
        more = False
        for block in _rival_blocks(fact) if limit > 0 else []:
            entries = self._blocks.get(block, [])
            end = bisect.bisect_left(entries, before)
            more = more or end > limit
            latest.update((entry[1], entry) for entry in entries[max(0, end - limit) : end])
        more = more or len(latest) > limit
        return [other for _, _, other in sorted(latest.values())[-limit:]], more

    def groups(self, batch: Sequence[Fact], limit: int) -> list[list[Fact]]:
        """`candidate_groups` of a batch (in the view) among the `limit` latest earlier facts of each
        of its heads: what a model detector is asked about."""
        ids = {f.edge_id for f in batch}
        earlier: list[Fact] = []
        for head in dict.fromkeys(f.head for f in batch):
            latest = (f for f in reversed(self._heads.get(head, {}).values()) if f.edge_id not in ids)
            earlier += reversed(list(islice(latest, limit)))
        return candidate_groups(batch, earlier + list(batch))

    def _file(self, fact: Fact) -> None:
        entry = (self._order[fact.edge_id], fact.edge_id, fact)
        for block in _filed_under(fact):
            bisect.insort(self._blocks.setdefault(block, []), entry)

    def _unfile(self, fact: Fact) -> None:
        key = (self._order[fact.edge_id],)
        for block in _filed_under(fact):
            entries = self._blocks.get(block, [])
            at = bisect.bisect_left(entries, key)
            if at < len(entries) and entries[at][1] == fact.edge_id:
                del entries[at]


@dataclass
class Detection:
    conflicts: list[Conflict]
    groups: int  # candidate groups looked at: asked about (a model), or new facts that met rivals
    capped: int = 0  # new facts with more earlier rivals than the detector looked at


@dataclass
class ReconcileReport:
    facts: int = 0
    groups: int = 0  # candidate conflict groups
    conflicts: int = 0  # confirmed
    kept: int = 0
    merged: int = 0
    revised: int = 0
    dropped: int = 0
    unresolved: int = 0  # conflicts where nothing showed which fact holds: both kept
    capped: int = 0  # new facts compared with only the latest of their rivals (not stored)
    decisions: list[Decision] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)  # entities of earlier documents whose facts changed
    # What to change in the store, applied by `apply_reconcile` (with the graph's own writes, so a
    # crash leaves earlier documents either untouched or changed together with the new one's graph).
    relabels: dict[str, str] = field(default_factory=dict)  # stored fact edge id -> new relation
    drops: list[str] = field(default_factory=list)  # stored fact edge ids to delete
    unlinks: list[tuple[str, str]] = field(default_factory=list)  # (entity, chunk) evidence to forget

    def counts(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in RECONCILE_COUNTS}


def candidate_groups(new: Sequence[Fact], pool: Sequence[Fact]) -> list[list[Fact]]:
    """Groups of facts sharing (head, relation), (head, tail) or head with a new fact; two or more each."""
    keys = (
        lambda f: (f.head, f.relation),
        lambda f: (f.head, f.tail),
        lambda f: (f.head,),
    )
    index: dict[tuple[int, tuple[str, ...]], list[Fact]] = {}
    for fact in pool:
        for n, key in enumerate(keys):
            index.setdefault((n, key(fact)), []).append(fact)
    seen: set[frozenset[str]] = set()
    groups: list[list[Fact]] = []
    for fact in new:
        for n, key in enumerate(keys):
            group = index.get((n, key(fact)), [])
            ids = frozenset(f.edge_id for f in group)
            if len(group) > 1 and ids not in seen:
                seen.add(ids)
                groups.append(group)
    return groups


def merged_facts(merged: MergedGraph, tables: set[str]) -> list[Fact]:
    """The document's facts; `tables` are the ids of its table chunks."""
    out = []
    for edge in merged.edges.values():
        if edge.level != FACT or len(edge.members) != 2:
            continue
        (head, _), (tail, _) = edge.members
        h, t = merged.entities.get(head), merged.entities.get(tail)
        if h is None or t is None:
            continue
        out.append(
            Fact(
                edge.edge_id,
                head,
                edge.relation,
                tail,
                h.name,
                t.name,
                t.concept,
                edge.description,
                list(edge.chunks),
                from_table=bool(tables & set(edge.chunks)),
            )
        )
    return sorted(out, key=lambda f: (f.position, f.edge_id))


def _batches(facts: Sequence[Fact]) -> list[list[Fact]]:
    """A document's facts by the chunk that first states them, in reading order."""
    by_chunk: dict[str, list[Fact]] = {}
    for fact in facts:
        by_chunk.setdefault(min(fact.chunks, key=_chunk_position) if fact.chunks else "", []).append(fact)
    return [by_chunk[chunk] for chunk in sorted(by_chunk, key=_chunk_position)]


# The latest earlier facts per head a model detector's candidate groups are drawn from.
GROUP_POOL = 48


def detection_batches(merged: MergedGraph, tables: set[str], pool: int = GROUP_POOL) -> list[list[list[Fact]]]:
    """The candidate groups the detector would be asked about, batch by batch (one batch per chunk),
    counting only the document's own facts (no earlier documents): what `hyperfolio estimate` plans."""
    view = FactView()
    batches = []
    for batch in _batches(merged_facts(merged, tables)):
        view.add(batch)  # as in `reconcile`: each batch meets the facts of the batches before it
        batches.append(view.groups(batch, pool))
    return batches


def _table_chunks(store: DocumentStore, chunk_ids: Sequence[str]) -> set[str]:
    return {c.chunk_id for c in store.get_chunks(chunk_ids) if c.modality == "table"}


def _stored_facts(store: Store, heads: Sequence[str], exclude: set[str]) -> list[Fact]:
    rows = [r for r in store.facts_about(heads) if r.edge_id not in exclude]
    tables = _table_chunks(store, [c for r in rows for c in r.chunks])
    entities = {e.entity_id: e for e in store.get_entities(list({i for r in rows for i in (r.head_id, r.tail_id)}))}
    facts = []
    for r in rows:
        h, t = entities.get(r.head_id), entities.get(r.tail_id)
        if h and t:
            facts.append(
                Fact(
                    r.edge_id,
                    r.head_id,
                    r.relation,
                    r.tail_id,
                    h.name,
                    t.name,
                    t.concept,
                    r.description,
                    r.chunks,
                    from_table=bool(tables & set(r.chunks)),
                    new=False,
                )
            )
    return facts


def reconcile(
    store: Store,
    merged: MergedGraph,
    doc_id: str,
    detector: ConflictDetector,
    resolver: ConflictResolver,
    apply: bool = True,
) -> ReconcileReport:
    """Check this document's facts against the holistic view; edits `merged` in place, and the store
    too unless `apply` is false (then the caller passes the report to `apply_reconcile`)."""
    report = ReconcileReport()
    fact_chunks = [c for e in merged.edges.values() if e.level == FACT for c in e.chunks]
    new_facts = merged_facts(merged, _table_chunks(store, fact_chunks))
    report.facts = len(new_facts)
    stored = _stored_facts(store, list({f.head for f in new_facts}), {f.edge_id for f in new_facts})
    report.merged = sum(1 for f in new_facts if len(set(f.chunks)) > 1)
    report.merged += len({f.edge_id for f in new_facts} & set(store_fact_ids(store, new_facts)))
    view = FactView(stored)
    dropped: list[Fact] = []
    for batch in _batches(new_facts):
        view.add(batch)
        found = detector.detect(view, batch)
        report.groups += found.groups
        report.capped += found.capped
        report.conflicts += len(found.conflicts)
        gone = _resolve(store, merged, doc_id, view, found.conflicts, resolver, report)
        view.remove(gone)
        dropped += gone
    _drop(store, merged, dropped, new_facts + stored, report)
    if apply:
        apply_reconcile(store, doc_id, report)
    return report


def _resolve(
    store: Store,
    merged: MergedGraph,
    doc_id: str,
    view: FactView,
    conflicts: list[Conflict],
    resolver: ConflictResolver,
    report: ReconcileReport,
) -> list[Fact]:
    """Resolve a batch's conflicts in order and record each decision; the facts dropped."""
    gone: dict[str, Fact] = {}
    for conflict in conflicts:
        if any(f.edge_id in gone for f in conflict.facts):
            continue  # one side already left the view through an earlier conflict
        chunk_ids = list(dict.fromkeys(c for f in conflict.facts for c in f.chunks))
        texts = {c.chunk_id: c.text for c in store.get_chunks(chunk_ids)}
        resolutions = resolver.resolve(conflict, texts)
        report.unresolved += any(r.unresolved for r in resolutions)
        for resolution in resolutions:
            fact = resolution.fact
            other = next(f for f in conflict.facts if f is not fact)
            report.decisions.append(
                Decision(
                    doc_id,
                    conflict.kind,
                    resolution.decision,
                    fact.text,
                    other.text,
                    resolution.reason,
                    list(dict.fromkeys(fact.chunks)),
                    resolver.name,
                )
            )
            if not fact.new and resolution.decision != "kept":
                report.touched.update((fact.head, fact.tail))
            if resolution.decision == "dropped":
                report.dropped += 1
                gone[fact.edge_id] = fact
            elif resolution.decision == "revised" and resolution.relation:
                report.revised += 1
                view.relabel(fact, resolution.relation)
                if fact.new:
                    merged.edges[fact.edge_id].relation = resolution.relation
                else:
                    report.relabels[fact.edge_id] = resolution.relation
            else:
                report.kept += 1
    return list(gone.values())


def apply_reconcile(
    store: Store, doc_id: str, report: ReconcileReport, extra_counts: Mapping[str, int] | None = None
) -> None:
    """Write what reconciliation decided: relabelled and dropped earlier facts, forgotten evidence,
    the decision log and counts (with `extra_counts` of the document's build beside them); in one
    transaction (or the caller's)."""
    with store.atomic():
        for edge_id, relation in report.relabels.items():
            store.relabel_fact(edge_id, relation)
        if report.drops:
            store.delete_hyperedges(report.drops)
        if report.unlinks:
            store.remove_evidence_links(report.unlinks)
        store.log_decisions(report.decisions)
        store.save_reconcile_counts(doc_id, {**report.counts(), **(extra_counts or {})})


def store_fact_ids(store: HypergraphStore, facts: Sequence[Fact]) -> list[str]:
    """Which of these fact ids the collection already holds (the same fact from another document)."""
    found = store.get_hyperedges([f.edge_id for f in facts])
    return [e.edge_id for e in found]


def _drop(store: Store, merged: MergedGraph, dropped: list[Fact], every: list[Fact], report: ReconcileReport) -> None:
    """Remove dropped facts, and each (entity, chunk) evidence link that only dropped facts supported
    (but never an entity's last one): from `merged` now, from the store through `report`."""
    if not dropped:
        return
    gone = {f.edge_id for f in dropped}
    surviving: set[tuple[str, str]] = set()
    for fact in every:
        if fact.edge_id not in gone:
            surviving.update((e, c) for e in (fact.head, fact.tail) for c in fact.chunks)
    links = {(e, c) for f in dropped for e in (f.head, f.tail) for c in f.chunks} - surviving
    links -= _last_evidence(store, merged, links)
    for fact in dropped:
        merged.edges.pop(fact.edge_id, None)
    report.drops = [f.edge_id for f in dropped if not f.new]
    for entity, chunk in links:
        if entity in merged.entities and chunk in merged.entities[entity].chunks:
            merged.entities[entity].chunks.remove(chunk)
    report.unlinks = sorted(links)


def _last_evidence(store: Store, merged: MergedGraph, links: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The links among `links` to keep because they are their entity's last evidence: a value named only
    in dropped statements is still named in their chunk, and an entity without any chunk would be a row
    no evidence supports (what the integrity check reports and its repair deletes)."""
    entities = sorted({e for e, _ in links})
    held = {e: {c for c, _, _ in rows} for e, rows in store.provenance("entity", entities).items()}
    keep = set()
    for entity in entities:
        evidence = held.get(entity, set()) | set(merged.entities[entity].chunks if entity in merged.entities else ())
        losing = sorted((c for e, c in links if e == entity), key=_chunk_position)
        if evidence <= set(losing):
            keep.add((entity, losing[0]))
    return keep
