"""Prove a restructuring changed no result: the top-10 rankings of two code versions, side by side.

A git revision (by default the commit before issue 27's restructuring began) and the working tree each
index the dev sets into their own collections and rank every question in every retrieval mode, scoped to
the question's own document as the eval runner does; this script then says, per dataset x mode, how many
questions have identical top-10 lists (chunk ids, doc ids, pages, scores rounded to 6 digits) and shows
the first differences. The demo's sample report is asked the demo questions in each mode too, and the
answers (text and citations) compared. `--reopen` also opens a copy of every collection the old version
built with the new code (a collection written by the previous release: it must open, pass the integrity
check and rank identically). Exit status 1 when anything differs.

Each version runs in its own subprocess of this same file (`--driver SPEC`), with PYTHONPATH pointing at
its `src` (the old one extracted with `git archive`, never installed) and the same venv's Python, so the
two never share an import. Everything is offline: no model server, the packaged embedder, no user
settings file.

    python benchmarks/ranking_diff.py --limit-docs 2              # quick
    python benchmarks/ranking_diff.py --reopen --keep /tmp/rd     # everything, kept for a look afterwards
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_REV = "ad907fd87426714e5b72ea02f259e162e64d73fa"  # the commit before issue 27's restructuring
REPO = Path(__file__).resolve().parents[1]
DATASETS = ("mmlongbench", "qasper")
K = 10
DIGITS = 6
SHOWN = 3  # differences shown in detail per dataset x mode
IMPORT_FAILED = 75  # the driver's exit status when the tree it runs could not be imported (mid-edit)
IMPORT_RETRIES = 5
IMPORT_WAIT = 60.0
# A failure naming one of these is another engineer's half-finished rename, not a result: the driver gives up
# with IMPORT_FAILED and the whole side is run again a minute later.
MID_EDIT = ("ImportError", "ModuleNotFoundError", "AttributeError: module", "cannot import name")
NOT_RESULTS = ("seconds", "usage", "time", "path", "bytes")  # stats keys that say nothing of the index
DEMO_QUESTIONS_EXTRA = ("Which region had the lowest revenue?",)  # the demo's suggested follow-up
# Per-call knobs, run as extra "modes" (`mode[label]`): the eval runner's ablations and Qasper preset
# (eval/runner.py), a knob given as a string as the CLI gives it, and the modality regrouping of a flat mode.
KNOB_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "concept[paper-qasper]": ("concept", {"concepts": 15, "flat_chunks": 5}),
    "concept[nograph]": ("concept", {"use_graph": False}),
    "concept[nomodality]": ("concept", {"by_modality": False}),
    "concept[dense]": ("concept", {"scoring": "dense"}),
    "concept[keyword]": ("concept", {"scoring": "keyword"}),
    "topdown[novisual]": ("topdown", {"visual": False}),
    "dual[threshold-0.4]": ("dual", {"entity_threshold": "0.4"}),
    "hybrid[by-modality]": ("hybrid", {"by_modality": True}),
}


# ---------------------------------------------------------------------------- questions (parent side)
@dataclass
class Plan:
    """One dataset's documents and questions, written once and given to both versions alike."""

    name: str
    documents: list[str]  # absolute paths
    questions: list[dict[str, str]] = field(default_factory=list)  # qid, doc_ref (file name), question


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _import_datasets() -> Any:
    """The working tree's loaders (unchanged since the old revision); retried while others edit the tree."""
    for attempt in range(IMPORT_RETRIES):
        try:
            from hyperfolio.eval import datasets

            return datasets
        except ImportError as exc:
            if attempt == IMPORT_RETRIES - 1:
                raise
            print(f"import of hyperfolio.eval.datasets failed ({exc}); retrying in {IMPORT_WAIT:.0f} s", flush=True)
            time.sleep(IMPORT_WAIT)
    raise AssertionError("unreachable")


def mmlongbench_plan(root: Path) -> Plan:
    """Every question, answerable or not: a ranking exists for each, and each must stay the same."""
    folder = root / "mmlongbench_dev"
    rows = _read_jsonl(folder / "qa.jsonl")
    names = sorted({str(r["doc_id"]) for r in rows})
    docs = [str(folder / "documents" / n) for n in names if (folder / "documents" / n).is_file()]
    present = {Path(d).name for d in docs}
    questions = [
        {"qid": str(r["qid"]), "doc_ref": str(r["doc_id"]), "question": str(r["question"])}
        for r in rows
        if str(r["doc_id"]) in present
    ]
    return Plan("mmlongbench", docs, questions)


