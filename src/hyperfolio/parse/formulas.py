"""Calculating the formulas a workbook was saved without values for.

Excel stores each formula's last result beside it; a workbook written by a program (openpyxl, pandas,
a report generator) and never opened in Excel has none, and its cells would read "=B2*C2". The
formulas such files hold are mostly arithmetic over cells and ranges, so that subset is calculated
here: numbers, cell and range references (on the same sheet or another), + - * / ^ and unary minus,
comparison-free functions SUM, AVERAGE, MIN, MAX, COUNT, PRODUCT, ROUND, ABS. Anything else (text
functions, lookups, IF, dates) is left as formula text and counted, so ingest can say how many were
not calculated. The expression is parsed with Python's `ast` after a token-level translation and
walked by a small interpreter: nothing is ever `eval`ed.

Why not a library: pycel pins networkx < 2.7 (hyperfolio needs 3), and `formulas` brings SciPy and
five more packages (~60 MB) for a corner of one input format.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

Cell = tuple[int, int]  # (row, column), 1-based

_REFERENCE = re.compile(
    r"(?:(?P<sheet>'(?:[^']|'')+'|[A-Za-z_][\w.]*)!)?\$?(?P<col>[A-Z]{1,3})\$?(?P<row>\d+)"
    r"(?::\$?(?P<col2>[A-Z]{1,3})\$?(?P<row2>\d+))?"
)
_TOKEN = re.compile(
    r"\s*(?:(?P<string>\"(?:[^\"]|\"\")*\")|(?P<ref>"
    + _REFERENCE.pattern
    + r")|(?P<number>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_.]*)(?=\s*\()|(?P<op>[-+*/^(),%]))"
)
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "SUM": lambda *xs: math.fsum(_flat(xs)),
    "AVERAGE": lambda *xs: math.fsum(_flat(xs)) / max(len(_flat(xs)), 1),
    "MIN": lambda *xs: min(_flat(xs)),
    "MAX": lambda *xs: max(_flat(xs)),
    "COUNT": lambda *xs: float(len(_flat(xs))),
    "PRODUCT": lambda *xs: math.prod(_flat(xs)),
    "ROUND": lambda x, n=0.0: _round(_one(x), int(_one(n))),
    "ABS": lambda x: abs(_one(x)),
}
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


class NotCalculable(Exception):
    """The formula uses something outside the calculated subset, or refers to a cell without a number."""


def _flat(values: Iterable[object]) -> list[float]:
    out: list[float] = []
    for value in values:
        if isinstance(value, list):
            out += [v for v in value if isinstance(v, float)]  # blanks and text in a range are skipped
        elif isinstance(value, float):
            out.append(value)
    return out


def _one(value: object) -> float:
    if isinstance(value, float):
        return value
    raise NotCalculable("a range where one number is needed")


def _round(value: float, places: int) -> float:
    scale = 10.0**places
    return math.floor(abs(value) * scale + 0.5) / scale * (1 if value >= 0 else -1)  # Excel rounds half away


def column_number(letters: str) -> int:
    number = 0
    for letter in letters:
        number = number * 26 + ord(letter) - 64
    return number


def translate(formula: str) -> tuple[str, list[tuple[str | None, Cell, Cell]]]:
    """The formula as a Python expression whose references are names r0, r1 ..., and those references
    (sheet or None, first cell, last cell)."""
    text, at, refs = formula.lstrip("="), 0, []
    pieces: list[str] = []
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None or match.end() == at:
            if text[at:].strip():
                raise NotCalculable(f"cannot read {text[at : at + 12]!r}")
            break
        at = match.end()
        if match.group("string") is not None:
            raise NotCalculable("text in a formula")
        if match.group("ref"):
            ref = _REFERENCE.fullmatch(match.group("ref").strip())
            assert ref is not None
            sheet = ref.group("sheet")
            sheet = sheet[1:-1].replace("''", "'") if sheet and sheet.startswith("'") else sheet
            first = (int(ref.group("row")), column_number(ref.group("col")))
            last = (int(ref.group("row2")), column_number(ref.group("col2"))) if ref.group("col2") else first
            refs.append((sheet, first, last))
            pieces.append(f"r{len(refs) - 1}")
        elif match.group("number") is not None:
            pieces.append(match.group("number"))
        elif match.group("name"):
            name = match.group("name").upper()
            if name not in _FUNCTIONS:
                raise NotCalculable(f"function {name}")
            pieces.append(name)
        else:
            op = match.group("op")
            pieces.append({"^": "**", "%": "/100"}.get(op, op))
    return " ".join(pieces), refs


@dataclass
class Workbook:
    """Numbers and formulas by sheet; `calculate` fills in the formulas it can."""

    numbers: dict[str, dict[Cell, float]] = field(default_factory=dict)
    formulas: dict[str, dict[Cell, str]] = field(default_factory=dict)
    results: dict[tuple[str, Cell], float] = field(default_factory=dict)
    _busy: set[tuple[str, Cell]] = field(default_factory=set)

    def value(self, sheet: str, cell: Cell) -> float | None:
        """A cell's number: stored, or calculated from its formula; None for a blank or text cell."""
        if cell in self.numbers.get(sheet, {}):
            return self.numbers[sheet][cell]
        formula = self.formulas.get(sheet, {}).get(cell)
        return None if formula is None else self.calculate(sheet, cell, formula)

    def calculate(self, sheet: str, cell: Cell, formula: str) -> float:
        key = (sheet, cell)
        if key in self.results:
            return self.results[key]
        if key in self._busy:
            raise NotCalculable("a circular reference")
        self._busy.add(key)
        try:
            expression, refs = translate(formula)
            bound: dict[str, object] = {}
            for i, (other, first, last) in enumerate(refs):
                source = other or sheet
                if first == last:
                    found = self.value(source, first)
                    if found is None:
                        raise NotCalculable("a reference to a cell without a number")
                    bound[f"r{i}"] = found
                else:
                    bound[f"r{i}"] = [
                        v
                        for r in range(first[0], last[0] + 1)
                        for c in range(first[1], last[1] + 1)
                        if (v := self.value(source, (r, c))) is not None
                    ]
            result = _walk(ast.parse(expression, mode="eval").body, bound)
            if not isinstance(result, float) or not math.isfinite(result):
                raise NotCalculable("no single finite number")
        except (SyntaxError, ZeroDivisionError, ValueError, TypeError, OverflowError) as exc:
            raise NotCalculable(str(exc)) from exc
        finally:
            self._busy.discard(key)
        self.results[key] = result
        return result


def _walk(node: ast.AST, bound: dict[str, object]) -> object:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id in bound:
        return bound[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _one(_walk(node.operand, bound))
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        left, right = _one(_walk(node.left, bound)), _one(_walk(node.right, bound))
        if isinstance(node.op, ast.Pow):
            return float(left**right)
        if type(node.op) in _BINARY:
            return float(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        return float(_FUNCTIONS[node.func.id](*(_walk(arg, bound) for arg in node.args)))
    raise NotCalculable("an expression outside the calculated subset")
