"""Fit the ranker that ships with hyperfolio (`retrieve/auto_ranker.json`) on the three development sets.

    python benchmarks/train_ranker.py --out src/hyperfolio/retrieve/auto_ranker.json

Reads the indexed dev collections (MMLongBench-Doc PDFs, Qasper papers, FinanceBench filings; `--mm`,
`--qasper`, `--fb`) and gathers every question's candidates in both scopes: its own document, and the
whole collection (only the gold document's candidates labelled). Gathering is the slow part, so the rows
are cached under `--rows` (keyed by set, scope and the feature names; `--regather` refreshes them).

It then cross-validates with whole documents held out across all sets together (5 folds of set:doc
groups), so every figure comes from a ranker that never saw the document, and compares: one ranker per
layout (paged: MMLongBench + FinanceBench, flowing: Qasper) against one pooled ranker, logistic
regression (C chosen by an inner CV on the training folds) against gradient-boosted trees (a comparison
only: what ships is a linear ranker), with against without the `document` features, and sets weighing
the same against each question weighing the same (`--set-weights`). Each set x scope is printed next to
the best single strategy of the baseline reports, with `!` where `auto` falls below it. With `--out`,
the linear configuration with the fewest places below the best single strategy, then the best held-out
mean R@5, is fitted on everything and written. Skips with a message
when the data is absent.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from hyperfolio.collection import Collection
from hyperfolio.eval.datasets import DatasetMissing, EvalQuestion, load_dataset
from hyperfolio.eval.ranker_training import (
    DEFAULT_C,
    QuestionRows,
    assign_folds,
    collect,
    fit,
    training_matrix,
    without_documents,
)
from hyperfolio.eval.runner import gold_document_only
from hyperfolio.eval.tune import ranking_document_recall, ranking_recall
from hyperfolio.retrieve.auto import order_rows
from hyperfolio.retrieve.feature_table import FEATURES, feature_columns
from hyperfolio.retrieve.features import Candidates
from hyperfolio.retrieve.ranker import LinearRanker, RankerSet

K_VALUES = (1, 5, 10)
SETS = {"mmlongbench": "paged", "qasper": "flowing", "financebench": "paged"}  # dataset -> layout
SCOPES = ("document", "collection")
AUTO_NAMES = ("auto", "auto-nograph", "auto-noconcept", "auto-notheme")  # baseline rows that are not single
SEED = 13
Order = list[tuple[int, float]]


@dataclass
class Part:
    """One set asked in one scope: its rows (grouped by set:doc) and how to score them."""

    dataset: str
    scope: str
    evidence: str  # "pages" or "paragraphs"
    doc_ids: dict[str, str]  # doc_ref -> doc_id in its collection
    rows: list[QuestionRows]

    @property
    def key(self) -> str:
        return f"{self.dataset}/{self.scope}"

    @property
    def layout(self) -> str:
        return SETS[self.dataset]


# ---------------------------------------------------------------- gathering (cached)


def features_hash() -> str:
    """Rows gathered under other feature columns must not be reused: the key changes with them."""
    return hashlib.sha1(json.dumps(FEATURES).encode()).hexdigest()[:10]


def gather_part(dataset: str, scope: str, directory: Path, cache: Path) -> Part:
    """Every question's candidates in `scope`; in collection scope, only the gold document is evidence."""
    data = load_dataset(dataset, cache_dir=cache)
    with Collection(directory) as col:
        names = {Path(d.source).name: d.doc_id for d in col.documents() if d.status == "ready"}
        questions = [q for q in data.questions if q.doc_ref in names]
        began = time.perf_counter()

        def gather(question: EvalQuestion, exclude: tuple[str, ...]) -> Candidates:
            doc = names[question.doc_ref] if scope == "document" else None
            return col.candidates(question.question, doc=doc, exclude=exclude)

        rows = collect(questions, gather, data.evidence, ["auto"])["auto"]
    if scope == "collection":
        rows = [gold_document_only(r, names[r.question.doc_ref]) for r in rows]
    rows = [replace(r, group=f"{dataset}:{r.question.doc_ref}") for r in rows]
    seconds = time.perf_counter() - began
    docs = len({q.doc_ref for q in questions})
    print(f"gathered {dataset}/{scope}: {len(rows)} questions, {docs} documents, {seconds:.0f} s", flush=True)
    return Part(dataset, scope, data.evidence, names, rows)


