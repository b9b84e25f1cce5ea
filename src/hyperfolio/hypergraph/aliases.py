"""Names one document gives one thing, merged into one vertex (issue 31, item 1).

Three ways, each checked by hand on pairs from the dev PDFs (benchmarks/alias_pairs.py):

- **string form**: the same letters written apart, joined or dotted ("e-mail", "email"; "U.S.", "US"), a
  term's noun endings aside;
- **initials**: an acronym whose letters are the initials of exactly one longer name in the document
  ("CQC", "Care Quality Commission"), beside the acronyms a document defines ("... (RAG)", `merge`);
- **embedding**: a name whose words are all in a longer one ("Trump", "Donald Trump"; "Syracuse",
  "Syracuse University"), merged into it when the static embedder puts them at least `threshold` close
  in cosine. Off unless a threshold is set: on the dev PDFs' labelled pairs its best held-out threshold
  merges right 63 % of the time ("Madrid" is not "Atletico Madrid", "Clark" which Clark).

Each alias maps a name's normalised key to the key it merges into; no key is both (one hop).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from hyperfolio.lexicon import JOINING_WORDS

_TERM_TYPES = frozenset({"concept"})  # lower-case terms; any other type (a model's "person" too) is a name
_FORM = re.compile(r"[\s.\-_'’]+")


@dataclass(frozen=True)
class AliasPair:
    alias: str  # the key merged away
    target: str  # the key it merges into
    method: str  # "form", "initials" or "embedding"
    score: float  # cosine for "embedding"; 1.0 otherwise


@dataclass(frozen=True)
class Named:
    """One vertex's name in the document: its normalised key, as written, its type and how often said."""

    key: str
    name: str
    type: str
    mentions: int


_SUFFIX = re.compile(r"(?:ations?|ers?|ions?|es|s)$")


def _form(key: str, inflected: bool = False) -> str:
    """The letters a name is written with; for a term (`inflected`), each word's noun endings dropped too
    ("recommender system", "recommendation systems"), not a verb's ("generated answer" is not "generate
    answer": judged on the dev PDFs). A proper name keeps its endings: "Streeter" is not "Street"."""
    words = [_SUFFIX.sub("", w) if inflected and len(w) > 5 else w for w in key.split()]
    return _FORM.sub("", " ".join(words))


def _initials(name: str) -> str:
    words = [w for w in re.split(r"[\s\-]+", name) if w and w.lower() not in JOINING_WORDS]
    return "".join(w[0] for w in words).upper() if len(words) >= 2 else ""


def _acronym(name: str) -> str:
    letters = name.rstrip("s") if name[:-1].isupper() else name
    return letters if 2 <= len(letters) <= 6 and letters.isalpha() and letters.isupper() else ""


def form_pairs(names: list[Named]) -> list[AliasPair]:
    groups: dict[str, list[Named]] = {}
    for named in names:
        groups.setdefault(_form(named.key, named.type in _TERM_TYPES), []).append(named)
    pairs = []
    for group in groups.values():
        if len(group) > 1:
            target = max(group, key=lambda n: (n.mentions, len(n.key), n.key))
            pairs += [AliasPair(n.key, target.key, "form", 1.0) for n in group if n is not target]
    return pairs


def initials_pairs(names: list[Named]) -> list[AliasPair]:
    by_initials: dict[str, list[Named]] = {}
    for named in names:
        if initials := _initials(named.name):
            by_initials.setdefault(initials, []).append(named)
    pairs = []
    for named in names:
        longs = by_initials.get(_acronym(named.name), []) if _acronym(named.name) else []
        if len(longs) == 1 and longs[0].key != named.key:
            pairs.append(AliasPair(named.key, longs[0].key, "initials", 1.0))
    return pairs


def embedding_candidates(names: list[Named]) -> list[tuple[Named, Named]]:
    """Pairs worth comparing: (shorter, longer) where every word of the shorter name is in the longer
    ("Wadden", "David Wadden") and in no other name of the document. Names that only share a word ("open
    book setting", "closed book setting") are mostly two things, whatever their cosine (judged on the dev
    PDFs); so is a term inside a longer term ("fact checking", "few-shot fact checking": a kind of it)."""
    names = [n for n in names if n.type not in _TERM_TYPES]
    by_word: dict[str, list[Named]] = {}
    for named in names:
        for word in set(named.key.split()):
            by_word.setdefault(word, []).append(named)
    out = []
    for named in names:
        words = set(named.key.split())
        rarest = min(words, key=lambda w: len(by_word[w]))
        longer = [
            other
            for other in by_word[rarest]
            if len(other.key.split()) > len(words)
            and words <= set(other.key.split())
            and _form(named.key) != _form(other.key)
        ]
        if len(longer) == 1:  # "Wang" in "William Yang Wang" and "Danqing Wang": which one is unsaid
            out.append((named, longer[0]))
    return out


def embedding_pairs(names: list[Named], embed: Callable[[list[str]], np.ndarray], threshold: float) -> list[AliasPair]:
    candidates = embedding_candidates(names)
    if not candidates:
        return []
    texts = sorted({n.name for pair in candidates for n in pair})
    vectors = embed(texts)
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
    row = {text: i for i, text in enumerate(texts)}
    pairs = []
    for a, b in candidates:
        score = float(vectors[row[a.name]] @ vectors[row[b.name]])
        if score >= threshold:
            pairs.append(AliasPair(a.key, b.key, "embedding", score))
    return pairs


def one_hop(pairs: list[AliasPair], keep: Mapping[str, str] | None = None) -> dict[str, str]:
    """alias key -> target key, best pairs first, no key both an alias and a target (no chains)."""
    alias_of = dict(keep or {})
    targets = set(alias_of.values())
    for pair in sorted(pairs, key=lambda p: (-p.score, p.alias, p.target)):
        if pair.alias in alias_of or pair.alias in targets or pair.target in alias_of:
            continue
        alias_of[pair.alias] = pair.target
        targets.add(pair.target)
    return alias_of


def find_aliases(
    names: list[Named],
    embed: Callable[[list[str]], np.ndarray] | None,
    threshold: float | None,
    defined: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Every alias in a document: `defined` ones (acronyms it spells out) first, then by form, initials
    and (with an embedder and a threshold) embedding."""
    pairs = form_pairs(names) + initials_pairs(names)
    if embed is not None and threshold is not None:
        pairs += embedding_pairs(names, embed, threshold)
    return one_hop(pairs, defined)
