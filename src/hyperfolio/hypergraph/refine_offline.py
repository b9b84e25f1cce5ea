"""The offline refiner: cross-page hyperedges from an anchor's star without a model.

An anchor is linked with the entities it meets on several pages, described by its strongest
edge on each page; the model refiner (`refine_model`) falls back to it.
"""

from __future__ import annotations

from collections import Counter

from hyperfolio.hypergraph.extract import REFINE, ExtractedEdge
from hyperfolio.hypergraph.refine import PageContext, StarEdge
from hyperfolio.model import Entity
from hyperfolio.phrases import content_words


def _trim(text: str, limit: int = 140) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


class OfflineRefiner:
    """Deterministic: links an anchor with the entities it meets on several pages."""

    name = "offline"

    def __init__(self, max_members: int = 7) -> None:
        self.max_members = max_members

    def refine_anchor(self, anchor: Entity, star: list[StarEdge]) -> list[ExtractedEdge]:
        pages = sorted({p for s in star for p in s.pages})
        if len(pages) < 2:
            return []
        met_on: dict[str, set[tuple[str, int]]] = {}
        for s in star:
            for member in s.names:
                if member != anchor.entity_id:
                    met_on.setdefault(member, set()).update(s.pages)
        names: dict[str, str] = {}  # each member's name as the first edge naming it gives it
        for s in star:
            for member, name in s.names.items():
                names.setdefault(member, name)
        ranked = sorted(met_on, key=lambda m: (-len(met_on[m]), names[m]))
        members = [anchor.entity_id] + ranked[: self.max_members - 1]
        if len(members) < 2:
            return []
        best_per_page: dict[tuple[str, int], StarEdge] = {}
        for s in sorted(star, key=lambda s: (-s.edge.strength, -len(s.names), s.edge.edge_id)):
            for page in s.pages:
                best_per_page.setdefault(page, s)
        shown = list(best_per_page.items())[:4]
        page_list = ", ".join(str(p) for _, p in pages[:8]) + ("…" if len(pages) > 8 else "")
        description = f"{anchor.name} across pages {page_list}: " + " / ".join(
            _trim(s.edge.description) for _, s in shown
        )
        words = Counter(w for s in star for w in content_words(s.edge.description))
        chunks = list(dict.fromkeys(c for _, s in shown for c, _, _ in s.chunks))
        return [
            ExtractedEdge(
                REFINE,
                members,
                description,
                [w for w, _ in words.most_common(8)],
                min(1.0, 0.5 + 0.1 * len(pages)),
                chunks,
                {anchor.entity_id: "anchor"},
            )
        ]

    def refine_group(self, group: list[tuple[Entity, list[StarEdge]]]) -> dict[str, list[ExtractedEdge]]:
        return {anchor.entity_id: self.refine_anchor(anchor, star) for anchor, star in group}

    def refine_page(self, context: PageContext) -> list[ExtractedEdge]:
        own = {m for s in context.edges for m in s.names}
        around = {m for s in context.neighbour_edges for m in s.names}
        shared = sorted(own & around)
        if not shared:
            return []
        names = {m: n for s in context.edges + context.neighbour_edges for m, n in s.names.items()}
        description = f"Page {context.page} continues with " + ", ".join(names[m] for m in shared[:6])
        chunks = list(dict.fromkeys(c for s in context.edges for c, _, _ in s.chunks))[:4]
        return [ExtractedEdge(REFINE, shared[: self.max_members], description, [], 0.6, chunks)]