def qasper_plan(root: Path, cache: Path) -> Plan:
    """Every question; the papers written as Markdown once (the loader's own rendering) for both versions."""
    datasets = _import_datasets()
    folder = root / "qasper_dev"
    papers = json.loads((folder / "papers.json").read_text(encoding="utf-8"))
    rows = _read_jsonl(folder / "qa.jsonl")
    cache.mkdir(parents=True, exist_ok=True)
    docs: list[str] = []
    for paper_id in sorted({str(r["paper_id"]) for r in rows if str(r["paper_id"]) in papers}):
        path = cache / f"{paper_id}.md"
        path.write_text(datasets.qasper_markdown(papers[paper_id]), encoding="utf-8")
        docs.append(str(path))
    questions = [
        {"qid": str(r["question_id"]), "doc_ref": f"{r['paper_id']}.md", "question": str(r["question"])}
        for r in rows
        if str(r["paper_id"]) in papers
    ]
    return Plan("qasper", docs, questions)


def limit_plan(plan: Plan, limit_docs: int | None, qids: set[str] | None) -> Plan:
    """The first N documents (by name) and their questions, or only the questions named among them. The
    documents stay all N either way: scores hold collection-wide statistics (BM25's document frequencies,
    the concept graph), so a question ranks the same only in a collection of the same documents."""
    docs = plan.documents[:limit_docs] if limit_docs is not None else list(plan.documents)
    kept = {Path(d).name for d in docs}
    questions = [q for q in plan.questions if q["doc_ref"] in kept and (qids is None or q["qid"] in qids)]
    return Plan(plan.name, docs, questions)


def load_plans(names: Sequence[str], root: Path, cache: Path, limit: int | None, qids: set[str] | None) -> list[Plan]:
    """The datasets asked for that are on this machine; one clear line for each one that is not."""
    plans: list[Plan] = []
    for name in names:
        folder = root / f"{name}_dev"
        if not folder.is_dir():
            print(f"skip {name}: no data at {folder} (see ../shared/data/README.md)", flush=True)
            continue
        plan = mmlongbench_plan(root) if name == "mmlongbench" else qasper_plan(root, cache / "qasper")
        plan = limit_plan(plan, limit, qids)
        if not plan.questions:
            print(f"skip {name}: no question left after the filters", flush=True)
            continue
        plans.append(plan)
    return plans


# ---------------------------------------------------------------------------- running a version
def extract_revision(rev: str, dest: Path) -> Path:
    """The revision's src/ as files (git archive), never installed: its path goes on PYTHONPATH."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "src"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest / "src"


def driver_env(src: Path, home: Path) -> dict[str, str]:
    """Only `src` on the path; no HYPERFOLIO_* or OPENAI_* variable and no user settings file: offline defaults."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HYPERFOLIO_", "OPENAI_"))}
    env["PYTHONPATH"] = str(src)
    env["XDG_CONFIG_HOME"] = str(home / "config")  # an empty one
    env["HYPERFOLIO_ROOT"] = str(home / "root")
    if "HYPERFOLIO_CACHE" in os.environ:  # where the packaged embedders' first-use builds are kept
        env["HYPERFOLIO_CACHE"] = os.environ["HYPERFOLIO_CACHE"]
    return env


