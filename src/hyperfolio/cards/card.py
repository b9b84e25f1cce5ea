"""The document card: what a collection knows about a document as a whole (who issued it, what kind
of document it is, which period it covers, how it is organised), so that a question naming an
organisation, a period or a document type can be sent to the right documents before any page is
ranked."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hyperfolio.model import Document
    from hyperfolio.parse.cover import Cover

# A fixed vocabulary, so a ranker's type feature and a question's "10-K" or "slides" mean the same thing.
DOC_TYPES: tuple[str, ...] = (
    "10-K",
    "10-Q",
    "8-K",
    "earnings release",
    "annual report",
    "paper",
    "slide deck",
    "report",
    "manual",
    "brochure",
    "other",
)
_TOC_IN_TEXT = 12  # contents entries worth indexing: enough to say what the document covers
MADE_BY = ("offline", "model")  # who read the cover: the layout rules, or a language model over them


@dataclass
class DocumentCard:
    """One document's card, built at ingest by a `Carder`: offline from the cover by layout
    (`cards.offline.card_for`), or by a language model checked against that (`cards.card_model`)."""

    title: str = ""
    organisation: str = ""  # the issuer: an SEC registrant, a report's publisher; "" when unknown
    doc_type: str = "other"  # one of DOC_TYPES
    fiscal_year: int | None = None  # the fiscal year the document reports on (a 10-K's, a 10-Q's)
    quarter: int | None = None  # 1-4 for quarterly documents
    date: str | None = None  # ISO date when the cover prints a full one (period end, release date)
    toc: list[str] = field(default_factory=list)  # printed contents entries, else outline/section headings
    aliases: list[str] = field(default_factory=list)  # other names of the issuer printed on the cover (tickers)
    doc_id: str = ""  # the document the card describes
    themes: list[str] = field(default_factory=list)  # the theme layer's top labels, most central first
    made_by: str = "offline"  # one of MADE_BY; cards stored before models made them were all offline

    def __post_init__(self) -> None:
        if self.doc_type not in DOC_TYPES:
            raise ValueError(f"doc_type {self.doc_type!r} is not one of {', '.join(DOC_TYPES)}")
        if self.quarter is not None and not 1 <= self.quarter <= 4:
            raise ValueError(f"quarter {self.quarter} is not 1-4")
        if self.made_by not in MADE_BY:
            raise ValueError(f"made_by {self.made_by!r} is not one of {', '.join(MADE_BY)}")

    @property
    def period(self) -> str:
        """The period as people write it: "Q2 2023", "FY2016", a date, or ""."""
        if self.fiscal_year and self.quarter:
            return f"Q{self.quarter} {self.fiscal_year}"
        if self.fiscal_year:
            return f"FY{self.fiscal_year}"
        return self.date or ""

    def text(self) -> str:
        """The fields routing matches a question's words against, in one short line. Not the themes: the
        offline theme layer's labels ("Net", "Plan", "START") did not help held out (benchmarks/README.md,
        issue 28), so they are kept on the card but not matched."""
        parts = [self.title, self.organisation, *self.aliases, self.doc_type if self.doc_type != "other" else ""]
        parts += [self.period, self.date if self.date and self.date != self.period else ""]
        parts += self.toc[:_TOC_IN_TEXT]
        return " | ".join(p for p in parts if p)

    def label(self) -> str:
        """The document's type and period in a few characters, for listings: "10-K · FY2022"."""
        return " · ".join(p for p in (self.doc_type if self.doc_type != "other" else "", self.period) if p)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for a store's JSON column."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DocumentCard:
        """A card back from `to_dict`'s data; unknown keys (a later version's) are ignored."""
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


class Carder(Protocol):
    """Makes a parsed document's card: offline from its cover (`cards.offline.OfflineCarder`), or with a
    language model (`cards.card_model.LLMCarder`). A carder never raises for a document it cannot read
    well: the worst it returns is the offline card."""

    name: str

    def card(self, document: Document, cover: Cover | None = None) -> DocumentCard:
        """`cover`: the document's cover when read already (by a worker during `add`), else read here."""


CARD_KEY = "card"  # the key of a document's meta that holds its card (ingest writes it, routing reads it)


def stored_card(meta: dict[str, Any], doc_id: str) -> DocumentCard | None:
    """The card kept in a document's meta, if it has one (documents indexed before cards have none)."""
    found = meta.get(CARD_KEY)
    if not isinstance(found, dict):
        return None
    card = DocumentCard.from_dict(found)
    card.doc_id = doc_id
    return card
