"""Citation precision of the language-model answerer, as the model cites and after the support check.

    python benchmarks/citation_precision.py --base-url http://127.0.0.1:8080/v1 --model smol --limit 20
    python benchmarks/citation_precision.py --base-url ... --model ... --collection eval-out/dual/mm

The first N answerable MMLongBench-Doc dev questions whose gold answer a chunk can hold (not yes/no)
are retrieved offline (scoped to their document; top k of the mode) and answered by the model once
each. The reply is read twice: with the citations as the model gave them ("before") and after the
support check (`hyperfolio.answer.citations`, "after"). Prints, for both, citation precision (cited
chunks holding the gold answer, normalised the same way as the check / cited chunks), citations per
answer, and the share of answers with at least one citation holding the gold (what the check must
not lose). A list answer counts as held by a chunk holding any of its items. Without --collection,
the questions' documents are indexed offline into bench-out/citation-precision/collection (kept:
a second run reuses it). Skips with a message when the data is absent.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from hyperfolio import Collection, Settings
from hyperfolio.answer.citations import TextIndex, contains_answer, evidence_text
from hyperfolio.answer.model import LLMAnswerer
from hyperfolio.config import ModelOptions
from hyperfolio.eval.datasets import DatasetMissing, EvalQuestion, load_mmlongbench
from hyperfolio.llm.errors import ModelCallError
from hyperfolio.llm.registry import ModelSet
from hyperfolio.model import Answer, EvidencePackage

DEFAULT_COLLECTION = Path("bench-out/citation-precision/collection")


def checkable(question: EvalQuestion) -> bool:
    """Whether some chunk could hold the gold answer ("Yes" or "No" cannot be found in a text)."""
    targets, _ = question.recall_targets
    return any(contains_answer(t, "") is not None for t in targets)


def holds_gold(question: EvalQuestion, index: TextIndex) -> bool:
    """Whether a chunk holds the question's gold answer: any alternative, or any item of a list."""
    targets, _ = question.recall_targets
    return any(contains_answer(t, index) for t in targets)


@dataclass
class Tally:
    """Citations of answers, and how many of them hold the gold answer."""

    answers: int = 0
    cited: int = 0
    holding: int = 0
    answers_holding: int = 0  # answers with at least one citation holding the gold

    def add(self, flags: list[bool]) -> None:
        self.answers += 1
        self.cited += len(flags)
        self.holding += sum(flags)
        self.answers_holding += any(flags)

    def row(self, label: str) -> str:
        precision = self.holding / self.cited if self.cited else 0.0
        per_answer = self.cited / self.answers if self.answers else 0.0
        found = self.answers_holding / self.answers if self.answers else 0.0
        return (
            f"| {label} | {100 * precision:.1f}% ({self.holding}/{self.cited}) | {per_answer:.2f} "
            f"| {100 * found:.1f}% |"
        )


def citation_flags(question: EvalQuestion, answer: Answer, evidence: EvidencePackage) -> list[bool]:
    """For each citation of the answer, whether its chunk holds the gold answer."""
    chunks = {item.chunk.chunk_id: item.chunk for item in evidence.items}
    return [
        c.chunk_id in chunks and holds_gold(question, TextIndex.of(evidence_text(chunks[c.chunk_id])))
        for c in answer.citations
    ]


