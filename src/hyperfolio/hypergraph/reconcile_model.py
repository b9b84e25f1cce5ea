"""Language-model conflict detection and resolution (HVM-GraphRAG 3.1.2), behind the offline types.

The detector sees one candidate group at a time - numbered facts, which of them are new - and
names the pairs that really cannot both hold, with a kind (mutual, temporal, granularity) and a
reason. The resolver sees one confirmed conflict with the text of the chunks behind each fact and
decides, per fact, keep, revise (a relation that carries the time or scope that makes both true)
or drop. A failed call falls back to the offline rules for that group or conflict.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, field_validator

from hyperfolio.hypergraph.reconcile import GROUP_POOL, KINDS, MUTUAL, Conflict, Detection, Fact, FactView, Resolution
from hyperfolio.hypergraph.reconcile_offline import OfflineDetector, OfflineResolver
from hyperfolio.llm.errors import ModelCallError
from hyperfolio.llm.fence import Fence, with_evidence_rule
from hyperfolio.llm.protocols import StructuredChatModel
from hyperfolio.llm.replies import LenientReply
from hyperfolio.phrases import clip, one_line

log = logging.getLogger(__name__)

STAGE = "reconcile"


class ConflictPair(BaseModel):
    first: int = Field(description="number of one fact of the pair")
    second: int = Field(description="number of the other fact")
    kind: str = Field(MUTUAL, description="mutual, temporal or granularity")
    reason: str = ""

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, value: Any) -> str:
        word = str(value or "").strip().lower()
        return next((k for k in KINDS if word.startswith(k[:4])), MUTUAL)


class DetectReply(LenientReply):
    conflicts: list[ConflictPair] = Field(default_factory=list)


class FactDecision(BaseModel):
    fact: int = Field(description="number of the fact")
    decision: str = Field(description="keep, revise or drop")
    relation: str = Field("", description="the revised relation, when the decision is revise")
    reason: str = ""

    @field_validator("decision", mode="before")
    @classmethod
    def _decision(cls, value: Any) -> str:
        word = str(value or "").strip().lower()
        if word.startswith(("drop", "discard", "remove")):
            return "dropped"
        if word.startswith(("revis", "modif")):
            return "revised"
        return "kept"


class ResolveReply(LenientReply):
    decisions: list[FactDecision] = Field(default_factory=list)


DETECT_PROMPT = with_evidence_rule("""\
You check a knowledge graph for contradictions. You get a small group of facts (head | relation | \
tail) that share their head entity; some are new, the others were accepted before. Name only the \
pairs that cannot both be true as stated:
- mutual: one head given two different values where only one can hold (two capacities for the \
same fleet at the same time, a route assigned to two different networks);
- temporal: the values could both be true for different times, but the facts do not say which time \
each holds for;
- granularity: the values differ in how specific they are (a city and its country), so both may \
hold.
Facts that simply say different things about the head are not conflicts. Return the pairs as \
JSON with the key `conflicts` (first, second, kind, reason); an empty list when nothing conflicts.""")

RESOLVE_PROMPT = with_evidence_rule("""\
You repair a contradiction in a knowledge graph using the source text. You get two conflicting \
facts with the passages they were extracted from. For each fact decide:
- keep: it is correct as stated;
- revise: it is correct once its relation carries the time or scope the sources give \
(e.g. revenue_in_2023, capacity_of_main_fleet); give the revised relation;
- drop: the sources do not support it, or the other fact is better supported.
For a mutual conflict keep at most one of the two. Prefer the fact the sources state more \
specifically or more often. Return JSON with the key `decisions` (fact, decision, relation, reason).""")


def _fact_line(number: int, fact: Fact) -> str:
    status = "new" if fact.new else "accepted"
    return f"[{number}] ({status}) {fact.head_name} | {fact.relation} | {fact.tail_name}"


class LLMDetector:
    """Confirms conflicts with a structured chat model (one call per candidate group)."""

    name = "llm"

    def __init__(
        self, chat: StructuredChatModel, max_group: int = 12, stage: str = STAGE, pool: int = GROUP_POOL
    ) -> None:
        self.chat = chat
        self.max_group = max_group
        self.pool = pool  # the latest earlier facts per head that groups are drawn from
        self.stage = stage
        self.fallback = OfflineDetector()
        self.calls = 0
        self.fallbacks = 0

    def trim(self, group: list[Fact]) -> list[Fact]:
        """New facts first, then the accepted facts that share the most with them, up to `max_group`."""
        new = [f for f in group if f.new]
        old = sorted(
            (f for f in group if not f.new),
            key=lambda f: (-sum(f.relation == n.relation or f.tail == n.tail for n in new), f.edge_id),
        )
        return (new + old)[: self.max_group]

    def messages(self, group: list[Fact]) -> list[dict[str, Any]]:
        """The numbered facts, fenced: their names and relations were read from the documents."""
        lines = "\n".join(_fact_line(i, f) for i, f in enumerate(group, 1))
        facts = Fence.over([lines]).quote(lines, "facts")
        return [
            {"role": "system", "content": DETECT_PROMPT},
            {"role": "user", "content": f"Facts:\n{facts}\n\nWhich pairs conflict?"},
        ]

    def detect(self, view: FactView, batch: Sequence[Fact]) -> Detection:
        groups = view.groups(batch, self.pool)
        return Detection(self.confirm(groups) if groups else [], len(groups))

    def confirm(self, groups: list[list[Fact]]) -> list[Conflict]:
        trimmed = [self.trim(g) for g in groups if any(f.new for f in g)]
        if not trimmed:
            return []
        replies = self.chat.complete_json_many(
            [self.messages(g) for g in trimmed], DetectReply, stage=self.stage, return_exceptions=True
        )
        found: dict[tuple[str, str], Conflict] = {}
        for group, reply in zip(trimmed, replies, strict=True):
            self.calls += 1
            if not isinstance(reply, DetectReply):
                if not isinstance(reply, ModelCallError):
                    raise reply
                log.warning("conflict detection failed; using the offline rules: %s", reply)
                self.fallbacks += 1
                conflicts = self.fallback.confirm([group])
            else:
                conflicts = []
                for pair in reply.conflicts:
                    if not (1 <= pair.first <= len(group) and 1 <= pair.second <= len(group)):
                        continue
                    a, b = group[pair.first - 1], group[pair.second - 1]
                    if a is b or not (a.new or b.new):
                        continue
                    conflicts.append(Conflict(pair.kind, (a, b), one_line(pair.reason) or f"{pair.kind} conflict"))
            for conflict in conflicts:
                key = tuple(sorted(f.edge_id for f in conflict.facts))
                found.setdefault(key, conflict)  # type: ignore[arg-type]
        return list(found.values())


class LLMResolver:
    """Decides keep / revise / drop per fact of a conflict from the supporting chunks."""

    name = "llm"

    def __init__(self, chat: StructuredChatModel, max_chars: int = 1500, stage: str = STAGE) -> None:
        self.chat = chat
        self.max_chars = max_chars
        self.stage = stage
        self.fallback = OfflineResolver()
        self.calls = 0
        self.fallbacks = 0

    def messages(self, conflict: Conflict, evidence: dict[str, str]) -> list[dict[str, Any]]:
        blocks = []
        for number, fact in enumerate(conflict.facts, 1):
            sources = "\n".join(
                f"  - p.{c.rsplit(':', 2)[1]}: {clip(one_line(evidence[c]), self.max_chars)}"
                for c in dict.fromkeys(fact.chunks)
                if c in evidence
            )
            blocks.append(_fact_line(number, fact) + "\n" + (sources or "  (no source text)"))
        # The detector's reason may echo the documents, like the facts and their sources: all fenced.
        reason = f"Reason given: {one_line(conflict.reason)}"
        fence = Fence.over([reason, *blocks])
        user = f"Conflict ({conflict.kind}):\n" + fence.quote(reason, "reason") + "\n"
        user += "\n".join(fence.quote(block, f"fact {n}") for n, block in enumerate(blocks, 1))
        return [{"role": "system", "content": RESOLVE_PROMPT}, {"role": "user", "content": user}]

    def resolve(self, conflict: Conflict, evidence: dict[str, str]) -> list[Resolution]:
        self.calls += 1
        try:
            reply = self.chat.complete_json(self.messages(conflict, evidence), ResolveReply, stage=self.stage)
        except ModelCallError as exc:
            log.warning("conflict resolution failed; using the offline rules: %s", exc)
            self.fallbacks += 1
            return self.fallback.resolve(conflict, evidence)
        out: dict[int, Resolution] = {}
        for item in reply.decisions:
            if not 1 <= item.fact <= len(conflict.facts) or item.fact in out:
                continue
            fact = conflict.facts[item.fact - 1]
            relation = one_line(item.relation).replace(" ", "_").lower() if item.decision == "revised" else ""
            decision = "kept" if item.decision == "revised" and not relation else item.decision
            out[item.fact] = Resolution(fact, decision, one_line(item.reason) or decision, relation)
        if conflict.kind == MUTUAL and all(r.decision == "dropped" for r in out.values()) and len(out) == 2:
            return self.fallback.resolve(conflict, evidence)  # dropping both would lose what the sources say
        for number, fact in enumerate(conflict.facts, 1):
            out.setdefault(number, Resolution(fact, "kept", "the model left it unchanged"))
        return [out[n] for n in sorted(out)]
