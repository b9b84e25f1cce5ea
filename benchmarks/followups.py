"""Follow-up questions against the same questions asked on their own: page recall@5.

Pairs come from a dev set: two answerable questions on the same document, one after the other in the set's
order. The second is turned into a follow-up of the first by a procedure that knows nothing of the
rewriter's rules, the way people shorten a question they ask next: the longest run of words it shares
with the first question (two content words at least, or one name; never the benchmark's answer-format
instructions, "Please write the answer in float format") becomes "it"/"they". A pair sharing nothing is
skipped (its second question would not lean on the first). Each pair is asked three ways with `auto`, of
the question's own document (or, with --whole-collection, of every document, as a chat tool asks):

- standalone: the second question as written in the benchmark;
- follow-up, read alone: the follow-up without history (what a system with no conversation does);
- follow-up, rewritten: `Collection.ask`'s rewrite from the first turn (its question and its answer).

    python benchmarks/followups.py mmlongbench bench-out/new9-mm
    python benchmarks/followups.py financebench bench-out/new9-fb --whole-collection
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

from dev_args import dev_set_args

from hyperfolio.collection import Collection
from hyperfolio.dialogue import Turn
from hyperfolio.eval.datasets import EvalQuestion
from hyperfolio.eval.metrics import ranked_page_recall
from hyperfolio.phrases import is_content_word

K = 5
# The benchmark's instructions on how to write the answer: shared by many questions, never what one refers to.
INSTRUCTIONS = {
    "please", "write", "answer", "format", "list", "float", "integer", "int", "string", "decimal", "decimals",
    "example", "e.g.", "directly", "order", "ascending", "descending", "represent", "formatted",
}  # fmt: skip
_WORD = re.compile(r"[A-Za-z0-9][\w'&.-]*")


def shorten(first: str, second: str) -> str | None:
    """`second` as a follow-up of `first`: its longest shared run of words said as a pronoun; None when
    the two share no run worth pointing back to."""
    words = _WORD.findall(second)
    seen = {w.lower() for w in _WORD.findall(first)}
    best: tuple[int, int] = (0, 0)
    start = 0
    while start < len(words):
        end = start
        while end < len(words) and words[end].lower() in seen:
            end += 1
        run = words[start:end]
        content = [w for w in run if is_content_word(w.lower())]
        if any(w.lower() in INSTRUCTIONS for w in run):
            content = []
        named = len(content) == 1 and content[0][:1].isupper() and start > 0
        if (len(content) >= 2 or named) and end - start > best[1] - best[0]:
            best = (start, end)
        start = max(end, start + 1)
    if best == (0, 0):
        return None
    run = words[best[0] : best[1]]
    while run and not is_content_word(run[0].lower()):  # "the revenue" -> "it", not "the it"
        run = run[1:]
    phrase = " ".join(run)
    pronoun = "they" if run[-1].lower().endswith("s") and not run[-1].lower().endswith("ss") else "it"
    pattern = re.compile(r"\b(?:the\s+)?" + re.escape(phrase) + r"\b", re.IGNORECASE)
    shortened = pattern.sub(pronoun, second, count=1)
    return shortened if shortened != second else None


def pairs(questions: list[EvalQuestion]) -> list[tuple[EvalQuestion, EvalQuestion, str]]:
    by_doc: dict[str, list[EvalQuestion]] = defaultdict(list)
    for q in questions:
        if q.answerable and q.evidence_pages:
            by_doc[q.doc_ref].append(q)
    out = []
    for asked in by_doc.values():
        for first, second in zip(asked, asked[1:], strict=False):
            followup = shorten(first.question, second.question)
            if followup is not None:
                out.append((first, second, followup))
    return out


def recall(
    col: Collection, question: str, doc: str, gold: list[int], history: list[Turn] | None = None, scoped: bool = True
) -> float:
    """Page recall@K of the gold document's pages, the question asked of its document (`scoped`) or of the
    whole collection, read against `history` as `Collection.ask` reads it."""
    asking = col.prepare(question, history or [], mode="auto", doc=doc if scoped else None)
    evidence = asking.evidence
    pages = [(p.doc_id, p.page) for p in evidence.ranked_pages[:K]]
    return ranked_page_recall(pages, gold, doc) or 0.0


def main() -> int:
    verbose = "--verbose" in sys.argv  # each pair's three forms
    scoped = "--whole-collection" not in sys.argv  # asked of the question's document, or of every document
    for flag in ("--verbose", "--whole-collection"):
        if flag in sys.argv:
            sys.argv.remove(flag)
    parsed = dev_set_args(__doc__.split("\n\n")[0], limit=0)
    if parsed is None:
        return 0
    args, data = parsed
    with Collection(args.collection) as col:
        ids = {Path(d.source).name: d.doc_id for d in col.documents()}
        chosen = [p for p in pairs([q for q in data.questions if q.doc_ref in ids])]
        if args.limit:
            chosen = chosen[: args.limit]
        totals = {"standalone": 0.0, "follow-up read alone": 0.0, "follow-up rewritten": 0.0}
        for first, second, followup in chosen:
            doc = ids[second.doc_ref]
            answer = col.ask(first.question, doc=doc if scoped else None, mode="auto")
            turn = Turn.of(answer, first.question, [doc] if scoped else [])
            gold = second.evidence_pages
            totals["standalone"] += recall(col, second.question, doc, gold, scoped=scoped)
            totals["follow-up read alone"] += recall(col, followup, doc, gold, scoped=scoped)
            totals["follow-up rewritten"] += recall(col, followup, doc, gold, [turn], scoped=scoped)
            if verbose:
                standalone = col.followup(followup, [turn], {})[0].standalone
                print(f"  {second.question!r}\n    -> {followup!r}\n    -> {standalone!r}")
        n = len(chosen)
        where = "its document" if scoped else "the whole collection"
        print(f"{args.dataset}: {n} follow-up pairs (of {len(data.questions)} questions), asked of {where},")
        print(f"  page recall@{K} of the gold document's pages, auto:")
        for name, total in totals.items():
            print(f"  {name:22s} {100 * total / max(1, n):5.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
