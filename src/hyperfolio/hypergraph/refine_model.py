"""The language-model refiner: cross-page hyperedges from an anchor's star expansion (Hyper-M2RAG 4.2).

`refine_anchor` shows the model one anchor and the hyperedges incident to it - each with its
level, the pages it comes from, its members and its description - and asks for refined relations
that join what the pages say separately. `refine_page` is the full-page baseline: one page's
hyperedges with those of its neighbours, in the same prompt layout so that token counts of the
two strategies compare like with like. Members come back as names and are mapped to the entity
ids of the star; names the star does not contain are dropped. A failed call falls back to the
deterministic offline refiner for that anchor or page, and is counted in `fallbacks`.
"""

from __future__ import annotations

import logging
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from hyperfolio.hypergraph.extract import REFINE, ExtractedEdge
from hyperfolio.hypergraph.refine import STAR_EDGES, PageContext, StarEdge, spread_over_pages
from hyperfolio.hypergraph.refine_offline import OfflineRefiner
from hyperfolio.llm.errors import ModelCallError
from hyperfolio.llm.fence import Fence, with_evidence_rule
from hyperfolio.llm.protocols import StructuredChatModel
from hyperfolio.llm.replies import LenientReply, Numbers, Strength
from hyperfolio.model import Entity
from hyperfolio.phrases import clip, normalize_name, one_line

log = logging.getLogger(__name__)

STAGE = "refine"


class RefinedRelation(BaseModel):
    members: list[str] = Field(description="names of two or more entities from the listed relations")
    description: str = ""
    keywords: list[str] = Field(default_factory=list)
    strength: Strength = 1.0
    sources: Numbers = Field(default_factory=list, description="numbers of the listed relations it combines")


class RefineReply(LenientReply):
    relations: list[RefinedRelation] = Field(default_factory=list)


SYSTEM_PROMPT = with_evidence_rule("""\
You consolidate a knowledge hypergraph that was extracted one page at a time, so facts that \
belong together were split across pages. You are shown numbered relations (hyperedges); each \
has a level (low: two members, high: three or more), the pages it was found on, its member \
entities and a description.

Write the relations that only become visible when these are read together: a claim on one page \
with the number that supports it on another, a figure and the text that explains it, a term \
defined early and used later, the same entity playing connected roles on several pages. Each \
relation has members (two or more entity names copied exactly from the listed members), a \
description that states the combined fact, a few keywords, a strength between 0 and 1, and \
sources (the numbers of the listed relations it combines).

Only combine what the listed relations support. Do not repeat a single listed relation unchanged. \
If nothing new follows, return an empty list of relations.""")


def _short(text: str, limit: int) -> str:
    return clip(one_line(text), limit)


