"""Each document's card (`cards/`), kept in its meta: made as the document is written, and made later for
documents indexed before cards existed (`check --repair`)."""

from __future__ import annotations

import logging
from pathlib import Path

from hyperfolio.cards.card import CARD_KEY as CARD
from hyperfolio.cards.card import DocumentCard
from hyperfolio.model import Chunk, Document, DocumentInfo
from hyperfolio.store.base import STAGE_READY, Store

log = logging.getLogger(__name__)
SEC_FORMS = frozenset({"10-K", "10-Q", "8-K"})


def attach_card(doc: Document) -> None:
    """Put the parsed document's card into its meta, so it is written with it. A card is an aid to
    routing, never a reason to refuse a file: when it cannot be made, the document goes in without one."""
    from hyperfolio.cards.offline import card_for  # reads the PDF's cover: loaded by whoever adds, not asks

    try:
        card = card_for(doc)
    except Exception:
        log.warning("%s: no document card (%s)", doc.source, "its cover could not be read", exc_info=True)
        return
    doc.meta[CARD] = card.to_dict()
    if card.title and _title_wanting(doc, card):
        doc.meta["parsed_title"] = doc.title
        doc.title = card.title


def _title_wanting(doc: Document, card: DocumentCard) -> bool:
    """Whether the parser's title should give way to the cover's: a filing's cover names it better than
    any line of it ("UNITED STATES SECURITIES AND EXCHANGE COMMISSION"), and a title that is the page's
    furniture ("About Pew Research Center"), OCR debris or the file's own name says nothing."""
    from hyperfolio.cards.title import is_furniture, is_noise

    title = doc.title.strip()
    filing = card.doc_type in SEC_FORMS and bool(card.organisation)
    return filing or not title or is_furniture(title) or is_noise(title) or title == Path(doc.source).stem


def without_card(store: Store) -> list[DocumentInfo]:
    return [d for d in store.list_documents() if d.status == STAGE_READY and not isinstance(d.meta.get(CARD), dict)]


def fill_cards(store: Store) -> int:
    """Cards for the ready documents that have none, from their stored pages and chunks (and the PDF's
    cover, when the file is still where it was read from). Returns how many were made."""
    made = 0
    for info in without_card(store):
        pages = store.get_pages(info.doc_id)
        on_page: dict[int, list[Chunk]] = {}
        for chunk in store.iter_chunks(info.doc_id):
            on_page.setdefault(chunk.page, []).append(chunk)
        for page in pages:
            page.chunks = on_page.get(page.number, [])
        doc = Document(info.doc_id, info.source, info.title, info.kind, pages, info.content_hash, dict(info.meta))
        attach_card(doc)
        if isinstance(doc.meta.get(CARD), dict):
            store.update_document_meta(info.doc_id, {CARD: doc.meta[CARD]})
            made += 1
    return made
