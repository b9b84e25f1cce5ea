"""Content checks on a model's JSON reply: schema-valid nonsense is refused like invalid JSON.

Under grammar-constrained decoding a weak model (SmolLM2-135M on llama.cpp) always writes JSON
that fits the schema, not always content: it fills fields with the schema's own descriptions
("one sentence: what this part of the document is about"), names schema internals
("#/$defs/EntityReply"), copies the instructions, or loops on a phrase. Validation cannot see any of
that, and once stored it becomes themes, entity names and hyperedge members that retrieval finds.
`reply_problem` names what is wrong in one line (None for a usable reply); the client treats a
problem like a validation failure: feedback, one more attempt, then `ModelOutputError`, so each
caller's offline fallback takes over.

Every rule is conservative, because a false alarm throws a good reply away: whatever the model
could have copied from the data it was shown - the evidence blocks (llm/fence.py) and the user's
question - is never an echo, and the echo and repetition rules leave short values (a type, a unit,
a name) alone.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from hyperfolio.lexicon import STOPWORDS
from hyperfolio.llm.fence import split_evidence
from hyperfolio.llm.json_shape import json_instruction
from hyperfolio.llm.messages import text_parts

# A run of this many words in the instructions' own order is a copy, not a coincidence. Shorter runs are
# phrasing a good reply shares with its prompt: the answer prompt asks the model to say so "when the
# evidence does not contain the answer", and "The evidence does not contain the answer." is then right.
PROMPT_ECHO_WORDS = 8
# Schema descriptions are short, so three of their words in order make an echo; descriptions (and
# values) of fewer words ("entity keywords", "1 or 2") read like ordinary words and are not judged.
SCHEMA_ECHO_WORDS = 3
# One object whose fields hold their own key or declared type ({"name": "name", "type": "string"}) is
# a template echoed back; a single such field can be real (a table's column headed "name").
PLACEHOLDERS_PER_OBJECT = 2
# A loop: a unit of up to LOOP_MAX_UNIT characters repeated back to back at least LOOP_MIN_COPIES
# times, making up at least LOOP_SHARE of a value of LOOP_MIN_CHARS or more. Shorter values, or
# a repeat that is only part of the text, occur in real writing ("yes, yes", "ha ha").
LOOP_MIN_CHARS = 40
LOOP_MIN_COPIES = 4
LOOP_SHARE = 0.5
LOOP_MAX_UNIT = 80
# The same text as most of a reply's values: at least REPEATED_MIN_COUNT times and more than
# REPEATED_SHARE of its string values. Values under REPEATED_MIN_WORDS words (a type, a modality,
# a unit) legitimately recur across items and are not counted.
REPEATED_MIN_WORDS = 3
REPEATED_MIN_COUNT = 5
REPEATED_SHARE = 0.5

_WORD = re.compile(r"\w+")
# JSON Schema's reference syntax: never in a reply's content unless a document spells it.
_INTERNALS = re.compile(r"\$(?:defs|ref|schema)\b|#/(?:\$defs|definitions|properties|items)\b", re.I)
# Model class names ("EntityReply") and snake_case field names ("chunk_refs") from the schema, when a
# whole value is one of them; single ordinary words ("Summary", "name") are left to the other rules.
_IDENTIFIER = re.compile(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
# The user's question: prompts put it in a paragraph of its own starting "Question:" (answer, keywords,
# judge, locate). It is data like the evidence: keywords and answers may quote it.
_QUESTION = re.compile(r"^[ \t]*question[ \t]*:.*?(?=\n[ \t]*\n|\Z)", re.I | re.S | re.M)
_JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object", "null"})


class RejectedReply(ValueError):
    """A reply that parses and validates but is refused by `reply_problem` (its reason is the message)."""


def reply_problem(parsed: Any, schema: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the parsed JSON reply to `messages` under `schema` is unusable, in one line; None when it is fine."""
    prompt = _Prompt.of(messages, schema)
    values = [text for text, is_key in _strings(parsed) if not is_key]
    return (
        names_internals(parsed, schema, prompt)
        or fills_placeholders(parsed, schema)
        or echoes_schema(values, schema, prompt)
        or echoes_prompt(values, prompt)
        or loops(values, prompt)
        or repeats_value(values)
    )


