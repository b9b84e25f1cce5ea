"""Values the documents of a question across documents disagree on: "A reports X, B reports Y".

Two sources, both judged by the holistic view's own rules (`hypergraph.reconcile_offline`):

- the reconciliation decisions stored while indexing whose two facts sit in different documents
  (`cross_document_decisions`, read by the `auto` strategy into `evidence.meta["cross_decisions"]`);
- at question time, the facts the offline extractor reads off the evidence chunks of each document,
  compared pair by pair across documents with the offline detector's `pair` (one head and relation,
  two numbers in one unit, the same years).

What is shown to people must be a real disagreement about one quantity, so a pair is dropped when it
could be two quantities: different organisations (two issuers each report their own capex), different
periods (a value without a year in a 2021 and a 2022 filing is a change, not a conflict), different
or several years in the statements, a head that is a number, a year or a generic row name ("Total"),
or a "what" that shares no word with the question. The few left are ranked by the words they share
with the question.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, replace
from itertools import combinations
from typing import Any

from hyperfolio.hypergraph.extract import PageUnit
from hyperfolio.hypergraph.extract_offline import OfflineExtractor
from hyperfolio.hypergraph.merge import merge
from hyperfolio.hypergraph.reconcile import GRANULARITY, MUTUAL, TEMPORAL, Fact, merged_facts
from hyperfolio.hypergraph.reconcile_offline import OfflineDetector
from hyperfolio.model import Decision, EvidenceItem, EvidencePackage
from hyperfolio.phrases import content_words
from hyperfolio.store.base import LayerStore, chunk_doc_page
from hyperfolio.textmatch import stem

MAX_CONFLICTS = 3
INDEXING, QUESTION = "indexing", "question"  # where a conflict was found
# Row names that name no quantity of their own: "Total" of one table is not "Total" of another.
_GENERIC_HEADS = {
    "total", "totals", "subtotal", "other", "others", "net", "all other", "balance", "amount", "value",
    "ending balance", "beginning balance", "change", "increase", "decrease", "year", "period", "note",
}  # fmt: skip
_PLAIN_RELATIONS = {"is", "value", "are", "was", "were"}  # say nothing beyond the head
_PREPOSITIONS = {"of", "in", "on", "at", "to", "from", "by", "for", "with", "into", "under", "over", "per", "about"}
_DIGIT = re.compile(r"\d")
_FIGURE = re.compile(r"-?\d[\d,]*(?:\.(\d+))?")


@dataclass(frozen=True)
class Side:
    """One document's value: where it is stated (document, page, chunk) and as it is written."""

    doc_id: str
    title: str
    page: int
    value: str
    chunk_id: str


@dataclass(frozen=True)
class ValueConflict:
    """Two documents giving one quantity (`what`, as people read it) different values."""

    what: str
    sides: tuple[Side, Side]
    found: str  # INDEXING (a stored reconciliation decision) or QUESTION (the evidence's facts)
    reason: str = ""

    def line(self) -> str:
        """The sentence an answer adds, without its citation markers."""
        a, b = self.sides
        return (
            f"Documents differ on {self.what}: {a.title} (p. {a.page}) reports {a.value};"
            f" {b.title} (p. {b.page}) reports {b.value}."
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "found": self.found,
            "reason": self.reason,
            "sides": [asdict(s) for s in self.sides],
            "line": self.line(),
        }


@dataclass(frozen=True)
class DocInfo:
    """What decides whether two documents can disagree at all: whose they are and which period."""

    title: str
    organisation: str = ""
    period: str = ""


def _words(text: str) -> set[str]:
    return {stem(word) for word in content_words(text)}


def _doc_of(chunk_id: str) -> str:
    return chunk_doc_page(chunk_id)[0]


def _page_of(chunk_id: str) -> int:
    return chunk_doc_page(chunk_id)[1]


def cross_document_decisions(
    store: LayerStore, doc_ids: Sequence[str], chunk_ids: Collection[str] | None = None
) -> list[dict[str, Any]]:
    """The reconciliation decisions among `doc_ids` whose fact and other fact are stated in two of them:
    each conflict once, with both sides' facts and chunks (JSON-able, for `evidence.meta`); with
    `chunk_ids` (the evidence's), only those whose two sides are both stated in one of them, as only
    those can be cited. A conflict is logged as two decisions, one per fact with the other as its
    `other`, under the later document."""
    wanted = set(doc_ids)
    within = set(chunk_ids) if chunk_ids is not None else None
    out: list[dict[str, Any]] = []
    for doc_id in doc_ids:
        logged = [d for d in store.decisions(doc_id) if d.kind != "duplicate" and d.decision != "merged"]
        by_fact = {(d.fact, d.other, d.kind): d for d in logged}
        seen: set[tuple[str, str]] = set()
        for d in logged:
            partner = by_fact.get((d.other, d.fact, d.kind))
            if partner is None or not d.evidence or not partner.evidence or (d.other, d.fact) in seen:
                continue
            seen.add((d.fact, d.other))
            docs = (_doc_of(d.evidence[0]), _doc_of(partner.evidence[0]))
            if within is not None and not (within & set(d.evidence) and within & set(partner.evidence)):
                continue
            if docs[0] != docs[1] and set(docs) <= wanted:
                out.append(_decision_dict(d, partner))
    return out


