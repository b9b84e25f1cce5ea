"""Parsing on worker processes and on Ray builds exactly what in-process parsing builds."""

from __future__ import annotations

import hashlib
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np
import psutil
import pymupdf
import pytest

from hyperfolio import Collection
from hyperfolio.collection import AddProgress
from hyperfolio.config import ParseOptions
from hyperfolio.ingest import FileJob, InlineExecutor, ParseAhead, ProcessExecutor, make_executor
from hyperfolio.ingest.embedding import WRITER_EMBEDDING, embed_away
from hyperfolio.parse import finish_document
from hyperfolio.sample import write_sample_report
from hyperfolio.store.base import CHUNK_SPACE, STAGE_GRAPHED
from hyperfolio.timing import StageTimes


def write_reports(folder: Path, count: int, pages: int, pdf_writer) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = [write_sample_report(folder / "sample.pdf")]
    for n in range(count):
        texts = [
            f"# Site {n} page {p}\n"
            + " ".join(
                f"In quarter {q} the site {n} plant produced {100 * n + 7 * p + q} megawatt hours "
                f"and crew {p} inspected turbine {q}."
                for q in range(6)
            )
            for p in range(pages)
        ]
        files.append(pdf_writer(folder / f"site-{n}.pdf", texts, title=f"Site {n} report"))
    return files


def content(col_dir: Path) -> dict[str, list[tuple]]:
    """What a collection holds, by content (ids here are content hashes, so they compare too)."""
    db = sqlite3.connect(col_dir / "hyperfolio.db")
    try:
        queries = {
            "documents": "SELECT doc_id, title, num_pages FROM documents",
            "status": "SELECT doc_id, stage FROM doc_status",
            "chunks": "SELECT chunk_id, modality, text, section_path FROM chunks",
            "chunk_vectors": "SELECT item_id FROM vectors WHERE space = 'chunk'",
            "entities": "SELECT name, type, modality FROM entities",
            "hyperedges": "SELECT level, description FROM hyperedges",
        }
        return {name: sorted(db.execute(sql).fetchall()) for name, sql in queries.items()}
    finally:
        db.close()


def test_workers_build_what_in_process_parsing_builds(tmp_path, embedder, pdf_writer):
    files = write_reports(tmp_path / "docs", count=3, pages=5, pdf_writer=pdf_writer)
    inline = Collection(tmp_path / "inline", embedder=embedder)
    pooled = Collection(tmp_path / "pooled", embedder=embedder)
    first = inline.add(files, workers=0)
    second = pooled.add(files, workers=2)
    assert [r.status for r in first.results] == ["added"] * 4
    assert [r.status for r in second.results] == ["added"] * 4
    assert content(tmp_path / "inline") == content(tmp_path / "pooled")
    # The workers embedded the chunks: the same vectors as this process makes.
    here, there = vectors(inline), vectors(pooled)
    assert here.keys() == there.keys() and here
    assert max(float(np.abs(here[key] - there[key]).max()) for key in here) < 1e-5
    # Per-stage seconds: parsing and embedding measured in the workers came back with their results.
    for result in second.results:
        stages = {"text", "tables", "assemble", "write", "chunk embedding", "embedding wait", "extraction"}
        assert stages <= set(result.stage_seconds)
        assert "embedding wait" not in first.results[0].stage_seconds
    totals = pooled.stats()["stage_seconds"]
    assert totals["text"] > 0 and totals["chunk embedding"] > 0
    # The cards come from the pages the workers parsed: the same as from the pages parsed here.
    cards = [{d.source: d.meta.get("card") for d in c.store.list_documents()} for c in (inline, pooled)]
    assert cards[0] == cards[1] and all(cards[0].values())
    inline.close()
    pooled.close()


def vectors(col: Collection) -> dict[str, np.ndarray]:
    return {item: vector for item, _, vector in col.store.iter_vectors(CHUNK_SPACE)}


