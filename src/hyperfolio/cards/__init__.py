"""Document cards: what a document is as a whole (issuer, type, period, contents, top themes), built at
ingest, and a question matched against them, so questions naming an organisation, a period or a
document type reach the right documents of a collection.

Tier: beside `parse/` (tier 2). Cards read parsed documents and the PDF reader's pages; ingest
(tier 3) builds them with a `Carder` (`offline.OfflineCarder`, or `card_model.LLMCarder` when an extract
model is configured) and adds the theme layer's top themes (`themes`), and rankers (tier 2) score them
with `match_cards`. Reading a cover needs the PDF reader, so `offline` is imported by its users only: a
question must not load it.
"""

from hyperfolio.cards.card import DOC_TYPES, DocumentCard
from hyperfolio.cards.match import CardMatch, QuestionCues, match_cards, named_entities, question_cues

__all__ = [
    "DOC_TYPES",
    "CardMatch",
    "DocumentCard",
    "QuestionCues",
    "match_cards",
    "named_entities",
    "question_cues",
]
