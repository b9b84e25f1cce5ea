"""Would a document-first stage help questions asked of a whole collection? For every dev question asked
of its whole collection: the rank of its gold document under several document scorers (document
recall@1/3/5), and `auto`'s page recall when the question is narrowed to the top M documents of the
best scorer, against `auto` over the whole collection and scoped to the gold document.

    python benchmarks/doc_first.py mmlongbench eval-out/dev/mm
    python benchmarks/doc_first.py qasper eval-out/dev/qasper

Scorers: `bm25doc` (Okapi BM25 with each document as one bag of words), `cover` (the share of the
question's IDF weight the document holds), `bestpage` (that share on the document's best page), `auto`
(the order in which `auto`'s page ranking reaches documents), `carddense` (the cosine of the question and
the document's card text under the chunk embedder), `fused` (reciprocal-rank fusion of bm25doc, bestpage
and auto) and `auto+cards` (fusion of auto and carddense). The shipped ranker was fitted on these
questions, so the `auto` figures are in-sample: read them for the difference between whole collection and
narrowed, not as held-out recall.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from dev_args import dev_set_args

from hyperfolio.cards.card import stored_card
from hyperfolio.collection import Collection
from hyperfolio.eval.datasets import EvalQuestion
from hyperfolio.eval.runner import score_package
from hyperfolio.model import DocumentInfo, EvidencePackage
from hyperfolio.phrases import content_words
from hyperfolio.retrieve.word_sets import fold_word as _stem

K = (1, 5, 10)
TOP_M = (1, 3, 5)
RRF_K = 10


def words(text: str) -> list[str]:
    return [_stem(w) for w in content_words(text)]


class DocumentStats:
    """Each document's words (whole, and per page) and their document frequencies over the collection."""

    def __init__(self, col: Collection, doc_ids: list[str]) -> None:
        self.tf: dict[str, Counter[str]] = {}
        self.pages: dict[str, list[Counter[str]]] = {}
        for doc_id in doc_ids:
            whole: Counter[str] = Counter()
            pages: dict[int, Counter[str]] = defaultdict(Counter)
            for chunk in col.store.iter_chunks(doc_id):
                listed = words(chunk.text)
                whole.update(listed)
                pages[chunk.page].update(listed)
            self.tf[doc_id], self.pages[doc_id] = whole, list(pages.values())
        self.length = {d: sum(c.values()) for d, c in self.tf.items()}
        self.avg = sum(self.length.values()) / max(1, len(self.length))
        self.df = Counter(w for c in self.tf.values() for w in c)

    def idf(self, word: str) -> float:
        n, df = len(self.tf), self.df[word]
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def bm25doc(self, question: str, k1: float = 1.2, b: float = 0.75) -> dict[str, float]:
        asked = set(words(question))
        out = {}
        for doc_id, tf in self.tf.items():
            norm = k1 * (1 - b + b * self.length[doc_id] / self.avg)
            out[doc_id] = sum(self.idf(w) * tf[w] * (k1 + 1) / (tf[w] + norm) for w in asked if tf[w])
        return out

    def cover(self, question: str) -> dict[str, float]:
        asked = set(words(question))
        total = sum(self.idf(w) for w in asked) or 1.0
        return {d: sum(self.idf(w) for w in asked if w in tf) / total for d, tf in self.tf.items()}

    def bestpage(self, question: str) -> dict[str, float]:
        asked = set(words(question))
        total = sum(self.idf(w) for w in asked) or 1.0
        return {
            d: max((sum(self.idf(w) for w in asked if w in page) / total for page in pages), default=0.0)
            for d, pages in self.pages.items()
        }


class CardVectors:
    """Each document's card text (`DocumentCard.text()`, its title when it has no card) embedded with the
    collection's chunk embedder, for a dense document scorer over cards."""

    def __init__(self, col: Collection, documents: list[DocumentInfo]) -> None:
        texts = []
        for info in documents:
            card = stored_card(info.meta, info.doc_id)
            texts.append((card.text() if card is not None else "") or info.title)
        self.embedder = col.parts.embedder
        self.ids = [d.doc_id for d in documents]
        self.matrix = _unit(np.asarray(self.embedder.embed(texts), dtype=np.float32))

    def scores(self, question: str) -> dict[str, float]:
        asked = _unit(np.asarray(self.embedder.embed([question]), dtype=np.float32))[0]
        return dict(zip(self.ids, (self.matrix @ asked).tolist(), strict=True))


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / (np.linalg.norm(rows, axis=1, keepdims=True) + 1e-9)


