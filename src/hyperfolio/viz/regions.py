"""Where the answer is inside a cited block: the boxes of a quote's words on a PDF page.

A citation's region is its whole chunk; its quote (the sentence that holds the answer) or its cells (the
answering row's key and value) say what answers inside it. This finds their words among the page's
words inside the block. Words are compared by their letters and digits alone, so line breaks,
hyphenation, ligatures, spacing and punctuation do not matter; a quote written a little differently (a
model's sentence, an OCR'd text layer) is found where a window of the page's words holds most of its
words. The answer is one box per line its words are on, clipped to the block. A quote found nowhere
has no boxes: the block's outline is then all there is to show (so it is on a scanned page with no text
layer). Boxes are in PDF points on the page as shown (rotation applied), as citations give them.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import pymupdf

from hyperfolio.model import BBox

MARGIN = 2.0  # points a word's centre may stand outside the block and still be its word
CLOSE_SHARE = 0.6  # share of a quote's words a window of the page must hold to be where it is
CLOSE_MIN_WORDS = 3  # a shorter quote (a cell, a name) is found exactly or not at all
EXACT, CLOSE = "exact", "close"


def fold(text: str) -> str:
    """Letters and digits only, lower-cased, ligatures and full-width forms spelled out."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).lower() if ch.isalnum())


@dataclass(frozen=True)
class Word:
    rect: pymupdf.Rect  # on the page as shown
    key: str  # `fold` of its text, never empty
    line: tuple[int, int]  # (block, line) of the page's text: words of one line share a box
    hyphen: bool  # ends in a hyphen: the word may go on at the start of the next line


@dataclass
class Located:
    quote: str
    boxes: list[BBox] = field(default_factory=list)  # one per line of the page; [] when not found
    how: str = ""  # EXACT, CLOSE or "" (not found)

    @property
    def found(self) -> bool:
        return bool(self.boxes)


def page_words(page: pymupdf.Page) -> list[Word]:
    """The page's words in reading order, with their boxes on the page as shown."""
    turn = page.rotation_matrix
    found = []
    for x0, y0, x1, y1, text, block, line, _ in page.get_text("words", sort=False):
        key = fold(text)
        if key:
            found.append(Word(pymupdf.Rect(x0, y0, x1, y1) * turn, key, (block, line), text.rstrip().endswith("-")))
    return found


def _inside(word: Word, blocks: Sequence[pymupdf.Rect]) -> bool:
    middle = (word.rect.tl + word.rect.br) / 2
    return any(block.contains(middle) for block in blocks)


def _boundaries(words: Sequence[Word]) -> tuple[str, list[int], list[int]]:
    """The words' keys run together, where each starts in the run, and the word at each character."""
    starts: list[int] = []
    owner: list[int] = []
    for index, word in enumerate(words):
        starts.append(len(owner))
        owner += [index] * len(word.key)
    return "".join(w.key for w in words), starts, owner


def exact_spans(words: Sequence[Word], quote: str) -> list[tuple[int, int]]:
    """(first, last) word of every place the quote's letters and digits run on in `words`, aligned to
    word starts and ends; a long quote cut inside a word (a passage split at its length) may start or
    end inside one."""
    key = fold(quote)
    if not key or not words:
        return []
    run, starts, owner = _boundaries(words)
    begins, ends = set(starts), {s + len(w.key) for s, w in zip(starts, words, strict=True)}
    aligned: list[tuple[int, int]] = []
    loose: list[tuple[int, int]] = []
    at = run.find(key)
    while at >= 0:
        span = (owner[at], owner[at + len(key) - 1])
        (aligned if at in begins and at + len(key) in ends else loose).append(span)
        at = run.find(key, at + 1)
    return aligned or (loose if len(key) >= 12 else [])


