"""Sums over a table's rows that a question asks as one quantity.

"What percentage was held by foreign companies and institutional investors?" asks for the combined share
of two rows of a breakdown; "the sum of the shares held by the top-3 shareholders" for the N largest rows
of a column. Neither names an operation `arithmetic.operation_of` reads as a sum of named operands, and
neither may be guessed: two named shares are added only in a column that is a breakdown of one whole (its
rows add up to 100 %), so "what percentage of men and women agree" is never summed; the top N are read
from a table whose header or heading names what they are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hyperfolio.answer.arithmetic import Computation, Operand
from hyperfolio.answer.passages import Passage, cell_number, terms
from hyperfolio.answer.table_answers import header_paths, row_label
from hyperfolio.lexicon import NUMBER_WORDS
from hyperfolio.model import EvidenceItem

WHOLE_TOLERANCE = 1.5  # a breakdown's shares add up to 100 within this many points (rounding)
_WORD = r"[\w.&'-]+"
# "held by A and B as of ...": two short names joined by "and", each up to four words.
_JOINED = re.compile(
    rf"\b(?:by|of|for|from)\s+(?P<a>(?:{_WORD}\s+){{0,3}}?{_WORD})\s+and\s+(?P<b>(?:{_WORD}\s+){{0,3}}?{_WORD}?)"
    r"(?=\s*(?:[?,;]|$)|\s+(?:as|in|on|at|during|for|of)\b)",
    re.I,
)
_TOP = re.compile(r"\btop[-\s]?(\d{1,2}|[a-z]+)\s+([^\W\d_]+)", re.I)
_SUM = re.compile(r"\b(sum|total|combined|together|altogether|collectively|add(?:ed)? up)\b", re.I)
_SHARE = re.compile(r"%|\b(percent(?:age)?|ratio|share|proportion)\b", re.I)
_TOTAL_ROW = re.compile(r"^\s*(?:grand\s+)?total\b", re.I)


def _table(item: EvidenceItem) -> tuple[list[list[str]], list[list[str]]] | None:
    """A table chunk's header paths and body rows (cells stripped), or None for any other chunk."""
    chunk = item.chunk
    if chunk.modality != "table" or not chunk.table or chunk.table_header_rows < 1:
        return None
    body = [[c.strip() for c in row] for row in chunk.table[chunk.table_header_rows :]]
    return header_paths(chunk.table, chunk.table_header_rows), body


def _key_column(body: list[list[str]]) -> int | None:
    """The column naming the rows: the first whose cells are mostly words, not numbers."""
    width = max((len(row) for row in body), default=0)
    for col in range(width):
        cells = [row[col] for row in body if col < len(row) and row[col]]
        if cells and sum(cell_number(c) is None for c in cells) > len(cells) / 2:
            return col
    return None


def _share_columns(paths: list[list[str]], body: list[list[str]]) -> list[int]:
    """Columns of percentages: headed '%' or 'percent', or every cell written with '%'."""
    found = []
    for col, path in enumerate(paths):
        said = " ".join(path).lower()
        cells = [row[col] for row in body if col < len(row) and row[col]]
        if "%" in said or "percent" in said or (cells and all(c.endswith("%") for c in cells)):
            found.append(col)
    return found


def _operand(item: EvidenceItem, row: Sequence[str], col: int, path: list[str]) -> Operand:
    label, header, cell = row_label(row), " > ".join(path), row[col]
    passage = Passage(f"{label}, {header}: {cell}", item, "derived", cell, cells=(label, cell) if label else (cell,))
    return Operand(cell_number(cell) or 0.0, cell, f"{label}, {header}", passage)


def _row_named(key: str, body: list[list[str]]) -> int | None:
    """The row whose key says every word of `key`, the one saying fewest other words."""
    wanted = set(terms(key))
    said = [set(terms(row_label(row))) for row in body]
    named = [(len(words - wanted), i) for i, words in enumerate(said) if wanted and wanted <= words]
    return min(named)[1] if named else None


def combined_share(question: str, items: Sequence[EvidenceItem]) -> Computation | None:
    """Two rows' shares of one whole added ("foreign companies and institutional investors": 32.17 +
    12.79), read from a percentage column whose rows add up to 100; None anywhere else."""
    joined = _JOINED.search(question)
    if joined is None or not _SHARE.search(question):
        return None
    keys = (joined.group("a").strip(), joined.group("b").strip())
    for item in items:
        table = _table(item)
        if table is None:
            continue
        paths, body = table
        first, second = (_row_named(key, body) for key in keys)
        if first is None or second is None or first == second:
            continue
        rows = (first, second)
        for col in _share_columns(paths, body):
            parts = [cell_number(row[col]) for row in body if col < len(row) and not _TOTAL_ROW.match(row_label(row))]
            if abs(sum(v for v in parts if v is not None) - 100.0) > WHOLE_TOLERANCE:
                continue  # not a breakdown of one whole: shares of different wholes do not add up
            if any(col >= len(body[r]) or cell_number(body[r][col]) is None for r in rows):
                continue
            operands = tuple(_operand(item, body[r], col, paths[col]) for r in rows)
            return Computation("sum", operands, sum(o.value for o in operands), "%", keys)
    return None


def _count(word: str) -> int | None:
    return int(word) if word.isdigit() else NUMBER_WORDS.get(word.lower())


def top_rows_sum(question: str, items: Sequence[EvidenceItem]) -> Computation | None:
    """The sum over the N largest rows of a column, in a table whose header or heading names the rows
    ("the top-3 shareholders": 26.39 + 12.70 + 11.93); the column is the shares when the question asks a
    share, else the one naming most of its words."""
    top = _TOP.search(question)
    if top is None or not _SUM.search(question) or (n := _count(top.group(1))) is None or n < 2:
        return None
    rows_are = set(terms(top.group(2)))
    q_terms = set(terms(question)) - rows_are
    for item in items:
        table = _table(item)
        if table is None:
            continue
        paths, body = table
        keys = _key_column(body)
        named_by = [*(paths[keys] if keys is not None and keys < len(paths) else []), item.chunk.caption or ""]
        if not rows_are & set(terms(" ".join(named_by))):
            continue  # the table's rows are not what the question takes the top of (a heading above
            # several tables, "Categories of Shareholders", names none of them)
        shares = _share_columns(paths, body)
        if _SHARE.search(question):
            columns = shares
        else:
            named = [(len(q_terms & set(terms(" ".join(p)))), c) for c, p in enumerate(paths)]
            columns = [c for overlap, c in sorted(named, reverse=True) if overlap]
        for col in columns[:1]:
            valued = [
                (v, row)
                for row in body
                if col < len(row) and not _TOTAL_ROW.match(row_label(row)) and (v := cell_number(row[col])) is not None
            ]
            if len(valued) < n:
                continue
            largest = sorted(valued, key=lambda vr: -vr[0])[:n]
            operands = tuple(_operand(item, row, col, paths[col]) for _, row in largest)
            unit = "%" if col in shares else ""
            return Computation("sum", operands, sum(o.value for o in operands), unit)
    return None


def asks_row_sum(question: str) -> bool:
    """Whether a question asks a sum of rows in its words: two named shares, or the top N summed."""
    top = _TOP.search(question)
    return bool(top and _SUM.search(question)) or bool(_JOINED.search(question) and _SHARE.search(question))


def row_sum(question: str, items: Sequence[EvidenceItem]) -> Computation | None:
    """A sum over a table's rows the question asks as one quantity, or None."""
    return top_rows_sum(question, items) or combined_share(question, items)
