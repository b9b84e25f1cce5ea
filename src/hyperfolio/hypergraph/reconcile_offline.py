"""The offline conflict detector and resolver: deterministic rules over the holistic view's facts.

They need no model and are the fallback of the model ones (`reconcile_model`); the facts, the
view and its blocking, and the driver that runs either pair live in `reconcile`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hyperfolio.hypergraph.reconcile import (
    GRANULARITY,
    MUTUAL,
    TEMPORAL,
    Conflict,
    Detection,
    Fact,
    FactView,
    Resolution,
    concept_of,
    functional,
    relation_marks,
)
from hyperfolio.phrases import content_words

RESTATEMENT = 0.5  # content-word overlap of two sentences that make the same claim
# Words that mark a statement as the current one ("revised to", "as of", "now").
_UPDATE_CUES = {"revised", "updated", "corrected", "restated", "now", "latest", "currently", "amended", "new"}


def comparable(a: Fact, b: Fact) -> bool:
    """Whether two facts could contradict each other at all. Two table cells never do: different
    tables, or different rows of one table, are different breakdowns (by region, year, group).
    Two sentences do only when they make the same claim with another value - their words, apart
    from the values, overlap - because without a model the offline rules cannot tell a
    one-value relation from a many-valued one. A table cell and a sentence always may."""
    if a.from_table and b.from_table:
        return False
    if a.from_table or b.from_table:
        return True
    wa, wb = a.words, b.words
    return bool(wa and wb) and len(wa & wb) / len(wa | wb) >= RESTATEMENT


# How many earlier facts one new fact is compared with, at most: the latest of its blocks. Past it, a
# conflict with an older statement (an earlier filing's) goes unseen; `Detection.capped` counts the
# new facts cut short.
MAX_RIVALS = 64


class OfflineDetector:
    """Rules that catch contradictions between comparable facts (see `comparable`): one head and
    relation with two numbers (unless their years differ), one head given two values of a
    one-value relation, one head assigned to two different members of the same concept."""

    name = "offline"

    def __init__(self, max_rivals: int = MAX_RIVALS) -> None:
        self.max_rivals = max_rivals

    def pair(self, a: Fact, b: Fact) -> Conflict | None:
        if a.head != b.head or a.tail == b.tail or not comparable(a, b):
            return None
        same_relation = a.relation == b.relation
        if relation_marks(a.relation)[0] or relation_marks(b.relation)[0]:
            return None
        if a.value is not None and b.value is not None:
            if not same_relation or a.value == b.value or a.unit != b.unit:
                return None
            if a.years and b.years and a.years != b.years:
                years = ", ".join(sorted(a.years | b.years))
                why = f"{a.relation} of {a.head_name} is given for different years ({years})"
                return Conflict(TEMPORAL, (a, b), why)
            return Conflict(
                MUTUAL, (a, b), f"{a.head_name} has two values for {a.relation}: {a.tail_name} and {b.tail_name}"
            )
        if a.value is not None or b.value is not None:
            return None
        ta, tb = a.tokens, b.tokens
        if same_relation and functional(a):
            if ta and tb and (ta < tb or tb < ta):
                return Conflict(GRANULARITY, (a, b), f"{a.tail_name} and {b.tail_name} differ in specificity")
            return Conflict(MUTUAL, (a, b), f"{a.head_name} {a.relation} both {a.tail_name} and {b.tail_name}")
        if (
            not same_relation
            and functional(a)
            and functional(b)
            and concept_of(a)
            and a.tail_concept == b.tail_concept
            and not (ta < tb or tb < ta)
        ):
            return Conflict(
                MUTUAL,
                (a, b),
                f"{a.head_name} is assigned to two different {a.tail_concept} entities: {a.tail_name} ({a.relation})"
                f" and {b.tail_name} ({b.relation})",
            )
        return None

    def confirm(self, groups: list[list[Fact]]) -> list[Conflict]:
        """Every pair of each group with a new fact in it (a model detector's fallback)."""
        found: dict[tuple[str, str], Conflict] = {}
        for group in groups:
            for i, a in enumerate(group):
                for b in group[i + 1 :]:
                    if not (a.new or b.new):
                        continue
                    key = tuple(sorted((a.edge_id, b.edge_id)))
                    if key not in found and (conflict := self.pair(a, b)):
                        found[key] = conflict  # type: ignore[index]
        return list(found.values())

    def detect(self, view: FactView, batch: Sequence[Fact]) -> Detection:
        """Each new fact against its latest `max_rivals` rivals that entered the view before it; the
        conflicts in the order `confirm` finds them over the batch's `candidate_groups`."""
        rank = _discovery(view, batch)
        found: list[tuple[tuple[int, int, int], Conflict]] = []
        groups = capped = 0
        for fact in batch:
            rivals, more = view.rivals(fact, self.max_rivals)
            groups += bool(rivals)
            capped += more
            found += [(rank(other, fact), c) for other in rivals if (c := self.pair(other, fact))]
        return Detection([c for _, c in sorted(found, key=lambda item: item[0])], groups, capped)


def _discovery(view: FactView, batch: Sequence[Fact]) -> Callable[[Fact, Fact], tuple[int, int, int]]:
    """Where all-pairs confirmation over `candidate_groups(batch, pool)` meets a pair (a before b):
    groups come three per new fact - (head, relation), (head, tail), head - and a pair's first group
    is its relation's group or its head's, whichever comes first; in a group, pairs go in entry
    order. Sorting by this keeps the order conflicts are resolved in (and logged) as it was."""
    first_head: dict[str, int] = {}
    first_relation: dict[tuple[str, str], int] = {}
    for i, fact in enumerate(batch):
        first_head.setdefault(fact.head, 3 * i + 2)
        first_relation.setdefault((fact.head, fact.relation), 3 * i)

    def rank(a: Fact, b: Fact) -> tuple[int, int, int]:
        group = first_head[b.head]
        if a.relation == b.relation:
            group = min(group, first_relation[(b.head, b.relation)])
        return group, view.order(a), view.order(b)

    return rank


class OfflineResolver:
    """Deterministic: years become part of the relation; a more specific value keeps its company;
    otherwise the better-supported fact wins, then the one from a table, then a later statement
    that says it is an update. With none of these signs the conflict is recorded as unresolved and
    both facts stay: without a model, a guess would lose evidence as often as it saved it."""

    name = "offline"

    def resolve(self, conflict: Conflict, evidence: dict[str, str]) -> list[Resolution]:
        a, b = conflict.facts
        if conflict.kind == TEMPORAL:
            return [
                Resolution(
                    f,
                    "revised",
                    f"scoped to {', '.join(sorted(f.years))}: {conflict.reason}",
                    f"{f.relation} [{', '.join(sorted(f.years))}]",
                )
                for f in (a, b)
            ]
        if conflict.kind == GRANULARITY:
            return [Resolution(f, "kept", f"compatible, {conflict.reason}") for f in (a, b)]

        def updates(f: Fact) -> bool:
            return bool(set(content_words(f.description)) & _UPDATE_CUES)

        def rank(f: Fact) -> tuple:
            return (len(set(f.chunks)), f.from_table, updates(f), f.position)

        winner, loser = (a, b) if rank(a) >= rank(b) else (b, a)
        if len(set(winner.chunks)) > len(set(loser.chunks)):
            why = f"stated in {len(set(winner.chunks))} chunks against {len(set(loser.chunks))}"
        elif winner.from_table and not loser.from_table:
            why = "a table cell is more specific than running text"
        elif updates(winner) and not updates(loser) and winner.position > loser.position:
            why = f"the later statement (page {winner.position[0]}) presents itself as an update"
        else:
            why = "unresolved: equal support and no sign which is current; both kept"
            return [Resolution(f, "kept", f"{conflict.reason}; {why}", unresolved=True) for f in (a, b)]
        return [
            Resolution(winner, "kept", f"{conflict.reason}; kept: {why}"),
            Resolution(loser, "dropped", f"{conflict.reason}; dropped in favour of {winner.text}: {why}"),
        ]
