"""Chunk and page words as `auto`'s features compare them, each text's words kept as one string.

A text's content words are kept in order as " w1 w2 w3 ... "; a word is looked up as the substring " w "
and an adjacent pair as " a b ". Words are runs of letters and hyphens, so none holds a space and every
lookup is exact. A page's string is its chunks' strings joined: the double space where two meet keeps a
pair from spanning two chunks, and a repeated word does no harm.

Strings in named tuples, not sets in dataclasses: the words of chunks and pages are kept across
questions (`TextCache`), and at a million chunks a few dozen questions left ~90,000 sets there. The
garbage collector walked every member of every set at each full collection (~300 ms, the tail of
`auto`'s latency). It does not look inside a string, and stops tracking a tuple that holds only strings,
numbers and such tuples, so what is kept here costs it nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from hyperfolio.model import Chunk
from hyperfolio.phrases import is_content_word, word_runs
from hyperfolio.retrieve.base import RetrievalContext


@lru_cache(maxsize=262_144)
def fold_word(word: str) -> str:
    """A light plural/verb fold so 'revenues' meets 'revenue' (no stemmer dependency for this)."""
    for suffix in ("ies", "es", "s", "ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


@lru_cache(maxsize=262_144)
def _content_fold(word: str) -> str:
    """A lower-cased word folded, or "" for a word that is not a content word."""
    return fold_word(word) if is_content_word(word) else ""


def word_list(text: str) -> list[str]:
    """The text's content words (`phrases.content_words`), folded, in order: one cached lookup a word."""
    return [folded for w in word_runs(text) if (folded := _content_fold(w))]


def pack(words: Iterable[str]) -> str:
    return " " + " ".join(words) + " "


@dataclass(frozen=True)
class Asked:
    """The question's words and adjacent word pairs, with the probes that find each in a packed string."""

    words: frozenset[str]
    probes: tuple[str, ...]  # " w " per word
    pair_probes: tuple[str, ...]  # "|a b|" per pair

    @classmethod
    def of(cls, text: str) -> Asked:
        listed = word_list(text)
        words = frozenset(listed)
        pairs = frozenset(map(" ".join, zip(listed, listed[1:], strict=False)))
        return cls(words, tuple(f" {w} " for w in words), tuple(f" {p} " for p in pairs))

    def share(self, packed: str) -> float:
        """The share of the question's words the packed words hold."""
        return sum(p in packed for p in self.probes) / len(self.probes) if self.probes else 0.0

    def pair_share(self, packed: str) -> float:
        """The share of the question's word pairs the packed words hold, next to each other."""
        found = sum(p in packed for p in self.pair_probes)
        return found / len(self.pair_probes) if self.pair_probes else 0.0

    def held(self, packed: str) -> list[str]:
        """The question's words the packed words hold."""
        return [w for w, p in zip(self.words, self.probes, strict=True) if p in packed]


class TextWords(NamedTuple):
    """The words of one chunk's text (or a page's), packed in order."""

    words: str
    length: int  # content words, repeats counted


def text_words(ctx: RetrievalContext, chunk_id: str, text: str) -> TextWords:
    """A chunk's words, computed once per chunk id (see `TextCache`)."""
    found = ctx.texts.get(("text", chunk_id))
    if found is None:
        listed = word_list(text)
        found = ctx.texts.put(("text", chunk_id), TextWords(pack(listed), len(listed)))
    return found


class ChunkWords(NamedTuple):
    """A chunk's words as the layout features compare them, packed, computed once per chunk."""

    text: TextWords
    section: str
    caption: str
    header: str  # table header cells
    row_keys: str  # first cell of each table row

    @classmethod
    def of(cls, chunk: Chunk, text: TextWords) -> ChunkWords:
        header = keys = ""
        if chunk.table:
            header = " ".join(" ".join(r) for r in chunk.table[: max(1, chunk.table_header_rows)])
            keys = " ".join(r[0] for r in chunk.table if r)
        return cls(
            text,
            pack(word_list(" ".join(chunk.section_path))),
            pack(word_list(chunk.caption or "")),
            pack(word_list(header)),
            pack(word_list(keys)),
        )


def chunk_words(ctx: RetrievalContext, chunk: Chunk) -> ChunkWords:
    found = ctx.texts.get(("chunk", chunk.chunk_id))
    if found is None:
        made = ChunkWords.of(chunk, text_words(ctx, chunk.chunk_id, chunk.text))
        found = ctx.texts.put(("chunk", chunk.chunk_id), made)
    return found


PageKey = tuple[str, int]


def page_words(ctx: RetrievalContext, keys: list[PageKey]) -> dict[PageKey, TextWords]:
    """Each page's words: its chunks' words joined, each chunk read once whatever asks for it."""
    found = {key: ctx.texts.get(("page", key)) for key in keys}
    missing = [key for key, words in found.items() if words is None]
    if missing:
        on_pages = ctx.store.page_chunk_texts(missing)
        for key in missing:
            parts = [text_words(ctx, chunk_id, text) for chunk_id, text in on_pages.get(key, [])]
            joined = TextWords("".join(p.words for p in parts), 0)
            found[key] = ctx.texts.put(("page", key), joined)
    return {key: words for key, words in found.items() if words is not None}