def test_a_batch_a_worker_could_not_embed_is_embedded_here(tmp_path, embedder, pdf_writer):
    """A worker's error (or a pool that died) costs that batch a local embedding, not the document's vectors."""
    path = write_reports(tmp_path / "docs", count=1, pages=3, pdf_writer=pdf_writer)[1]
    col = Collection(tmp_path / "col", embedder=embedder)
    col.add([path], workers=0)
    store = col.store
    doc_id = store.list_documents()[0].doc_id
    expected = vectors(col)
    store.prune_vectors(CHUNK_SPACE, doc_id, [])
    missing = store.missing_vectors(CHUNK_SPACE, doc_id)
    assert len(missing) == len(expected)
    executor = ProcessExecutor(1)
    try:
        pending = embed_away(executor, embedder, missing)
        assert pending is not None and pending.total == len(missing)
        failed: Future = Future()
        failed.set_exception(BrokenProcessPool("a worker died"))
        chunks, texts, _ = pending.parts[0]
        pending.parts[0] = (chunks, texts, failed)
        times = StageTimes()
        assert pending.store(store, embedder, times=times) == len(missing)
    finally:
        executor.close()
    again = vectors(col)
    assert again.keys() == expected.keys()
    assert max(float(np.abs(again[key] - expected[key]).max()) for key in again) < 1e-5
    assert times.seconds[WRITER_EMBEDDING] > 0
    # Without workers, or with an embedder no worker can rebuild, nothing is sent away.
    assert embed_away(InlineExecutor(), embedder, missing) is None
    col.close()


def test_vectors_cut_off_after_the_graph_are_made_on_resume(tmp_path, embedder, pdf_writer):
    """Embedding on workers stores vectors after the graph: a run cut off between the two leaves a document
    graph-built without some vectors; the next `add` makes them and the document is ready."""
    files = write_reports(tmp_path / "docs", count=1, pages=3, pdf_writer=pdf_writer)
    col = Collection(tmp_path / "col", embedder=embedder)
    col.add(files, workers=2)
    reference = content(tmp_path / "col")
    store = col.store
    doc_id = store.document_by_hash(hashlib.sha256(files[1].read_bytes()).hexdigest()).doc_id
    store.prune_vectors(CHUNK_SPACE, doc_id, [])
    store.set_stage(doc_id, STAGE_GRAPHED)
    report = col.add(files, workers=2)
    assert {Path(r.path).name: r.status for r in report.results}["site-0.pdf"] == "resumed"
    assert content(tmp_path / "col") == reference
    col.close()


def test_a_bad_file_among_good_ones_fails_alone_on_workers(tmp_path, embedder, pdf_writer):
    files = write_reports(tmp_path / "docs", count=2, pages=3, pdf_writer=pdf_writer)
    secret = tmp_path / "docs" / "locked.pdf"
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "classified")
    doc.save(secret, encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="o", user_pw="u")
    broken = tmp_path / "docs" / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 50)
    col = Collection(tmp_path / "col", embedder=embedder)
    report = col.add([files[0], secret, broken, *files[1:]], workers=2)
    by_name = {Path(r.path).name: r for r in report.results}
    assert by_name["locked.pdf"].status == "failed" and "password" in by_name["locked.pdf"].reason
    assert by_name["broken.pdf"].status == "failed" and by_name["broken.pdf"].reason
    assert [by_name[f.name].status for f in files] == ["added"] * len(files)
    col.close()


def test_a_script_without_a_main_guard_still_indexes(tmp_path, pdf_writer):
    """Worker processes re-run an unguarded script and die; parsing falls back to this process. (Here each
    process adds to a collection of its own: on a shared one, a worker's run of the script would find every
    file claimed by the writer and skip it.)"""
    files = write_reports(tmp_path / "docs", count=1, pages=2, pdf_writer=pdf_writer)
    script = tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import os
            from hyperfolio import Collection
            folder = {str(tmp_path)!r} + f"/col-{{os.getpid()}}"
            report = Collection(folder).add({[str(f) for f in files]!r}, workers=2)
            print([r.status for r in report.results])
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "['added', 'added']" in done.stdout
    assert "parsing in this process instead" in done.stderr


