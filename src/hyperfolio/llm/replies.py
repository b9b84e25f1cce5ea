"""Lenient field types for models' JSON replies: what models write is coerced, not rejected."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ValidationError, model_validator
from pydantic.json_schema import SkipJsonSchema

MAX_ITEMS = 200  # a weak model repeating itself stops being read here


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


def _item_type(annotation: Any) -> type[BaseModel] | None:
    if get_origin(annotation) is list:
        (inner,) = get_args(annotation) or (None,)
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            return inner
    return None


def _first_field(item_type: type[BaseModel]) -> str | None:
    for name, info in item_type.model_fields.items():
        if info.is_required():
            return name
    return None


class LenientReply(BaseModel):
    """A reply whose lists of objects are checked item by item: a bad item is dropped and counted,
    not allowed to sink the whole reply. Also accepted: a bare list for a one-list reply, a string
    where an object with one required field is expected, and the same item repeated (kept once)."""

    dropped: SkipJsonSchema[int] = 0  # items that did not validate, or repeated ones

    @model_validator(mode="before")
    @classmethod
    def _item_by_item(cls, value: Any) -> Any:
        lists = {name: t for name, info in cls.model_fields.items() if (t := _item_type(info.annotation))}
        if isinstance(value, list) and len(lists) == 1:
            value = {next(iter(lists)): value}
        if not isinstance(value, dict):
            return value
        out = dict(value)
        dropped = 0
        for name, item_type in lists.items():
            items = out.get(name)
            if items is None:
                continue
            if isinstance(items, dict):
                items = [items]
            if not isinstance(items, list):
                out[name] = []
                dropped += 1
                continue
            kept, seen = [], set()
            key_field = _first_field(item_type)
            for item in items[:MAX_ITEMS]:
                if isinstance(item, str) and key_field is not None:
                    item = {key_field: item}
                signature = json.dumps(item, sort_keys=True, default=str)
                if signature in seen:
                    dropped += 1
                    continue
                seen.add(signature)
                try:
                    kept.append(item_type.model_validate(item))
                except ValidationError:
                    dropped += 1
            dropped += max(0, len(items) - MAX_ITEMS)
            out[name] = kept
        out["dropped"] = dropped + int(out.get("dropped") or 0)
        return out