def run_driver(
    label: str, src: Path, spec: dict[str, Any], work: Path, prepare: Callable[[], None] | None = None
) -> dict[str, Any]:
    """Run one version's driver under nice; retried while the tree it imports is mid-edit, each attempt on
    a fresh folder (`prepare` makes it: by default an empty one)."""
    spec_path = work / f"{label}.spec.json"
    spec_path.write_text(json.dumps(spec, indent=1), encoding="utf-8")
    log = work / f"{label}.log"
    command = ["nice", "-n", "10", sys.executable, str(Path(__file__).resolve()), "--driver", str(spec_path)]
    for attempt in range(IMPORT_RETRIES):
        shutil.rmtree(spec["work"], ignore_errors=True)
        if prepare is not None:
            prepare()
        began = time.time()
        print(f"[{time.strftime('%H:%M:%S')}] {label}: PYTHONPATH={src} (log {log})", flush=True)
        with log.open("a", encoding="utf-8") as out:
            status = subprocess.run(
                command, env=driver_env(src, work / f"{label}-home"), stdout=out, stderr=subprocess.STDOUT
            ).returncode
        if status == 0:
            print(f"[{time.strftime('%H:%M:%S')}] {label}: done in {time.time() - began:.0f} s", flush=True)
            return json.loads(Path(spec["out"]).read_text(encoding="utf-8"))
        if status != IMPORT_FAILED or attempt == IMPORT_RETRIES - 1:
            tail = "".join(log.read_text(encoding="utf-8").splitlines(keepends=True)[-20:])
            raise SystemExit(f"{label}: the driver failed (exit {status}); the end of {log}:\n{tail}")
        print(f"{label}: the tree could not be imported (mid-edit?); retrying in {IMPORT_WAIT:.0f} s", flush=True)
        time.sleep(IMPORT_WAIT)
    raise AssertionError("unreachable")


# ---------------------------------------------------------------------------- the driver (child side)
class MidEdit(RuntimeError):
    """The tree failed the way a module being renamed right now fails."""


def _mid_edit(reason: str) -> None:
    if any(sign in reason for sign in MID_EDIT):
        raise MidEdit(reason)


def _ranking(evidence: Any) -> list[list[Any]]:
    return [
        [item.chunk.chunk_id, item.chunk.doc_id, item.chunk.page, round(float(item.score), DIGITS)]
        for item in evidence.items[:K]
    ]


def _flat_numbers(value: Any, prefix: str = "") -> dict[str, Any]:
    """Counts in a stats dict, flattened (timings, sizes, paths and model usage left out: not results)."""
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        for key, inner in value.items():
            if any(word in str(key) for word in NOT_RESULTS):
                continue
            out.update(_flat_numbers(inner, f"{prefix}{key}."))
    elif isinstance(value, (int, float, str)) and not isinstance(value, bool):
        out[prefix.rstrip(".")] = value
    return out