@pytest.mark.long
def test_sigkill_with_workers_then_add_again_equals_an_uninterrupted_run(tmp_path, pdf_writer):
    write_reports(tmp_path / "docs", count=6, pages=6, pdf_writer=pdf_writer)
    col_dir = tmp_path / "col"
    cmd = [sys.executable, "-m", "hyperfolio", "add", str(tmp_path / "docs"), "-c", str(col_dir), "--workers", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    killed = False
    while time.time() < deadline and proc.poll() is None:
        db = col_dir / "hyperfolio.db"
        if db.exists():
            try:
                ready = content(col_dir)["status"]
            except sqlite3.OperationalError:
                ready = []
            if ready:  # at least one document is in; others are mid-way
                workers = psutil.Process(proc.pid).children(recursive=True)
                proc.send_signal(signal.SIGKILL)
                killed = True
                break
        time.sleep(0.05)
    assert killed, "ingest finished (or never started) before it could be killed"
    assert proc.wait() == -signal.SIGKILL
    assert not workers_left(workers), "worker processes outlived the killed writer"
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    clean = subprocess.run(
        [*cmd[:5], "-c", str(tmp_path / "clean"), "--workers", "0"], capture_output=True, text=True, timeout=600
    )
    assert clean.returncode == 0, clean.stderr[-2000:]
    resumed, reference = content(col_dir), content(tmp_path / "clean")
    assert all(stage == "ready" for _, stage in resumed["status"])
    assert resumed == reference


@pytest.mark.slow
def test_ray_local_builds_what_in_process_parsing_builds(tmp_path, embedder, pdf_writer):
    pytest.importorskip("ray", reason="Ray is in the test extra: pip install -e '.[test]'")
    files = write_reports(tmp_path / "docs", count=2, pages=4, pdf_writer=pdf_writer)
    inline = Collection(tmp_path / "inline", embedder=embedder)
    on_ray = Collection(tmp_path / "ray", embedder=embedder)
    inline.add(files, workers=0)
    report = on_ray.add(files, ray="local")
    assert [r.status for r in report.results] == ["added"] * len(files)
    assert content(tmp_path / "inline") == content(tmp_path / "ray")
    inline.close()
    on_ray.close()


def workers_left(workers: list[psutil.Process], wait: float = 10.0) -> list[psutil.Process]:
    _, alive = psutil.wait_procs(workers, timeout=wait)
    return alive


def test_a_worker_killed_mid_file_costs_a_retry_not_the_file(tmp_path, pdf_writer):
    """The OOM killer (here: us) takes a worker down mid-file: the file is parsed again, alone, and whole."""
    path = write_reports(tmp_path / "docs", count=1, pages=12, pdf_writer=pdf_writer)[1]
    options = ParseOptions()
    expected = finish_document(path, path.read_bytes(), options)
    executor = ProcessExecutor(2)
    ahead = ParseAhead(executor, options)
    job = FileJob(path)
    ahead.fill([job], FileJob.read)
    assert len(job.parts) > 1
    pool_workers = [c for c in psutil.Process().children() if "resource_tracker" not in " ".join(c.cmdline())]
    assert pool_workers
    for worker in pool_workers:
        worker.kill()
    doc = ahead.document(job, StageTimes())
    assert [c.text for c in doc.chunks] == [c.text for c in expected.chunks]
    assert ahead.generation == 1  # the broken pool was replaced
    ahead.executor.close()


def test_inline_parsing_reports_every_page_after_the_file_starts(tmp_path, embedder, pdf_writer):
    path = write_reports(tmp_path / "docs", count=1, pages=4, pdf_writer=pdf_writer)[1]
    events: list[tuple] = []

    class Recorder(AddProgress):
        def file_started(self, path: str) -> None:
            events.append(("started",))

        def pages_parsed(self, done: int, total: int) -> None:
            events.append(("page", done, total))

    col = Collection(tmp_path / "col", embedder=embedder)
    col.add([path], progress=Recorder(), workers=0)
    assert events[0] == ("started",)
    assert [e for e in events if e[0] == "page"][:4] == [("page", n, 4) for n in range(1, 5)]
    col.close()


def test_executor_choice_is_checked():
    with pytest.raises(Exception, match="--workers"):
        make_executor(-3)
    assert make_executor(0).workers == 0
    pool = make_executor(2)
    assert pool.workers == 2
    pool.close()
