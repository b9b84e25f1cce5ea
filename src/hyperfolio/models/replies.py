"""Lenient field types for models' JSON replies: what models write is coerced, not rejected."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator


def numbers(value: Any) -> list[int]:
    """Reference numbers as a model writes them: 3, "3", "[3]", "#3" or a list of those."""
    items = value if isinstance(value, list) else [value]
    return [int(d) for item in items for d in re.findall(r"\d+", str(item))]


def unit_strength(value: Any) -> float:
    """A strength in [0, 1]; some models answer on a 1-10 scale, and a missing value means 1."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 1.0
    if number > 1.0:
        number = number / 10.0
    return min(1.0, max(0.0, number))


Numbers = Annotated[list[int], BeforeValidator(numbers)]
Strength = Annotated[float, BeforeValidator(unit_strength)]