def order(scores: dict[str, float]) -> list[str]:
    return [d for d, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]


def fused(orders: list[list[str]]) -> list[str]:
    total: dict[str, float] = defaultdict(float)
    for ranked in orders:
        for rank, doc_id in enumerate(ranked, start=1):
            total[doc_id] += 1.0 / (RRF_K + rank)
    return order(total)


class Tally:
    def __init__(self) -> None:
        self.ranks: dict[str, list[int]] = defaultdict(list)
        self.recall: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        self.seconds: dict[str, list[float]] = defaultdict(list)

    def timed(self, name: str, run: Callable[..., EvidencePackage], *args: Any, **kwargs: Any) -> EvidencePackage:
        began = time.perf_counter()
        evidence = run(*args, **kwargs)
        self.seconds[name].append(time.perf_counter() - began)
        return evidence

    def score(self, name: str, question: EvalQuestion, evidence: EvidencePackage, kind: str, gold: str) -> None:
        recall, _ = score_package(question, evidence, kind, K, gold)
        for k in K:
            value = recall[k]
            if value is not None:
                self.recall[name][k].append(float(value))

    def print(self) -> None:
        for name, ranks in self.ranks.items():
            a = np.array(ranks)
            print(f"  {name:9s} doc-R@1 {np.mean(a <= 1) * 100:5.1f}  @3 {np.mean(a <= 3) * 100:5.1f}", end="")
            print(f"  @5 {np.mean(a <= 5) * 100:5.1f}")
        for name, per_k in self.recall.items():
            figures = "  ".join(f"R@{k} {np.mean(per_k[k]) * 100:5.1f}" for k in K)
            print(f"  auto {name:14s} {figures}")
        for name, spent in self.seconds.items():
            p50, p95 = np.percentile(spent, 50) * 1000, np.percentile(spent, 95) * 1000
            print(f"  time {name:14s} p50 {p50:.0f} ms  p95 {p95:.0f} ms")


def main() -> int:
    parsed = dev_set_args(__doc__.split("\n\n")[0], limit=0)
    if parsed is None:
        return 0
    args, data = parsed
    tally = Tally()
    with Collection(args.collection) as col:
        ready = [d for d in col.documents() if d.status == "ready"]
        names = {Path(d.source).name: d.doc_id for d in ready}
        questions = [q for q in data.questions if q.doc_ref in names][: args.limit or None]
        stats = DocumentStats(col, [d.doc_id for d in ready])
        cards = CardVectors(col, ready)
        for question in questions:
            text, gold = question.question, names[question.doc_ref]
            whole = tally.timed("collection", col.retrieve, text, mode="auto")
            tally.score("collection", question, whole, data.evidence, gold)
            scorers = {
                "bm25doc": order(stats.bm25doc(text)),
                "cover": order(stats.cover(text)),
                "bestpage": order(stats.bestpage(text)),
                "auto": list(dict.fromkeys(doc for doc, _ in whole.page_ranking(50))),
            }
            scorers["carddense"] = order(cards.scores(text))
            scorers["fused"] = fused([scorers["bm25doc"], scorers["bestpage"], scorers["auto"]])
            scorers["auto+cards"] = fused([scorers["auto"], scorers["carddense"]])
            for name, ranked in scorers.items():
                tally.ranks[name].append(ranked.index(gold) + 1 if gold in ranked else len(names) + 1)
            for m in TOP_M:
                top = scorers["fused"][:m]
                narrowed = tally.timed(f"fused top {m}", col.retrieve, text, mode="auto", doc=top)
                tally.score(f"fused top {m}", question, narrowed, data.evidence, gold)
            tally.score("scoped", question, col.retrieve(text, mode="auto", doc=gold), data.evidence, gold)
    print(f"{args.dataset}: {len(questions)} questions, {len(names)} documents")
    tally.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
