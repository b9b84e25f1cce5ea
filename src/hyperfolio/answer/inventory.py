"""The answer to a question about what a whole document holds, as the retrieval step read it
(`retrieve/inventory.py`, `retrieve/outline.py`): the count of its numbered tables, figures, appendices
... with each one's page, the pages that mention what the question names, in the form the question's
example shows ("p1", "Page 2", "3"), or the headings under the one it names, each cited."""

from __future__ import annotations

import re
from typing import Any

from hyperfolio.answer.expected import Kind, expected_kind
from hyperfolio.model import Answer, Citation, EvidencePackage

# The example of the answer's form a question gives: ["p1", "p2"], ['Page 2', 'Page 4'], [2, 3, 5].
_EXAMPLE = re.compile(r"\[\s*[\"'\u201c\u2018]?([^\W\d_]*\s?)\d+")


def printed(page: int, label: str) -> str:
    """A page as its reader finds it: the number printed on it where it prints one, else its count."""
    return label if re.fullmatch(r"\d+(?:-\d+)?", label or "") else str(page)


def page_list(question: str, pages: list[list[Any]]) -> str:
    """The pages (`[page, printed label]` pairs) written as the question's example writes pages."""
    example = _EXAMPLE.search(question)
    prefix = example.group(1) if example else ""
    return ", ".join(f"{prefix}{printed(page, label)}" for page, label in pages)


def inventory_answer(question: str, evidence: EvidencePackage, answerer: str) -> Answer | None:
    """The answer `evidence.meta["inventory"]` holds, citing the chunks that show it; None without one."""
    found = evidence.meta.get("inventory")
    if not found:
        return None
    showing = set(found["chunks"])
    cited = [item for item in evidence.items if item.chunk.chunk_id in showing]
    citations: list[Citation] = []
    for item in cited:
        if item.citation not in citations:
            citations.append(item.citation)
    markers = "".join(f"[{n}]" for n in range(1, len(citations) + 1))
    if "count" in found:
        labels = found["labels"]
        short = str(found["count"])
        saying = f" that say \u201c{found['term']}\u201d" if found.get("term") else ""
        where = ", ".join(f"{label} (p.{printed(page, printed_label)})" for label, page, printed_label in labels)
        numbered = " by their numbering; found" if found["count"] > len(labels) else ""
        noun = found["part"] if found["count"] == 1 else found["noun"]
        text = f"{short} {noun}{saying}{numbered}: {where}. {markers}"
    elif "parts" in found:
        parts = ", ".join(found["parts"])
        short = str(len(found["parts"])) if expected_kind(question) == Kind.COUNT else parts
        text = f"{found['outline_of']} includes {len(found['parts'])}: {parts}. {markers}"
    else:
        short = page_list(question, found["pages"])
        pages = "page" if len(found["pages"]) == 1 else "pages"
        text = f"{found['pages_of']} is on {pages} {short}. {markers}"
    return Answer(
        question=question,
        text=text.strip(),
        citations=citations,
        evidence=evidence,
        sufficient=True,
        answerer=answerer,
        support=[item.chunk.text for item in cited],
        short=short,
        meta={"support_chunks": [item.chunk.chunk_id for item in cited], "answer_kind": "inventory"},
    )
