"""A document's top themes for its card, from the theme layer (hypergraph/layers.py): each chunk's theme
hyperedge names its key entities (most central first) and a few keywords. A label that many chunks'
themes put first is what the document as a whole is about; labels are short (a name, a phrase), not
the themes' sentences, so a card reads as a list of subjects."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hyperfolio.model import Hyperedge
from hyperfolio.phrases import generic_name, normalize_name, one_line

TOP_THEMES = 5
MAX_LABEL = 60  # characters: a subject, not a sentence
KEYWORD_WEIGHT = 0.8  # a keyword says what a chunk is about a little less surely than its key entities
# Entities that are values or parts of the document, never its subjects.
NOT_THEMES = frozenset({"quantity", "date", "year", "table", "figure", "table_header", "table_value", "reference"})
# Markup a converted paper leaves in its text (formula placeholders, LaTeX commands): never a subject.
_MARKUP = re.compile(r"^(?:inline|display)?form\d*$|^(?:bib|tab|fig|sec)ref\d*$|^math[a-z]*$|^\\", re.IGNORECASE)


@dataclass
class _Label:
    text: str
    score: float = 0.0
    chunks: set[str] = field(default_factory=set)
    first: int = 0  # the order it was first seen in: ties go to the earlier


def _usable(text: str) -> bool:
    """A label that can name a subject: short, mostly letters, not a month, a legal form or a unit
    (`generic_name`: "December", "Inc"), not markup ("INLINEFORM0")."""
    letters = sum(ch.isalpha() for ch in text)
    visible = sum(not ch.isspace() for ch in text)
    if not (3 <= len(text) <= MAX_LABEL and letters >= 3 and letters >= 0.5 * visible):
        return False
    return not generic_name(text) and not _MARKUP.match(text)


def _clean(text: str) -> str:
    return one_line(text).strip(" .,;:")


def _overlaps(words: set[str], chosen: list[set[str]]) -> bool:
    """Whether a label's words are a part of a chosen label's, or hold one's ("Osprey" of "Osprey Line")."""
    return any(words <= other or other <= words for other in chosen)


def top_themes(
    themes: Sequence[Hyperedge],
    names: Mapping[str, str],
    types: Mapping[str, str] | None = None,
    limit: int = TOP_THEMES,
    skip: Sequence[str] = (),
) -> list[str]:
    """Up to `limit` labels of a document's theme hyperedges, most central first: a key entity or keyword
    scores 1/(1 + its rank) in each chunk theme that names it (keywords a little less), summed over the
    document. `names`: entity id -> name; `types`: entity id -> type (values and tables are skipped);
    `skip`: what the card says already (its title, read as a heading entity)."""
    found: dict[str, _Label] = {}
    skipped = {normalize_name(text) for text in skip}

    def add(text: str, weight: float, chunk: str) -> None:
        label = _clean(text)
        key = normalize_name(label)
        if not key or key in skipped or not _usable(label):
            return
        entry = found.setdefault(key, _Label(label, first=len(found)))
        entry.score += weight
        entry.chunks.add(chunk)

    for theme in themes:
        # Ranks count only what can be a label: a month first does not push the subject after it down.
        members = [m for m, _ in theme.members if (types or {}).get(m, "") not in NOT_THEMES and m in names]
        for rank, name in enumerate(n for n in (names[m] for m in members) if _usable(_clean(n))):
            add(name, 1.0 / (1 + rank), theme.edge_id)
        for rank, keyword in enumerate(k for k in theme.keywords if _usable(_clean(k))):
            add(keyword, KEYWORD_WEIGHT / (1 + rank), theme.edge_id)
    ranked = sorted(found.values(), key=lambda e: (-e.score, -len(e.chunks), e.first))
    out: list[str] = []
    chosen: list[set[str]] = []
    for entry in ranked:
        words = set(normalize_name(entry.text).split())
        if words and not _overlaps(words, chosen):
            out.append(entry.text)
            chosen.append(words)
        if len(out) >= limit:
            break
    return out
