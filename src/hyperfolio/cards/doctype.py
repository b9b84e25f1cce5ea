"""What kind of document a cover shows, in the card's fixed vocabulary (`card.DOC_TYPES`), by cues
a reader uses: the SEC form, an earnings headline, a paper's abstract and arXiv stamp, slides'
landscape pages of little text, a manual's or brochure's own name for itself."""

from __future__ import annotations

from hyperfolio.cards.cues import cue
from hyperfolio.cards.sec import SecFacts
from hyperfolio.parse.cover import Cover

_SEC_TYPES = {"10-K": "10-K", "10-Q": "10-Q", "8-K": "8-K", "20-F": "annual report", "40-F": "annual report"}
_EARNINGS = cue(
    r"\b(?:reports?|announces?|posts?)\b[^.\n]{0,60}\b(?:first|second|third|fourth|q[1-4]|quarter(?:ly)?|"
    r"full[- ]year|annual)\b[^.\n]{0,40}\b(?:results|earnings)\b",
    r"\bearnings\s+release\b",
)
_ARXIV = cue(r"\barxiv:\s*\d{4}\.\d{4,5}")
_ABSTRACT = cue(r"^(?:abstract\b|a\s?b\s?s\s?t\s?r\s?a\s?c\s?t\b)")
_PAPER_CUES = cue(
    r"^(?:\d\.?\s*|i\.\s*)?introduction$|^keywords\b|^index\s+terms|proceedings\s+of\b|\bconference\s+on\b|"
    r"^acm\s+reference\s+format|\bet\s+al\."
)
_MANUAL = cue(
    r"\b(?:user(?:['’]s)?\s+(?:manual|guide)|owner(?:['’]s)?\s+manual|instruction\s+manual|operating\s+instructions|"
    r"installation\s+guide|quick\s+start|handbook|guidebook|reference\s+manual|user\s+guide|manual)\b"
)
_BROCHURE = cue(r"\b(?:brochure|prospectus|leaflet)\b")
_ANNUAL = cue(r"\bannual\s+report\b", r"\breport\s+and\s+accounts\b", r"\bintegrated\s+report\b")
_REPORT = cue(
    r"\breport\b|\bsurvey\b|\bassessment\b|\bstudy\b|\bwhite\s*paper\b|\bfor\s+release\b|\bresearch\s+center\b"
)
_SLIDE_CHARS = 900  # a slide rarely holds more text than this


def is_paper(cover: Cover) -> bool:
    """An arXiv stamp, or an abstract with another paper cue (introduction, keywords, proceedings)."""
    first = cover.pages[:2]
    if any(_ARXIV.search(page.text) for page in first):
        return True
    lines = [line.text.strip() for page in first for line in page.lines]
    abstract = any(_ABSTRACT.match(line) for line in lines)
    return abstract and any(_PAPER_CUES.search(line) for line in lines)


def is_slide_deck(cover: Cover, kind: str = "") -> bool:
    """Slides: a deck format, or landscape pages that carry little text each."""
    if kind == "slides":
        return True
    pages = [page for page in cover.pages if page.width and page.height]
    if not pages:
        return False
    landscape = sum(1 for page in pages if page.landscape)
    light = sum(1 for page in pages if len(page.text) < _SLIDE_CHARS)
    return landscape >= 0.6 * len(pages) and light >= 0.6 * len(pages)


def doc_type(cover: Cover, sec: SecFacts | None, title: str, kind: str = "") -> str:
    """The document's type; "other" when no cue speaks (court papers, forms, letters)."""
    if sec is not None:
        return _SEC_TYPES.get(sec.form, "other")
    first = cover.pages[0].text if cover.pages else ""
    named = f"{title}\n{first}"
    if _EARNINGS.search(named):
        return "earnings release"
    if is_paper(cover):
        return "paper"
    if is_slide_deck(cover, kind):
        return "slide deck"
    if _MANUAL.search(title) or _MANUAL.search(first[:600]):
        return "manual"
    if _BROCHURE.search(named):
        return "brochure"
    if _ANNUAL.search(named) or _ANNUAL.search(cover.pages[1].text[:400] if len(cover.pages) > 1 else ""):
        return "annual report"
    if _REPORT.search(title) or _REPORT.search(first[:1500]):
        return "report"
    return "other"