def _tokens(words: Sequence[Word]) -> list[tuple[str, int, int]]:
    """The words as a reader reads them: a word hyphenated at a line's end joined to its rest; (key,
    first word, last word)."""
    out: list[tuple[str, int, int]] = []
    index = 0
    while index < len(words):
        word = words[index]
        after = words[index + 1] if index + 1 < len(words) else None
        if word.hyphen and after is not None and after.line != word.line:
            out.append((word.key + after.key, index, index + 1))
            index += 2
        else:
            out.append((word.key, index, index))
            index += 1
    return out


def close_span(words: Sequence[Word], quote: str) -> tuple[int, int] | None:
    """(first, last) word of the window of the page's words, as long as the quote, that holds most of
    its words, at least CLOSE_SHARE of them; trimmed to the words the quote has at both ends."""
    wanted = Counter(k for k in (fold(t) for t in quote.split()) if k)
    size = sum(wanted.values())
    tokens = _tokens(words)
    if size < CLOSE_MIN_WORDS or not tokens:
        return None
    held: Counter[str] = Counter()
    shared = 0
    best: tuple[int, int] | None = None  # (words shared, window's first token)
    for end, (key, _, _) in enumerate(tokens):
        shared += held[key] < wanted[key]
        held[key] += 1
        start = end - size + 1
        if start > 0:
            gone = tokens[start - 1][0]
            held[gone] -= 1
            shared -= held[gone] < wanted[gone]
        if best is None or shared > best[0]:
            best = (shared, max(0, start))
    if best is None or best[0] < CLOSE_SHARE * size:
        return None
    window = [t for t in tokens[best[1] : best[1] + size] if t[0] in wanted]
    return window[0][1], window[-1][2]


def line_boxes(words: Sequence[Word], first: int, last: int, blocks: Sequence[pymupdf.Rect]) -> list[BBox]:
    """One box per line over words `first`..`last`, clipped to the block it is in."""
    lines: dict[tuple[int, int], pymupdf.Rect] = {}
    for word in words[first : last + 1]:
        lines[word.line] = lines[word.line] | word.rect if word.line in lines else pymupdf.Rect(word.rect)
    out = []
    for rect in lines.values():
        block = next((b for b in blocks if b.intersects(rect)), None)
        clipped = rect & block if block is not None else rect
        if not clipped.is_empty:
            out.append((clipped.x0, clipped.y0, clipped.x1, clipped.y1))
    return out


def _distance(boxes: Sequence[BBox], near: Sequence[BBox]) -> float:
    """How far a place is from the one before it: rows first (a row's value beside its key), then across."""
    if not near:
        return 0.0
    (x0, y0, x1, y1), (a0, b0, a1, b1) = boxes[0], near[0]
    return 3 * abs((y0 + y1) - (b0 + b1)) / 2 + abs((x0 + x1) - (a0 + a1)) / 2


def locate(page: pymupdf.Page, quotes: Sequence[str], blocks: Sequence[Sequence[float]] = ()) -> list[Located]:
    """Each quote's boxes among the words inside `blocks` (the whole page when none is given). A quote
    said more than once there is taken where it stands nearest the quote found before it: a row's value
    beside the row's key, whatever other row holds the same number."""
    shown = page.rect
    rects = [pymupdf.Rect(*b).normalize() + (-MARGIN, -MARGIN, MARGIN, MARGIN) for b in blocks] or [shown]
    words = [w for w in page_words(page) if _inside(w, rects)]
    out: list[Located] = []
    before: list[BBox] = []
    for quote in quotes:
        spans, how = exact_spans(words, quote), EXACT
        if not spans:
            close = close_span(words, quote)
            spans, how = ([close] if close else []), CLOSE
        places = [line_boxes(words, first, last, rects) for first, last in spans]
        places = [p for p in places if p]
        if not places:
            out.append(Located(quote))
            continue
        chosen = min(places, key=lambda p: _distance(p, before))
        out.append(Located(quote, chosen, how))
        before = chosen
    return out
