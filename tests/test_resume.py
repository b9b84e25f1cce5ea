"""A process killed (SIGKILL) in the middle of ingesting several files; `add` run again resumes."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hyperfolio import Collection


def write_corpus(folder: Path, count: int = 4, paragraphs: int = 60) -> list[Path]:
    folder.mkdir()
    files = []
    for n in range(count):
        body = "\n\n".join(
            f"Paragraph {p} of report {n}: the plant in region {n} produced {p * 7 + n} megawatt hours "
            f"while staff number {p + 100 * n} inspected turbine blade {p}."
            for p in range(paragraphs)
        )
        path = folder / f"report-{n}.md"
        path.write_text(f"# Report {n}\n\n## Production\n\n{body}\n")
        files.append(path)
    return files


def chunk_rows(col_dir: Path) -> list[tuple]:
    db = sqlite3.connect(col_dir / "hyperfolio.db")
    try:
        return db.execute("SELECT chunk_id, text FROM chunks ORDER BY chunk_id").fetchall()
    finally:
        db.close()


def vector_count(col_dir: Path) -> int:
    db = sqlite3.connect(col_dir / "hyperfolio.db")
    try:
        return db.execute("SELECT COUNT(*) FROM vectors WHERE space = 'chunk'").fetchone()[0]
    except sqlite3.OperationalError:  # schema not created yet
        return 0
    finally:
        db.close()


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from hyperfolio import Collection
    from hyperfolio.collection import AddProgress

    class KillMidway(AddProgress):
        # SIGKILL ourselves while the third file is half embedded: nothing gets to clean up.
        def __init__(self):
            self.files = 0
        def file_started(self, path):
            self.files += 1
        def chunks_embedded(self, count, total=0):
            if self.files == 3 and count > 0:
                os.kill(os.getpid(), signal.SIGKILL)

    col = Collection(sys.argv[1])
    col.add([sys.argv[2]], progress=KillMidway())
    """
)


@pytest.mark.long
def test_sigkill_mid_ingest_then_resume(tmp_path, embedder, monkeypatch):
    monkeypatch.setattr("hyperfolio.collection.EMBED_BATCH_CHUNKS", 8)
    files = write_corpus(tmp_path / "docs")
    col_dir = tmp_path / "col"
    script = tmp_path / "killer.py"
    script.write_text(
        KILLER.replace(
            "from hyperfolio.collection import AddProgress",
            "import hyperfolio.collection as hc\nhc.EMBED_BATCH_CHUNKS = 8\n"
            "from hyperfolio.collection import AddProgress",
        )
    )
    proc = subprocess.run([sys.executable, str(script), str(col_dir), str(tmp_path / "docs")])
    assert proc.returncode == -signal.SIGKILL

    col = Collection(col_dir, embedder=embedder)
    statuses = {Path(d.source).name: d.status for d in col.documents()}
    assert statuses["report-0.md"] == "ready" and statuses["report-1.md"] == "ready"
    assert statuses["report-2.md"] == "parsed"  # killed while embedding
    assert "report-3.md" not in statuses
    before = chunk_rows(col_dir)

    report = col.add([tmp_path / "docs"])
    by_name = {Path(r.path).name: r.status for r in report.results}
    assert by_name == {
        "report-0.md": "skipped",
        "report-1.md": "skipped",
        "report-2.md": "resumed",
        "report-3.md": "added",
    }
    after = chunk_rows(col_dir)
    assert len(after) == len({cid for cid, _ in after})  # no duplicates
    assert set(before) <= set(after)  # nothing already indexed was lost
    assert vector_count(col_dir) == len(after)  # every chunk embedded exactly once
    assert all(d.status == "ready" for d in col.documents())

    reference = Collection(tmp_path / "clean", embedder=embedder)
    reference.add(files)
    assert len(chunk_rows(tmp_path / "clean")) == len(after)
    hits = col.retrieve("region 3 megawatt hours", mode="hybrid", k=3)
    assert hits.items and hits.items[0].citation.title == "Report 3"
    col.close()
    reference.close()


@pytest.mark.long
def test_sigkill_at_an_arbitrary_moment_via_cli(tmp_path):
    """Kill the real CLI after a while, wherever it is; a second `hyperfolio add` completes cleanly."""
    write_corpus(tmp_path / "docs", count=6, paragraphs=60)
    col_dir = tmp_path / "col"
    cmd = [sys.executable, "-m", "hyperfolio", "add", str(tmp_path / "docs"), "--collection", str(col_dir)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        if (col_dir / "hyperfolio.db").exists() and vector_count(col_dir) > 0:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "ingest finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = chunk_rows(col_dir)
    assert len(rows) == len({cid for cid, _ in rows})
    assert vector_count(col_dir) == len(rows)
    col = Collection(col_dir)
    assert len(col.documents()) == 6
    assert all(d.status == "ready" for d in col.documents())
    col.close()