def load_parts(dirs: dict[str, Path], cache: Path, store: Path, regather: bool) -> list[Part]:
    """Each set x scope from the row cache, gathering (and caching) what is missing or stale."""
    store.mkdir(parents=True, exist_ok=True)
    parts = []
    for dataset, directory in dirs.items():
        for scope in SCOPES:
            path = store / f"{dataset}-{scope}-{features_hash()}.pkl"
            if path.exists() and not regather:  # plain fields: a class pickled from __main__ would not load
                with path.open("rb") as fh:
                    parts.append(Part(dataset, scope, **pickle.load(fh)))
                continue
            part = gather_part(dataset, scope, directory, cache)
            with path.open("wb") as fh:
                fields = {"evidence": part.evidence, "doc_ids": part.doc_ids, "rows": part.rows}
                pickle.dump(fields, fh, protocol=pickle.HIGHEST_PROTOCOL)
            parts.append(part)
    return parts


# ---------------------------------------------------------------- configurations and fitting


@dataclass(frozen=True)
class Config:
    """What a held-out comparison varies: one ranker per layout or one pooled, the model, the features."""

    per_layout: bool
    model: str  # "lr" (ships) or "trees" (comparison only)
    document: bool  # with the `document` feature group
    weighting: str = "equal"  # how sets weigh against each other (a --set-weights value)

    @property
    def name(self) -> str:
        layout = "per-layout" if self.per_layout else "pooled"
        return f"{self.model} {layout} {'+doc' if self.document else '-doc'} {self.weighting}"

    @property
    def exclude(self) -> tuple[str, ...]:
        return () if self.document else ("document",)


Scorer = Callable[[np.ndarray], np.ndarray]  # a candidate matrix -> one score per row
Train = list[tuple[str, QuestionRows]]  # (part key "set/scope", rows) of every training question


@dataclass
class Weighting:
    """How much each set's questions, and each scope's, weigh together in fitting."""

    sets: dict[str, float]  # dataset -> total weight of its questions (missing: 1)
    scopes: dict[str, float] = field(default_factory=dict)  # scope -> multiplier (missing: 1)

    def of(self, train: Train) -> list[float]:
        """One weight per question: its set's weight shared by the set's questions, times its scope's."""
        counts: dict[str, int] = {}
        for key, rows in train:
            dataset = key.split("/")[0]
            counts[dataset] = counts.get(dataset, 0) + int(rows.trainable)
        out = []
        for key, _ in train:
            dataset, scope = key.split("/")
            out.append(self.sets.get(dataset, 1.0) * self.scopes.get(scope, 1.0) / max(1, counts[dataset]))
        return out


def fit_linear(train: Train, config: Config, c: float, weighting: Weighting) -> LinearRanker:
    rows = [r for _, r in train]
    return fit(rows, config.exclude, c, weighting.of(train))


