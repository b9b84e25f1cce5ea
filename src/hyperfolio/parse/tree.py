"""Heading tree shared by every format: turns a stream of headings into section paths.

Retrieval and citations want to know where a chunk sits ("Results > Table 2"), so each
parser reports headings with a level as it walks the document and asks the tracker for
the root-to-here path of every chunk it emits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

MAX_HEADING_CHARS = 160  # longer "headings" are almost always styled prose
_WS = re.compile(r"\s+")
_NON_WORD = re.compile(r"[^\w]+")


def clean_heading(text: str) -> str:
    """Collapse whitespace and strip decoration so headings read well in a path."""
    text = _WS.sub(" ", text).strip().strip("#*_:|-–—•· ").strip()
    if len(text) > MAX_HEADING_CHARS:
        text = text[: MAX_HEADING_CHARS - 1].rstrip() + "…"
    return text


def heading_key(text: str) -> str:
    """Loose form for matching a heading against an outline entry (case, spacing, punctuation)."""
    return _NON_WORD.sub("", text.lower())


@dataclass
class SectionTracker:
    """A stack of open headings; `enter` closes deeper or equal levels first."""

    stack: list[tuple[int, str]] = field(default_factory=list)

    def enter(self, level: int, title: str) -> None:
        title = clean_heading(title)
        if not title:
            return
        level = max(1, level)
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        self.stack.append((level, title))

    def extend(self, more: str) -> None:
        """Continue the innermost heading with its next line."""
        more = clean_heading(more)
        if self.stack and more:
            level, title = self.stack[-1]
            self.stack[-1] = (level, clean_heading(f"{title} {more}"))

    @property
    def path(self) -> list[str]:
        return [title for _, title in self.stack]

    def reset(self) -> None:
        self.stack.clear()


def rank_levels(sizes: Iterable[float], max_levels: int = 4, tolerance: float = 0.6) -> dict[float, int]:
    """Map heading font sizes to levels 1..max_levels, largest first.

    Sizes closer than `tolerance` points share a level, because PDFs often jitter a
    heading style by a fraction of a point.
    """
    distinct = sorted({round(s, 1) for s in sizes}, reverse=True)
    levels: dict[float, int] = {}
    level = 0
    previous: float | None = None
    for size in distinct:
        if previous is None or previous - size > tolerance:
            level += 1
        previous = size
        levels[size] = min(level, max_levels)
    return levels


def level_for(size: float, levels: dict[float, int]) -> int:
    """Level of the nearest known heading size (sizes are rounded when ranked)."""
    if not levels:
        return 1
    nearest = min(levels, key=lambda s: abs(s - size))
    return levels[nearest]
