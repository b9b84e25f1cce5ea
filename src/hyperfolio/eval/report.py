"""Writing an evaluation result as a Markdown summary and a complete JSON record."""

from __future__ import annotations

import json
from pathlib import Path

from hyperfolio.eval.metrics import mean
from hyperfolio.eval.runner import EvalResult, Summary


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def recall_name(result: EvalResult) -> str:
    return "page recall" if result.evidence == "pages" else "paragraph recall"


def overall_table(result: EvalResult) -> list[str]:
    """Rows = strategy; recall@k, document recall@1, answer-recall@max k, latency, n (and QA metrics if computed)."""
    top = max(result.k_values)
    header = ["strategy"] + [f"R@{k}" for k in result.k_values] + ["doc-R@1", f"ans-R@{top}", "n", "n(ans)"]
    header += ["p50 ms", "p95 ms"]
    if result.answers:
        header += ["EM", "F1", "incl.", "num ±1%"]
    rows = []
    for strategy in result.strategies:
        s: Summary = result.overall[strategy]
        row = [strategy] + [_pct(s.recall.get(k)) for k in result.k_values] + [_pct(s.doc_recall)]
        row += [_pct(s.answer_recall.get(top)), str(s.n), str(s.n_answer_recall)]
        row += [_ms(s.latency_p50_ms), _ms(s.latency_p95_ms)]
        if result.answers:
            row += [_pct(s.em), _pct(s.f1), _pct(s.inclusion), _pct(s.number_match)]
        rows.append(row)
    return _table(header, rows)


def source_table(result: EvalResult) -> list[str]:
    """Rows = evidence source; per strategy recall at the middle and largest k."""
    if not result.by_source:
        return []
    shown = result.k_values[-2:] if len(result.k_values) > 1 else result.k_values
    header = ["evidence source", "n"] + [f"{s} R@{k}" for s in result.strategies for k in shown]
    rows = []
    for source, per in result.by_source.items():
        n = next(iter(per.values())).n if per else 0
        rows.append([source, str(n)] + [_pct(per[s].recall.get(k)) for s in result.strategies for k in shown])
    return _table(header, rows)


def answer_table(result: EvalResult) -> list[str]:
    """Rows = answer format (MMLongBench-Doc's Str, Int, Float, List; None = unanswerable); per strategy
    EM / F1 on the answerable ones, and how often each strategy's answer abstained."""
    if not result.answers:
        return []
    formats = {q.qid: str(q.meta.get("answer_format") or "-") for q in result.questions}
    header = ["answer format", "n"] + [f"{s} EM / F1 / abstained" for s in result.strategies]
    rows = []
    for fmt in sorted(set(formats.values())):
        per = []
        n = 0
        for strategy in result.strategies:
            mine = [r for r in result.records if r.strategy == strategy and formats.get(r.qid) == fmt]
            n = len(mine)
            em = mean([r.em for r in mine])
            f1 = mean([r.f1 for r in mine])
            gave_up = mean([float(r.abstained) for r in mine if r.abstained is not None])
            per.append(f"{_pct(em)} / {_pct(f1)} / {_pct(gave_up)}")
        rows.append([fmt, str(n), *per])
    return _table(header, rows)


def abstention_line(result: EvalResult) -> str:
    """Abstention, per strategy: precision and recall on the unanswerable questions, and the share of
    answerable ones abstained on."""
    parts = []
    for strategy in result.strategies:
        s = result.overall[strategy]
        if s.n_unanswerable:
            parts.append(
                f"{strategy} precision {_pct(s.abstain_precision)}, recall {_pct(s.abstain_recall)}, "
                f"answerable abstained {_pct(s.wrongly_abstained)}"
            )
    if not parts:
        return ""
    n = max(result.overall[s].n_unanswerable for s in result.strategies)
    return f"Abstention ({n} unanswerable questions, %): " + "; ".join(parts) + "."


def scope_note(result: EvalResult) -> str:
    """How the questions were asked, since the same recall means different things in each scope."""
    if result.scope == "collection" and result.across:
        return (
            "Each question asked of the whole collection; a gold paragraph counts from whichever document "
            "holds it (a question's evidence spans documents). doc-R@1 = the top-ranked item is from the "
            "document of its first gold paragraph."
        )
    if result.scope == "collection":
        return (
            "Each question asked of the whole collection; a page or paragraph counts only from its gold "
            "document. doc-R@1 = the top-ranked item is from the gold document."
        )
    return "Each question scoped to its own document (doc-R@1 is then 100 by construction)."


def markdown(result: EvalResult) -> str:
    lines = [
        f"## {result.dataset} — {recall_name(result)}@k (%), {result.scope} scope, embedder `{result.embedder}`",
        "",
        scope_note(result),
        "",
        *overall_table(result),
        "",
    ]
    by_source = source_table(result)
    if by_source:
        lines += [f"### By evidence source ({recall_name(result)}, %)", "", *by_source, ""]
    answers = answer_table(result)
    if answers:
        lines += ["### Answers by format (EM and F1 on answerable questions, %)", "", *answers, ""]
        lines += [abstention_line(result), ""]
    skipped = ", ".join(f"{reason}: {n}" for reason, n in sorted(result.skipped.items())) or "none"
    failures = result.index.get("failures") or []
    lines += [
        f"Questions skipped — {skipped}. Documents: {result.index.get('files', 0)} "
        f"({', '.join(f'{k} {v}' for k, v in sorted((result.index.get('status') or {}).items()))}); "
        f"index failures: {len(failures)}. Run time {result.seconds:.0f} s. "
        f"ans-R = normalised gold answer found in the top-{max(result.k_values)} chunk text; "
        "n(ans) = questions with an answer span to look for.",
        "",
    ]
    return "\n".join(lines)


def write_report(result: EvalResult, out_dir: str | Path, label: str | None = None) -> tuple[Path, Path]:
    """Write `<out>/<label>.md` and `<out>/<label>.json`; return both paths."""
    out = Path(out_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    name = label or result.dataset
    md_path, json_path = out / f"{name}.md", out / f"{name}.json"
    md_path.write_text(markdown(result), encoding="utf-8")
    json_path.write_text(json.dumps(result.to_dict(), indent=1, default=str), encoding="utf-8")
    return md_path, json_path
