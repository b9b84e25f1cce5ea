"""JSON out of a model's reply, repaired: what models commonly get wrong, fixed before parsing.

Replies come wrapped in fences or thinking, with trailing commas, Python literals, single quotes,
or cut off mid-way (finish_reason "length"); each is tried in turn before a reply is called invalid.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from typing import Any


class JSONRepairError(ValueError):
    """Text that stays unparseable after every repair."""


_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_FENCE = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n?(.*?)```", re.S)
_LITERALS = {"True": "true", "False": "false", "None": "null"}


def _string_end(text: str, start: int, quote: str) -> int:
    """Index just past the string literal opened at `start` (len(text) when it never closes)."""
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            return i + 1
        i += 1
    return len(text)


def _structure(text: str, start: int) -> Iterator[tuple[int, str]]:
    """(index, character) of each bracket and comma outside string literals, from `start` on."""
    i = start
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i = _string_end(text, i, '"')
            continue
        if ch in "{[]},":
            yield i, ch
        i += 1


def _json_start(text: str) -> int | None:
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    return min(starts) if starts else None


def _outermost(text: str) -> str | None:
    """The first balanced {...} or [...] in `text`, skipping brackets inside strings."""
    start = _json_start(text)
    if start is None:
        return None
    stack: list[str] = []
    for i, ch in _structure(text, start):
        if ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack[-1] != ch:
                break
            stack.pop()
            if not stack:
                return text[start : i + 1]
    # Unbalanced: fall back to the last closing bracket of the opening kind.
    end = text.rfind("}" if text[start] == "{" else "]")
    return text[start : end + 1] if end > start else None


def _normalise(text: str, single_quotes: bool) -> str:
    """Drop trailing commas, turn Python literals into JSON ones and, if asked, 'strings' into "strings"."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = _string_end(text, i, '"')
            out.append(text[i:j])
            i = j
            continue
        if ch == "'" and single_quotes:
            j = i + 1
            buf: list[str] = []
            while j < n and text[j] != "'":
                if text[j] == "\\" and j + 1 < n:
                    buf.append("'" if text[j + 1] == "'" else text[j : j + 2])
                    j += 2
                    continue
                buf.append('\\"' if text[j] == '"' else text[j])
                j += 1
            out.append('"' + "".join(buf) + '"')
            i = j + 1
            continue
        if ch == ",":
            k = i + 1
            while k < n and text[k].isspace():
                k += 1
            if k < n and text[k] in "}]":
                i += 1
                continue
        if ch.isalpha() or ch == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            out.append(_LITERALS.get(word, word))
            i = j
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _close_truncated(text: str, tries: int = 40) -> Any:
    """The longest complete prefix of a reply cut off mid-JSON (finish_reason "length"), closed.

    Walks the text once, noting after each complete value (a comma or closing bracket outside
    strings) which brackets are still open; then, from the end backwards, cuts there and closes
    them until one cut parses. Items after the last complete one are lost, the rest is kept.
    """
    start = _json_start(text)
    if start is None:
        raise ValueError("no JSON")
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []
    for i, ch in _structure(text, start):
        if ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
            cuts.append((i + 1, "".join(reversed(stack))))
            if not stack:
                break
        elif ch == ",":
            cuts.append((i, "".join(reversed(stack))))
    for end, closing in reversed(cuts[-tries:]):
        try:
            return json.loads(_normalise(text[start:end], single_quotes=False) + closing, strict=False)
        except json.JSONDecodeError:
            continue
    raise ValueError("no complete prefix")


def parse_json_reply(text: str) -> Any:
    """Parse a model's JSON reply, repairing what models commonly get wrong.

    Tries, in order: the text as is; fenced blocks; the outermost {...}/[...] span; that span
    without trailing commas and with Python literals fixed; with single-quoted strings turned
    into double-quoted ones; and finally, for a reply cut off mid-way, its longest complete
    prefix with the open brackets closed. Raises JSONRepairError when nothing parses.
    """
    cleaned = _THINK.sub("", text or "").strip()
    if not cleaned:
        raise JSONRepairError("the reply is empty")
    candidates = [cleaned, *(block.strip() for block in _FENCE.findall(cleaned))]
    first_error: json.JSONDecodeError | None = None
    seen: set[str] = set()
    for candidate in candidates:
        span = _outermost(candidate)
        variants = [candidate]
        if span is not None:
            variants += [span, _normalise(span, single_quotes=False), _normalise(span, single_quotes=True)]
        for variant in variants:
            if variant in seen:
                continue
            seen.add(variant)
            try:
                return json.loads(variant, strict=False)
            except json.JSONDecodeError as exc:
                first_error = first_error or exc
    if not any(ch in cleaned for ch in "{["):
        raise JSONRepairError("the reply contains no JSON object or array")
    for candidate in candidates:  # a reply cut off mid-way: keep its complete part
        with contextlib.suppress(ValueError):
            return _close_truncated(candidate)
    detail = f"{first_error.msg} at line {first_error.lineno} column {first_error.colno}" if first_error else ""
    raise JSONRepairError(f"the reply is not valid JSON even after repair ({detail})")