# --------------------------------------------------------------------------- the prompt, split
def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _clip(text: str, limit: int = 60) -> str:
    """`text` on one line, cut at a word boundary to at most `limit` characters, for a reason."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip() + "…"


def _grams(words: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def _split_data(text: str) -> tuple[str, list[str]]:
    """(instructions, data) of one user text: evidence blocks and the question are data."""
    rest, data = split_evidence(text)
    data += _QUESTION.findall(rest)
    return _QUESTION.sub("\n\n", rest), data


@dataclass(frozen=True)
class _Prompt:
    """What a reply is compared with: the instructions' word runs, and the data it may quote."""

    instructions: frozenset[tuple[str, ...]]  # PROMPT_ECHO_WORDS-word runs of system and user instructions
    data: str  # evidence and question, normalised (lower-case words, one space apart), space-padded
    raw_data: str  # the same, lower-cased but otherwise as written (for `$ref`-like tokens)

    @classmethod
    def of(cls, messages: Sequence[Mapping[str, Any]], schema: Mapping[str, Any]) -> _Prompt:
        instructions = [json_instruction(schema)]  # what the client adds when the schema goes in the prompt
        data: list[str] = []
        for message in messages:
            role = message.get("role")
            for text in text_parts(message.get("content")):
                if role in ("system", "developer"):
                    instructions.append(text)
                elif role == "user":
                    rest, quoted = _split_data(text)
                    instructions.append(rest)
                    data += quoted
        grams: set[tuple[str, ...]] = set()
        for text in instructions:
            grams |= _grams(_words(text), PROMPT_ECHO_WORDS)
        joined = "\n".join(data)
        return cls(frozenset(grams), " " + " ".join(_words(joined)) + " ", joined.lower())

    def quotes(self, words: Sequence[str]) -> bool:
        """Do the data contain these words in this order (the model copied the document or question)?"""
        return bool(words) and f" {' '.join(words)} " in self.data


def _strings(value: Any) -> Iterator[tuple[str, bool]]:
    """Every string in a parsed reply, with whether it is an object key."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item, False
        elif isinstance(item, Mapping):
            for key, child in item.items():
                yield str(key), True
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(reversed(item))


def _only_echo(words: Sequence[str], sources: AbstractSet[tuple[str, ...]], n: int) -> bool:
    """Are `words` made of n-word runs found in `sources`, with nothing left over but stop words?"""
    covered = [False] * len(words)
    for i in range(len(words) - n + 1):
        if tuple(words[i : i + n]) in sources:
            covered[i : i + n] = [True] * n
    return sum(covered) >= n and all(c or w in STOPWORDS for w, c in zip(words, covered, strict=True))


# --------------------------------------------------------------------------- schema walking
def _resolve(node: Any, root: Mapping[str, Any], depth: int = 0) -> list[Mapping[str, Any]]:
    """A schema node and the alternatives it stands for (`$ref`, `anyOf`, `oneOf`, `allOf`), flattened."""
    if not isinstance(node, Mapping) or depth > 8:
        return []
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, Mapping) else None
        return _resolve(target, root, depth + 1)
    out = [node]
    for word in ("anyOf", "oneOf", "allOf"):
        for option in node.get(word) or ():
            out += _resolve(option, root, depth + 1)
    return out


def _declared(nodes: list[Mapping[str, Any]], word: str) -> list[Any]:
    values: list[Any] = []
    for node in nodes:
        value = node.get(word)
        values += value if isinstance(value, list) else [] if value is None else [value]
    return values


def _schema_texts(schema: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(what it describes, "description" or "title", text) of every description and title in the schema."""
    stack: list[tuple[Any, str]] = [(schema, str(schema.get("title") or "the reply"))]
    while stack:
        node, label = stack.pop()
        if isinstance(node, list):
            stack += [(child, label) for child in node]
            continue
        if not isinstance(node, Mapping):
            continue
        for word in ("description", "title"):
            if isinstance(node.get(word), str):
                yield label, word, node[word]
        for key, child in node.items():
            if key in ("properties", "$defs", "definitions") and isinstance(child, Mapping):
                stack += [(grand, str(name)) for name, grand in child.items()]
            elif isinstance(child, (Mapping, list)):
                stack.append((child, label))


def _identifiers(schema: Mapping[str, Any]) -> set[str]:
    """Names from the schema that no document text would be: class names and snake_case field names."""
    names: set[str] = set()
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack += node
        elif isinstance(node, Mapping):
            if isinstance(node.get("title"), str):
                names.add(node["title"])
            for key, child in node.items():
                if key in ("properties", "$defs", "definitions") and isinstance(child, Mapping):
                    names.update(str(name) for name in child)
                if isinstance(child, (Mapping, list)):
                    stack.append(child)
    return {name for name in names if _IDENTIFIER.fullmatch(name)}


# --------------------------------------------------------------------------- the rules
def names_internals(parsed: Any, schema: Mapping[str, Any], prompt: _Prompt) -> str | None:
    """A value or key holding JSON Schema's own syntax (`#/$defs/...`, `$ref`) or one of its identifiers."""
    identifiers = _identifiers(schema)
    for text, is_key in _strings(parsed):
        found = _INTERNALS.search(text)
        # Keys are field names by right; a value that is exactly a class or field name is not content.
        named = not is_key and text.strip() in identifiers
        token = found.group(0) if found else text.strip() if named else None
        if token is not None and token.lower() not in prompt.raw_data:
            return f"it names schema internals ({_clip(text)})"
    return None