def _attempt(record: Callable[[Any], Any], call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`record(call(...))`, or the call's error: a failing mode is a result to compare, not a crash."""
    try:
        return record(call(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001
        reason = f"{type(exc).__name__}: {exc}"
        _mid_edit(reason)
        return {"error": reason}


def rank_all(collection: Any, plan: dict[str, Any], doc_ids: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
    """Top-K of every question in every run (mode, knobs), scoped to its own document; with `answers`, the
    answer `ask` gives in the collection's default mode too."""
    runs: dict[str, tuple[str, dict[str, Any]]] = spec["runs"]
    rankings: dict[str, dict[str, Any]] = {label: {} for label in runs}
    answers: dict[str, Any] = {}
    began = time.perf_counter()
    for number, question in enumerate(plan["questions"], start=1):
        doc_id, text = doc_ids.get(question["doc_ref"]), question["question"]
        if doc_id is None:
            continue
        for label, (mode, knobs) in runs.items():
            rankings[label][question["qid"]] = _attempt(
                _ranking, collection.retrieve, text, mode=mode, k=K, doc=doc_id, options=knobs or None
            )
        if spec.get("answers"):
            answers[question["qid"]] = _attempt(_answer_record, collection.ask, text, doc=doc_id)
        if number % 25 == 0:
            print(f"  {plan['name']}: {number}/{len(plan['questions'])} questions", flush=True)
    return {"rankings": rankings, "answers": answers, "query_seconds": time.perf_counter() - began}


def index_plan(collection: Any, plan: dict[str, Any]) -> dict[str, Any]:
    """Add the plan's documents in one process (workers=0) and build any graph still missing, as the runner does."""
    began = time.perf_counter()
    report = collection.add([Path(p) for p in plan["documents"]], workers=0)
    doc_ids = {Path(r.path).name: r.doc_id for r in report.results if r.ok and r.doc_id}
    failures = {Path(r.path).name: f"{r.status}: {r.reason}" for r in report.results if not (r.ok and r.doc_id)}
    for reason in failures.values():
        _mid_edit(reason)
    collection.build_graph()
    return {"doc_ids": doc_ids, "failures": failures, "index_seconds": time.perf_counter() - began}


def drive_dataset(plan: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """One dataset: build (or, reopening, only open and check) its collection, then rank every question."""
    from hyperfolio import Collection

    folder = Path(spec["work"]) / plan["name"]
    out: dict[str, Any] = {}
    with Collection(folder) as collection:
        if spec.get("reopen"):
            report = collection.check()
            out["check"] = {
                "ok": report.ok,
                "summary": report.summary(),
                "findings": [str(f) for f in report.findings][:20],
                "unfinished": len(report.unfinished),
            }
            out["doc_ids"] = dict(spec["doc_ids"][plan["name"]])
            out["failures"] = {}
        else:
            out.update(index_plan(collection, plan))
        print(f"  {plan['name']}: {len(out['doc_ids'])} documents ready, ranking", flush=True)
        out["stats"] = _flat_numbers(collection.stats())
        out.update(rank_all(collection, plan, out["doc_ids"], spec))
    return out


def _answer_record(answer: Any) -> dict[str, Any]:
    return {
        "text": answer.text,
        "sufficient": bool(answer.sufficient),
        "answerer": answer.answerer,
        "citations": [
            [
                c.doc_id,
                c.page,
                c.chunk_id,
                str(c.modality),
                [round(float(v), 2) for v in c.bbox] if c.bbox is not None else None,
            ]
            for c in answer.citations
        ],
    }


def drive_sample(spec: dict[str, Any], modes: list[str]) -> dict[str, Any]:
    """The demo: the sample report indexed (or, reopening, its old collection opened) and its questions asked."""
    from hyperfolio import Collection
    from hyperfolio.sample import SAMPLE_QUESTION, write_sample_report

    folder = Path(spec["work"]) / "sample"
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"answers": {}}
    with Collection(folder / "collection") as collection:
        if spec.get("reopen"):
            out["check"] = collection.check().summary()
        else:
            pdf = write_sample_report(folder / "sample-report.pdf")
            out["pdf_sha256"] = hashlib.sha256(pdf.read_bytes()).hexdigest()
            for result in collection.add([pdf], workers=0).results:
                _mid_edit(str(result.reason or ""))
        for question in (SAMPLE_QUESTION, *DEMO_QUESTIONS_EXTRA):
            asked: dict[str, Any] = {}
            for mode in [None, *modes]:  # None: the collection's default mode, as `hyperfolio demo` asks
                try:
                    asked[mode or "default"] = _answer_record(collection.ask(question, mode=mode))
                except Exception as exc:  # noqa: BLE001 - compared like any answer
                    asked[mode or "default"] = {"error": f"{type(exc).__name__}: {exc}"}
                    _mid_edit(asked[mode or "default"]["error"])
            out["answers"][question] = asked
    return out


def driver_main(spec_path: Path) -> int:
    """The child: import this version's hyperfolio, run the spec, write the JSON of rankings and answers."""
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    try:
        import hyperfolio
        from hyperfolio.collection import Collection  # noqa: F401 - fails here, not mid-run, when mid-edit
        from hyperfolio.retrieve import STRATEGIES
    except ImportError as exc:
        print(f"import failed: {exc}", flush=True)
        return IMPORT_FAILED
    began = time.time()
    strategies = list(STRATEGIES)
    wanted = spec.get("modes") or strategies + (list(KNOB_VARIANTS) if spec.get("knobs") else [])
    modes = [m for m in strategies if m in wanted]
    spec["runs"] = {m: (m, {}) for m in modes}
    spec["runs"].update({v: run for v, run in KNOB_VARIANTS.items() if v in wanted and run[0] in strategies})
    print(f"driver: hyperfolio from {Path(hyperfolio.__file__).parent}, runs {list(spec['runs'])}", flush=True)
    result: dict[str, Any] = {
        "hyperfolio": str(Path(hyperfolio.__file__).parent),
        "strategies": strategies,
        "runs": list(spec["runs"]),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(began)),
        "datasets": {},
    }
    try:
        for plan in spec["plans"]:
            result["datasets"][plan["name"]] = drive_dataset(plan, spec)
        if spec.get("sample"):
            result["sample"] = drive_sample(spec, modes)
    except (ImportError, MidEdit) as exc:
        print(f"the tree looks mid-edit: {exc}", flush=True)
        return IMPORT_FAILED
    result["seconds"] = time.time() - began
    Path(spec["out"]).write_text(json.dumps(result), encoding="utf-8")
    return 0


# ---------------------------------------------------------------------------- comparing
@dataclass
class Tally:
    """Differences found; any one makes the exit status 1."""

    lines: list[str] = field(default_factory=list)
    differences: int = 0

    def say(self, line: str = "") -> None:
        self.lines.append(line)
        print(line, flush=True)


def _describe(ranking: Any) -> str:
    if ranking is None:
        return "(nothing: the document did not index on this side)"
    if not isinstance(ranking, list):
        return str(ranking)
    return "; ".join(f"{c[0]} ({c[1][:10]} p{c[2]}) {c[3]:.6f}" for c in ranking)


def _first_change(a: list[list[Any]], b: list[list[Any]]) -> str:
    """Where two rankings part: the first rank that differs, and whether only the scores moved."""
    ids_a, ids_b = [c[0] for c in a], [c[0] for c in b]
    parted = [i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y]
    if parted:
        rank, kind = parted[0] + 1, "score only" if a[parted[0]][:3] == b[parted[0]][:3] else "chunk"
    else:
        rank, kind = min(len(a), len(b)) + 1, "length"
    same_set = "same chunks, other order" if sorted(ids_a) == sorted(ids_b) else "other chunks"
    return f"first difference at rank {rank} ({kind}; {same_set}; lengths {len(a)}/{len(b)})"


def compare_mode(tally: Tally, title: str, plan: Plan, mode: str, left: dict[str, Any], right: dict[str, Any]) -> None:
    """One dataset x mode: identical top-K lists counted, the first few differences shown in detail."""
    differing: list[str] = []
    counted = 0
    for question in plan.questions:
        qid = question["qid"]
        a, b = left["rankings"][mode].get(qid), right["rankings"][mode].get(qid)
        if a is None and b is None:
            continue  # its document failed on both sides: reported with the documents
        counted += 1
        if a != b:
            differing.append(qid)
    same = counted - len(differing)
    tally.differences += len(differing)
    failed = sum(isinstance(r, dict) for r in left["rankings"][mode].values())  # errors, equal on both sides or not
    note = (f"   ({failed} errors on the old side)" if failed else "") + ("   DIFFERENT" if differing else "")
    tally.say(f"{title:<12} {mode:<21} {same:>4}/{counted:<4} identical{note}")
    by_qid = {q["qid"]: q for q in plan.questions}
    for qid in differing[:SHOWN]:
        a, b = left["rankings"][mode].get(qid), right["rankings"][mode].get(qid)
        how = _first_change(a, b) if isinstance(a, list) and isinstance(b, list) else "error on one side"
        tally.say(f"    {qid} [{by_qid[qid]['doc_ref']}] {by_qid[qid]['question'][:90]!r}: {how}")
        tally.say(f"      old: {_describe(a)}")
        tally.say(f"      new: {_describe(b)}")
    if len(differing) > SHOWN:
        tally.say(f"    ... and {len(differing) - SHOWN} more: {', '.join(differing[SHOWN : SHOWN + 20])}")


def compare_dataset(tally: Tally, plan: Plan, modes: list[str], left: dict[str, Any], right: dict[str, Any]) -> None:
    """Documents (ids, failures), index counts, then every mode's rankings. A reused old side may hold more
    documents than this run's plan: ids are compared over the plan's, counts only between equal collections."""
    names = {Path(d).name for d in plan.documents}
    ids = [{n: i for n, i in data["doc_ids"].items() if n in names} for data in (left, right)]
    if ids[0] != ids[1]:
        tally.differences += 1
        tally.say(f"{plan.name}: document ids differ: old {ids[0]} new {ids[1]}")
    for side, data in (("old", left), ("new", right)):
        if data["failures"]:
            tally.say(f"{plan.name}: {side} failed to index {data['failures']}")
    if len(left["doc_ids"]) != len(right["doc_ids"]):
        tally.say(f"{plan.name}: {len(ids[1])} documents, {len(plan.questions)} questions; index counts not compared")
    else:
        compare_stats(tally, plan, left["stats"], right["stats"])
    for mode in modes:
        compare_mode(tally, plan.name, plan, mode, left, right)
    if left.get("answers") and right.get("answers"):
        compare_answers(tally, plan, left["answers"], right["answers"])


def compare_stats(tally: Tally, plan: Plan, left: dict[str, Any], right: dict[str, Any]) -> None:
    """The collections' counts (documents, chunks, entities, hyperedges by level, concepts, reconciliation)."""
    common = sorted(set(left) & set(right))
    moved = [k for k in common if left[k] != right[k] and k != "embedder"]
    tally.differences += len(moved)
    only = sorted(set(left) ^ set(right))
    tally.say(
        f"{plan.name}: {left.get('documents')} documents, {len(plan.questions)} questions; index counts: "
        f"{len(common) - len(moved)}/{len(common)} equal" + (f", on one side only: {only}" if only else "")
    )
    for key in moved[:10]:
        tally.say(f"    {key}: old {left[key]} new {right[key]}")


def compare_answers(tally: Tally, plan: Plan, left: dict[str, Any], right: dict[str, Any]) -> None:
    """`ask` in the default mode, question by question: text and citations."""
    common = [q for q in plan.questions if q["qid"] in left and q["qid"] in right]
    differing = [q for q in common if left[q["qid"]] != right[q["qid"]]]
    tally.differences += len(differing)
    same = len(common) - len(differing)
    tally.say(f"{plan.name:<12} {'answers':<21} {same:>4}/{len(common):<4} identical (ask, default mode)")
    for question in differing[:SHOWN]:
        tally.say(f"    {question['qid']}: old {json.dumps(left[question['qid']])[:300]}")
        tally.say(f"    {question['qid']}: new {json.dumps(right[question['qid']])[:300]}")


def compare_sample(tally: Tally, left: dict[str, Any], right: dict[str, Any]) -> None:
    """The demo's answers in every mode: text and citations equal, or shown."""
    if "pdf_sha256" in left and "pdf_sha256" in right and left["pdf_sha256"] != right["pdf_sha256"]:
        tally.say("sample: the two versions write different sample PDFs (answers compared all the same)")
    for question, by_mode in left["answers"].items():
        other = right["answers"].get(question, {})
        modes = [m for m in by_mode if m in other]
        same = [m for m in modes if by_mode[m] == other[m]]
        tally.differences += len(modes) - len(same)
        tally.say(f"sample {question!r}: {len(same)}/{len(modes)} modes give the same answer and citations")
        for mode in [m for m in modes if m not in same][:SHOWN]:
            tally.say(f"    {mode}: old {json.dumps(by_mode[mode])[:400]}")
            tally.say(f"    {mode}: new {json.dumps(other[mode])[:400]}")
    first = next(iter(left["answers"].values()), {}).get("default", {})
    tally.say(f"sample default answer: {str(first.get('text', first))[:200]!r}")


def compare_runs(title: str, plans: list[Plan], left: dict[str, Any], right: dict[str, Any]) -> Tally:
    tally = Tally()
    tally.say(f"== {title}")
    run_modes = [m for m in left["runs"] if m in right["runs"]]
    for side, data in (("old", left), ("new", right)):
        extra = [m for m in data["runs"] if m not in run_modes]
        if extra:
            tally.say(f"modes only the {side} version ran (not compared): {extra}")
    for plan in plans:
        compare_dataset(tally, plan, run_modes, left["datasets"][plan.name], right["datasets"][plan.name])
        if "check" in right["datasets"][plan.name]:
            tally.say(f"{plan.name}: integrity after reopening: {right['datasets'][plan.name]['check']['summary']}")
            tally.differences += 0 if right["datasets"][plan.name]["check"]["ok"] else 1
    if "sample" in left and "sample" in right:
        compare_sample(tally, left["sample"], right["sample"])
        if "check" in right["sample"]:
            tally.say(f"sample: integrity after reopening: {right['sample']['check']}")
    tally.say(f"{title}: {'no difference' if not tally.differences else f'{tally.differences} differences'}")
    return tally


# ---------------------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", default=DEFAULT_REV, help="the old version: a git revision (default: %(default)s)")
    parser.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated (default: %(default)s)")
    parser.add_argument("--modes", default="", help="comma-separated modes, e.g. dual,concept[nograph] (default: all)")
    parser.add_argument("--limit-docs", type=int, default=None, help="only the first N documents of each dataset")
    parser.add_argument("--questions", default="", help="only these question ids (comma-separated)")
    parser.add_argument("--reopen", action="store_true", help="also open the old collections with the new code")
    parser.add_argument("--keep", type=Path, default=None, help="keep collections, logs and JSON in this folder")
    parser.add_argument("--reuse-old", action="store_true", help="reuse old.json in --keep instead of re-running")
    parser.add_argument("--no-sample", action="store_true", help="leave out the demo's sample answers")
    parser.add_argument("--no-knobs", action="store_true", help="leave out the modes run with per-call knobs")
    parser.add_argument("--answers", action="store_true", help="also compare every question's `ask` answer")
    parser.add_argument("--data", type=Path, default=None, help="data root (default: the loaders' own)")
    parser.add_argument("--driver", type=Path, default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _spec(plans: list[Plan], args: argparse.Namespace, work: Path, label: str, **extra: Any) -> dict[str, Any]:
    return {
        "plans": [vars(p) for p in plans],
        "modes": [m for m in args.modes.split(",") if m],
        "work": str(work / label),
        "out": str(work / f"{label}.json"),
        "sample": not args.no_sample,
        "knobs": not args.no_knobs,
        "answers": args.answers,
        **extra,
    }


def run_sides(plans: list[Plan], args: argparse.Namespace, work: Path) -> list[Tally]:
    """Old, new and (with --reopen) the old collections under the new code; each compared with the old."""
    old_json = work / "old.json"
    if args.reuse_old and old_json.exists():
        old = json.loads(old_json.read_text(encoding="utf-8"))
        before = json.loads((work / "old.spec.json").read_text(encoding="utf-8"))
        indexed = {p["name"]: p["documents"] for p in before["plans"]}
        if any(indexed.get(p.name) != p.documents for p in plans):
            raise SystemExit("--reuse-old: the old run indexed other documents; give the same --datasets/--limit-docs")
        print(f"reusing {old_json} (old side run at {old['started']})", flush=True)
    else:
        old_src = extract_revision(args.rev, work / "old-src")
        old = run_driver("old", old_src, _spec(plans, args, work, "old"), work)
    new_src = REPO / "src"
    new = run_driver("new", new_src, _spec(plans, args, work, "new"), work)
    tallies = [compare_runs(f"old ({args.rev[:10]}) vs new (working tree)", plans, old, new)]
    if args.reopen:
        names = [p.name for p in plans] + ([] if args.no_sample else ["sample"])

        def copy_old() -> None:  # the old collections, copied: the new code upgrades its copy in place
            for name in names:
                shutil.copytree(work / "old" / name, work / "reopen" / name)

        doc_ids = {name: data["doc_ids"] for name, data in old["datasets"].items()}
        spec = _spec(plans, args, work, "reopen", reopen=True, doc_ids=doc_ids)
        reopened = run_driver("reopen", new_src, spec, work, copy_old)
        tallies.append(compare_runs("old vs new code on the old collections (--reopen)", plans, old, reopened))
    return tallies


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.driver is not None:
        return driver_main(args.driver)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    print(f"ranking_diff: started {started}; old = {args.rev}, new = the working tree {REPO}", flush=True)
    work = args.keep or Path(tempfile.mkdtemp(prefix="ranking-diff-"))
    work.mkdir(parents=True, exist_ok=True)
    root = args.data or _import_datasets().data_root()
    names = [n for n in args.datasets.split(",") if n]
    unknown = [n for n in names if n not in DATASETS]
    if unknown:
        raise SystemExit(f"unknown dataset(s) {unknown}; known: {', '.join(DATASETS)}")
    qids = {q for q in args.questions.split(",") if q} or None
    plans = load_plans(names, root, work / "documents", args.limit_docs, qids)
    try:
        tallies = run_sides(plans, args, work)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    total = sum(t.differences for t in tallies)
    print(f"ranking_diff: {'IDENTICAL' if not total else f'{total} DIFFERENCES'} (started {started})", flush=True)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
