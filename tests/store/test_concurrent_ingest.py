"""Two processes adding files to one collection at once: nothing lost, nothing twice.

Either they split the files between them, as workers sharing a collection do, or both are given every
file (two terminals, overlapping folders): then each document is indexed by whichever claims it first
and the other passes it by.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hyperfolio.sample import write_sample_report

pytestmark = pytest.mark.long

NOTES = {
    "baltic.md": "# Baltic\n\nThe Baltic wind farm at Kriegers Flak opened in 2021 with 72 turbines.\n",
    "iberia.md": "# Iberia\n\nIberia added 860 MW of solar capacity near Seville in 2024.\n",
    "lakes.md": "# Great Lakes\n\nThe Great Lakes region grew fastest, adding 240 MW in 2023.\n",
}
ADD = (
    "import os, sys\n"
    "from hyperfolio.collection import Collection\n"
    "col = Collection(sys.argv[1], folder=sys.argv[2] or None)\n"
    "report = col.add(sys.argv[3:], ray=os.environ.get('TEST_RAY') or None)\n"
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
    # A chunk's theme may have no key entity (store/integrity.MIN_MEMBERS): a table of figures links none.
    "hyperedges without members": "SELECT COUNT(*) FROM hyperedges h WHERE h.level <> 'theme' AND NOT EXISTS "
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


def adding(location: str, folder: Path | None, paths: list[str], ray: str = "") -> subprocess.Popen[str]:
    """`add` in another process; `folder` is a server-backed collection's local folder, `ray` where
    its pages are parsed ("local": a Ray instance of its own)."""
    return subprocess.Popen(
        [sys.executable, "-c", ADD, location, str(folder) if folder else "", *paths],
        env={**os.environ, "TEST_RAY": ray},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def counts(location: str, folder: Path | None = None) -> dict[str, int]:
    from hyperfolio.collection import Collection

    with Collection(location, folder=folder) as col:
        stats = col.store.stats()
    return {key: stats[key] for key in COUNTS}


def integrity(location: str) -> dict[str, int]:
    if location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(location) as db:
            return {name: db.execute(sql).fetchone()[0] for name, sql in CHECKS.items()}
    import sqlite3

    from hyperfolio.store.sqlite import DB_NAME

    with sqlite3.connect(Path(location) / DB_NAME) as db:
        return {name: db.execute(sql).fetchone()[0] for name, sql in CHECKS.items()}


def test_two_processes_sharing_the_files_between_them(tmp_path, pg_url_factory):
    paths = files(tmp_path / "docs")
    shared, alone = pg_url_factory(), pg_url_factory()
    # Two writers at once, each with half of the files; both build the one hypergraph. The first parses
    # its pages on Ray, as a writer whose cluster parses for it does.
    pytest.importorskip("ray", reason="Ray is in the test extra: pip install -e '.[test]'")
    first = adding(shared, tmp_path / "files", paths[::2], ray="local")
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
    assert integrity(shared) == dict.fromkeys(CHECKS, 0)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_two_processes_given_the_very_same_files(tmp_path, backend, request):
    paths = files(tmp_path / "docs")
    if backend == "sqlite":
        shared, alone, folder = str(tmp_path / "shared"), str(tmp_path / "alone"), None
    else:
        make = request.getfixturevalue("pg_url_factory")
        shared, alone, folder = make(), make(), tmp_path / "files"
    runs = [adding(shared, folder, order) for order in (paths, paths[::-1])]
    outputs = [p.communicate(timeout=600) for p in runs]
    statuses = []
    for process, (out, err) in zip(runs, outputs, strict=True):
        assert process.returncode == 0, err[-2000:]
        statuses.append(out.strip().split(","))
    first, second = statuses[0], statuses[1][::-1]  # both in the order of `paths`
    # Each file indexed by exactly one of them; the other passed it by (being indexed, or already indexed).
    assert all(sorted(pair) == ["added", "skipped"] for pair in zip(first, second, strict=True)), statuses
    single = adding(alone, tmp_path / "alone-files" if folder else None, paths)
    out, err = single.communicate(timeout=600)
    assert single.returncode == 0 and out.strip() == "added,added,added,added", (out, err[-2000:])
    together = counts(shared, folder)
    assert together == counts(alone, tmp_path / "alone-files" if folder else None)
    assert together["documents"] == 4
    assert integrity(shared) == dict.fromkeys(CHECKS, 0)
