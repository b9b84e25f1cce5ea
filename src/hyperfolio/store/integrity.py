"""An integrity check of a collection's store: rows that point at rows no longer there, and their repair.

Tables link to one another by id, and most links are no foreign key (provenance -> chunk, a vector ->
its item, concept evidence -> chunk) or one only while it is enforced (SQLite enforces them per
connection, when asked). An interrupted tool, a hand edit or an older version can leave such rows
behind, and a search then returns ids that resolve to nothing. Each kind of dangling row is found by
one query over the whole collection; `--repair` deletes what dangles and rebuilds what is derived
(the keyword index). The kinds, their order (which is also the order repairs run in, so that what one
repair leaves dangling the next one removes) and what their repair does are listed once, here.

A document not fully indexed is no finding: it is what another `add` at work looks like, and `add`
resumes one that was cut off. The report names such documents apart, as a note, and stays ok.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

EXAMPLES = 5  # example ids shown per kind
REPAIR_ROUNDS = 3  # a repair can leave rows dangling that an earlier kind covers: check and repair again

# The fewest members a hyperedge of each level is written with: a chunk's theme (hypergraph/layers.py) may
# have no key entity at all; every other level (hypergraph/merge.add_edge, refine) needs two.
MIN_MEMBERS = {"theme": 0}
DEFAULT_MIN_MEMBERS = 2


class Kind(NamedTuple):
    title: str  # what the rows are, for people
    how: str  # what --repair does about them, or what to do instead
    repairable: bool = True


# In repair order.
KINDS: dict[str, Kind] = {
    "orphan_pages": Kind("pages of missing documents", "deletes them"),
    "orphan_chunks": Kind("chunks of missing documents", "deletes them, then rebuilds the keyword index"),
    "provenance_missing_chunk": Kind("provenance pointing at missing chunks", "deletes those rows"),
    "provenance_missing_item": Kind("provenance of missing entities or hyperedges", "deletes those rows"),
    "unsupported_items": Kind("entities and hyperedges no chunk supports", "deletes them, as removing a document does"),
    "orphan_incidence": Kind("hyperedge members pointing at missing hyperedges or entities", "deletes those rows"),
    "orphan_facts": Kind("facts of missing hyperedges or entities", "deletes those rows"),
    "too_few_members": Kind("hyperedges with too few members", "deletes them with their members and provenance"),
    "orphan_entity_concepts": Kind("concept links of missing entities or concepts", "deletes those rows"),
    "orphan_concepts": Kind("concepts without entities", "deletes them"),
    "orphan_concept_evidence": Kind("concept evidence pointing at missing chunks or concepts", "deletes those rows"),
    "orphan_concept_edges": Kind("concept edges of missing concepts or documents", "deletes those rows"),
    "orphan_records": Kind("bookkeeping of missing documents or entities", "deletes those rows"),
    "orphan_vectors": Kind("vectors whose item or document is gone", "deletes them"),
    "unregistered_vector_spaces": Kind("vector spaces missing from the space table", "registers them"),
    "chunks_without_vector": Kind("chunks of ready documents without a vector", "embeds them"),
    "keyword_missing": Kind("chunks missing from the keyword index", "rebuilds the keyword index"),
    "keyword_extra": Kind("keyword index entries of no ready chunk", "rebuilds the keyword index"),
    "keyword_stats": Kind("keyword index manifest out of step with the index", "rebuilds the keyword index"),
    "documents_without_card": Kind(
        "documents indexed without a card, or with one made before cards had themes (routing reads it)",
        "makes their cards or adds their themes, and retitles those the card names better",
    ),
}
WITHOUT_CARD = "documents_without_card"  # found and repaired by ingest/repair.py, not by the store
# Repaired by rebuilding the keyword index (also rebuilt when chunks were deleted: their rows go too).
KEYWORD_KINDS = frozenset({"keyword_missing", "keyword_extra", "keyword_stats"})


@dataclass
class Finding:
    """One kind of dangling row: how many, a few of them, and whether (and how) --repair fixes them."""

    kind: str
    count: int
    examples: list[str]
    repairable: bool
    how: str
    title: str = ""


def finding(kind: str, count: int, examples: Sequence[str]) -> Finding:
    known = KINDS[kind]
    return Finding(kind, count, list(examples), known.repairable, known.how, known.title)


@dataclass
class Unfinished:
    """A document whose indexing has not reached "ready": `hyperfolio add <source>` finishes it."""

    doc_id: str
    source: str
    status: str  # the last stage it reached
    indexing_by: str = ""  # the worker indexing it now ("process 123 on host"), "" when none is: interrupted


@dataclass
class IntegrityReport:
    """What a check found (after repairing, when asked), what the repair changed (rows per kind), and the
    documents not fully indexed: a note, not a finding."""

    findings: list[Finding]
    repaired: dict[str, int] = field(default_factory=dict)
    unfinished: list[Unfinished] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def repairable(self) -> list[Finding]:
        return [f for f in self.findings if f.repairable]

    def summary(self) -> str:
        problems, fixable = len(self.findings), len(self.repairable)
        noun = "problem" if problems == 1 else "problems"
        if self.ok:
            text = "collection OK"
        elif not fixable:
            text = f"{problems} {noun} found (none repairable)"
        else:
            text = f"{problems} {noun} found ({fixable} repairable: run hyperfolio check --repair)"
        if self.unfinished:
            many = len(self.unfinished) > 1
            text += f"; {len(self.unfinished)} document{'s' if many else ''} not fully indexed"
            text += f": hyperfolio add finishes {'them' if many else 'it'}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "summary": self.summary(),
            "findings": [asdict(f) for f in self.findings],
            "unfinished": [asdict(u) for u in self.unfinished],
            "repaired": dict(self.repaired),
        }


@dataclass(frozen=True)
class Dangling:
    """Rows of one table that point at nothing: `table` may carry an alias that `item` and `where` use."""

    table: str
    item: str  # SQL naming a row in examples
    where: str


@dataclass(frozen=True)
class SqlCheck:
    """One kind's rows, found by SQL; repaired by deleting them unless `repair` says otherwise."""

    kind: str
    parts: tuple[Dangling, ...]
    repair: tuple[str, ...] | None = None  # None: delete the rows found; (): the store or collection repairs

    def rows(self) -> str:
        return " UNION ALL ".join(f"SELECT {p.item} AS item FROM {p.table} WHERE {p.where}" for p in self.parts)

    def statements(self) -> tuple[str, ...]:
        if self.repair is not None:
            return self.repair
        return tuple(f"DELETE FROM {p.table} WHERE {p.where}" for p in self.parts)


