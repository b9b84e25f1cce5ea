"""Printed page numbers (folios) read off the margins, for PDFs that define no page labels.

People name pages by what is printed on them: "the table on page 28" of a manual whose 28 is the
PDF's page 29, "page 17" of a brochure printed two pages to a sheet. A number standing at either end
of a line in the top or bottom margin is a folio candidate; the document's candidates are kept only
when they follow the pages as folios do — a constant offset from the PDF's page number (front matter
before page 1, a journal's running numbers), or two to a sheet (a spread's left and right pages) — so a
year in a footer or a version number is never taken for one.
"""

from __future__ import annotations

import re
from collections import Counter

from hyperfolio.parse.pdf.items import PageData

MARGIN = 0.1  # share of the page's height at the top and bottom where folios are printed
MIN_PAGES = 3  # pages that must carry a consistent folio before any is believed
MIN_SHARE = 0.5  # of the pages with a candidate, the share the rule must explain
_EDGE_NUMBER = re.compile(r"^(?:page\s+|p\.\s*)?[-–|•(\[]*\s*(\d{1,5})\s*[-–|•)\]]*(?:\s+of\s+\d+)?$", re.I)


def _candidates(page: PageData) -> set[int]:
    """Numbers at either end of a margin line ("28 Chapter 3", "Version 1.3 2", "- 14 -", "Page 3 of 9")."""
    found: set[int] = set()
    for item in page.items:
        if item.kind != "text" or len(item.text) > 160:
            continue
        if not (item.bbox[3] < MARGIN * page.height or item.bbox[1] > (1 - MARGIN) * page.height):
            continue
        words = item.text.split()
        ends = {" ".join(words[:2]), words[0], " ".join(words[-2:]), words[-1]} if words else set()
        ends |= {item.text.strip()}
        for end in ends:
            match = _EDGE_NUMBER.match(end)
            if match and int(match.group(1)) > 0:
                found.add(int(match.group(1)))
    return found


def _kept(pages: list[PageData], found: dict[int, set[int]], per_sheet: int) -> dict[int, list[int]]:
    """The candidates explained by one offset from `per_sheet` x the page number (a spread's right-hand
    page one more), when that offset explains enough of the pages."""
    offsets = Counter(c - per_sheet * n for n, cands in found.items() for c in cands)
    if not offsets:
        return {}
    offset, _ = offsets.most_common(1)[0]
    wanted = {offset}
    if per_sheet == 2:  # the most common offset is the left or the right page's: its partner is the likelier side
        wanted.add(offset + 1 if offsets[offset + 1] >= offsets[offset - 1] else offset - 1)
    kept = {n: sorted(c for c in cands if c - per_sheet * n in wanted) for n, cands in found.items()}
    kept = {n: cands for n, cands in kept.items() if cands}
    if len(kept) < MIN_PAGES or len(kept) < MIN_SHARE * len(found):
        return {}
    return kept


def label_folios(pages: list[PageData]) -> None:
    """Give each page the folio printed on it as its label, where the PDF defines no labels and the
    document's folios are consistent ("16-17" for a spread); a folio equal to the page number is no label."""
    if any(page.label for page in pages):
        return  # the PDF's own labels say how its pages are numbered
    found = {page.number: cands for page in pages if (cands := _candidates(page))}
    kept = _kept(pages, found, 1) or _kept(pages, found, 2)
    for page in pages:
        folios = kept.get(page.number, [])
        if folios and folios != [page.number]:
            page.label = "-".join(str(f) for f in folios)