def index_documents(col: Collection, paths: list[Path]) -> dict[str, str]:
    """File name -> doc_id of the ready documents, adding the missing ones offline first."""
    present = {Path(d.source).name for d in col.documents() if d.status == "ready"}
    missing = [p for p in paths if p.name not in present]
    if missing:
        print(f"indexing {len(missing)} document(s) offline (once; the collection is kept) ...", flush=True)
        started = time.monotonic()
        for result in col.add(missing).results:
            print(f"  {Path(result.path).name}: {result.status} {result.reason or ''}".rstrip(), flush=True)
        print(f"  indexed in {time.monotonic() - started:.0f} s", flush=True)
    return {Path(d.source).name: d.doc_id for d in col.documents() if d.status == "ready"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", required=True, help="the OpenAI-compatible server's /v1 URL")
    parser.add_argument("--model", required=True, help="the model name the server answers to")
    parser.add_argument("--api-key", default="", help="for hosted servers (else $OPENAI_API_KEY, if any)")
    parser.add_argument("--limit", type=int, default=20, help="questions to answer (N)")
    parser.add_argument("--doc", help="only questions about this file name")
    parser.add_argument("--collection", type=Path, help=f"an indexed dev collection (default {DEFAULT_COLLECTION})")
    parser.add_argument("--mode", default="auto", help="retrieval mode of the evidence")
    parser.add_argument("--k", type=int, default=10, help="chunks of evidence (the answerer shows at most 10)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds of server silence per call")
    args = parser.parse_args()
    try:
        data = load_mmlongbench()
    except DatasetMissing as exc:
        print(f"skipped: {exc}")
        return 0
    questions = [q for q in data.questions if checkable(q) and (args.doc is None or q.doc_ref == args.doc)]
    questions = questions[: args.limit]
    if not questions:
        print("skipped: no dev question matches")
        return 0
    documents = {p.name: p for p in data.documents}
    options = ModelOptions(
        base_url=args.base_url, model=args.model, api_key=args.api_key, timeout=args.timeout, cache=False
    )
    # Offline settings for the collection: retrieval must not depend on the model under test.
    with Collection(args.collection or DEFAULT_COLLECTION, settings=Settings()) as col, ModelSet(options) as models:
        names = index_documents(col, sorted({documents[q.doc_ref] for q in questions}))
        chat = models.get("answer")
        assert chat is not None  # a model name was given
        answerer = LLMAnswerer(chat, col.answerer)
        before, after = Tally(), Tally()
        outcomes: Counter[str] = Counter()
        skipped: Counter[str] = Counter()
        started = time.monotonic()
        for number, q in enumerate(questions, 1):
            if q.doc_ref not in names:
                skipped["document not indexed"] += 1
                continue
            evidence = col.retrieve(q.question, mode=args.mode, k=args.k, doc=names[q.doc_ref])
            if not answerer.shown(q.question, evidence)[0]:
                skipped["no evidence"] += 1
                continue
            try:
                reply = answerer.reply(q.question, evidence)  # the one model call of this question
            except ModelCallError as exc:
                skipped["model call failed"] += 1
                print(f"  {q.qid}: model call failed: {exc.reason[:120]}", flush=True)
                continue
            given = answerer.from_reply(q.question, evidence, reply, check=False)
            checked = answerer.from_reply(q.question, evidence, reply, check=True)
            if given.answerer != answerer.name:  # the extractive fallback: the reply cited nothing shown
                skipped["no valid citation in the reply"] += 1
                continue
            if not given.sufficient:
                skipped["model said insufficient"] += 1
                continue
            before.add(citation_flags(q, given, evidence))
            after.add(citation_flags(q, checked, evidence))
            outcomes[str(checked.meta.get("citation_support"))] += 1
            print(
                f"  [{number}/{len(questions)}] {q.qid}: {len(given.citations)} -> {len(checked.citations)} "
                f"citations ({checked.meta.get('citation_support')})",
                flush=True,
            )
    print(
        f"\n{len(questions)} MMLongBench-Doc dev questions, mode {args.mode}, top {args.k}; model {args.model} at "
        f"{args.base_url}; {before.answers} answered with citations in {time.monotonic() - started:.0f} s"
    )
    if skipped:
        print("not counted: " + ", ".join(f"{reason} {n}" for reason, n in skipped.most_common()))
    print("\n| citations | precision (hold the gold) | per answer | answers citing the gold |")
    print("| --- | --- | --- | --- |")
    print(before.row("as the model gave them"))
    print(after.row("after the support check"))
    if outcomes:
        print("\nsupport check: " + ", ".join(f"{status} {n}" for status, n in outcomes.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
