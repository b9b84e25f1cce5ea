"""Offline answers to MMLongBench-Doc table questions, with and without reading table cells.

    python benchmarks/table_answers.py --collection eval-out/dual/mm [--mode hybrid]

For every answerable dev question whose evidence includes a table, the same evidence (top 10 of
the chosen mode) is answered by the extractive answerer twice: as it is, and with the cell lookup
(row key x header path, `answer.table_answers.table_cell`) switched off. The answer scored is the
short answer where the answerer gives one (as `hyperfolio eval --answers` scores it), else its
passages. Prints exact match, token F1 and inclusion for both. Skips with a message when the data is
absent.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from unittest import mock

from hyperfolio.answer import extractive
from hyperfolio.collection import Collection
from hyperfolio.eval import metrics as m
from hyperfolio.eval.datasets import DatasetMissing, load_mmlongbench
from hyperfolio.eval.extraction import extract_answer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, required=True, help="the MMLongBench-Doc dev collection")
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    try:
        data = load_mmlongbench()
    except DatasetMissing as exc:
        print(f"skipped: {exc}")
        return 0
    with Collection(args.collection) as col:
        names = {Path(d.source).name: d.doc_id for d in col.documents() if d.status == "ready"}
        questions = [q for q in data.questions if q.doc_ref in names and "Table" in q.evidence_sources]
        scores: dict[str, list[tuple[float, float, float]]] = {"with cells": [], "without cells": []}
        for q in questions:
            evidence = col.retrieve(q.question, mode=args.mode, k=args.k, doc=names[q.doc_ref])
            for label in scores:
                if label == "with cells":
                    reply = col.answerer.answer(q.question, evidence)
                else:
                    with mock.patch.object(extractive, "table_cell", lambda question, item: None):
                        reply = col.answerer.answer(q.question, evidence)
                said = " ".join(reply.support) if reply.sufficient else ""
                short = reply.short if reply.sufficient and reply.short else extract_answer(None, q.question, said)
                scores[label].append(
                    (
                        m.best_over(m.exact_match, short, q.answers),
                        m.best_over(m.token_f1, short, q.answers),
                        m.best_over(m.inclusion, said, q.answers),
                    )
                )
    print(f"{len(questions)} table questions, mode {args.mode}, top {args.k} chunks")
    print("| answerer | EM | F1 | inclusion |\n| --- | --- | --- | --- |")
    for label, rows in scores.items():
        em, f1, inc = (100 * sum(r[i] for r in rows) / max(1, len(rows)) for i in range(3))
        print(f"| {label} | {em:.1f} | {f1:.1f} | {inc:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
