"""SIGKILL at every stage boundary of `add`, at every store transaction (before BEGIN, and before COMMIT) and at
seeded random points inside each stage; `add` again; the store equals an uninterrupted run's, by content,
and the integrity check passes; in a new collection, and in one holding a related document that
reconciliation and refinement change (the resumed build must change it exactly as an uninterrupted one).

The machinery is `tests/crash_harness.py` (shared with `benchmarks/crash_stages.py`, which tries more
points): each kill point is a child process that counts the package's calls with `sys.settrace` and
kills itself at the chosen one, so nothing in the product knows it is being tested.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest


def _load_harness() -> ModuleType:
    """The harness sits beside this file; tests are imported by path (--import-mode=importlib)."""
    name = "crash_harness"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("crash_harness.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


harness = _load_harness()

SEED = 1729  # the random kill points; printed, so a failure can be replayed with benchmarks/crash_stages.py
RANDOM_POINTS = 2  # per stage, besides its boundary
JOBS = 2  # killed children at a time (resumptions run in this process meanwhile)
FRESH_ONLY = frozenset({"open", "chunk-embedding"})  # stages with transactions only a new collection makes


@pytest.fixture(scope="module", params=["fresh", "after-related"])
def uninterrupted(request, tmp_path_factory):
    """The fixture document and the uninterrupted run (into a new collection, or into one holding a
    related document, whose facts and anchors adding this one changes): calls per stage and store."""
    work = tmp_path_factory.mktemp(f"crash-stages-{request.param}")
    fixture = harness.write_fixture(work / "osprey-report.pdf")
    setup = [harness.write_fixture(work / "port-notes.pdf", harness.SETUP_PAGES)] if request.param != "fresh" else []
    harness.prepare_models()
    return work, fixture, harness.count_stages(work, fixture, setup), setup


def _changed_earlier_documents(collection: Path) -> int:
    """Decisions of the last document that revised or dropped a fact of another one."""
    import sqlite3

    with sqlite3.connect(collection / "hyperfolio.db") as db:
        rows = db.execute("SELECT doc_id, decision, evidence FROM conflict_log").fetchall()
    return sum(1 for doc, decision, evidence in rows if decision != "kept" and doc not in evidence)


@pytest.mark.long
def test_killed_at_any_stage_add_again_gives_the_uninterrupted_store(uninterrupted, embedder):
    work, fixture, profile, setup = uninterrupted  # count_stages checked the uninterrupted run's integrity
    reference = harness.dump_sqlite(profile.collection)
    assert reference.tables["refine_state"] and reference.tables["conflict_log"], "the fixture reaches every stage"
    if setup:
        assert _changed_earlier_documents(profile.collection), "adding the fixture changes the related document"
    # Every store transaction is a kill point where a related document is in the collection: that run makes
    # as many of them as a new collection's, or more, in every stage but two, which a new collection alone goes through
    # (creating the collection, and its first vectors): there, and at every stage boundary and random point,
    # a new collection is killed too (benchmarks/crash_stages.py tries every point of both). This takes 62 of
    # the long lane's slowest points.
    points = harness.plan(profile, RANDOM_POINTS, SEED, transactions=True if setup else FRESH_ONLY)
    print(f"\nseed {SEED}; calls per stage {profile.calls}")
    print(f"{len(points)} kill points ({harness.kinds(points)}):", " ".join(p.label for p in points))

    started = time.perf_counter()
    outcomes = harness.run_campaign(
        work / "runs", fixture, points, reference, setup=setup, jobs=JOBS, embedder=embedder
    )
    seconds = time.perf_counter() - started
    rows = harness.summarise(outcomes)
    print(harness.table(rows))
    print(f"{len(outcomes)} kill points in {seconds:.0f} s")
    for outcome in outcomes:
        if outcome.after_kill:  # worth reporting, not a failure: `add` is to repair what a kill left
            print(f"integrity after killing at {outcome.point.label}: {outcome.after_kill}")

    assert {r["stage"] for r in rows if r["tried"]} == set(harness.STAGE_NAMES)
    failed = [o for o in outcomes if not o.ok]
    assert not failed, f"{len(failed)} of {len(outcomes)} kill points failed (seed {SEED}):\n" + "\n".join(
        harness.describe(o) for o in failed[:3]
    )


def test_an_uninterrupted_run_that_fails_the_integrity_check_stops_the_campaign(uninterrupted, tmp_path, monkeypatch):
    """A fault of `add` itself shows in the uninterrupted run, before any kill point is blamed for it: here a
    concept without entities, as adding a related document once left behind."""
    import sqlite3

    _, fixture, profile, setup = uninterrupted

    def tampered_run(collection: Path, file: Path, setup=(), kill=None, counts=None, timeout=300.0):
        shutil.copytree(profile.collection, collection)
        db = sqlite3.connect(collection / "hyperfolio.db")
        with db:
            db.execute("INSERT INTO concepts (concept_id, name) VALUES ('Cnowhere', 'Nowhere')")
        db.close()
        counts.write_text(json.dumps({"calls": profile.calls, "transactions": profile.transactions}))
        return subprocess.CompletedProcess([], 0, "", "")

    monkeypatch.setattr(harness, "run_driver", tampered_run)
    with pytest.raises(RuntimeError, match=r"integrity check: orphan_concepts \(1: Cnowhere\)$"):
        harness.count_stages(tmp_path, fixture, setup)


def test_the_comparison_sees_what_a_crash_could_leave_behind(uninterrupted, tmp_path):
    """The dump misses nothing that matters: a duplicated decision, a changed description, a lost or
    changed vector and a leftover claim are each reported; timestamps are not."""
    import sqlite3

    collection = uninterrupted[2].collection
    reference = harness.dump_sqlite(collection)

    def tampered(*statements: str) -> list[str]:
        copy = tmp_path / f"copy-{len(list(tmp_path.iterdir()))}"
        shutil.copytree(collection, copy)
        db = sqlite3.connect(copy / "hyperfolio.db")
        with db:
            for statement in statements:
                db.execute(statement)
        db.close()
        return harness.compare(reference, harness.dump_sqlite(copy))

    assert tampered("UPDATE documents SET added_at = added_at + 60", "UPDATE doc_status SET updated_at = 0") == []
    duplicated = tampered(
        "INSERT INTO conflict_log (doc_id, kind, decision, fact, other, reason, evidence, decided_by, created_at)"
        " SELECT doc_id, kind, decision, fact, other, reason, evidence, decided_by, created_at FROM conflict_log"
        " LIMIT 1"
    )
    assert (
        len(duplicated) == 1
        and duplicated[0].startswith("conflict_log:")
        and "only in the resumed run" in (duplicated[0])
    )
    assert tampered("UPDATE entities SET description = description || ' | again' WHERE rowid = 1")[0].startswith(
        "entities:"
    )
    assert tampered("DELETE FROM vectors WHERE rowid = (SELECT MAX(rowid) FROM vectors WHERE space = 'theme')")
    changed = tampered("UPDATE vectors SET vec = zeroblob(length(vec)) WHERE rowid = 1")
    assert changed and changed[-1].startswith("vectors:")
    assert tampered("INSERT INTO claims (key, owner, expires_at) VALUES ('abc', 'host:1:x', 0)")[0].startswith(
        "claims:"
    )