def fit_trees(train: Train, config: Config, weighting: Weighting) -> Scorer:
    """Gradient-boosted trees on the same rows and weights: how much a non-linear model would add."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    columns = feature_columns(config.exclude)
    x, y, w = training_matrix([r for _, r in train], columns, weighting.of(train))
    model = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.1, random_state=SEED)
    model.fit(x, y, sample_weight=w)
    return lambda matrix: model.decision_function(matrix[:, columns]) if len(matrix) else np.zeros(0)


def fit_scorers(train: Train, config: Config, c: float, weighting: Weighting) -> dict[str, Scorer]:
    """layout -> scorer: one per layout fitted on that layout's sets, or one for all ("*")."""
    groups = {layout: [t for t in train if SETS[t[0].split("/")[0]] == layout] for layout in sorted(set(SETS.values()))}
    groups = {layout: mine for layout, mine in groups.items() if mine}
    if not config.per_layout:
        groups = {"*": train}
    out: dict[str, Scorer] = {}
    for layout, mine in groups.items():
        if config.model == "trees":
            out[layout] = fit_trees(mine, config, weighting)
        else:
            out[layout] = fit_linear(mine, config, c, weighting).score
    return out


def scorer_for(scorers: dict[str, Scorer], layout: str) -> Scorer:
    return scorers.get(layout) or scorers["*"]


# ---------------------------------------------------------------- held-out rankings and figures


def training_rows(parts: Sequence[Part], fold_of: dict[str, int], fold: int) -> Train:
    """Every other fold's questions of every set and scope, minus the held-out documents' candidates."""
    unseen: dict[str, set[str]] = {}
    for part in parts:
        held = {r.question.doc_ref for r in part.rows if fold_of[r.group] == fold}
        unseen.setdefault(part.dataset, set()).update(part.doc_ids[ref] for ref in held)
    return [
        (part.key, without_documents(r, unseen[part.dataset]))
        for part in parts
        for r in part.rows
        if fold_of[r.group] != fold
    ]


@dataclass
class HeldOut:
    """Each part's questions ranked by rankers that never saw their documents, and each fold's C."""

    orders: dict[str, dict[str, Order]] = field(default_factory=dict)  # part key -> qid -> order
    chosen_c: list[float] = field(default_factory=list)


def held_out(
    parts: Sequence[Part],
    config: Config,
    weighting: Weighting,
    c_grid: Sequence[float],
    folds: int,
    inner: int = 0,
) -> HeldOut:
    """Cross-validation over set:doc groups of all parts; with `inner` folds and several C, each fold
    picks its C by cross-validation on its own training documents only."""
    fold_of = assign_folds([r.group for p in parts for r in p.rows], folds, SEED)
    out = HeldOut({p.key: {} for p in parts})
    for fold in sorted(set(fold_of.values())):
        c = c_grid[0]
        if config.model == "lr" and len(c_grid) > 1 and inner:
            train_parts = [replace(p, rows=[r for r in p.rows if fold_of[r.group] != fold]) for p in parts]
            c = choose_c(train_parts, config, weighting, c_grid, inner)
        out.chosen_c.append(c)
        scorers = fit_scorers(training_rows(parts, fold_of, fold), config, c, weighting)
        for part in parts:
            score = scorer_for(scorers, part.layout)
            for r in part.rows:
                if fold_of[r.group] == fold:
                    out.orders[part.key][r.question.qid] = order_rows(r.candidates, score(r.candidates.matrix))
    return out


def choose_c(parts: Sequence[Part], config: Config, weighting: Weighting, c_grid: Sequence[float], folds: int) -> float:
    """The C of the grid with the best held-out mean R@5 over the parts (ties: the smaller C)."""
    best, best_score = c_grid[0], -1.0
    for c in sorted(c_grid):
        run = held_out(parts, config, weighting, [c], folds)
        score = mean_r5(figures(parts, run.orders))
        if score > best_score + 1e-9:
            best, best_score = c, score
    return best


Figures = dict[str, dict[str, float | None]]  # part key -> metric ("R@1", ..., "doc-R@1") -> value


def figures(parts: Sequence[Part], orders: dict[str, dict[str, Order]]) -> Figures:
    out: Figures = {}
    for part in parts:
        recall = ranking_recall(part.rows, orders[part.key], part.evidence, part.doc_ids)
        out[part.key] = {f"R@{k}": recall[k] for k in K_VALUES}
        out[part.key]["doc-R@1"] = ranking_document_recall(part.rows, orders[part.key], part.doc_ids)
    return out


