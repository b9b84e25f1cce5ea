"""Answers read off a table: the cell at a row and a column the question names, or the row a
superlative picks ("which region has the highest revenue")."""

from __future__ import annotations

import re
from collections.abc import Sequence

from hyperfolio.answer.passages import Passage, cell_number, terms
from hyperfolio.model import EvidenceItem

KEY_WORD_BONUS = 0.25  # a row key's score for each word of the question it says beyond the first
_MAX_WORDS = re.compile(r"\b(?<!at )(highest|largest|most|biggest|greatest|maximum|max|top|best|leading)\b", re.I)
_MIN_WORDS = re.compile(r"\b(?<!at )(lowest|smallest|least|fewest|minimum|min|worst)\b", re.I)


def table_extreme(question: str, item: EvidenceItem) -> Passage | None:
    """Answer 'which X has the highest/lowest Y' from a table's cells instead of quoting a row."""
    chunk = item.chunk
    want_max = bool(_MAX_WORDS.search(question))
    want_min = bool(_MIN_WORDS.search(question))
    if chunk.modality != "table" or not chunk.table or want_max == want_min:
        return None
    header_rows = chunk.table_header_rows
    if header_rows < 1:
        return None  # without column names there is nothing to match the question against
    header = [c.strip() for c in chunk.table[header_rows - 1]]
    body = [row for row in chunk.table[header_rows:] if len(row) == len(header)]
    if len(body) < 2:
        return None
    q_terms = set(terms(question))
    numeric: list[tuple[int, int]] = []  # (header overlap with question, column)
    label_col = None
    for col in range(len(header)):
        if _numbers_in(body, col) >= max(2, len(body) // 2 + 1):
            overlap = len(q_terms & set(terms(header[col])))
            numeric.append((overlap, col))
        elif label_col is None:
            label_col = col
    if not numeric or label_col is None:
        return None
    overlap, col = max(numeric, key=lambda oc: (oc[0], -oc[1]))
    if overlap == 0:
        return None
    numbered = [(cell_number(row[col]), row) for row in body]
    scored = [(v, row) for v, row in numbered if v is not None]
    value, row = (max if want_max else min)(scored, key=lambda vr: vr[0])
    word = "highest" if want_max else "lowest"
    text = f"{row[label_col].strip()} has the {word} {header[col]}: {row[col].strip()}"
    if chunk.caption:
        text += f" ({chunk.caption})"
    return Passage(text, item, "derived", row[label_col].strip(), cells=(row[label_col].strip(), row[col].strip()))


_THRESHOLD = re.compile(
    r"\b(?:(more|greater|higher|larger|over|above|at least)|(fewer|less|lower|smaller|under|below|at most))"
    r"(?:\s+than)?\s+(-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?)\b",
    re.I,
)


def table_filter(question: str, item: EvidenceItem) -> Passage | None:
    """ "Which directors attended more than 6 meetings?": the rows whose value in the column the question
    names passes the threshold, by their keys ("Mr. R.A. Shah, Mr. S.V. Shanbhag")."""
    asked = _THRESHOLD.search(question)
    chunk = item.chunk
    if asked is None or chunk.modality != "table" or not chunk.table or chunk.table_header_rows < 1:
        return None
    limit, above = float(asked.group(3).replace(",", "")), bool(asked.group(1))
    inclusive = asked.group(1 if above else 2).lower().startswith("at ")
    paths = header_paths(chunk.table, chunk.table_header_rows)
    body = [[c.strip() for c in row] for row in chunk.table[chunk.table_header_rows :]]
    q_terms = set(terms(question[: asked.start()] + question[asked.end() :]))
    scored = []
    for col, path in enumerate(paths):
        if _numbers_in(body, col) >= max(2, len(body) // 2):
            named = set(terms(" ".join(path)))
            scored.append((len(q_terms & named), len(q_terms & named) / max(1, len(named)), -col))
    if not scored or max(scored)[0] == 0:
        return None
    col = -max(scored)[2]  # the column naming most of the question's words, then the most of its own
    key = next((j for j in range(len(paths)) if j != col and any(_is_label(r, j) for r in body)), None)
    if key is None:
        return None
    kinds, body = of_kind(body, key, q_terms)
    passing, cells = [], []
    for row in body:
        value = cell_number(row[col]) if col < len(row) else None
        if value is None or not row[key]:
            continue
        if value == limit and inclusive or (value > limit if above else value < limit):
            passing.append(row[key])
            cells += [row[key], row[col]]
    if not passing:
        return None
    names = ", ".join(passing)
    which = " ".join(paths[key]) + (f" ({', '.join(kinds)})" if kinds else "")
    text = f"{which} with {' > '.join(paths[col])} {asked.group(0)}: {names}"
    if chunk.caption:
        text += f" ({chunk.caption})"
    return Passage(text, item, "derived", names, cells=tuple(cells))


def of_kind(body: list[list[str]], key: int, q_terms: set[str]) -> tuple[list[str], list[list[str]]]:
    """ "Which executive directors", "the non-executive and independent directors": the rows whose value
    in a label column is one the question says, the most specific said ("Non-Executive & Independent"
    over "Executive", both said); the values and the rows, all rows when no column sorts them so."""
    kinds: list[str] = []
    for j in range(max((len(r) for r in body), default=0)):
        said = [
            len(set(terms(r[j]))) if j != key and _is_label(r, j) and set(terms(r[j])) <= q_terms else 0 for r in body
        ]
        most = max(said, default=0)
        keep = [n == most for n in said]
        if most and not all(keep):
            kinds += list(dict.fromkeys(r[j] for r, kept in zip(body, keep, strict=True) if kept))
            body = [r for r, kept in zip(body, keep, strict=True) if kept]
    return kinds, body


_WHICH_ROWS = re.compile(r"^\s*(?:who|which|what)\s+(?:\w+\s+)?(?:are|were)\b|\b(?:list|enumerate)\b", re.I)


def table_category(question: str, item: EvidenceItem) -> Passage | None:
    """ "Who are the non-executive and independent directors?": the keys of the rows of the kind the
    question names, when a label column sorts the table's rows into kinds."""
    chunk = item.chunk
    if not _WHICH_ROWS.search(question) or chunk.modality != "table" or not chunk.table or chunk.table_header_rows < 1:
        return None
    paths = header_paths(chunk.table, chunk.table_header_rows)
    body = [[c.strip() for c in row] for row in chunk.table[chunk.table_header_rows :]]
    key = next((j for j in range(len(paths)) if any(_is_label(r, j) for r in body)), None)
    if key is None:
        return None
    kinds, rows = of_kind(body, key, set(terms(question)))
    names = [r[key] for r in rows if key < len(r) and r[key]]
    if not kinds or len(names) < 2:
        return None
    text = f"{' '.join(paths[key])} ({', '.join(kinds)}): {', '.join(names)}"
    text += f" ({chunk.caption})" if chunk.caption else ""
    return Passage(text, item, "derived", ", ".join(names), cells=tuple(names))


def asks_rows(question: str) -> bool:
    """Whether `question` asks something only a table's rows answer together: the row a superlative
    picks, the rows a threshold passes, the rows of a kind."""
    superlative = bool(_MAX_WORDS.search(question)) != bool(_MIN_WORDS.search(question))
    return superlative or bool(_THRESHOLD.search(question)) or bool(_WHICH_ROWS.search(question))


def row_label(row: Sequence[str]) -> str:
    """What names a table row: its first cell that is not a number ("" when every cell is)."""
    return next((c for c in row if c and cell_number(c) is None), "")


def _is_label(row: list[str], col: int) -> bool:
    return col < len(row) and bool(row[col]) and cell_number(row[col]) is None


def _numbers_in(body: list[list[str]], col: int) -> int:
    """How many of the body's cells in a column are numbers."""
    return sum(col < len(row) and cell_number(row[col]) is not None for row in body)


def header_paths(table: list[list[str]], header_rows: int) -> list[list[str]]:
    """Each column's header path, top to bottom: a spanning cell left empty to its right (a merged
    cell) is carried over, so 'Q1 2023' over 'Organic' and 'Reported' names both."""
    width = max((len(r) for r in table), default=0)
    paths: list[list[str]] = [[] for _ in range(width)]
    for r in range(header_rows):
        row = [c.strip() for c in table[r]] + [""] * (width - len(table[r]))
        carried = ""
        for col, cell in enumerate(row):
            upper = r < header_rows - 1  # only upper rows span; the last row names each column itself
            carried = cell or (carried if upper else "")
            if carried and (not paths[col] or paths[col][-1] != carried):
                paths[col].append(carried)
    return paths


# "What happens when you press and hold the button?" names no column: it asks the one saying what a row does.
_ASKS_EFFECT = re.compile(r"\bwhat (?:will |would |does |did )?happens?\b|\bwhat (?:does|do|will) .{1,60}\bdo\b", re.I)
EFFECT_COLUMNS = frozenset(terms("function effect result action outcome description purpose"))


def table_cell(question: str, item: EvidenceItem) -> Passage | None:
    """Answer 'the Y of X' from the cell at X's row and Y's column, naming the row's key and the whole
    header path, instead of quoting a row (or the table's total). X may be any cell of the row ("Who
    approved version 2.0?" finds the row by its version, the answer in the "Approved by" column); a cell
    the question already states is not its answer."""
    chunk = item.chunk
    if chunk.modality != "table" or not chunk.table or chunk.table_header_rows < 1:
        return None
    q_terms = set(terms(question))
    q_columns = q_terms | (EFFECT_COLUMNS if _ASKS_EFFECT.search(question) else set())
    header_rows = chunk.table_header_rows
    paths = header_paths(chunk.table, header_rows)
    body = [[c.strip() for c in row] for row in chunk.table[header_rows:]]
    cell_terms = [[set(terms(cell)) for cell in row] for row in body]
    best: tuple[float, int, int, int] | None = None
    for r, row in enumerate(body):
        for col, cell in enumerate(row):
            if not cell or col >= len(paths) or (cell_terms[r][col] and cell_terms[r][col] <= q_terms):
                continue
            col_terms = set(terms(" ".join(paths[col])))
            col_match = len(q_columns & col_terms) / len(col_terms) if col_terms else 0.0
            if col_match == 0:
                continue
            # The share of the key the question says, and each further word it says: "PaLM-2L + Step-Back"
            # names the row "PaLM-2L + Step-Back (ours)", not the row "PaLM-2L" inside it.
            keys = [
                (len(q_terms & found) / len(found) + KEY_WORD_BONUS * (len(q_terms & found) - 1), k)
                for k, found in enumerate(cell_terms[r])
                if k != col and found and q_terms & found
            ]
            if not keys:
                continue
            row_match, key = max(keys, key=lambda mk: (mk[0], -mk[1]))
            score = row_match + col_match
            if best is None or score > best[0]:
                best = (score, r, col, key)
    if best is None:
        return None
    _, r, col, key = best
    row = body[r]
    text = f"{row[key]}, {' > '.join(paths[col])}: {row[col]}"
    if chunk.caption:
        text += f" ({chunk.caption})"
    return Passage(text, item, "derived", row[col], cells=(row[key], row[col]))
