"""Lines of a page that are its furniture or OCR debris, not what it is about: a release date, "About
Pew Research Center", a court stamp, a page number; "SIUD=)I) GUIDE", doubled shadow text. Neither names
a document (`parse.title`) nor heads a section (`parse.pdf.structure`)."""

from __future__ import annotations

import re

from hyperfolio.parse.pdf.items import CAPTION_RE

_FURNITURE = re.compile(
    r"^(about\s+(?:us|the\s+\w+|(?:[A-Z][\w&.'’-]*\s*){1,5})|table\s+of\s+contents|contents|index|for\s+release\b.*|embargoed\b.*|"
    r"(?:page\s+)?\d+(?:\s+of\s+\d+)?|(?:version|v)\s*[\d.]+\b.*|[ivxlc]+|confidential|draft|preprint|copyright\b.*|©.*|all\s+rights\s+reserved.*|"
    r"(?:by|written\s+by|prepared\s+by|presented\s+by)\s.*|www\..*|https?://.*|\S+@\S+|"
    r"(?:recommended|suggested)\s+citation|for\s+media\s+or\s+other\s+inquiries.*)$",
    re.IGNORECASE,
)
# Court and filing stamps across the top of a page: "Case 2:18-cv-... Filed 09/13/18 Page 1 of 16".
_STAMP = re.compile(r"\b(?:e?filed|filing\s+id|case\s+(?:no\.?|number)|docket|arxiv:\S+)", re.IGNORECASE)
_DATE_LINE = re.compile(
    r"^(?:(?:updated|revised|published|issued|version\s+[\d.]+)\s*:?\s*)?"
    r"(?:\w+\s+)?(?:\d{1,2}(?:st|nd|rd|th)?\s+)?[A-Za-z]+\.?\s+(?:\d{1,2},?\s+)?(?:19|20)\d{2}$|^[\d/.\-\s]+$",
    re.IGNORECASE,
)
_MONTH_WORDS = re.compile(r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.IGNORECASE)


def is_furniture(text: str) -> bool:
    """Whether a cover line is the page's furniture rather than anything it is about."""
    if re.search(r"(?:\.\s?){4,}|…{2,}", text):
        return True  # a contents entry with its dot leader
    clean = text.strip(" .:|-–—•")
    if _FURNITURE.match(clean) or _STAMP.search(clean) or CAPTION_RE.match(clean):
        return True
    return bool(_DATE_LINE.match(clean) and (_MONTH_WORDS.search(clean) or not re.search(r"[A-Za-z]", clean)))


def is_noise(text: str) -> bool:
    """OCR debris ("SIUD=)I) GUIDE", "| TECHNOLOGICAL") and doubled shadow text ("The The Limes Limes",
    "NEEBBR RA ASSK"): lines a title must not come from."""
    words = text.split()
    if not words or sum(ch.isalpha() for ch in text) < 3:
        return True
    broken = sum(1 for w in words if re.search(r"[^\w'’&.,:;!?()\-–—/“”\"]", w) or re.search(r"\w[=|)(\]\[{}]+\w", w))
    if broken / len(words) > 0.25:
        return True
    if len(words) >= 6 and sum(1 for w in words if len(w) <= 2) / len(words) > 0.4:
        return True  # OCR of a picture: letters and marks, few words
    repeated = sum(1 for a, b in zip(words, words[1:], strict=False) if a.lower() == b.lower())
    if len(words) >= 4 and repeated / (len(words) - 1) >= 0.3:
        return True
    letters = [w for w in words if w.isalpha() and len(w) >= 3]
    doubled = sum(1 for w in letters if sum(a == b for a, b in zip(w, w[1:], strict=False)) >= len(w) / 3)
    return len(letters) >= 3 and doubled / len(letters) >= 0.5
