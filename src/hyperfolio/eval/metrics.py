"""Retrieval and answer metrics as pure functions of strings and page numbers.

Normalisation follows the SQuAD/Qasper convention the source papers use (lower-case,
drop punctuation and articles, fold whitespace) so numbers are comparable with the
literature. Containment checks (answer-recall, inclusion) add two guards of our own:
matches must fall on token boundaries (so "3" does not match "32"), and numbers keep
their decimal point and lose thousands separators (so "1,500" matches "1500" but
"1.5" does not match "15").
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence

from hyperfolio.phrases import numbers

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation) | {"‘", "’", "“", "”", "–", "—", "…", "•"}
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_DECIMAL = re.compile(r"(?<=\d)\.(?=\d)")
_DECIMAL_MARK = "\u2024"  # stand-in that survives punctuation stripping
_NUMBER = re.compile(r"^[-+]?\$?\s*\d[\d,]*(\.\d+)?\s*(%|percent)?$", re.I)

# Paragraph matching thresholds (see `paragraph_matches`).
COVER_MIN = 0.6
PURITY_MIN = 0.8
PIECE_MIN_TOKENS = 30
SHORT_PARAGRAPH_TOKENS = 12


# ---------------------------------------------------------------------------- normalisation
def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower-case, remove punctuation and articles, fold whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def normalize_for_match(text: str) -> str:
    """Normalisation for containment: like `normalize_answer`, number-aware, punctuation -> space.

    Punctuation becomes a space rather than vanishing because PDF text often glues
    words to punctuation ("revenue,which"); apostrophes vanish so "don't" == "dont".
    """
    text = text.lower().replace("'", "").replace("’", "")
    text = _THOUSANDS.sub("", text)
    text = _DECIMAL.sub(_DECIMAL_MARK, text)
    text = "".join(" " if ch in _PUNCT else ch for ch in text)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split()).replace(_DECIMAL_MARK, ".")


def answer_variants(answer: str) -> list[str]:
    """Normalised forms of a gold answer to look for; numbers also without % or trailing zeros."""
    base = normalize_for_match(answer)
    variants = [base] if base else []
    raw = answer.strip()
    if _NUMBER.match(raw):
        digits = re.sub(r"[,$%\s]|percent", "", raw, flags=re.I)
        forms = {digits}
        if "." in digits:
            stripped = digits.rstrip("0").rstrip(".")
            forms.add(stripped)
        for form in forms:
            form = normalize_for_match(form)
            if form and form not in variants:
                variants.append(form)
    return variants


def contains(haystack_normalised: str, needle_normalised: str) -> bool:
    """Token-boundary containment of one normalised string in another."""
    if not needle_normalised:
        return False
    return f" {needle_normalised} " in f" {haystack_normalised} "


# ---------------------------------------------------------------------------- retrieval metrics
def ranked_page_recall(
    pages: Sequence[tuple[str, int]], gold_pages: Iterable[int], doc_id: str | None = None
) -> float | None:
    """Fraction of gold evidence pages among a ranking's first pages (already cut to k, distinct).

    With `doc_id`, only that document's pages count. None when there are no gold pages."""
    gold = set(gold_pages)
    if not gold:
        return None
    found = {page for doc, page in pages if doc_id is None or doc == doc_id}
    return len(gold & found) / len(gold)


def answer_recall(texts: Sequence[str], targets: Sequence[str], require_all: bool = False) -> float | None:
    """Whether the gold answer appears in the retrieved text.

    `targets` are alternatives (any one counts: 1.0 or 0.0) or, with `require_all`,
    the items of a list answer (score = fraction of items present). None when there
    is nothing meaningful to look for (e.g. yes/no answers).
    """
    usable = [t for t in targets if normalize_for_match(t)]
    if not usable:
        return None
    haystack = normalize_for_match("\n".join(texts))

    def found(target: str) -> bool:
        return any(contains(haystack, v) for v in answer_variants(target))

    if require_all:
        return sum(found(t) for t in usable) / len(usable)
    return 1.0 if any(found(t) for t in usable) else 0.0


def _tokens(text: str) -> list[str]:
    return normalize_for_match(text).split()


def paragraph_matches(paragraph: str, chunk: str) -> bool:
    """Whether a retrieved chunk counts as retrieving a gold paragraph.

    Chunks are built independently of the benchmark's paragraphs: a chunk may hold
    several short paragraphs, or only a piece of a long one. With bag-of-token overlap
    `o` (multiset intersection of normalised tokens), `cover = o/|paragraph|` and
    `purity = o/|chunk|`, the paragraph is retrieved when
      (a) cover >= 0.6: the chunk holds most of the paragraph, or
      (b) purity >= 0.8 and o >= min(30, 0.6 |paragraph|): the chunk is a substantial
          piece cut from the paragraph (a long paragraph split across chunks).
    Bags of words make short texts match by accident, so a paragraph of at most 12
    tokens (typically a caption) must appear contiguously in the chunk instead.
    """
    gold = _tokens(paragraph)
    if not gold:
        return False
    got = _tokens(chunk)
    if not got:
        return False
    if len(gold) <= SHORT_PARAGRAPH_TOKENS:
        return contains(" ".join(got), " ".join(gold))
    overlap = sum((Counter(gold) & Counter(got)).values())
    if overlap / len(gold) >= COVER_MIN:
        return True
    return overlap / len(got) >= PURITY_MIN and overlap >= min(PIECE_MIN_TOKENS, COVER_MIN * len(gold))


def paragraph_recall(texts: Sequence[str], groups: Sequence[Sequence[str]]) -> float | None:
    """Best, over annotators, fraction of that annotator's gold paragraphs retrieved by `texts`."""
    best: float | None = None
    for group in groups:
        gold = [p for p in group if _tokens(p)]
        if not gold:
            continue
        hit = sum(any(paragraph_matches(p, t) for t in texts) for p in gold)
        score = hit / len(gold)
        best = score if best is None else max(best, score)
    return best


# ---------------------------------------------------------------------------- QA metrics
def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD token F1 between normalised prediction and gold."""
    pred = normalize_answer(prediction).split()
    ref = normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def inclusion(prediction: str, gold: str) -> float:
    """Inclusion accuracy: the normalised gold answer occurs in the normalised response."""
    response = normalize_for_match(prediction)
    return float(any(contains(response, v) for v in answer_variants(gold)))


def number_match(prediction: str, gold: str, tolerance: float = 0.01) -> float | None:
    """1 when a number of the prediction is within `tolerance` (relative) of the gold answer's first
    number; None when the gold states no number (FinanceBench's share of right numbers)."""
    wanted = numbers(gold)
    if not wanted:
        return None
    target = wanted[0]
    return float(any(abs(n - target) <= tolerance * max(abs(target), 1e-9) for n in numbers(prediction)))


def best_over(metric, prediction: str, golds: Sequence[str]) -> float | None:
    """Score against the most favourable gold answer, as multi-reference QA sets do."""
    scores = [score for g in golds if g.strip() and (score := metric(prediction, g)) is not None]
    return max(scores) if scores else None


# ---------------------------------------------------------------------------- aggregation
def mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile, q in [0, 100]."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)
