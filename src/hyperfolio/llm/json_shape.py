"""A JSON Schema written as the shape of the JSON it asks for, for prompts.

When a server cannot take a schema as a response format, the schema goes into the prompt. The
full JSON Schema of a page extraction is about 700 tokens of `$defs`, titles and `anyOf`; on a
2,048-token local model that leaves almost no room for the page. The shape says the same to a
model in a quarter of the tokens: `{"entities": [{"name": string, "modality": string (text,
table or visual), "chunk_refs": [integer]}]}`, field descriptions kept where the schema has them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_SCALARS = {"string": "string", "integer": "integer", "number": "number", "boolean": "true/false", "null": "null"}


def _resolve(node: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return defs.get(ref.rsplit("/", 1)[1], {})
    return node


def _shape(node: Mapping[str, Any], defs: Mapping[str, Any], depth: int = 0) -> str:
    node = _resolve(node, defs)
    if depth > 6:
        return "..."
    options = node.get("anyOf") or node.get("oneOf")
    if options:
        kinds = [_shape(o, defs, depth + 1) for o in options if _resolve(o, defs).get("type") != "null"]
        return " or ".join(dict.fromkeys(kinds)) or "null"
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        fields = []
        for name, child in (node.get("properties") or {}).items():
            text = _shape(child, defs, depth + 1)
            note = _resolve(child, defs).get("description") or child.get("description")
            if note and kind != "array" and not text.startswith(("{", "[")):
                text += f" ({note})"
            fields.append(f'"{name}": {text}')
        return "{" + ", ".join(fields) + "}"
    if kind == "array":
        return "[" + _shape(node.get("items") or {}, defs, depth + 1) + ", ...]"
    if "enum" in node:
        return " | ".join(f'"{v}"' for v in node["enum"])
    return _SCALARS.get(str(kind), "any")


def json_shape(schema: Mapping[str, Any]) -> str:
    """The shape of the JSON that `schema` describes, compact, for a prompt."""
    return _shape(schema, schema.get("$defs") or {})


def json_instruction(schema: Mapping[str, Any]) -> str:
    """What is added to the last user message when the schema cannot go as a response format."""
    return (
        "\n\nAnswer with JSON only, one JSON value of this shape (the ... mean more items like the one "
        "before), with no explanation, markdown or code fence:\n" + json_shape(schema)
    )