@dataclass(eq=False)  # compared and hashed by identity, as a worker object is
class LLMRefiner:
    """Refined cross-page hyperedges from a structured chat model (counted under stage "refine")."""

    name = "llm"

    chat: StructuredChatModel
    _: KW_ONLY
    max_edges: int = 60
    max_description_chars: int = 300
    max_relations: int = 6
    max_star_edges: int = STAR_EDGES
    stage: str = STAGE
    fallback: OfflineRefiner = field(default_factory=OfflineRefiner)
    calls: int = field(default=0, init=False)
    fallbacks: int = field(default=0, init=False)
    errors: list[str] = field(default_factory=list, init=False)

    # ------------------------------------------------------------------ prompt
    def _listing(self, sections: list[tuple[str, list[StarEdge]]]) -> tuple[list[tuple[str, str]], list[StarEdge]]:
        """Numbered relations under headings: (heading, lines) per section, and the edges in their numbering."""
        docs: dict[str, str] = {}
        shown: list[StarEdge] = []
        blocks: list[tuple[str, str]] = []
        room = self.max_edges
        said: set[str] = set()
        for heading, edges in sections:
            ranked: list[StarEdge] = []
            for star in sorted(edges, key=lambda s: (-s.edge.strength, -len(s.names), s.edge.edge_id)):
                # One sentence often yields a group edge and a pair edge: list the statement once.
                key = normalize_name(star.edge.description)
                if key not in said and len(ranked) < room:
                    said.add(key)
                    ranked.append(star)
            room -= len(ranked)
            if not ranked:
                continue
            lines = []
            for star in ranked:
                shown.append(star)
                pages = []
                for doc, page in sorted(star.pages):
                    tag = docs.setdefault(doc, f"D{len(docs) + 1}")
                    pages.append(f"{tag} p.{page}")
                members = "; ".join(star.names[m] for m, _ in star.edge.members if m in star.names)
                description = _short(star.edge.description, self.max_description_chars)
                lines.append(
                    f"[{len(shown)}] {star.edge.level} | pages: {', '.join(pages) or '?'} | "
                    f"members: {members} | {description}"
                )
            blocks.append((heading, "\n".join(lines)))
        return blocks, shown

    def _messages(self, focus: str, about: str, listing: list[tuple[str, str]]) -> list[dict[str, Any]]:
        """`focus` is this module's own words; `about` (the anchors) and the listing come from the documents."""
        fence = Fence.over([about] + [lines for _, lines in listing])
        head = f"{focus}\n{fence.quote(about, 'anchor')}" if about else focus
        relations = "\n\n".join(f"{heading}\n{fence.quote(lines)}" for heading, lines in listing)
        user = (
            f"{head}\n\n{relations}\n\n"
            f"Return at most {self.max_relations} refined relations as JSON with the key `relations`."
        )
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def anchor_messages(self, anchor: Entity, star: list[StarEdge]) -> tuple[list[dict[str, Any]], list[StarEdge]]:
        about = f"{anchor.name}" + (f" ({anchor.type})" if anchor.type else "")
        if anchor.description:
            about += f": {_short(anchor.description, self.max_description_chars)}"
        focus = "Anchor entity, found on several pages; the relations that involve it follow."
        listing, shown = self._listing([("Relations:", spread_over_pages(star, self.max_star_edges))])
        return self._messages(focus, about, listing), shown

    def page_messages(self, context: PageContext) -> tuple[list[dict[str, Any]], list[StarEdge]]:
        focus = f"Page {context.page} of a document, read with the pages just before and after it."
        listing, shown = self._listing(
            [
                ("Relations on this page:", context.edges),
                ("Relations on the neighbouring pages:", context.neighbour_edges),
            ]
        )
        return self._messages(focus, "", listing), shown

    # ------------------------------------------------------------------ reply -> edges
    def _edges(
        self,
        reply: RefineReply,
        shown: list[StarEdge],
        names: dict[str, str],
        default_chunks: list[str],
        anchor_id: str | None,
    ) -> list[ExtractedEdge]:
        by_name: dict[str, str] = {}
        for entity_id, name in names.items():
            by_name.setdefault(normalize_name(name), entity_id)
        out: list[ExtractedEdge] = []
        for relation in reply.relations[: self.max_relations]:
            members: list[str] = [anchor_id] if anchor_id else []
            for name in relation.members:
                member_id = name if name in names else by_name.get(normalize_name(name))
                if member_id and member_id not in members:
                    members.append(member_id)
            if len(members) < 2:
                continue
            sources = [shown[n - 1] for n in relation.sources if 1 <= n <= len(shown)]
            if not sources:
                wanted = set(members) - {anchor_id}
                sources = [s for s in shown if wanted & set(s.names)]
            chunks = list(dict.fromkeys(c for s in sources for c, _, _ in s.chunks)) or list(default_chunks)
            description = one_line(relation.description) or "; ".join(names[m] for m in members)
            keywords = [one_line(k) for k in relation.keywords if k.strip()][:10]
            roles = {anchor_id: "anchor"} if anchor_id else {}
            out.append(ExtractedEdge(REFINE, members, description, keywords, relation.strength, chunks[:12], roles))
        return out

    def _call(self, messages: list[dict[str, Any]], what: str) -> RefineReply | None:
        self.calls += 1
        try:
            return self.chat.complete_json(messages, RefineReply, stage=self.stage)
        except ModelCallError as exc:
            log.warning("refinement of %s failed; using the offline refiner: %s", what, exc)
            self.fallbacks += 1
            self.errors.append(f"{what}: {exc}")
            return None

    # ------------------------------------------------------------------ Refiner protocol
    def refine_anchor(self, anchor: Entity, star: list[StarEdge]) -> list[ExtractedEdge]:
        if not star:
            return []
        messages, shown = self.anchor_messages(anchor, star)
        reply = self._call(messages, f"anchor {anchor.name!r}")
        if reply is None:
            return self.fallback.refine_anchor(anchor, star)
        names = {m: n for s in star for m, n in s.names.items()}
        names.setdefault(anchor.entity_id, anchor.name)
        default = list(dict.fromkeys(c for s in shown for c, _, _ in s.chunks))
        return self._edges(reply, shown, names, default, anchor.entity_id)

    def refine_group(self, group: list[tuple[Entity, list[StarEdge]]]) -> dict[str, list[ExtractedEdge]]:
        """Several anchors whose stars overlap in one call: each shared relation is listed once."""
        if len(group) == 1:
            anchor, star = group[0]
            return {anchor.entity_id: self.refine_anchor(anchor, star)}
        union: dict[str, StarEdge] = {}
        for _, star in group:
            for star_edge in spread_over_pages(star, self.max_star_edges):
                union.setdefault(star_edge.edge.edge_id, star_edge)
        about = "; ".join(a.name + (f" ({a.type})" if a.type else "") for a, _ in group)
        focus = (
            "Anchor entities, each found on several pages. Every relation you return must include at least "
            "one of these anchors. The relations that involve them follow."
        )
        cap = self.max_star_edges * 2
        listing, shown = self._listing([("Relations:", spread_over_pages(list(union.values()), cap))])
        reply = self._call(self._messages(focus, about, listing), f"anchors {about[:80]!r}")
        if reply is None:
            return {a.entity_id: self.fallback.refine_anchor(a, star) for a, star in group}
        names = {m: n for s in union.values() for m, n in s.names.items()}
        for anchor, _ in group:
            names.setdefault(anchor.entity_id, anchor.name)
        default = list(dict.fromkeys(c for s in shown for c, _, _ in s.chunks))
        out: dict[str, list[ExtractedEdge]] = {a.entity_id: [] for a, _ in group}
        for edge in self._edges(reply, shown, names, default, None):
            owner = next((a.entity_id for a, _ in group if a.entity_id in edge.members), None)
            if owner is not None:  # a relation that names none of the anchors is not a refinement of them
                edge.roles = {owner: "anchor"}
                out[owner].append(edge)
        return out

    def refine_page(self, context: PageContext) -> list[ExtractedEdge]:
        if not context.edges:
            return []
        messages, shown = self.page_messages(context)
        reply = self._call(messages, f"{context.doc_id} page {context.page}")
        if reply is None:
            return self.fallback.refine_page(context)
        names = {m: n for s in context.edges + context.neighbour_edges for m, n in s.names.items()}
        default = list(dict.fromkeys(c for s in context.edges for c, _, _ in s.chunks))
        return self._edges(reply, shown, names, default, None)