def _decision_dict(d: Decision, partner: Decision) -> dict[str, Any]:
    return {
        "kind": d.kind,
        "reason": d.reason,
        "sides": [
            {"fact": x.fact, "decision": x.decision, "chunks": list(x.evidence), "decided_by": x.decided_by}
            for x in (d, partner)
        ],
    }


def documents_of(evidence: EvidencePackage) -> dict[str, DocInfo]:
    """Each document of the evidence: its title (as its citations give it), and its organisation and
    period when routing read them off its card (`evidence.meta["routed_to"]`)."""
    cards = {r["doc_id"]: r for r in evidence.meta.get("routed_to", []) if isinstance(r, dict)}
    out: dict[str, DocInfo] = {}
    for item in evidence.items:
        doc_id = item.chunk.doc_id
        if doc_id not in out:
            card = cards.get(doc_id, {})
            out[doc_id] = DocInfo(item.citation.title, card.get("organisation") or "", card.get("period") or "")
    return out


def describe(head: str, relation: str, years: frozenset[str] = frozenset()) -> str:
    """A fact's quantity as people read it: "Aurora, vessel capacity in 2021"."""
    words = [w for w in relation.split("_") if w]
    while words and words[-1] in _PREPOSITIONS:
        words.pop()
    what = head if not words or " ".join(words) in _PLAIN_RELATIONS else f"{head}, {' '.join(words)}"
    return f"{what} in {next(iter(years))}" if len(years) == 1 else what


def named_quantity(head: str) -> bool:
    """Whether a head can name a quantity on its own: words, not a number or a year, not a generic row."""
    words = [w for w in re.findall(r"[^\W\d_]+", head.lower()) if len(w) >= 3]
    return bool(words) and not _DIGIT.search(head) and " ".join(head.lower().split()) not in _GENERIC_HEADS


def can_disagree(a: DocInfo, b: DocInfo, stated_years: bool) -> bool:
    """Two documents can give one quantity two values only when they are about the same organisation (or
    either's is unknown) and - unless the statements name their year - about the same period."""
    if a.organisation and b.organisation and a.organisation.lower() != b.organisation.lower():
        return False
    return stated_years or not (a.period and b.period and a.period != b.period)


def evidence_facts(evidence: EvidencePackage) -> list[Fact]:
    """The facts the offline extractor reads off the evidence chunks, merged over the documents as the
    collection merges them. The pages of every document are extracted together: a term is an entity
    when it is repeated, and a quantity the documents share is repeated across them even where each
    states it once."""
    by_page: dict[tuple[str, int], list[EvidenceItem]] = {}
    for item in evidence.items:
        by_page.setdefault((item.chunk.doc_id, item.chunk.page), []).append(item)
    units = [
        PageUnit(doc_id, items[0].citation.title, page, sorted((i.chunk for i in items), key=lambda c: c.order))
        for (doc_id, page), items in by_page.items()
    ]
    tables = {i.chunk.chunk_id for i in evidence.items if i.chunk.modality == "table"}
    return merged_facts(merge(OfflineExtractor().extract_document(units)), tables)


def rounded_alike(a: str, b: str) -> bool:
    """Whether two written values are one number given to different precision ("$5.85 billion" and
    "$5.9 billion"): they differ by no more than half a unit of the coarser one's last digit."""
    found = [_FIGURE.search(text) for text in (a, b)]
    if found[0] is None or found[1] is None:
        return False
    values = [float(m.group(0).replace(",", "")) for m in found if m]
    decimals = min(len(m.group(1) or "") for m in found if m)
    return abs(values[0] - values[1]) <= 0.5 * 10**-decimals + 1e-9


def fact_conflict(a: Fact, b: Fact) -> bool:
    """Whether two facts of two documents give one quantity two values, by the offline detector's rule
    (`OfflineDetector.pair`: one head and relation, two numbers in one unit, not of different years).
    Two table cells the detector never compares (in one document they are two breakdowns); from two
    documents, one row key under one column header is one quantity, so they are compared as a cell and
    a sentence would be. Stricter than the detector: the years stated must be the same and at most one,
    and two roundings of one number are one value (`rounded_alike`)."""
    if a.value is None or b.value is None or a.years != b.years or len(a.years) > 1:
        return False
    if rounded_alike(a.tail_name, b.tail_name):
        return False
    if a.from_table and b.from_table:
        b = replace(b, from_table=False)
    found = OfflineDetector().pair(a, b)
    return found is not None and found.kind == MUTUAL