def mean_r5(figs: Figures) -> float:
    values = [f["R@5"] for f in figs.values() if f["R@5"] is not None]
    return float(np.mean(values)) if values else 0.0


# ---------------------------------------------------------------- the baseline: best single strategy


Baseline = dict[str, dict[str, tuple[float, str]]]  # part key -> metric -> (best single figure, strategy)


def best_single(report_dir: Path, parts: Sequence[Part]) -> Baseline:
    """The best single strategy at each metric, from the baseline report of the same set and scope.

    Single strategies do not depend on the ranker, so the old reports stay a fair bar."""
    out: Baseline = {}
    for part in parts:
        path = report_dir / f"{part.dataset}{'' if part.scope == 'document' else '-collection'}.json"
        if not path.exists():
            continue
        overall = json.loads(path.read_text())["overall"]
        best: dict[str, tuple[float, str]] = {}
        for strategy, summary in overall.items():
            if strategy in AUTO_NAMES:
                continue
            values = {f"R@{k}": summary["recall"].get(str(k)) for k in K_VALUES}
            values["doc-R@1"] = summary.get("doc_recall")
            for metric, value in values.items():
                if value is not None and value > best.get(metric, (-1.0, ""))[0]:
                    best[metric] = (float(value), strategy)
        out[part.key] = best
    return out


def shortfalls(figs: Figures, baseline: Baseline, metrics: Sequence[str] = ("R@1", "R@5", "R@10")) -> list[str]:
    """Where `auto` is below the best single strategy: "part metric" for each such place."""
    out = []
    for key, values in figs.items():
        for metric in metrics:
            bar = baseline.get(key, {}).get(metric)
            mine = values.get(metric)
            if bar is not None and mine is not None and mine < bar[0] - 1e-9:
                out.append(f"{key} {metric}")
    return out


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def print_against_baseline(title: str, figs: Figures, baseline: Baseline) -> None:
    """Held-out `auto` next to the best single strategy; `!` marks where auto is below it."""
    metrics = [f"R@{k}" for k in K_VALUES] + ["doc-R@1"]
    print(f"\n{title}\n")
    print("| set / scope | " + " | ".join(f"auto {m} | best single" for m in metrics) + " |")
    print("|" + " --- |" * (1 + 2 * len(metrics)))
    for key, values in figs.items():
        cells = []
        for metric in metrics:
            bar = baseline.get(key, {}).get(metric)
            flag = "!" if bar is not None and (values[metric] or 0.0) < bar[0] - 1e-9 else ""
            cells.append(f"{pct(values[metric])}{flag} | " + (f"{pct(bar[0])} {bar[1]}" if bar else "-"))
        print(f"| {key} | " + " | ".join(cells) + " |")
    print(f"mean R@5 over set x scope: {100 * mean_r5(figs):.1f}", flush=True)


def print_comparison(results: dict[str, Figures], baseline: Baseline) -> None:
    """One line per configuration: R@1/R@5/R@10 of each set x scope, mean R@5, places below best single."""
    keys = list(next(iter(results.values())))
    print("\n| configuration | " + " | ".join(keys) + " | mean R@5 | below best single |")
    print("|" + " --- |" * (len(keys) + 3))
    for name, figs in results.items():
        cells = [" / ".join(pct(figs[k][f"R@{n}"]) for n in K_VALUES) + doc_cell(k, figs[k]) for k in keys]
        below = shortfalls(figs, baseline)
        print(f"| {name} | " + " | ".join(cells) + f" | {100 * mean_r5(figs):.1f} | {len(below)} |")
    print("(cells: held-out R@1 / R@5 / R@10, and doc-R@1 in collection scope)", flush=True)


def doc_cell(key: str, values: dict[str, float | None]) -> str:
    return f" ({pct(values['doc-R@1'])})" if key.endswith("/collection") else ""


