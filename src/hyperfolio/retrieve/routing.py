"""Which documents a question asked of a whole collection is about, read from their cards.

A question that names its organisation ("What is Adobe's FY2016 operating income?") is about that
organisation's documents, and among them the period and type it names pick the filing; asked of a
folder holding several years of several companies, ranking pages of every filing lets a near-twin
(last year's 10-K prints this year's figures as comparatives) win by a word. So routing is narrow on
purpose: only an organisation named and matched routes (a bare year or "report" is too weak to exclude
documents); of each organisation named, the documents within `TIE` of its best card score are kept, or,
when the question names several periods, its documents of each period named. Documents without a card
are never routed away from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from hyperfolio.cards.card import DocumentCard, stored_card
from hyperfolio.cards.match import ORG_NAMED, CardMatch, match_cards, named_entities
from hyperfolio.phrases import content_words
from hyperfolio.retrieve.base import Query, RetrievalContext

TIE = 0.25  # card scores this close to the best count as the same document's


@dataclass(frozen=True)
class Route:
    """The documents a question is sent to, and the cards' say in it. `across` marks a question that
    names several organisations or periods ("FY2021 and FY2022", "Adobe vs Nike"): each of its documents
    must bring evidence, so the package keeps a share of its places for each (`quota_order`)."""

    doc_ids: list[str]
    matches: dict[str, CardMatch]  # every carded document's match, by id (document features read them)
    across: bool = False


def collection_cards(ctx: RetrievalContext, doc_ids: list[str] | None = None) -> list[DocumentCard]:
    """The cards of the ready documents (of `doc_ids` when given), read once per change of the documents."""

    def read() -> list[DocumentCard]:
        wanted = set(doc_ids) if doc_ids else None
        cards = [stored_card(d.meta, d.doc_id) for d in ctx.ready_documents() if wanted is None or d.doc_id in wanted]
        return [card for card in cards if card is not None]

    return ctx.kept(("cards", tuple(doc_ids) if doc_ids else None), read)


def card_matches(query: Query, ctx: RetrievalContext) -> dict[str, CardMatch]:
    """Each carded document's match to the question (within the question's scope), once per call."""
    scope = list(query.doc_ids) if query.doc_ids else None
    return ctx.memo.value(
        ("card-matches", query.text, scope and tuple(scope)),
        lambda: {m.doc_id: m for m in match_cards(query.text, collection_cards(ctx, scope))},
    )


def card_text_scores(query: Query, ctx: RetrievalContext) -> dict[str, float]:
    """How much of the question each document's card says (title, issuer, type, period, contents), its
    words weighted by how few cards hold them: a question about "Germans and Americans" meets the report
    titled so, wherever its pages rank. Scores are shares of the question's weight, in [0, 1]."""

    def score() -> dict[str, float]:
        cards = collection_cards(ctx)
        held = {card.doc_id: _card_words(ctx, card) for card in cards}
        asked = set(content_words(query.text))
        df = {w: sum(w in words for words in held.values()) for w in asked}
        idf = {w: math.log((len(cards) + 1) / (df[w] + 0.5)) for w in asked}
        total = sum(idf.values()) or 1.0
        return {doc: sum(idf[w] for w in asked & words) / total for doc, words in held.items()}

    return ctx.memo.value(("card-text", query.text), score)


def route(query: Query, ctx: RetrievalContext) -> Route | None:
    """The documents a whole-collection question names, or None to search them all."""
    if query.doc_ids:
        return None
    matches = card_matches(query, ctx)
    named = {m.doc_id: m for m in matches.values() if m.org_match >= ORG_NAMED}
    if not named:
        return None
    cards = [c for c in collection_cards(ctx) if c.doc_id in named]
    reached = named_entities(query.text, cards)
    in_period = {cards[i].doc_id for found in reached.periods.values() for i in found}
    chosen: set[str] = set()
    for members in reached.organisations.values() or [list(range(len(cards)))]:
        group = [named[cards[i].doc_id] for i in members]
        dated = [m.doc_id for m in group if m.doc_id in in_period]
        best = max(m.score for m in group)
        chosen.update(
            dated if reached.several_periods and dated else [m.doc_id for m in group if m.score >= best - TIE]
        )
    across = len(chosen) > 1 and (reached.several_organisations or reached.several_periods)
    if len(chosen) >= len(matches) and not across:
        return None  # nothing narrowed, and no share of the evidence owed to each document
    return Route(sorted(chosen) + _uncarded(ctx, set(matches)), matches, across)


def quota_order(
    order: list[tuple[int, float]], doc_of: list[str], doc_ids: list[str], k: int
) -> list[tuple[int, float]]:
    """The ranked rows with each of `doc_ids`' best `k // len(doc_ids)` (at least one) among the first k,
    the other places going by score; the first k stay in score order, the rest follow as they were."""
    share = max(1, k // max(1, len(doc_ids)))
    taken: dict[str, int] = {}
    first: list[tuple[int, float]] = []
    for row, score in order:  # each document's best rows, up to its share
        if doc_of[row] in doc_ids and taken.get(doc_of[row], 0) < share and len(first) < k:
            taken[doc_of[row]] = taken.get(doc_of[row], 0) + 1
            first.append((row, score))
    chosen = {row for row, _ in first}
    for row, score in order:  # the remaining places by score
        if len(first) >= k:
            break
        if row not in chosen:
            first.append((row, score))
            chosen.add(row)
    position = {row: i for i, (row, _) in enumerate(order)}
    first.sort(key=lambda item: position[item[0]])
    return first + [item for item in order if item[0] not in chosen]


def routed(query: Query, ctx: RetrievalContext) -> tuple[Query, Route | None]:
    """The question scoped to the documents it names (as is when it names none, or is scoped already).
    Documents too small together to fill the evidence are named but not narrowed to: an encyclopedia's paragraph
    named by a question ("who wrote Music for Electric Metronomes?") rarely holds all of its answer, so the
    question is ranked over the whole collection, where the cards' match still favours what it names. A
    question across the documents it names (a comparison) is about those alone, whatever their size."""
    found = route(query, ctx)
    if found is None or (not found.across and _chunks_in(ctx, found.doc_ids) < query.k):
        return query, found
    return replace(query, doc_ids=found.doc_ids), found


def _chunks_in(ctx: RetrievalContext, doc_ids: list[str]) -> int:
    sizes = ctx.kept(("chunk-counts",), lambda: {d.doc_id: d.num_chunks for d in ctx.ready_documents()})
    return sum(sizes.get(doc_id, 0) for doc_id in doc_ids)


def _card_words(ctx: RetrievalContext, card: DocumentCard) -> frozenset[str]:
    """A card's words, kept across questions under its text: a card gains its themes once its document's
    graph is built, and repair completes old cards, so a document's card can change under a reader."""
    text = card.text()
    key = ("card-words", card.doc_id, text)
    found = ctx.texts.get(key)
    return found if found is not None else ctx.texts.put(key, frozenset(content_words(text)))


def _uncarded(ctx: RetrievalContext, carded: set[str]) -> list[str]:
    return sorted(d.doc_id for d in ctx.ready_documents() if d.doc_id not in carded)
