"""Who issued a document that is not an SEC filing (and an SEC filing whose name is a logo): the
organisation its citation line names, the company its text defines ("the terms “The Coca-Cola
Company,” “Company,” ... mean"), a cover line naming an organisation, or its copyright holder."""

from __future__ import annotations

import re

from hyperfolio.parse.cover import Cover, CoverPage
from hyperfolio.parse.furniture import is_furniture, is_noise
from hyperfolio.parse.title import CITATION_HEAD

_ORG_WORD = re.compile(
    r"\b(?:inc|incorporated|corporation|corp|company|co|ltd|limited|llc|plc|group|holdings|university|"
    r"institute|center|centre|program|programme|commission|council|agency|association|foundation|bank|"
    r"court|department|ministry|office|board|publications|press|society|authority|organi[sz]ation)\b\.?",
    re.IGNORECASE,
)
_DEFINED = [
    # the terms “The Coca-Cola Company,” “Company,” “we,” ... mean
    re.compile(
        r"the\s+terms?\s+[“\"]([A-Z][^”\"]{2,60}?),?[”\"]\s*,?\s*(?:and\s+)?[“\"](?:the\s+)?(?:company|we)\b",
        re.I,
    ),
    # Acme Corp. (“Acme,” the “Company,” “we” ...) / Acme Corp. (the “Company”)
    re.compile(
        r"\b([A-Z][\w.&'’\- ]{2,50}?(?:,\s*Inc\.)?)\s*\((?:together\s+with[^)]{0,60})?[^)]{0,30}"
        r"[“\"](?:the\s+)?(?:company|registrant|corporation|firm)[”\"]",
        re.I,
    ),
]
_HEADLINE = re.compile(r"^([A-Z][\w.&'’,\- ]{1,60}?)\s+(?:reports|announces|posts|delivers)\b", re.I)
_NAME_CONNECTORS = {"of", "and", "&", "the", "for", "de", "in", "on", "du", "la"}
_SUBSIDIARIES = re.compile(r"^([A-Z][A-Z0-9.&,'’\- ]{2,60}?)\s+AND\s+(?:ITS\s+)?SUBSIDIARIES\b")
_COPYRIGHT = re.compile(
    r"(?:©|\(c\)(?=\s*(?:19|20)\d{2})|\b(?i:copyright)\b)\s*(?:(?:19|20)\d{2}[-–,\s]*)*\s*([A-Z][\w.&'’\- ]{2,60})"
)  # "(c)" alone is a list item's mark; with a year it is a copyright


def _trim(name: str) -> str:
    return " ".join(name.split()).strip(" ,.;:") + ("." if name.strip().endswith(("Inc.", "Co.", "Corp.")) else "")


def cited_organisation(page: CoverPage) -> str:
    """The publisher on a cover's citation line: "Pew Research Center, May, 2018, “...”"."""
    for index, line in enumerate(page.lines[:-1]):
        if CITATION_HEAD.match(line.text.strip()):
            following = page.lines[index + 1].text
            head = following.split(",")[0].strip()
            if head and len(head.split()) <= 8 and sum(ch.isalpha() for ch in head) >= 3:
                return head
    return ""


def defined_organisation(text: str) -> str:
    """The company a text defines as "the Company" or "we", or names as "X AND SUBSIDIARIES"."""
    flat = " ".join(text.replace("\xa0", " ").split())
    for pattern in _DEFINED:
        match = pattern.search(flat)
        if match:
            return _trim(match[1])
    for line in text.splitlines():
        match = _SUBSIDIARIES.match(line.strip())
        if match:
            return _trim(match[1])
    return ""


def cover_organisation(page: CoverPage) -> str:
    """A short line of the cover that names an organisation ("U.S. Global Change Research Program")."""
    for line in page.lines:
        text = line.text.strip()
        words = text.split()
        if not 2 <= len(words) <= 8 or text.endswith(".") and not _ORG_WORD.search(words[-1]):
            continue
        if not all(w[:1].isupper() or not w[:1].isalpha() or w.lower() in _NAME_CONNECTORS for w in words):
            continue  # an organisation's name is capitalised throughout; a sentence is not
        named = _ORG_WORD.fullmatch(words[-1].strip(",;:")) or re.search(rf"{_ORG_WORD.pattern}\s+of\s", text, re.I)
        if named and not is_furniture(text) and not is_noise(text) and not re.search(r"\d", text):
            return text.strip(" ,;:")
    return ""


def copyright_holder(cover: Cover) -> str:
    for page in cover.pages[:2]:
        for line in page.lines:
            match = _COPYRIGHT.search(line.text)
            if match:
                return _trim(re.split(r"\.\s|\ball rights\b", match[1], flags=re.I)[0])
    return ""


def headline_subject(title: str) -> str:
    """Who a press release is about: "Contoso Ltd. Reports Fourth Quarter Results" -> "Contoso Ltd."."""
    match = _HEADLINE.match(title.strip())
    return match[1].strip(" ,") if match and len(match[1].split()) <= 6 else ""


def issuer(cover: Cover, title: str = "", paper: bool = False) -> str:
    """The organisation behind a document; "" for papers (their authors' affiliations are not issuers)."""
    if paper or not cover.pages:
        return ""
    first = cover.pages[0]
    return (
        cited_organisation(first)
        or headline_subject(title)
        or defined_organisation(cover.text)
        or cover_organisation(first)
        or copyright_holder(cover)
    )
