"""A document's card from a language model, behind `Carder`.

The model reads what the offline reader reads (the text of the first pages, capped) with the offline
card's guess beside it, and answers with the card's fields in JSON. Every field is checked on its own
(the type one of `DOC_TYPES`, a year 1900-2100, a quarter 1-4, an ISO date, short non-empty names) and
the card is merged field by field: a valid model field wins if the cover prints it (a title, a name, a year,
a date: a small model writes what is likely, not what is there), an invalid, unprinted or missing one
keeps the offline value. An SEC cover prints its form, registrant and period in a fixed form, which the offline reader
reads more reliably than a small model: there the offline title, type, organisation, symbols and
period stay whenever the offline card found them. A model that fails, times out or answers junk leaves
the offline card, with one warning naming the document.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from hyperfolio.cards.card import DOC_TYPES, DocumentCard
from hyperfolio.cards.offline import card_from_cover, document_cover
from hyperfolio.cards.periods import find_dates
from hyperfolio.cards.sec import sec_facts
from hyperfolio.llm.errors import ModelCallError, ModelUnavailableError
from hyperfolio.llm.fence import Fence, with_evidence_rule
from hyperfolio.llm.messages import system_message, user_message
from hyperfolio.llm.protocols import StructuredChatModel
from hyperfolio.model import Document
from hyperfolio.parse.cover import Cover
from hyperfolio.parse.furniture import is_noise
from hyperfolio.phrases import clip, one_line
from hyperfolio.textmatch import fold

log = logging.getLogger(__name__)

STAGE = "card"
COVER_CHARS = 4000  # of the first pages' text: a cover, a filing's cover page and a contents page fit
REPLY_TOKENS = 300  # a title, a name, a type, a period and a few symbols
MAX_TITLE, MAX_NAME, MAX_ALIAS, MAX_ALIASES = 200, 120, 40, 5
YEARS = (1900, 2100)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_QUARTER = re.compile(r"^(?:q\s*)?([1-4])$", re.IGNORECASE)
_TYPES = {t.lower(): t for t in DOC_TYPES}
# Fields an SEC cover prints in a fixed form; the period's three are judged together.
SEC_KEPT = ("title", "doc_type", "organisation", "aliases")
PERIOD = ("fiscal_year", "quarter", "date")


class CardReply(BaseModel):
    """The card fields a model is asked for; loosely typed, so one bad field does not void the others."""

    title: str | None = Field(None, description="the document's own title, as printed on its cover")
    organisation: str | None = Field(None, description="who issued or published it; null when not printed")
    doc_type: str | None = Field(None, description="one of: " + ", ".join(DOC_TYPES))
    fiscal_year: int | str | None = Field(None, description="the fiscal or calendar year it covers")
    quarter: int | str | None = Field(None, description="1 to 4 for a quarterly document, else null")
    date: str | None = Field(None, description="YYYY-MM-DD: its period end or release date when printed")
    aliases: list[str] | None = Field(None, description="other names of the issuer printed there: tickers")


PROMPT = with_evidence_rule(f"""\
You catalogue documents. From the first pages of a document, fill in its catalogue card: its title as \
printed (not a running header or a publisher's slogan), the organisation that issued it, its type \
(exactly one of: {", ".join(DOC_TYPES)}), the fiscal year and quarter it reports on, a full date as \
YYYY-MM-DD when one is printed (a period end or release date), and other names of the organisation \
printed there (stock symbols). A rule-based reader's guess comes with the pages: keep what it got \
right, correct what it got wrong. Use null for anything the pages do not say; never guess a year. \
Reply in JSON with `title`, `organisation`, `doc_type`, `fiscal_year`, `quarter`, `date`, `aliases`.""")


@dataclass
class Merged:
    """The merged card, which fields came from the model, and which of its fields were rejected (and why)."""

    card: DocumentCard
    taken: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)


def _text(value: Any, limit: int) -> str | None:
    """A short non-empty one-line string, or None."""
    if not isinstance(value, str):
        return None
    text = one_line(value).strip(" ,;:")  # not "." : "Contoso Bank & Co." ends in one
    return text if text and len(text) <= limit and sum(ch.isalpha() for ch in text) >= 2 else None


def _title(value: Any) -> str | None:
    text = _text(value, MAX_TITLE)
    return text if text and not is_noise(text) else None


def _doc_type(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = " ".join(value.split()).lower().removeprefix("form ")
    return _TYPES.get(text) or _TYPES.get(text.replace(" ", "-"))


def _year(value: Any) -> int | None:
    if isinstance(value, str):
        found = re.fullmatch(r"\s*(?:fy\s*)?(\d{4})\s*", value, re.IGNORECASE)
        value = int(found[1]) if found else None
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if YEARS[0] <= value <= YEARS[1] else None


def _quarter(value: Any) -> int | None:
    if isinstance(value, str):
        found = _QUARTER.match(value.strip())
        value = int(found[1]) if found else None
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 1 <= value <= 4 else None


def _date(value: Any) -> str | None:
    if not isinstance(value, str) or not _ISO_DATE.match(value.strip()):
        return None
    try:
        day = dt.date.fromisoformat(value.strip())
    except ValueError:
        return None
    return day.isoformat() if YEARS[0] <= day.year <= YEARS[1] else None


def _aliases(value: Any) -> list[str] | None:
    if not isinstance(value, list):
        return None
    names = [name for name in (_text(v, MAX_ALIAS) for v in value) if name]
    return list(dict.fromkeys(names))[:MAX_ALIASES] or None


CHECKS = {
    "title": _title,
    "organisation": lambda v: _text(v, MAX_NAME),
    "doc_type": _doc_type,
    "fiscal_year": _year,
    "quarter": _quarter,
    "date": _date,
    "aliases": _aliases,
}


def _protected(offline: DocumentCard, sec: bool) -> set[str]:
    """The fields the offline card keeps whatever the model says: an SEC cover's, where it read them."""
    if not sec:
        return set()
    kept = {name for name in SEC_KEPT if getattr(offline, name) not in ("", None, [], "other")}
    if any(getattr(offline, name) is not None for name in PERIOD):
        kept.update(PERIOD)
    return kept


def _folded(text: str) -> str:
    """Words as `textmatch` compares text (case, accents, possessives folded), numbers kept."""
    return " ".join(re.findall(r"\w+", fold(text)))


def printed(name: str, value: Any, cover_text: str) -> bool:
    """Whether a model's value is printed on the cover: a name or title word for word (case and punctuation
    aside), a year as written, a date as one of the cover's dates. A small model fills a card with what
    is likely rather than what is there ("2018-05-31" for a release dated May 3), so a value the cover
    does not print cannot replace the rules' reading. The type and the quarter are judgements, not
    quotes; they are checked by `_protected` and the year they need."""
    if name in ("title", "organisation"):
        return _folded(str(value)) in _folded(cover_text)
    if name == "aliases":
        return all(_folded(alias) in _folded(cover_text) for alias in value)
    if name == "fiscal_year":
        return str(value) in cover_text
    if name == "date":
        return value in {date.iso for date in find_dates(cover_text)}
    return True


def merge(offline: DocumentCard, reply: CardReply, sec: bool = False, cover_text: str | None = None) -> Merged:
    """The offline card with each valid model field in its place, except the fields `_protected` keeps
    and, when the cover's text is given, values the cover does not print (`printed`)."""
    values = reply.model_dump()
    keep = _protected(offline, sec)
    out = DocumentCard.from_dict(offline.to_dict())
    merged = Merged(out)
    for name, check in CHECKS.items():
        raw = values.get(name)
        if raw is None or raw == "" or raw == []:
            continue  # the model does not know: the offline value stays
        value = check(raw)
        if value is None:
            merged.rejected[name] = clip(json.dumps(raw, ensure_ascii=False), 60)
        elif cover_text is not None and value != getattr(offline, name) and not printed(name, value, cover_text):
            merged.rejected[name] = clip(json.dumps(raw, ensure_ascii=False), 60) + " (not on the cover)"
        elif name not in keep:
            setattr(out, name, value)
            merged.taken.append(name)
    if out.quarter is not None and out.fiscal_year is None:
        out.quarter = None  # "Q2" of no year names no period
    if merged.taken:
        out.made_by = "model"
    return merged


class LLMCarder:
    """The card from a language model over the cover, checked and merged with the offline card."""

    name = "llm"

    def __init__(self, chat: StructuredChatModel, *, max_chars: int = COVER_CHARS, stage: str = STAGE) -> None:
        self.chat = chat
        self.max_chars = max_chars
        self.stage = stage
        self.fallbacks = 0  # documents whose card stayed offline because the model failed

    def messages(self, cover_text: str, guess: DocumentCard) -> list[dict[str, Any]]:
        """The first pages' text and the offline guess, each fenced: both come from the document."""
        pages = clip(cover_text.strip(), self.max_chars)
        fields = {name: getattr(guess, name) for name in CHECKS}
        guessed = json.dumps({k: v for k, v in fields.items() if v not in ("", None, [])}, ensure_ascii=False)
        fence = Fence.over([pages, guessed])
        text = f"First pages:\n{fence.quote(pages, 'pages')}\n\nThe rule-based reader's guess:\n"
        text += fence.quote(guessed, "guess")
        return [system_message(PROMPT), user_message(text)]

    def card(self, document: Document, cover: Cover | None = None) -> DocumentCard:
        cover = cover or document_cover(document)
        offline = card_from_cover(cover, document, document.kind)
        if not cover.text.strip():
            return offline  # nothing to read: the model would only guess
        try:
            reply = self.chat.complete_json(
                self.messages(cover.text, offline), CardReply, stage=self.stage, max_tokens=REPLY_TOKENS
            )
        except ModelCallError as exc:
            self.fallbacks += 1
            say = log.debug if isinstance(exc, ModelUnavailableError) else log.warning
            say("card of %s: the model failed, the offline card stands: %s", document.source, one_line(str(exc)))
            return offline
        merged = merge(offline, reply, sec=sec_facts(cover) is not None, cover_text=cover.text)
        if merged.rejected:
            rejected = ", ".join(f"{name} {value}" for name, value in merged.rejected.items())
            kept = "kept the offline values" if merged.taken else "the offline card stands"
            log.warning("card of %s: the model's %s not valid; %s", document.source, rejected, kept)
        return merged.card