# ---------------------------------------------------------------- the run


def compare(
    parts: Sequence[Part], configs: Sequence[Config], args: argparse.Namespace, baseline: Baseline
) -> dict[Config, tuple[Figures, list[float]]]:
    """Held-out figures of every configuration (and the C each fold chose)."""
    out: dict[Config, tuple[Figures, list[float]]] = {}
    for config in configs:
        began = time.perf_counter()
        run = held_out(parts, config, args.weightings[config.weighting], args.c_grid, args.folds, args.inner_folds)
        figs = figures(parts, run.orders)
        out[config] = (figs, run.chosen_c)
        below = shortfalls(figs, baseline)
        chosen = ", ".join(f"{c:g}" for c in run.chosen_c) if config.model == "lr" else "-"
        print(
            f"{config.name}: mean R@5 {100 * mean_r5(figs):.1f}, below best single at {len(below)} "
            f"({', '.join(below) or 'none'}); C per fold {chosen}; {time.perf_counter() - began:.0f} s",
            flush=True,
        )
    return out


def pick(results: dict[Config, tuple[Figures, list[float]]], baseline: Baseline) -> tuple[Config, bool]:
    """The linear configuration with the fewest places below the best single strategy, then the best held-out
    mean R@5 (a tenth of a point of mean is noise; a place below is a question type `auto` loses); and whether
    it is never below."""
    linear = {c: r for c, r in results.items() if c.model == "lr"}
    below = {c: len(shortfalls(figs, baseline)) for c, (figs, _) in linear.items()}
    best = min(linear, key=lambda c: (below[c], -mean_r5(linear[c][0])))
    return best, below[best] == 0


def fit_final(
    parts: Sequence[Part], config: Config, c: float, args: argparse.Namespace, held: Figures, baseline: Baseline
) -> RankerSet:
    """The chosen configuration fitted on every question of every set and scope; a pooled ranker is
    written under both layouts, so `hyperfolio tune` can still replace one layout's."""
    train: Train = [(p.key, r) for p in parts for r in p.rows]
    weighting = args.weightings[config.weighting]
    if config.per_layout:
        rankers = {
            layout: fit_linear([t for t in train if SETS[t[0].split("/")[0]] == layout], config, c, weighting)
            for layout in sorted(set(SETS.values()))
        }
    else:
        pooled = fit_linear(train, config, c, weighting)
        rankers = {"paged": pooled, "flowing": pooled}
    for layout, ranker in rankers.items():
        served = [p for p in parts if not config.per_layout or p.layout == layout]
        ranker.meta["trained_on"] = sorted({p.dataset for p in served})
        ranker.meta["held_out_recall"] = {p.key: held[p.key] for p in served}
        top = sorted(ranker.weights().items(), key=lambda kv: -abs(kv[1]))[:8]
        print(f"  {layout} ranker, strongest: " + ", ".join(f"{n} {w:+.2f}" for n, w in top))
    meta = {
        "source": "benchmarks/train_ranker.py",
        "configuration": config.name,
        "C": c,
        "trained_on": {p.key: len(p.rows) for p in parts},
        "set_weights": weighting.sets,
        "scope_weights": weighting.scopes,
        "folds": args.folds,
        "fold_groups": "set:document, seed 13",
        "held_out": {key: {m: None if v is None else round(v, 4) for m, v in f.items()} for key, f in held.items()},
        "below_best_single": shortfalls(held, baseline),
    }
    return RankerSet(rankers, meta)


