"""The numbered labels a document gives its parts: "Table 3", "Fig. 2", "TABLE II", "Appendix C",
"Exhibit P-10", "Chapter 4".

One reading, shared: the graph names a table or a figure by the label its caption opens with, phrase
extraction keeps a label whole, and a question that counts a document's tables or lists the pages an
exhibit is cited on counts these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The noun a label opens with, as printed -> the part it names.
_NOUNS = {
    "figure": "figure", "fig.": "figure", "table": "table", "chart": "chart", "exhibit": "exhibit",
    "appendix": "appendix", "annex": "appendix", "chapter": "chapter",
}  # fmt: skip
# Labels of things on a page (appendices and chapters are sections): what the graph and phrases name.
DISPLAY_PARTS = frozenset({"table", "figure", "chart", "exhibit"})
# What follows the noun: "3", "3.2", "4a", "S1", "P-10", "II", a single capital ("Appendix A").
_IDENT = r"[A-Z]{1,2}-?\d+[a-z]?|\d+(?:\.\d+)?[A-Za-z]?(?![\w-])|[IVXL]{1,6}\b|[A-Z]\b"
_NOUN = "|".join(re.escape(noun) for noun in sorted(_NOUNS, key=len, reverse=True))
# The noun is capitalised (or in capitals) as a label is; "table 1" in running lowercase is no label.
_LABEL = re.compile(rf"\b(?=[A-Z])((?i:{_NOUN}))(?:(?<!\.)s)?\s+({_IDENT})")


@dataclass(frozen=True)
class Label:
    """One mention of a label: the part it names ("table"), its identifier ("II") and where it stands."""

    part: str
    ident: str
    start: int
    end: int

    def __str__(self) -> str:
        return f"{self.part.capitalize()} {self.ident}"


def label_mentions(text: str, parts: frozenset[str] | None = None) -> list[Label]:
    """Every label `text` mentions, of the parts in `parts` (None: any)."""
    found = []
    for match in _LABEL.finditer(text):
        part = _NOUNS[match.group(1).lower()]
        if parts is None or part in parts:
            found.append(Label(part, match.group(2), match.start(), match.end()))
    return found


def opening_label(text: str | None, parts: frozenset[str] | None = None) -> Label | None:
    """The label a caption opens with ("Table 3: Citation quality ..."), if it opens with one."""
    if not text:
        return None
    first = next(iter(label_mentions(text[:40], parts)), None)
    return first if first is not None and not text[: first.start].strip() else None