def _side(fact: Fact, doc_id: str, docs: dict[str, DocInfo]) -> Side:
    chunk = next(c for c in fact.chunks if _doc_of(c) == doc_id)
    return Side(doc_id, docs[doc_id].title, _page_of(chunk), fact.tail_name, chunk)


def question_conflicts(facts: Sequence[Fact], docs: dict[str, DocInfo]) -> list[ValueConflict]:
    """Pairs of facts from two documents that disagree (`fact_conflict`) and could (`can_disagree`)."""
    groups: dict[tuple[str, str], list[Fact]] = {}
    for fact in facts:
        if named_quantity(fact.head_name):
            groups.setdefault((fact.head, fact.relation), []).append(fact)
    found: list[ValueConflict] = []
    for group in groups.values():
        for a, b in combinations(group, 2):
            da = [d for d in dict.fromkeys(map(_doc_of, a.chunks)) if d in docs]
            db = [d for d in dict.fromkeys(map(_doc_of, b.chunks)) if d in docs]
            pairs = [(x, y) for x in da for y in db if x != y and can_disagree(docs[x], docs[y], bool(a.years))]
            if not pairs or not fact_conflict(a, b):
                continue
            x, y = pairs[0]
            what = describe(a.head_name, a.relation, a.years)
            found.append(ValueConflict(what, (_side(a, x, docs), _side(b, y, docs)), QUESTION))
    return found


def _split_fact(text: str) -> tuple[str, str, str] | None:
    parts = [p.strip() for p in text.split(" | ", 2)]
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 and all(parts) else None


def stored_conflicts(evidence: EvidencePackage, docs: dict[str, DocInfo]) -> list[ValueConflict]:
    """The stored cross-document decisions (`evidence.meta["cross_decisions"]`) that are conflicts: not a
    change between years (temporal), nor one value more specific than the other (granularity), with
    each side stated in a chunk of the evidence, so both can be cited."""
    in_evidence = {i.chunk.chunk_id for i in evidence.items}
    found: list[ValueConflict] = []
    for row in evidence.meta.get("cross_decisions", []):
        if row.get("kind") in (TEMPORAL, GRANULARITY):
            continue
        facts = [_split_fact(s["fact"]) for s in row["sides"]]
        chunks = [[c for c in s["chunks"] if c in in_evidence] for s in row["sides"]]
        if any(f is None for f in facts) or not all(chunks):
            continue
        (ha, ra, va), (hb, rb, vb) = facts  # type: ignore[misc]
        da, db = _doc_of(chunks[0][0]), _doc_of(chunks[1][0])
        if da == db or ha.lower() != hb.lower() or va == vb or rounded_alike(va, vb) or not named_quantity(ha):
            continue
        if da not in docs or db not in docs or not can_disagree(docs[da], docs[db], False):
            continue
        sides = (
            Side(da, docs[da].title, _page_of(chunks[0][0]), va, chunks[0][0]),
            Side(db, docs[db].title, _page_of(chunks[1][0]), vb, chunks[1][0]),
        )
        found.append(ValueConflict(describe(ha, ra), sides, INDEXING, str(row.get("reason", ""))))
    return found


def find_conflicts(question: str, evidence: EvidencePackage, limit: int = MAX_CONFLICTS) -> list[ValueConflict]:
    """The conflicting values of an evidence package spanning several documents, most relevant first: at
    most `limit`, each sharing a word with the question, one per quantity and pair of documents (a
    stored decision first: the holistic view weighed it with the whole collection in sight)."""
    docs = documents_of(evidence)
    if len(docs) < 2:
        return []
    rank: dict[str, int] = {}
    for item in evidence.items:
        rank.setdefault(item.chunk.chunk_id, item.rank)
    asked = _words(question)
    scored: list[tuple[int, int, ValueConflict]] = []
    seen: set[tuple[str, frozenset[str]]] = set()
    for conflict in stored_conflicts(evidence, docs) + question_conflicts(evidence_facts(evidence), docs):
        key = (" ".join(sorted(_words(conflict.what))), frozenset(s.doc_id for s in conflict.sides))
        shared = len(asked & _words(conflict.what))
        if shared == 0 or key in seen:
            continue
        seen.add(key)
        scored.append((-shared, min(rank.get(s.chunk_id, 10**6) for s in conflict.sides), conflict))
    scored.sort(key=lambda row: (row[0], row[1]))
    return [conflict for _, _, conflict in scored[:limit]]