def parse_weights(text: str, parts: Sequence[Part]) -> dict[str, float]:
    """'equal' (1 each), 'questions' (each set weighs its number of questions, so each question weighs
    the same), or explicit 'mmlongbench=1,qasper=2,...' (also 'document=1,collection=2' for scopes)."""
    if text == "equal":
        return {}
    if text == "questions":
        return {d: float(sum(len(p.rows) for p in parts if p.dataset == d)) for d in SETS}
    pairs = (item.split("=") for item in text.split(","))
    return {name.strip(): float(value) for name, value in pairs}


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    dev = Path("eval-out/dev")
    parser.add_argument("--mm", type=Path, default=dev / "mm", help="MMLongBench-Doc dev collection")
    parser.add_argument("--qasper", type=Path, default=dev / "qasper", help="Qasper dev collection")
    parser.add_argument("--fb", type=Path, default=dev / "fb", help="FinanceBench dev collection")
    parser.add_argument("--baseline", type=Path, default=dev / "report-baseline", help="reports of single strategies")
    parser.add_argument("--rows", type=Path, default=dev / "rows", help="cache of gathered candidate rows")
    parser.add_argument("--regather", action="store_true", help="gather the rows again even when cached")
    parser.add_argument("--cache", type=Path, default=Path("eval-out/cache"), help="dataset cache (Qasper papers)")
    parser.add_argument("--out", type=Path, help="where to write the fitted weights")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--inner-folds", type=int, default=3, help="folds of the inner CV choosing C (0: first C)")
    parser.add_argument("--c", dest="c_grid", default="0.05,0.5,5", help=f"C, or a grid of C (default C {DEFAULT_C})")
    parser.add_argument(
        "--set-weights",
        action="append",
        help="equal | questions | mmlongbench=1,qasper=1,...; repeat to compare (default: equal and questions)",
    )
    parser.add_argument("--scope-weights", default="equal", help="document=1,collection=2: scope multipliers")
    parser.add_argument("--trees", action="store_true", help="also cross-validate gradient-boosted trees")
    parser.add_argument("--quick", action="store_true", help="with the document features only")
    args = parser.parse_args()
    args.c_grid = [float(c) for c in str(args.c_grid).split(",")]
    args.set_weights = args.set_weights or ["equal", "questions"]
    return args


def configurations(args: argparse.Namespace) -> list[Config]:
    """Linear rankers per layout and pooled, with and without the document features, under each set
    weighting; with --trees, gradient-boosted trees per layout and pooled beside them."""
    out = []
    for weighting in args.set_weights:
        for document in (True,) if args.quick else (True, False):
            out += [Config(True, "lr", document, weighting), Config(False, "lr", document, weighting)]
        if args.trees:
            out += [Config(True, "trees", True, weighting), Config(False, "trees", True, weighting)]
    return out


def main() -> int:
    args = arguments()
    dirs = {"mmlongbench": args.mm, "qasper": args.qasper, "financebench": args.fb}
    try:
        parts = load_parts(dirs, args.cache, args.rows, args.regather)
    except DatasetMissing as exc:
        print(f"skipped: {exc}")
        return 0
    scopes = parse_weights(args.scope_weights, parts)
    args.weightings = {w: Weighting(parse_weights(w, parts), scopes) for w in args.set_weights}
    print(f"rows: {', '.join(f'{p.key} {len(p.rows)}' for p in parts)}; C grid {args.c_grid}")
    baseline = best_single(args.baseline, parts)
    results = compare(parts, configurations(args), args, baseline)
    print_comparison({c.name: figs for c, (figs, _) in results.items()}, baseline)
    chosen, clean = pick(results, baseline)
    held = results[chosen][0]
    verdict = "never below the best single strategy" if clean else "below the best single strategy somewhere"
    print_against_baseline(f"chosen: {chosen.name} ({verdict}), held out", held, baseline)
    if args.out:
        c = args.c_grid[0]
        if len(args.c_grid) > 1 and args.inner_folds:
            c = choose_c(parts, chosen, args.weightings[chosen.weighting], args.c_grid, args.folds)
        ranker = fit_final(parts, chosen, c, args, held, baseline)
        ranker.save(args.out)
        print(f"wrote {args.out}: {chosen.name}, C {c:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
