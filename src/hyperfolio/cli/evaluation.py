"""`hyperfolio eval`, `judge` and `tune`: the commands over the evaluation code in `hyperfolio.eval`
(benchmark strategies on the development sets, compare answers with a judge, fit the auto ranker)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markdown import Markdown
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from hyperfolio.cli.options import CollectionOpt, open_existing
from hyperfolio.cli.printers import console, errors
from hyperfolio.cli.progress import RichEvalProgress
from hyperfolio.collection import RETRIEVAL_MODES as STRATEGIES
from hyperfolio.config import Settings
from hyperfolio.errors import HyperfolioError
from hyperfolio.eval.datasets import DATASET_NAMES, DatasetMissing, dataset_label, load_dataset
from hyperfolio.eval.ranker_training import AUTO_VARIANTS
from hyperfolio.eval.report import markdown, write_report
from hyperfolio.eval.runner import ABLATIONS, SCOPES, EvalResult, run_eval

DEFAULT_DATASETS = ("mmlongbench", "qasper")


def evaluate(
    spec: str,
    strategies: list[str],
    out: Path,
    collection: Path | None,
    limit: int | None,
    embedder: str,
    answers: bool,
    folds: int = 5,
    scope: str = "document",
) -> EvalResult:
    """Load, run and report one dataset; the reusable core of the command.

    A collection-scope report is written beside the document-scope one (`<label>-collection`), not over it."""
    label = dataset_label(spec)
    dataset = load_dataset(spec, cache_dir=out / "cache", unanswerable=answers)  # answers: abstention counts
    directory = collection or out / "collections" / f"{label}-{embedder}"
    columns: list[Any] = [
        TextColumn("{task.description:<9}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[current]}"),
    ]
    with Progress(*columns, console=console, transient=False) as bar:
        result = run_eval(
            dataset,
            strategies,
            directory,
            limit=limit,
            embedder=embedder,
            answers=answers,
            progress=RichEvalProgress(bar),
            folds=folds,
            scope=scope,
        )
    md_path, json_path = write_report(result, out, label if scope == "document" else f"{label}-{scope}")
    console.print(Markdown(markdown(result)))
    console.print(f"wrote {md_path} and {json_path}")
    return result


def eval_command(
    dataset: Annotated[
        list[str] | None,
        typer.Option(
            "--dataset",
            help=f"{DATASET_NAMES}; repeatable (default: mmlongbench and qasper).",
        ),
    ] = None,
    strategies: Annotated[
        str, typer.Option("--strategies", help="Comma-separated retrieval strategies.")
    ] = "bm25,dense,hybrid,dual,concept",
    collection: Annotated[
        Path | None,
        typer.Option("--collection", help="Index dir (default: <out>/collections/<dataset>-<embedder>)"),
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Directory for reports and caches.")] = Path("eval-out"),
    limit: Annotated[int | None, typer.Option("--limit", help="Evaluate only the first N questions.")] = None,
    embedder: Annotated[
        str | None,
        typer.Option("--embedder", help="minilm (-int8, -128, -int8-128) or model2vec (default: settings)."),
    ] = None,
    answers: Annotated[
        bool, typer.Option("--answers", help="Also answer each question and score EM / F1 / inclusion.")
    ] = False,
    folds: Annotated[
        int,
        typer.Option(
            "--folds", help="auto*: cross-validation folds, whole documents held out (0: the shipped ranker as is)."
        ),
    ] = 5,
    scope: Annotated[
        str,
        typer.Option(
            "--scope",
            help="document: each question asked of its own document; collection: of the whole collection "
            "(recall still counts only the gold document's pages or paragraphs).",
        ),
    ] = "document",
) -> None:
    """Measure evidence recall of each retrieval strategy on benchmark questions."""
    chosen = [s.strip() for s in strategies.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in STRATEGIES and s not in ABLATIONS and s not in AUTO_VARIANTS]
    if not chosen or unknown:
        errors.print(
            f"[red]error:[/red] unknown strategy {', '.join(unknown) or '(none)'}; "
            f"choose from {', '.join(dict.fromkeys([*STRATEGIES, *ABLATIONS, *AUTO_VARIANTS]))}"
        )
        raise typer.Exit(2)
    if scope not in SCOPES:
        errors.print(f"[red]error:[/red] unknown scope {scope!r}; choose from {', '.join(SCOPES)}")
        raise typer.Exit(2)
    specs = list(dataset or DEFAULT_DATASETS)
    if collection is not None and len(specs) > 1:
        errors.print("[red]error:[/red] --collection needs a single --dataset (each has its own index)")
        raise typer.Exit(2)
    embedder_name = embedder or Settings.load().embedder
    failed = False
    for spec in specs:
        try:
            evaluate(spec, chosen, out, collection, limit, embedder_name, answers, folds, scope)
        except DatasetMissing as exc:
            errors.print(f"[yellow]skipped {spec}:[/yellow] {exc}")
        except (HyperfolioError, ValueError) as exc:
            errors.print(f"[red]error in {spec}:[/red] {exc}")
            failed = True
    if failed:
        raise typer.Exit(1)


def judge_command(
    strategies: Annotated[str, typer.Option("--strategies", help="Two strategies to compare, e.g. hybrid,topdown.")],
    dataset: Annotated[str, typer.Option("--dataset", help=f"{DATASET_NAMES}.")] = "qasper",
    collection: Annotated[
        Path | None, typer.Option("--collection", help="Index dir (default: <out>/collections/<dataset>-<embedder>)")
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Directory for the report.")] = Path("eval-out"),
    limit: Annotated[int, typer.Option("--limit", help="Judge the first N questions.")] = 20,
    scores: Annotated[bool, typer.Option("--scores", help="Also score each answer 0-100 per criterion.")] = False,
) -> None:
    """Compare two strategies' answers with a language-model judge (win rates per criterion)."""
    from hyperfolio.collection import Collection
    from hyperfolio.eval.judge import Judge, judge_answers
    from hyperfolio.eval.runner import index_documents

    pair = tuple(s.strip() for s in strategies.split(",") if s.strip())
    if len(pair) != 2 or any(s not in STRATEGIES for s in pair):
        errors.print(f"[red]error:[/red] give two of {', '.join(STRATEGIES)}, e.g. --strategies hybrid,topdown")
        raise typer.Exit(2)
    try:
        data = load_dataset(dataset, cache_dir=out / "cache")
    except DatasetMissing as exc:
        errors.print(f"[yellow]skipped {dataset}:[/yellow] {exc}")
        return
    settings = Settings.load()
    directory = collection or out / "collections" / f"{dataset_label(dataset)}-{settings.embedder}"
    questions = data.questions[:limit]
    with Collection(directory, settings=Settings.load(directory / "settings.toml")) as col:
        chat = col.models.get("judge")
        if chat is None:
            errors.print("[red]error:[/red] no judge model: set \\[models] judge_model (or model) and base_url")
            raise typer.Exit(2)
        files = [p for p in data.documents if p.name in {q.doc_ref for q in questions}]
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console) as bar:
            doc_ids, _ = index_documents(col, files, RichEvalProgress(bar))
            items = []
            task = bar.add_task("answering", total=len(questions))
            for q in questions:
                if q.doc_ref in doc_ids:
                    answers = [col.ask(q.question, mode=s, doc=doc_ids[q.doc_ref]).text for s in pair]
                    items.append((q.question, answers[0], answers[1]))
                bar.update(task, advance=1)
        report = judge_answers(Judge(chat), (pair[0], pair[1]), items, scores=scores)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"judge-{dataset_label(dataset)}-{pair[0]}-vs-{pair[1]}"
    stem.with_suffix(".md").write_text(report.markdown() + "\n")
    stem.with_suffix(".json").write_text(report.to_json())
    console.print(Markdown(report.markdown()))
    console.print(f"wrote {stem.with_suffix('.md')} and {stem.with_suffix('.json')}")