Query = Callable[[str], list[tuple]]


def run_checks(checks: Sequence[SqlCheck], query: Query, examples: int = EXAMPLES) -> list[Finding]:
    """The findings of these checks, in KINDS order: a count and the first few rows of each kind found."""
    found = []
    for check in checks:
        count = int(query(f"SELECT COUNT(*) FROM ({check.rows()}) AS found")[0][0])
        if count:
            rows = query(f"SELECT DISTINCT item FROM ({check.rows()}) AS found ORDER BY item LIMIT {int(examples)}")
            found.append(finding(check.kind, count, [str(r[0]) for r in rows]))
    order = list(KINDS)
    return sorted(found, key=lambda f: order.index(f.kind))


def repair_rows(
    checks: Sequence[SqlCheck], findings: Sequence[Finding], transaction: Callable[[], AbstractContextManager[Any]]
) -> dict[str, int]:
    """Run the repair statements of the repairable kinds found, in KINDS order, one transaction per kind;
    the rows each changed. Once one kind changed rows, every later kind is repaired too: deleting rows can
    leave others dangling, and KINDS lists what depends on a kind after it. Each statement finds its rows
    again, so what changed since the check is repaired as it is now."""
    wanted = {f.kind for f in findings if f.repairable and f.count}
    changed: dict[str, int] = {}
    order = list(KINDS)
    for check in sorted(checks, key=lambda c: order.index(c.kind)):
        statements = check.statements()
        if not statements or not (check.kind in wanted or any(changed.values())):
            continue
        with transaction() as db:
            rows = sum(max(db.execute(statement).rowcount, 0) for statement in statements)
        if rows or check.kind in wanted:
            changed[check.kind] = rows
    return changed


def keyword_repairs(findings: Sequence[Finding], changed: dict[str, int]) -> list[str] | None:
    """The keyword kinds found that a rebuild of the keyword index repairs; None when it needs none."""
    stale = [f.kind for f in findings if f.kind in KEYWORD_KINDS and f.repairable and f.count]
    return stale if stale or changed.get("orphan_chunks") else None
