"""Organisation names compared as people write them: "Adobe" for "ADOBE SYSTEMS INCORPORATED",
"J&J" or "JnJ" for "Johnson & Johnson", "AMEX" for "American Express Company", "JPM" for "JPMorgan
Chase & Co.". Rules only (case, punctuation, legal suffixes, abbreviations made of the name's own
word beginnings), no table of companies, so any collection's issuers are matched the same way."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

_LEGAL = {
    "inc", "incorporated", "corporation", "corp", "company", "co", "ltd", "limited", "llc", "plc", "lp", "llp",
    "sa", "ag", "nv", "se", "the", "subsidiaries", "pty", "gmbh", "holdings", "group",
}  # fmt: skip
_CONNECTORS = {"&", "and"}
_MINOR = {"of", "for", "the", "in", "on", "at"}  # words an abbreviation skips
_WORD = re.compile(r"&|[^\W_]+")
_ACRONYM = re.compile(r"^(?=(?:.*[A-Z]){2})[A-Za-z&.]{2,8}$")  # "AMEX", "JPM", "JnJ", "J&J", "P&G"
DISTINCT = 0.9  # the name's own first word, which no other issuer shares, is named
FULL = 1.0


def words(text: str) -> list[str]:
    """Lower-case words with accents, possessives and hyphens folded ("Coca-Cola's" -> coca, cola)."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = re.sub(r"[’'`]s\b", "", text).replace("-", " ")
    return _WORD.findall(text)


def core(name: str) -> tuple[str, ...]:
    """A name without its legal form and articles: "The Coca-Cola Company" -> (coca, cola)."""
    tokens = words(name)
    while tokens and (tokens[-1] in _LEGAL or tokens[-1] in _CONNECTORS):
        tokens.pop()
    while tokens and tokens[0] == "the":
        tokens.pop(0)
    return tuple(tokens)


@lru_cache(maxsize=4096)
def abbreviates(short: str, name: tuple[str, ...]) -> bool:
    """Whether `short` is made of beginnings of the name's words, in order, from its first word
    ("amex" = am+ex, "jnj" = j+n+j with "&" read as "n", "jpm" = jpm...). It must stand for the whole
    name (every word but "of"-like ones), or be three letters or more of the first word of a name of
    two words at most: "US" is not the United States Court of Appeals, nor "UNIT" the United Nations."""
    short = short.lower().replace(".", "")
    content = [t for t in name if t not in _CONNECTORS and t not in _MINOR]

    def walk(rest: str, index: int, used: int) -> bool:
        if not rest:
            whole = used >= 2 and all(t in _CONNECTORS or t in _MINOR for t in name[index:])
            return whole or (used == 1 and index == 1 and len(short) >= 3 and len(content) <= 2)
        if index >= len(name):
            return False
        token = name[index]
        if token in _CONNECTORS:
            options = [c for c in ("&", "and", "n", "a") if rest.startswith(c)]
            return any(walk(rest[len(c) :], index + 1, used) for c in options) or walk(rest, index + 1, used)
        for length in range(min(len(token), len(rest)), 0, -1):
            if rest[:length] == token[:length] and walk(rest[length:], index + 1, used + 1):
                return True
        return False

    return len(short) >= 2 and walk(short, 0, 0)


@dataclass(frozen=True)
class NameIndex:
    """How many of a collection's issuers share each word, so a shared word ("American") counts for
    less than an issuer's own ("Express")."""

    cores: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, names: Sequence[str]) -> NameIndex:
        return cls(tuple(sorted({core(n) for n in names if core(n)})))

    def share(self, token: str) -> int:
        return sum(1 for name in self.cores if token in name) or 1

    def weight(self, token: str) -> float:
        return math.log(1.0 + max(len(self.cores), 1) / self.share(token))


def _contains(sequence: Sequence[str], part: Sequence[str]) -> bool:
    n = len(part)
    return n > 0 and any(tuple(sequence[i : i + n]) == tuple(part) for i in range(len(sequence) - n + 1))


def name_score(question: str, name: str, index: NameIndex, aliases: Sequence[str] = ()) -> float:
    """How surely a question names the organisation `name` (1: by its whole name, an alias or an
    abbreviation; 0.9: by its own first word; less for shared words), in [0, 1]."""
    target = core(name)
    if not target:
        return 0.0
    asked = words(question)
    if _contains(asked, [t for t in target if t not in _CONNECTORS]) or _contains(asked, target):
        return FULL
    if "".join(target) in asked or any(alias and re.search(rf"\b{re.escape(alias)}\b", question) for alias in aliases):
        return FULL
    raw = re.findall(r"[A-Za-z][A-Za-z&.]*[A-Za-z]", question)
    if any(_ACRONYM.match(w) and abbreviates(w, target) for w in raw):
        return DISTINCT
    content = [t for t in target if t not in _CONNECTORS]
    # The name's own first word names a short name ("Adobe", "Verizon"); a long institutional name's first
    # word is a common one ("United" of the United States Court of Appeals).
    short_name = len([t for t in content if t not in _MINOR]) <= 3
    if short_name and content[0] in asked and index.share(content[0]) == 1 and len(content[0]) >= 3:
        return DISTINCT
    total = sum(index.weight(t) for t in content)
    found = sum(index.weight(t) for t in content if t in asked)
    return round(0.5 * found / total, 4) if total else 0.0
