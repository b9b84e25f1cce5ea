"""Each document's card (`cards/`), kept in its meta: made as the document is written (by the collection's
carder: a model's when one is configured, else the offline one), given the theme layer's top themes once
its graph is built, and made or completed later for documents indexed before cards, or before cards had
themes (`check --repair`). A card can rename a document whose parsed title says nothing: the same rule
(`card_title`) at ingest and on repair."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from hyperfolio.cards.card import CARD_KEY as CARD
from hyperfolio.cards.card import Carder, DocumentCard
from hyperfolio.cards.themes import top_themes
from hyperfolio.hypergraph.layers import THEME
from hyperfolio.model import Chunk, Document, DocumentInfo
from hyperfolio.parse.file_titles import file_title
from hyperfolio.store.base import STAGE_READY, Store

if TYPE_CHECKING:  # the cover reader imports PyMuPDF: not for whoever only asks
    from hyperfolio.parse.cover import Cover

log = logging.getLogger(__name__)
SEC_FORMS = frozenset({"10-K", "10-Q", "8-K"})
THEMES = "themes"  # the card's key a card made before themes lacks
PARSED_TITLE = "parsed_title"  # the meta key keeping the parser's title when a card's replaced it


def offline_carder() -> Carder:
    from hyperfolio.cards.offline import OfflineCarder  # reads the PDF's cover: loaded by whoever adds, not asks

    return OfflineCarder()


def attach_card(doc: Document, carder: Carder | None = None, cover: Cover | None = None) -> None:
    """Put the parsed document's card (made by `carder`, the offline one when None, from `cover` when it was
    read already) into its meta, so it is written with it, and let it retitle the document (`card_title`). A
    card is an aid to routing, never a reason to refuse a file: when it cannot be made, the document goes in
    without one."""
    try:
        card = (carder or offline_carder()).card(doc, cover)
    except Exception:
        log.warning("%s: no document card (%s)", doc.source, "its cover could not be read", exc_info=True)
        return
    doc.meta[CARD] = card.to_dict()
    title = card_title(doc.title, doc.source, card)
    if title is not None:
        doc.meta.setdefault(PARSED_TITLE, doc.title)
        doc.title = title


def card_title(title: str, source: str, card: DocumentCard) -> str | None:
    """The card's title when it should replace the document's `title`, else None. A filing's cover names
    it better than any line of it ("UNITED STATES SECURITIES AND EXCHANGE COMMISSION"), and a title that is
    the page's furniture ("About Pew Research Center"), OCR debris or the file's own name says nothing."""
    from hyperfolio.parse.furniture import is_furniture, is_noise

    if not card.title or card.title == title:
        return None
    clean = title.strip()
    filing = card.doc_type in SEC_FORMS and bool(card.organisation)
    wanting = (
        filing
        or not clean
        or is_furniture(clean)
        or is_noise(clean)
        or clean in (Path(source).stem, file_title(source))
    )
    return card.title if wanting else None


# ---------------------------------------------------------------------------- themes
def document_themes(store: Store, doc_id: str, title: str = "") -> list[str]:
    """The document's top themes from its theme hyperedges ([] while its graph is not built); its card's
    `title`, which a heading entity may repeat, is none of them."""
    themes = store.get_hyperedges(store.hyperedges_of_level(doc_id, THEME))
    entities = store.get_entities(list(dict.fromkeys(m for t in themes for m, _ in t.members)))
    names = {e.entity_id: e.name for e in entities}
    return top_themes(themes, names, {e.entity_id: e.type for e in entities}, skip=[title] if title else [])


def attach_themes(store: Store, doc_id: str) -> list[str] | None:
    """Put the document's top themes into its stored card (after its graph was built); None when it has
    no card (repair makes one, with its themes)."""
    info = store.get_document(doc_id)
    card = info.meta.get(CARD) if info is not None else None
    if not isinstance(card, dict):
        return None
    themes = document_themes(store, doc_id, str(card.get("title") or ""))
    store.update_document_meta(doc_id, {CARD: card | {THEMES: themes}})
    return themes


# ---------------------------------------------------------------------------- repair
def without_card(store: Store) -> list[DocumentInfo]:
    """Ready documents with no card, or with a card made before cards had themes."""
    out = []
    for info in store.list_documents():
        card = info.meta.get(CARD)
        if info.status == STAGE_READY and not (isinstance(card, dict) and THEMES in card):
            out.append(info)
    return out


def _stored_document(store: Store, info: DocumentInfo) -> Document:
    """A ready document back from its stored pages and chunks, as a carder reads it."""
    pages = store.get_pages(info.doc_id)
    on_page: dict[int, list[Chunk]] = {}
    for chunk in store.iter_chunks(info.doc_id):
        on_page.setdefault(chunk.page, []).append(chunk)
    for page in pages:
        page.chunks = on_page.get(page.number, [])
    return Document(info.doc_id, info.source, info.title, info.kind, pages, info.content_hash, dict(info.meta))


def fill_cards(store: Store, carder: Carder | None = None) -> int:
    """Cards for the ready documents that have none (from their stored pages and chunks, and the PDF's
    cover when the file is still where it was read from), themes for cards made before themes, and the
    title rule of ingest applied to both. Returns how many documents were changed."""
    made = 0
    for info in without_card(store):
        stored = info.meta.get(CARD)
        if isinstance(stored, dict):
            card = DocumentCard.from_dict(stored)
        else:
            doc = _stored_document(store, info)
            try:
                card = (carder or offline_carder()).card(doc)
            except Exception:
                log.warning("%s: no document card (%s)", info.source, "its cover could not be read", exc_info=True)
                continue
        card.doc_id = info.doc_id
        card.themes = document_themes(store, info.doc_id, card.title)
        changes: dict[str, object] = {CARD: card.to_dict()}
        title = card_title(info.title, info.source, card)
        if title is not None:
            changes[PARSED_TITLE] = info.meta.get(PARSED_TITLE) or info.title
            store.set_document_title(info.doc_id, title)
        store.update_document_meta(info.doc_id, changes)
        made += 1
    return made
