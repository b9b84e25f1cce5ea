"""Question decomposition shared by every strategy: entity keywords (K_low) and theme keywords (K_high).

Offline, the same phrase rules the offline extractor uses pick the keywords; with a keywords model
configured, the collection hands the context a `Decomposer` that asks it (and falls back to these
rules). Each question is decomposed once per call, whatever number of sources read the keywords.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from hyperfolio.phrases import content_words, find_phrases, key_phrases


@dataclass
class Keywords:
    low: list[str] = field(default_factory=list)  # entity keywords: names, numbers, terms
    high: list[str] = field(default_factory=list)  # theme keywords: what the question is about


class Decomposer(Protocol):
    """Turns a question into keywords; a language-model decomposer is one implementation."""

    def decompose(self, question: str, max_keywords: int) -> Keywords: ...


def decompose(question: str, max_keywords: int = 8) -> Keywords:
    """Offline query decomposition with the same phrase rules the offline extractor uses."""
    low: list[str] = []
    for phrase in find_phrases(question):
        low.append(phrase.text)
    terms = list(dict.fromkeys(key_phrases(question)))
    low.extend(t for t in terms if t not in low)
    covered = " ".join(low).lower()
    words = [w for w in content_words(question) if len(w) > 3 and w not in covered]
    low.extend(dict.fromkeys(words))
    theme = " ".join(content_words(question))
    high = [theme] if theme else []
    high.extend(t for t in terms[:2] if t != theme)
    return Keywords(low[:max_keywords], high[:max_keywords])


class OfflineDecomposer:
    def decompose(self, question: str, max_keywords: int) -> Keywords:
        return decompose(question, max_keywords)