def tune_command(
    questions: Annotated[
        Path, typer.Option("--questions", help="JSONL: question, doc, evidence_pages or evidence_paragraphs.")
    ],
    collection: CollectionOpt = None,
    folds: Annotated[int, typer.Option("--folds", help="Cross-validation folds, whole documents held out.")] = 5,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report only; keep the ranker in use.")] = False,
) -> None:
    """Fit the `auto` ranker to your own labelled questions and keep it in the collection."""
    from hyperfolio.eval.tune import load_labelled, tune

    try:
        labelled = load_labelled(questions)
        with open_existing(collection) as col, console.status(f"gathering candidates for {len(labelled)} questions"):
            report = tune(col, labelled, folds=folds, save=not dry_run)
    except (HyperfolioError, ValueError) as exc:
        errors.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None
    documents = f"{report.documents} document{'s' if report.documents != 1 else ''}"
    console.print(f"{report.questions} questions over {documents}, recall of evidence {report.evidence}:")
    console.print(Markdown(report.table()))
    if report.held_out is None:
        console.print("[yellow]one document only: no held-out figure; the fitted figure flatters[/yellow]")
    for layout, ranker in sorted(report.ranker.rankers.items()):
        top = sorted(ranker.weights().items(), key=lambda kv: -abs(kv[1]))[:6]
        console.print(f"{layout} documents, strongest features: " + ", ".join(f"{n} {w:+.2f}" for n, w in top))
    console.print("kept the ranker in use (dry run)" if dry_run else f"saved the ranker in {col.label}")