def _placeholder(text: str, key: str, nodes: list[Mapping[str, Any]]) -> bool:
    if text in _declared(nodes, "enum") or text in _declared(nodes, "default"):
        return False
    return text == key or (text in _JSON_TYPES and text in _declared(nodes, "type"))


_Resolver = Callable[[Any], list[Mapping[str, Any]]]


def _placeholders(value: Any, node: Any, resolve: _Resolver, depth: int = 0) -> Iterator[list[str]]:
    """For each object in the reply, its fields that hold their own key or declared JSON type."""
    nodes = resolve(node)
    if depth > 20 or not nodes:
        return
    if isinstance(value, list):
        for item in value:
            yield from _placeholders(item, next(iter(_declared(nodes, "items")), None), resolve, depth + 1)
        return
    if not isinstance(value, Mapping):
        return
    properties: dict[str, Any] = {}
    for option in nodes:
        if isinstance(option.get("properties"), Mapping):
            properties.update(option["properties"])
    hits: list[str] = []
    for key, child in value.items():
        field = resolve(properties.get(key))
        item = resolve(next(iter(_declared(field, "items")), None))
        if isinstance(child, str) and _placeholder(child, key, field):
            hits.append(f"'{key}': '{child}'")
        elif isinstance(child, list):
            hits += [f"'{key}': ['{c}']" for c in child if isinstance(c, str) and _placeholder(c, key, item)]
        yield from _placeholders(child, properties.get(key), resolve, depth + 1)
    yield hits


def fills_placeholders(parsed: Any, schema: Mapping[str, Any]) -> str | None:
    """An object whose fields are filled with their own key or declared type, as in a template."""
    memo: dict[int, list[Mapping[str, Any]]] = {}  # one resolution per schema node, not per reply item

    def resolve(node: Any) -> list[Mapping[str, Any]]:
        if id(node) not in memo:
            memo[id(node)] = _resolve(node, schema)
        return memo[id(node)]

    for hits in _placeholders(parsed, schema, resolve):
        if len(hits) >= PLACEHOLDERS_PER_OBJECT:
            return f"it fills fields with their own names or types ({', '.join(hits[:3])})"
    return None


def echoes_schema(values: Sequence[str], schema: Mapping[str, Any], prompt: _Prompt) -> str | None:
    """A value that is a description or title from the schema, give or take a few stop words."""
    sources = []
    for label, word, text in _schema_texts(schema):
        words = _words(text)
        if len(words) >= SCHEMA_ECHO_WORDS:
            sources.append((label, word, _grams(words, SCHEMA_ECHO_WORDS)))
    if not sources:
        return None
    for value in values:
        words = _words(value)
        if len(words) < SCHEMA_ECHO_WORDS:
            continue
        for label, word, grams in sources:
            if _only_echo(words, grams, SCHEMA_ECHO_WORDS) and not prompt.quotes(words):
                return f"it echoes the schema's {word} of '{label}' ({_clip(value)})"
    return None


def echoes_prompt(values: Sequence[str], prompt: _Prompt) -> str | None:
    """A value of PROMPT_ECHO_WORDS or more words copied from the instructions, with nothing of its own."""
    for value in values:
        words = _words(value)
        copied = len(words) >= PROMPT_ECHO_WORDS and _only_echo(words, prompt.instructions, PROMPT_ECHO_WORDS)
        if copied and not prompt.quotes(words):
            return f"it copies the instructions ({_clip(value)})"
    return None


_LOOP = re.compile(rf"\b(\w.{{0,{LOOP_MAX_UNIT - 1}}}?)(?: ?\1){{{LOOP_MIN_COPIES - 1},}}\b")


def loops(values: Sequence[str], prompt: _Prompt) -> str | None:
    """A long value that is mostly one phrase repeated back to back (a model stuck in a loop)."""
    for value in values:
        text = " ".join(_words(value))
        if len(text) < LOOP_MIN_CHARS:
            continue
        longest = max(_LOOP.finditer(text), key=lambda m: len(m.group(0)), default=None)
        if longest is None or len(longest.group(0)) < LOOP_SHARE * len(text):
            continue
        unit = longest.group(1)
        again = re.escape(unit)
        if re.search(rf"{again}(?: ?{again}){{{LOOP_MIN_COPIES - 1},}}", prompt.data):
            continue  # the document itself repeats it (a table row of zeros, a refrain)
        copies = len(re.findall(again, longest.group(0)))
        return f"it repeats '{_clip(unit, 40)}' {copies} times"
    return None


def repeats_value(values: Sequence[str]) -> str | None:
    """The same text of some length as most of the reply's values (one value stamped on every field)."""
    counts: Counter[str] = Counter()
    for value in values:
        words = _words(value)
        if len(words) >= REPEATED_MIN_WORDS:
            counts[" ".join(words)] += 1
    if not counts:
        return None
    text, count = counts.most_common(1)[0]
    if count >= REPEATED_MIN_COUNT and count > REPEATED_SHARE * len(values):
        return f"it gives '{_clip(text, 40)}' as {count} of its {len(values)} values"
    return None
