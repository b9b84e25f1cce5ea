"""The formula subset calculated for workbooks saved without results (parse/formulas.py)."""

from __future__ import annotations

import pytest

from hyperfolio.parse.formulas import NotCalculable, Workbook, column_number, translate


def book(**cells: object) -> Workbook:
    numbers = {(int(k[1:]), column_number(k[0])): float(v) for k, v in cells.items() if not isinstance(v, str)}
    formulas = {(int(k[1:]), column_number(k[0])): v for k, v in cells.items() if isinstance(v, str)}
    return Workbook(numbers={"S": numbers}, formulas={"S": formulas})


def test_arithmetic_precedence_functions_and_percent():
    wb = book(A1=2, A2=3, A3=4)
    assert wb.calculate("S", (9, 9), "=A1+A2*A3") == 14
    assert wb.calculate("S", (9, 8), "=(A1+A2)*A3^2/-2") == -40
    assert wb.calculate("S", (9, 7), "=SUM(A1:A3)/COUNT(A1:A3)") == 3
    assert wb.calculate("S", (9, 6), "=ROUND(A2/A3*100,1)") == 75
    assert wb.calculate("S", (9, 5), "=ROUND(2.5,0)") == 3  # half away from zero, as Excel does
    assert wb.calculate("S", (9, 4), "=50%*A3") == 2
    assert wb.calculate("S", (9, 3), "=MAX(A1:A3)-MIN(A1:A3)+ABS(-1)+PRODUCT(A1,A2)") == 9


def test_formulas_through_formulas_and_sheets():
    wb = Workbook(
        numbers={"Data": {(1, 1): 10.0}, "My sheet": {}},
        formulas={"Data": {(1, 2): "=A1*2"}, "My sheet": {(1, 1): "='Data'!B1+Data!A1"}},
    )
    assert wb.calculate("My sheet", (1, 1), "='Data'!B1+Data!A1") == 30


@pytest.mark.parametrize(
    "formula",
    ['=VLOOKUP("a",A1:B2,2,FALSE)', '="a"&A1', "=A1/0", "=A9+1", "=IF(A1>1,1,0)", "=A1:A2"],
)
def test_outside_the_subset_is_not_calculated(formula):
    with pytest.raises(NotCalculable):
        book(A1=1, A2=2).calculate("S", (5, 5), formula)


def test_a_circular_reference_is_refused():
    wb = book(A1="=A2+1", A2="=A1+1")
    with pytest.raises(NotCalculable):
        wb.calculate("S", (1, 1), "=A2+1")


def test_translate_names_references():
    expression, refs = translate("=SUM($B$2:C3)+Sheet2!A1")
    assert expression == "SUM ( r0 ) + r1"
    assert refs == [(None, (2, 2), (3, 3)), ("Sheet2", (1, 1), (1, 1))]
