"""Tables ruled only across (booktabs: a top, a middle and a bottom rule, no vertical lines).

Papers set most of their tables this way, and a line-based finder sees no grid in them, so their rows
ran together as one line of text ("PaLM-2L 66.4% (0.8%) 70.9% (0.9%) PaLM-2L 1-shot 64% ..."). Here the
rules give the table's extent and its header (what stands above the middle rule), the words' lines give
the rows, and the columns are the vertical gaps that no word of the body crosses.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hyperfolio.model import BBox
from hyperfolio.parse.pdf.items import CAPTION_RE, word_lines

MIN_RULE = 80.0  # points: a rule across a table, not an underline
SAME_EDGE = 6.0  # points: rules of one table start and end together
MIN_GAP = 6.0  # points of white between two columns
MAX_HEIGHT = 0.8  # share of the page: a box around the whole page is no table
PROSE_WIDTH = 0.6  # share of the rules' width a line of prose between them spans
MIN_FILLED = 0.6  # share of body rows with at least two cells filled
_NUMERIC = re.compile(r"\d")
_LETTERS = re.compile(r"[^\W\d_]{2}")


@dataclass
class RuledTable:
    bbox: BBox
    rows: list[list[str]]
    header_rows: int
    body_top: float  # the rule under the header (the top rule when there is no header)


def _rules(drawings: list[dict[str, Any]]) -> list[tuple[float, float, float]]:
    """Horizontal rules (y, x0, x1) at least MIN_RULE long, top to bottom."""
    found = []
    for path in drawings:
        for item in path.get("items", []):
            if item[0] == "l":
                p1, p2 = item[1], item[2]
                if abs(p1.y - p2.y) < 1 and abs(p1.x - p2.x) >= MIN_RULE:
                    found.append(((p1.y + p2.y) / 2, min(p1.x, p2.x), max(p1.x, p2.x)))
            elif item[0] == "re":
                r = item[1]
                if r.height < 2.5 and r.width >= MIN_RULE:
                    found.append(((r.y0 + r.y1) / 2, r.x0, r.x1))
    return sorted(found)


def _groups(rules: list[tuple[float, float, float]]) -> list[list[tuple[float, float, float]]]:
    """Rules of the same width and place, in runs of at least two (a table's top and bottom)."""
    groups: list[list[tuple[float, float, float]]] = []
    for rule in rules:
        for group in groups:
            if abs(group[0][1] - rule[1]) <= SAME_EDGE and abs(group[0][2] - rule[2]) <= SAME_EDGE:
                if rule[0] - group[-1][0] > 1.5:  # a double rule is one
                    group.append(rule)
                break
        else:
            groups.append([rule])
    return [g for g in groups if len(g) >= 2]


def _columns(body: list[list[tuple[Any, ...]]], x0: float, x1: float) -> list[float]:
    """The x where columns part: the middles of gaps at least MIN_GAP wide that no body word crosses."""
    width = int(x1 - x0) + 2
    covered = [False] * width
    for line in body:
        for w in line:
            for x in range(max(0, int(w[0] - x0)), min(width, int(w[2] - x0) + 1)):
                covered[x] = True
    cuts, start = [], None
    for x, filled in enumerate(covered):
        if not filled and start is None:
            start = x
        elif filled and start is not None:
            if x - start >= MIN_GAP and start > 0:
                cuts.append(x0 + (start + x) / 2)
            start = None
    return cuts


def _row(line: list[tuple[Any, ...]], cuts: list[float]) -> list[str]:
    cells: list[list[str]] = [[] for _ in range(len(cuts) + 1)]
    for w in line:
        middle = (w[0] + w[2]) / 2
        cells[sum(middle > c for c in cuts)].append(w[4])
    return [" ".join(c) for c in cells]


def _between(group: list[tuple[float, float, float]], words: list[tuple[Any, ...]]) -> list[list[tuple[Any, ...]]]:
    """The lines of words between a run's first and last rule, across their width."""
    top, bottom = group[0][0], group[-1][0]
    x0, x1 = min(r[1] for r in group), max(r[2] for r in group)
    return word_lines([w for w in words if x0 - 2 <= (w[0] + w[2]) / 2 <= x1 + 2 and top < (w[1] + w[3]) / 2 < bottom])


def _table(group: list[tuple[float, float, float]], words: list[tuple[Any, ...]]) -> RuledTable | None:
    """The table a run of rules marks out: the lines above its second rule are the header, the others
    rows (a wrapped row's second line joined to it, a group's label carried down its rows); None when
    what the rules hold is not a table of values with labels."""
    top, bottom = group[0][0], group[-1][0]
    x0, x1 = min(r[1] for r in group), max(r[2] for r in group)
    lines = [line for line in _between(group, words) if not CAPTION_RE.match(" ".join(w[4] for w in line))]
    if len(lines) < 3:
        return None
    middle = group[1][0] if len(group) >= 3 else top
    body = [line for line in lines if (line[0][1] + line[0][3]) / 2 > middle]
    cuts = _columns(body or lines, x0, x1)
    if not cuts:
        return None
    rows: list[list[str]] = []
    header_rows = 0
    for line in lines:
        cells = _row(line, cuts)
        above = (line[0][1] + line[0][3]) / 2 < middle
        if rows and not above and not cells[0] and rows[-1][0] and len(rows) > header_rows:
            if not any(_NUMERIC.search(c) for c in cells):  # a row's text wrapped onto a second line
                rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
                continue
            cells[0] = rows[-1][0]  # a label spanning the rows of its group ("STEM" beside two datasets)
        rows.append(cells)
        header_rows += int(above)
    if header_rows > 1:  # header lines are one header row ("MMLU" over "Physics")
        merged = [" ".join(c for c in column if c) for column in zip(*rows[:header_rows], strict=True)]
        rows, header_rows = [merged, *rows[header_rows:]], 1
    filled = [sum(bool(c) for c in row) >= 2 for row in rows[header_rows:]]
    if len(filled) < 2 or sum(filled) < MIN_FILLED * len(filled):
        return None  # an axis and its tick labels, a rule under one line of prose
    labels = [c for c in rows[0] + [row[0] for row in rows[1:]] if _LETTERS.search(c)]
    if len(labels) < 2:
        return None  # a chart's bars and their values: nothing names a row or a column
    return RuledTable((x0, top, x1, bottom), rows, header_rows, middle)


def _parts_at_prose(
    group: list[tuple[float, float, float]], words: list[tuple[Any, ...]]
) -> list[list[tuple[float, float, float]]]:
    """A run of rules parted where a caption or a line of prose stands between two of them: a page's
    header rule, a table below its caption and the axis of a chart further down are three things. A
    line of prose runs across most of the rules' width without a column's gap in it."""
    x0, x1 = group[0][1], group[0][2]
    breaks = []
    for line in _between(group, words):
        text = " ".join(w[4] for w in line)
        gaps = [b[0] - a[2] for a, b in zip(line, line[1:], strict=False)]
        prose = line[-1][2] - line[0][0] > PROSE_WIDTH * (x1 - x0) and max(gaps, default=0.0) < MIN_GAP
        if prose or CAPTION_RE.match(text):
            breaks.append(line[0][1])
    parts: list[list[tuple[float, float, float]]] = [[]]
    for rule in group:
        if parts[-1] and any(parts[-1][-1][0] < y < rule[0] for y in breaks):
            parts.append([])
        parts[-1].append(rule)
    return [part for part in parts if len(part) >= 2]


def ruled_tables(
    drawings: list[dict[str, Any]],
    read_words: Callable[[], list[tuple[Any, ...]]],
    page_height: float,
) -> list[RuledTable]:
    """Tables marked out by horizontal rules alone; the page's words are read only when its rules could
    mark one out."""
    runs = _groups(_rules(drawings))
    if not runs:
        return []
    words = read_words()
    found = []
    groups = [part for group in runs for part in _parts_at_prose(group, words)]
    for group in groups:
        top, bottom = group[0][0], group[-1][0]
        if bottom - top > MAX_HEIGHT * page_height or bottom - top < 15:
            continue
        table = _table(group, words)
        if table is not None:
            found.append(table)
    return found
