"""Where the answer is inside the cited block, on real documents: MMLongBench-Doc dev questions whose
gold answer is a short span, asked of their document; the first citation's page drawn with the block
outlined and its quote (or cells) marked inside it, and per question whether the quote was found on
the page and whether it holds the gold answer.

    python benchmarks/highlights.py [bench-out/new9-mm] [--questions 5] [--out /tmp/highlights]

Questions are taken in the dataset's order by one rule (a string, integer or float answer of at most
five words, evidence in the text or a table, a document the collection holds), not picked one by one.
Skips with one line when the benchmark data (../shared/data) or the collection is absent.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hyperfolio.answer.citations import contains_answer
from hyperfolio.collection import Collection
from hyperfolio.eval.datasets import DatasetMissing, EvalQuestion, load_mmlongbench

SHORT_FORMATS = {"Str", "Int", "Float"}
LOCATABLE = {"Pure-text", "Table"}  # a chart's or a figure's answer is its picture: nothing to mark in it
MAX_WORDS = 5


def short_span(question: EvalQuestion) -> bool:
    answer = question.answers[0]
    return (
        question.meta.get("answer_format") in SHORT_FORMATS
        and len(answer.split()) <= MAX_WORDS
        and bool(LOCATABLE & set(question.evidence_sources))
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collection", type=Path, nargs="?", default=Path("bench-out/new9-mm"))
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("/tmp/highlights"))
    parser.add_argument("--dpi", type=int, default=110)
    args = parser.parse_args()
    try:
        questions = load_mmlongbench().questions
    except DatasetMissing as exc:
        print(f"skipped: {exc}")
        return 0
    if not (args.collection / "hyperfolio.db").exists():
        print(f"skipped: no collection at {args.collection}")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    with Collection(args.collection) as col:
        docs = {Path(d.source).name: d.doc_id for d in col.documents() if d.kind == "pdf"}
        chosen = [q for q in questions if q.doc_ref in docs and short_span(q)][: args.questions]
        if not chosen:
            print("skipped: none of the collection's documents has a short-span question in the dev set")
            return 0
        located = holding = 0
        for q in chosen:
            answer = col.ask(q.question, doc=docs[q.doc_ref])
            print(f"{q.qid} {q.doc_ref}: {q.question}")
            print(f"  gold {q.answers[0]!r} on pages {q.evidence_pages}; answered {answer.short or answer.text[:80]!r}")
            if not answer.citations:
                print("  no citation")
                continue
            cited = answer.citations[0]
            quotes = cited.quotes()
            where = col.page_regions(cited.doc_id, cited.page, [cited.bbox] if cited.bbox else [], quotes)
            found = [q_["found"] for q_ in where["quotes"]]
            png = args.out / f"{q.qid}-p{cited.page}.png"
            png.write_bytes(
                col.page_image(cited.doc_id, cited.page, [cited.bbox] if cited.bbox else [], args.dpi, quotes)
            )
            said = " | ".join(quotes) or "(none)"
            holds = contains_answer(q.answers[0], said) if quotes else False
            located += bool(quotes) and all(found)
            holding += bool(holds)
            print(f"  cited page {cited.page} ({cited.modality}), quote: {said[:160]!r}")
            print(f"  located: {found or 'no quote'}; the quote holds the gold answer: {holds}; picture {png}")
        print(f"{located}/{len(chosen)} quotes located on their page, {holding}/{len(chosen)} holding the gold answer")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
