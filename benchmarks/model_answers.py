"""Answers a configured model gives on MMLongBench-Doc dev questions: how many hold the gold value.

    # a server you run yourself (SmolLM2 here: the only model on this machine)
    python -m llama_cpp.server --model SmolLM2-135M-Instruct.Q4_1.gguf --port 8766 --n_ctx 4096 \
        --n_threads 2 --model_alias smol &
    python benchmarks/model_answers.py --collection bench-out/dev-mm --base-url http://127.0.0.1:8766/v1 \
        --model smol --out bench-out/model-answers.jsonl
    # score saved replies again (e.g. replies an earlier release wrote, with this release's metrics)
    python benchmarks/model_answers.py --score bench-out/model-answers.jsonl

Only the answer is the model's: the collection is built offline (no model when it is missing) and
`auto` ranks the evidence. The questions are `--questions` answerable ones spread evenly over the
documents (every k-th in document order), the same on every run. A reply "holds the gold value" when
the gold answer's normalised text is inside it, or, for a numeric gold, when a number in the reply's
short answer is within 1 % of it. Prints per answer format (Str, Int, Float, List) and overall.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from hyperfolio import Collection
from hyperfolio.config import ModelOptions
from hyperfolio.eval.datasets import DatasetMissing, load_mmlongbench


def chosen_questions(count: int) -> list:  # noqa: ANN401 - EvalQuestion
    """`count` answerable questions spread evenly over the dev set in document order."""
    questions = [q for q in load_mmlongbench().questions if q.answerable and q.answers]
    questions.sort(key=lambda q: (q.doc_ref, q.qid))
    step = max(1, len(questions) // count)
    return questions[::step][:count]


def ask_all(collection_path: Path, base_url: str, model: str, count: int, out: Path) -> None:
    """Ask each chosen question with the model answering, and write one JSON line per reply."""
    dataset = load_mmlongbench()
    collection_path.parent.mkdir(parents=True, exist_ok=True)
    with Collection(collection_path) as offline:
        have = {Path(d.source).name for d in offline.documents()}
        missing = [p for p in dataset.documents if p.name not in have]
        if missing:
            print(f"indexing {len(missing)} documents offline into {collection_path}", file=sys.stderr)
            offline.add(missing)
        settings = offline.settings
    # A small model may run on to the end of its context: 400 tokens hold any answer and its citations.
    models = ModelOptions(answer_model=model, answer_base_url=base_url, timeout=600.0, max_retries=1, max_tokens=400)
    settings = dataclasses.replace(settings, models=models)
    with Collection(collection_path, settings=settings) as collection, out.open("w") as sink:
        for n, question in enumerate(chosen_questions(count), 1):
            began = time.perf_counter()
            answer = collection.ask(question.question, mode="auto", doc=question.doc_ref)
            row = {
                "qid": question.qid,
                "doc": question.doc_ref,
                "question": question.question,
                "gold": question.answers,
                "format": question.meta.get("answer_format", ""),
                "text": answer.text,
                "short": getattr(answer, "short", "") or "",
                "seconds": round(time.perf_counter() - began, 1),
            }
            sink.write(json.dumps(row) + "\n")
            sink.flush()
            print(f"[{n}/{count}] {row['seconds']:.0f}s {question.question[:60]!r} -> {answer.text[:80]!r}")


def holds_gold(row: dict) -> bool:
    """Whether the reply states the gold value (inclusion on the reply, or a number within 1 %)."""
    from hyperfolio.answer.short import short_of_reply
    from hyperfolio.eval import metrics as m

    text = row["text"]
    short = row.get("short") or short_of_reply(row["question"], text)
    if m.best_over(m.inclusion, text, row["gold"]):
        return True
    return bool(m.best_over(m.number_match, short, row["gold"]))


def score(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by_format: dict[str, list[bool]] = {}
    for row in rows:
        by_format.setdefault(row["format"] or "?", []).append(holds_gold(row))
    print(f"{path}: {len(rows)} replies, mean {sum(r['seconds'] for r in rows) / max(len(rows), 1):.1f} s each")
    for name, held in sorted(by_format.items()):
        print(f"  {name:6} {sum(held):3d} / {len(held):3d} hold the gold value ({100 * sum(held) / len(held):.1f} %)")
    total = [h for held in by_format.values() for h in held]
    print(f"  all    {sum(total):3d} / {len(total):3d} ({100 * sum(total) / max(len(total), 1):.1f} %)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collection", type=Path, default=Path("bench-out/dev-mm"))
    parser.add_argument("--base-url", default="http://127.0.0.1:8766/v1")
    parser.add_argument("--model", default="smol")
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path("bench-out/model-answers.jsonl"))
    parser.add_argument("--score", type=Path, help="only score a replies file written earlier")
    args = parser.parse_args()
    if args.score:
        score(args.score)
        return
    try:
        ask_all(args.collection, args.base_url, args.model, args.questions, args.out)
    except DatasetMissing as exc:
        sys.exit(f"skipped: {exc}")
    score(args.out)


if __name__ == "__main__":
    main()
