"""Two processes adding files to one PostgreSQL collection at once: nothing lost, nothing twice.

They split the files between them, as workers sharing a collection do. (Two processes indexing the
very same document at the same moment is not safe yet: both rebuild its graph; see the README.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hyperfolio.sample import write_sample_report

pytestmark = pytest.mark.slow

NOTES = {
    "baltic.md": "# Baltic\n\nThe Baltic wind farm at Kriegers Flak opened in 2021 with 72 turbines.\n",
    "iberia.md": "# Iberia\n\nIberia added 860 MW of solar capacity near Seville in 2024.\n",
    "lakes.md": "# Great Lakes\n\nThe Great Lakes region grew fastest, adding 240 MW in 2023.\n",
}
ADD = (
    "import sys\n"
    "from hyperfolio.collection import Collection\n"
    "col = Collection(sys.argv[1], folder=sys.argv[2])\n"
    "report = col.add(sys.argv[3:])\n"
    "print(','.join(r.status for r in report.results))\n"
    "col.close()\n"
)
# Integrity: rows that point at nothing, and rows that should be unique but are not.
CHECKS = {
    "chunks of no document": "SELECT COUNT(*) FROM chunks c LEFT JOIN documents d USING (doc_id) "
    "WHERE d.doc_id IS NULL",
    "documents not ready": "SELECT COUNT(*) FROM doc_status WHERE stage <> 'ready'",
    "documents without status": "SELECT COUNT(*) FROM documents d LEFT JOIN doc_status s USING (doc_id) "
    "WHERE s.doc_id IS NULL",
    "chunk vectors missing": "SELECT COUNT(*) FROM chunks c LEFT JOIN vectors v "
    "ON v.space = 'chunk' AND v.item_id = c.chunk_id WHERE v.item_id IS NULL",
    "hyperedges without members": "SELECT COUNT(*) FROM hyperedges h WHERE NOT EXISTS "
    "(SELECT 1 FROM incidence i WHERE i.edge_id = h.edge_id)",
    "entities without provenance": "SELECT COUNT(*) FROM entities e WHERE NOT EXISTS "
    "(SELECT 1 FROM provenance p WHERE p.item_kind = 'entity' AND p.item_id = e.entity_id)",
    "duplicate contents": "SELECT COUNT(*) - COUNT(DISTINCT content_hash) FROM documents",
    "duplicate entity names": "SELECT COUNT(*) - COUNT(DISTINCT norm_name) FROM entities",
}
# What does not depend on the order documents arrive in (the concept and theme layers' vectors do).
COUNTS = ("documents", "pages", "chunks", "entities")


def files(folder: Path) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [write_sample_report(folder / "northwind-report.pdf")]
    for name, text in NOTES.items():
        (folder / name).write_text(text)
        paths.append(folder / name)
    return [str(p) for p in paths]


def adding(url: str, folder: Path, paths: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", ADD, url, str(folder), *paths],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def counts(url: str, folder: Path) -> dict[str, int]:
    from hyperfolio.collection import Collection

    with Collection(url, folder=folder) as col:
        stats = col.store.stats()
    return {key: stats[key] for key in COUNTS}


def test_two_processes_adding_the_same_files_at_once(tmp_path, pg_url_factory):
    import psycopg

    paths = files(tmp_path / "docs")
    shared, alone = pg_url_factory(), pg_url_factory()
    # Two writers at once, each with half of the files; both build the one hypergraph.
    first = adding(shared, tmp_path / "files", paths[::2])
    second = adding(shared, tmp_path / "files", paths[1::2])
    outputs = [p.communicate(timeout=600) for p in (first, second)]
    for process, (out, err) in zip((first, second), outputs, strict=True):
        assert process.returncode == 0, err[-2000:]
        assert "failed" not in out, (out, err[-6000:])
    # The same files added by one process alone: what the shared collection must equal.
    single = adding(alone, tmp_path / "alone", paths)
    out, err = single.communicate(timeout=600)
    assert single.returncode == 0 and out.strip() == "added,added,added,added", (out, err[-2000:])

    together = counts(shared, tmp_path / "files")
    assert together == counts(alone, tmp_path / "alone")
    assert together["documents"] == 4
    with psycopg.connect(shared) as db:
        problems = {name: db.execute(sql).fetchone()[0] for name, sql in CHECKS.items()}
    assert problems == dict.fromkeys(CHECKS, 0)
