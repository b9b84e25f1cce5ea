"""Arithmetic over cited values: differences, percentage changes, sums, ratios and averages.

A question such as "How much higher was revenue in 2024 than in 2023?" names its operands (two years,
two regions ...); each is looked up in the evidence — a table cell whose row or column names it and
whose other axis shares the question's words, or the number nearest to it in a sentence — and the
result is computed exactly from those cited values, the computation shown. No operand is ever
guessed: when one is not found, there is no computed answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hyperfolio.answer.expected import Kind
from hyperfolio.answer.passages import Passage, cell_number, terms
from hyperfolio.answer.spans import Span, number_spans
from hyperfolio.answer.table_answers import header_paths, row_label
from hyperfolio.model import EvidenceItem
from hyperfolio.phrases import first_number

_OPERATIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "change",
        re.compile(
            r"\b(percent(age)? (change|increase|decrease|growth|decline)|% (change|increase|decrease)|"
            r"grew by what percent|growth rate (from|between))\b",
            re.I,
        ),
    ),  # fmt: skip
    ("ratio", re.compile(r"\b(ratio (of|between)|how many times)\b", re.I)),
    ("average", re.compile(r"\b(average|mean) of\b", re.I)),
    ("sum", re.compile(r"\b(sum of|total of|combined|in total|altogether|collectively|add(ed)? up)\b", re.I)),
    (
        "difference",
        re.compile(
            r"\b(difference|gap|how much (higher|lower|more|less|greater|larger|smaller|bigger)|"
            r"(increase|decrease|change|drop|rise|decline) (from|between|in)|compared (to|with))\b",
            re.I,
        ),
    ),
)
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_PAIR = re.compile(
    r"\b(?:between|from)\s+(?P<a>.+?)\s+(?:and|to)\s+(?P<b>.+?)(?=[?,;]|\s+(?:in|on|for|at|of|compared)\b|$)"
    r"|(?P<c>[\w .&'+/-]+?)\s+(?:compared (?:to|with)|versus|vs\.?|than)\s+(?P<d>[\w .&'+/-]+?)"
    r"(?=[?,;]|\s+(?:in|on|for|at|during|across)\s|$)"
    r"|\b(?:of|for)\s+(?P<e>.+?)\s+(?:and|to)\s+(?P<f>.+?)(?=[?,;]|$)",
    re.I,
)
# Three or more names listed ("A, B, and C"): the operands of a sum or an average over them.
_NAME = r"(?:[A-Z][\w.&'-]*)(?:\s+(?:[A-Z][\w.&'-]*|of|&))*"
_NAMES_LISTED = re.compile(rf"{_NAME}(?:,\s+{_NAME})+,?\s+and\s+{_NAME}")
_SHARED = re.compile(r"\s+(?:on|in|for|at|during)\s+(?=\S*[A-Z0-9])")  # before it: what both operands share
_MORE = re.compile(r"\b(?:more|higher|greater|larger|bigger|most|highest|greatest|largest|biggest)\b", re.I)
_LESS = re.compile(r"\b(?:less|lower|fewer|smaller|least|lowest|fewest|smallest)\b", re.I)
# The last "A or B" of a question, A after the clause that asks ("which has more apps, A or B?").
_ALTERNATIVES = re.compile(
    r"(?:^|[,?:;]|\bthan\b)\s*(?P<a>[^,?:;]{2,80}?)\s*,?\s+or\s+(?P<b>[^,?:;]{2,80}?)\s*[?.]?\s*$"
)
_ALTERNATIVE_OPENING = re.compile(r"^(?:is it|was it|are they|were they|the|either)\s+", re.I)
NEAR_CHARS = 60  # a sentence's number stands for a key only this close to it
_SYMBOL = {"difference": "\u2212", "sum": "+", "ratio": "/", "average": "+", "change": "\u2192"}


@dataclass(frozen=True)
class Operand:
    """A cited value: its number, as written, and the passage (cell or sentence) stating it."""

    value: float
    text: str
    label: str
    passage: Passage


@dataclass(frozen=True)
class Computation:
    operation: str
    operands: tuple[Operand, ...]
    result: float
    unit: str  # "%" when every operand is a percentage, else ""
    keys: tuple[str, ...] = ()  # what the operands were asked as ("Apple App store", "Google Play store")

    def shown(self) -> str:
        """The computation as a reader checks it: "97.3 − 88.1 = 9.2"."""
        texts = [o.text for o in self.operands]
        if self.operation == "compare":
            sign = ">" if self.operands[0].value > self.operands[1].value else "<" if texts[0] != texts[1] else "="
            return f"{self.keys[0]}: {texts[0]} {sign} {self.keys[1]}: {texts[1]}"
        if self.operation == "change":
            return f"({texts[1]} \u2212 {texts[0]}) / {texts[0]} = {self.answer()}"
        if self.operation == "average":
            return f"({' + '.join(texts)}) / {len(texts)} = {self.answer()}"
        return f" {_SYMBOL[self.operation]} ".join(texts) + f" = {self.answer()}"

    def answer(self) -> str:
        if self.operation == "compare":
            return self.keys[int(self.result)]
        places = max((decimals(o.text) for o in self.operands), default=0)
        if self.operation in {"ratio", "change", "average"}:
            places = max(places, 2)
        value = round(self.result, places)
        text = f"{value:,.{places}f}" if abs(value) >= 10_000 else f"{value:.{places}f}"
        unit = "%" if self.operation == "change" else self.unit
        return f"{text}{unit}"


def decimals(text: str) -> int:
    match = re.search(r"\.(\d+)", text)
    return len(match.group(1)) if match else 0


def operation_of(question: str) -> str | None:
    """The arithmetic a question asks for, if any."""
    for name, rule in _OPERATIONS:
        if rule.search(question):
            return name
    return None


def operand_keys(question: str) -> list[str]:
    """What the operands are named by: two or more years, or the two sides of "between A and B",
    "A compared to B", "from A to B"."""
    years = list(dict.fromkeys(_YEAR.findall(question)))
    if len(years) >= 2:
        return years
    match = _PAIR.search(question)
    if match:
        a, b = next((match.group(x), match.group(y)) for x, y in ("ab", "cd", "ef") if match.group(x))
        if match.group("c"):  # "the accuracy of GPT-4 on SituatedQA compared to MMLU Chemistry": GPT-4 is
            a = _SHARED.split(a)[-1]  # whose both values are, the operands are SituatedQA and MMLU Chemistry
        return [p.strip(" .'\"") for p in (a, b) if p and p.strip(" .'\"")]
    return []


def listed_names(question: str) -> list[str]:
    """Three or more names a question lists ("Mr. R.A. Shah, Mr. S.V. Shanbhag, and Mr. C.M. Maniar"):
    what a sum or an average is over."""
    named = _NAMES_LISTED.search(question)
    if named is None:
        return []
    return [k.strip() for k in re.split(r",\s*(?:and\s+)?|\s+and\s+", named.group(0)) if k.strip()]


def naming_terms(key: str) -> set[str]:
    """The words of an operand's key that tell it from the others: its names (capitalised words) and
    numbers, else all its words ("revenue of the North Sea" -> north, sea)."""
    named = {t for word in key.split() if word[:1].isupper() or word[:1].isdigit() for t in terms(word)}
    return named or set(terms(key)) or {key.lower()}


def value_class(text: str) -> str:
    """What a value measures, as far as its writing tells: a percentage, a sum of money, or a number."""
    spans = number_spans(text)
    kind = spans[0].kind if spans else Kind.NUMBER
    return str(kind) if kind in {Kind.PERCENT, Kind.MONEY} else "number"


def cell_operand(
    key: str, question_terms: set[str], item: EvidenceItem, others: set[str]
) -> tuple[float, Operand] | None:
    """The best cell of a table for `key`: its row key or header path names the key, and the rest of
    its labels share the most words with the question (the other operands' words do not count)."""
    chunk = item.chunk
    if chunk.modality != "table" or not chunk.table or chunk.table_header_rows < 1:
        return None
    wanted = naming_terms(key)
    context_terms = question_terms - others - wanted
    paths = header_paths(chunk.table, chunk.table_header_rows)
    best: tuple[float, Operand] | None = None
    for row in chunk.table[chunk.table_header_rows :]:
        cells = [c.strip() for c in row]
        label = row_label(cells)
        for col, cell in enumerate(cells):
            value = cell_number(cell) if cell else None
            if value is None or col >= len(paths):
                continue
            names = f"{label} {' '.join(paths[col])}"
            found = set(terms(names)) | set(_YEAR.findall(names))
            if not wanted <= found:
                continue
            context = len(context_terms & found)
            score = 1.0 + context - 0.5 * len(found & others)
            if best is None or score > best[0]:
                text = f"{label}, {' > '.join(paths[col])}: {cell}"
                passage = Passage(text, item, "derived", cell, cells=(label, cell) if label else (cell,))
                best = (score, Operand(value, cell, f"{label}, {' > '.join(paths[col])}", passage))
    return best


def sentence_operand(key: str, passage: Passage, kind_of: set[str]) -> tuple[float, Operand] | None:
    """The number nearest after (or else before) `key` in a sentence, of the kind the other operands are."""
    said = re.search(rf"(?<![\w.,]){re.escape(key)}(?![\w,]|\.\d)", passage.text, re.I)
    if said is None:  # "2002" is not said by "20023.68"
        return None
    at = said.start()
    spans: list[Span] = [s for s in number_spans(passage.text) if not _YEAR.fullmatch(s.text)]
    if kind_of:
        spans = [s for s in spans if str(s.kind) in kind_of] or spans
    if not spans:
        return None
    nearest = min(spans, key=lambda s: (s.start < at, abs(s.start - at)))
    if abs(nearest.start - at) > NEAR_CHARS:
        return None
    score = 1.0 / (1.0 + abs(nearest.start - at) / 40.0)
    value = nearest.value if nearest.value is not None else 0.0
    return score, Operand(value, nearest.text, key, passage)


def find_operands(
    question: str, keys: Sequence[str], items: Sequence[EvidenceItem], candidates: Sequence[Passage]
) -> list[Operand] | None:
    """One cited value per key, or None when any key has none."""
    question_terms = set(terms(question))
    found: list[Operand] = []
    for key in keys:
        others = set().union(*(naming_terms(k) for k in keys if k != key))
        scored = [c for item in items if (c := cell_operand(key, question_terms, item, others)) is not None]
        if not scored:
            kinds = {"percentage"} if "%" in question or "percent" in question.lower() else set()
            scored = [
                s for p in candidates if p.kind == "sentence" and (s := sentence_operand(key, p, kinds)) is not None
            ]
        if not scored:
            return None
        found.append(max(scored, key=lambda so: so[0])[1])
    return found


def comparison(question: str) -> tuple[list[str], bool] | None:
    """The two things a question compares and whether it asks for the larger: "which has more apps,
    Apple App store or Google Play store?", "was revenue lower in 2023 or 2024?"; None otherwise."""
    larger = bool(_MORE.search(question))
    if not larger and not _LESS.search(question):
        return None
    years = list(dict.fromkeys(_YEAR.findall(question)))
    if len(years) == 2 and re.search(rf"{years[0]}\W+or\W+{years[1]}", question):
        return years, larger
    pair = _ALTERNATIVES.search(question)
    if pair is None:
        return None
    keys = [_ALTERNATIVE_OPENING.sub("", pair.group(x)).strip(" '\"‘’“”") for x in ("a", "b")]
    if not all(keys) or any(len(k.split()) > 8 for k in keys):
        return None
    around = (keys[0].split()[-1], keys[1].split()[0])
    if any(_MORE.fullmatch(w) or _LESS.fullmatch(w) for w in around):
        return None  # "higher or lower than the average" asks a direction, not between two things
    return keys, larger


def _compared(operands: list[Operand], keys: list[str], larger: bool) -> Computation | None:
    """Which of two cited values is the larger (or smaller), answered with the name it was asked by."""
    if operands[0].value == operands[1].value:
        return None
    first_larger = operands[0].value > operands[1].value
    winner = 0 if first_larger == larger else 1
    return Computation("compare", tuple(operands), float(winner), "", tuple(keys))


def _cited(
    question: str, keys: Sequence[str], items: Sequence[EvidenceItem], candidates: Sequence[Passage]
) -> list[Operand] | None:
    """One cited value per key, each a value of its own and all of one class; None otherwise."""
    operands = find_operands(question, keys, items, candidates)
    if operands is None:
        return None
    stated = {(o.passage.item.chunk.chunk_id, o.passage.text, o.text) for o in operands}
    if len(stated) < len(operands):
        return None  # one value cannot stand for two operands
    if len({value_class(o.text) for o in operands}) > 1:
        return None  # a percentage and a sum of money, say: not one quantity
    return operands


def compute(question: str, items: Sequence[EvidenceItem], candidates: Sequence[Passage]) -> Computation | None:
    """The computation the question asks for, over operands cited from the evidence; None when the
    question asks for none or an operand is not in the evidence."""
    operation = operation_of(question)
    keys, larger = operand_keys(question), True
    if operation is None and (compared := comparison(question)) is not None:
        operation, (keys, larger) = "compare", compared
    if operation in {"sum", "average"} and (names := listed_names(question)):
        keys = names
    if operation is None or len(keys) < 2:
        return None
    if operation in {"difference", "ratio", "change", "compare"}:
        keys = keys[:2]
    operands = _cited(question, keys, items, candidates)
    if operands is None:
        return None
    if operation == "compare":
        return _compared(operands, keys, larger)
    values = [first_number(o.text) or 0.0 for o in operands]  # as written: "$412.6 million" -> 412.6
    if operation == "difference":
        result = abs(values[0] - values[1])
    elif operation == "sum":
        result = sum(values)
    elif operation == "average":
        result = sum(values) / len(values)
    elif operation == "ratio":
        if values[1] == 0:
            return None
        result = values[0] / values[1]
    else:  # change from the earlier (first named) to the later
        first, second = (values[0], values[1])
        if _YEAR.fullmatch(keys[0]) and _YEAR.fullmatch(keys[1]) and int(keys[0]) > int(keys[1]):
            first, second = second, first
            operands = operands[::-1]
        if first == 0:
            return None
        result = (second - first) / abs(first) * 100
    unit = "%" if all(value_class(o.text) == Kind.PERCENT for o in operands) else ""
    return Computation(operation, tuple(operands), result, unit)
