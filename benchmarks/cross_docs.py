"""Questions across documents, built from FinanceBench dev's single-filing questions, asked of the whole
collection.

    python benchmarks/cross_docs.py --collection eval-out/dev/fb [--strategies auto,hybrid,bm25]

FinanceBench dev holds several filings of the same companies (Adobe 2016 and 2017, JPMorgan's three
10-Qs...). Two of its questions about two different filings make one question across them: the first
question, then "Also:" and the second. Pairs are of the same company (periods compared) and of two
companies (organisations compared), every pair of filings once, deterministically. Each pair keeps both
gold answers and both filings' evidence pages, so it is judged without anyone writing new gold:

- all-docs R@10: every needed filing has a gold page among the top 10 ranked pages;
- per-doc R@10: the share of needed filings that have one;
- routed: the question was routed to a set of filings holding its own (auto only); exactly: to its own only;
- both cited: the offline answer cites each needed filing;
- answer: each gold answer is contained in the offline answer (normalised), averaged over the two;
- conflict: the offline answer carries a line on values the filings state differently
  ("Documents differ on ...", answer/conflicts.py).

Prints one row per strategy and kind of pair, then the conflict lines found (`--show-conflicts`, to read
and judge: a real disagreement about one quantity, or not). Skips with a message when the data or
collection is absent.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

from hyperfolio.collection import Collection
from hyperfolio.eval.datasets import DatasetMissing, EvalQuestion, load_dataset
from hyperfolio.eval.metrics import inclusion, mean


@dataclass(frozen=True)
class Pair:
    first: EvalQuestion
    second: EvalQuestion
    kind: str  # "periods" (one company, two filings) or "organisations" (two companies)

    @property
    def question(self) -> str:
        return f"{self.first.question.strip()} Also: {self.second.question.strip()}"


def build_pairs(questions: list[EvalQuestion], per_kind: int) -> list[Pair]:
    """One pair per pair of filings (the first question of each), same company first, up to `per_kind`."""
    by_filing: dict[str, EvalQuestion] = {}
    for q in questions:
        by_filing.setdefault(q.doc_ref, q)
    pairs: dict[str, list[Pair]] = {"periods": [], "organisations": []}
    for a, b in itertools.combinations(sorted(by_filing), 2):
        qa, qb = by_filing[a], by_filing[b]
        kind = "periods" if qa.meta.get("company") == qb.meta.get("company") else "organisations"
        pairs[kind].append(Pair(qa, qb, kind))
    return pairs["periods"][:per_kind] + pairs["organisations"][:per_kind]


CONFLICT = "Documents differ on "


def judge(col: Collection, pair: Pair, strategy: str, doc_ids: dict[str, str], lines: list[str]) -> dict[str, float]:
    """The pair's scores; the answer's conflict lines are added to `lines` (with the question)."""
    needed = {doc_ids[q.doc_ref]: set(q.evidence_pages) for q in (pair.first, pair.second)}
    answer = col.ask(pair.question, mode=strategy, k=10)
    pages = answer.evidence.page_ranking(10)
    found = {d: any(doc == d and page in gold for doc, page in pages) for d, gold in needed.items()}
    routed = {r["doc_id"] for r in answer.evidence.meta.get("routed_to", [])}
    cited = {c.doc_id for c in answer.citations}
    scores = [inclusion(answer.text, q.answers[0]) for q in (pair.first, pair.second)]
    conflicts = [CONFLICT + part.strip() for part in answer.text.split(CONFLICT)[1:]]
    lines += [f"{strategy} | {pair.question}\n    {line}" for line in conflicts]
    return {
        "all_docs_r10": float(all(found.values())),
        "per_doc_r10": sum(found.values()) / len(found),
        "routed": float(set(needed) <= routed),
        "routed_exactly": float(routed == set(needed)),
        "both_cited": float(set(needed) <= cited),
        "answer": sum(scores) / len(scores),
        "conflict": float(bool(conflicts)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection", type=Path, default=Path("eval-out/dev/fb"))
    parser.add_argument("--strategies", default="auto,hybrid,bm25")
    parser.add_argument("--per-kind", type=int, default=30, help="pairs of each kind at most")
    parser.add_argument("--cache", type=Path, default=Path("eval-out/cache"))
    parser.add_argument("--show-conflicts", type=int, default=20, help="conflict lines printed at most")
    args = parser.parse_args()
    try:
        dataset = load_dataset("financebench", cache_dir=args.cache)
    except DatasetMissing as exc:
        print(f"skipped: {exc}")
        return 0
    if not args.collection.exists():
        print(f"skipped: no collection at {args.collection} (index the filings with hyperfolio add)")
        return 0
    with Collection(args.collection) as col:
        doc_ids = {Path(d.source).name: d.doc_id for d in col.documents() if d.status == "ready"}
        pairs = [
            p
            for p in build_pairs(dataset.questions, args.per_kind)
            if {p.first.doc_ref, p.second.doc_ref} <= set(doc_ids)
        ]
        print(f"{len(pairs)} pairs over {len(doc_ids)} filings", flush=True)
        print(
            "| strategy | pairs | n | all-docs R@10 | per-doc R@10 | routed | exactly | both cited | answer"
            " | conflict |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        lines: list[str] = []
        for strategy in args.strategies.split(","):
            for kind in ("periods", "organisations"):
                rows = [judge(col, p, strategy, doc_ids, lines) for p in pairs if p.kind == kind]
                cells = [100 * (mean([r[key] for r in rows]) or 0.0) for key in rows[0]] if rows else []
                print(f"| {strategy} | {kind} | {len(rows)} | " + " | ".join(f"{v:.1f}" for v in cells) + " |")
        print(f"\n{len(lines)} conflict lines; the first {min(len(lines), args.show_conflicts)}:")
        for line in lines[: args.show_conflicts]:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
