"""A collection written by the previous release opens with this one, is migrated in place and ranks
identically (issue 27 item 6).

The previous release is the commit before the restructuring began: its `src/` is extracted with
`git archive` (never installed) and run in a subprocess with only that folder on PYTHONPATH, so it builds
the collection exactly as that release did. This process then opens the same folder with the current code.
Skipped when the repository's history does not hold that commit (a shallow clone, an sdist).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hyperfolio import Collection
from hyperfolio.store.sqlite import DB_NAME, SCHEMA_VERSION

PREVIOUS = "ad907fd87426714e5b72ea02f259e162e64d73fa"
REPO = Path(__file__).resolve().parents[2]
MODES = ("bm25", "hybrid", "dual")
K = 5
QUESTIONS = (
    "Which harbour handled the most containers in 2023?",
    "Who founded the Lindqvist shipyard?",
    "What does the dredger Osprey weigh?",
)

# Run by the previous release: index the document, then write what it ranks and answers as JSON.
OLD_SIDE = """
import json, sys
from pathlib import Path
import hyperfolio
from hyperfolio import Collection

folder, document, modes, k, questions = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4]), sys.argv[5:]
with Collection(Path(folder)) as collection:
    result = collection.add([Path(document)], workers=0).results[0]
    assert result.ok, result.reason
    ranked = {
        mode: {q: [[i.chunk.chunk_id, i.chunk.page, round(i.score, 6)]
                   for i in collection.retrieve(q, mode=mode, k=k, doc=result.doc_id).items] for q in questions}
        for mode in modes
    }
    answer = collection.ask(questions[0], mode="bm25", doc=result.doc_id)
    cited = [[c.chunk_id, c.page] for c in answer.citations]
print(json.dumps({"source": hyperfolio.__file__, "doc_id": result.doc_id, "ranked": ranked,
                  "answer": [answer.text, cited]}))
"""

DOCUMENT = """# Ports of the Northern Coast, 2023

## Harbours

Kestrel Harbour handled 1.42 million containers in 2023, the most of any harbour on the coast.
Marlow Bay handled 0.88 million containers and Fenwick Quay 0.31 million.

| Harbour | Containers (millions) | Berths |
| --- | --- | --- |
| Kestrel Harbour | 1.42 | 14 |
| Marlow Bay | 0.88 | 9 |
| Fenwick Quay | 0.31 | 4 |

## Shipyards

The Lindqvist shipyard was founded by Astrid Lindqvist in 1921 and builds dredgers and ferries.
Its dredger Osprey weighs 2,400 gross tonnes and was launched in 1998.

## Outlook

The port authority expects container traffic at Kestrel Harbour to grow by four per cent in 2024.
"""


def _previous_release_src(tmp_path: Path) -> Path:
    """The previous release's src/ as files, or a skip saying why it cannot be had."""
    if shutil.which("git") is None or shutil.which("tar") is None:
        pytest.skip("needs git and tar to extract the previous release")
    present = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", PREVIOUS], capture_output=True)
    if present.returncode != 0:
        pytest.skip(f"the previous release ({PREVIOUS[:10]}) is not in this repository's git history")
    archive = subprocess.run(["git", "-C", str(REPO), "archive", PREVIOUS, "src"], capture_output=True, check=True)
    dest = tmp_path / "previous"
    dest.mkdir()
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest / "src"


def _offline_env(tmp_path: Path, src: Path) -> dict[str, str]:
    """The previous release's src alone on the path; no model server, no user settings file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HYPERFOLIO_", "OPENAI_"))}
    if "HYPERFOLIO_CACHE" in os.environ:  # the packaged embedders' first-use builds, shared
        env["HYPERFOLIO_CACHE"] = os.environ["HYPERFOLIO_CACHE"]
    env.update(PYTHONPATH=str(src), XDG_CONFIG_HOME=str(tmp_path / "config"), HYPERFOLIO_ROOT=str(tmp_path / "root"))
    return env


@pytest.mark.slow
def test_a_collection_written_by_the_previous_release_opens_migrated_and_ranks_the_same(tmp_path, monkeypatch):
    src = _previous_release_src(tmp_path)
    document = tmp_path / "ports.md"
    document.write_text(DOCUMENT, encoding="utf-8")
    folder = tmp_path / "collection"
    command = [sys.executable, "-c", OLD_SIDE, str(folder), str(document), ",".join(MODES), str(K), *QUESTIONS]
    ran = subprocess.run(command, env=_offline_env(tmp_path, src), cwd=tmp_path, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-3000:]
    old = json.loads(ran.stdout.strip().splitlines()[-1])
    assert Path(old["source"]).is_relative_to(src), old["source"]  # it was the previous release that wrote it
    assert all(old["ranked"][mode][question] for mode in MODES for question in QUESTIONS)  # something to compare

    for name in [n for n in os.environ if n.startswith(("HYPERFOLIO_", "OPENAI_")) and n != "HYPERFOLIO_CACHE"]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with Collection(folder) as collection:  # the same folder: upgraded in place
        report = collection.check()  # cards came after it: the one thing to make, and repair makes it
        assert [f.kind for f in report.findings] == ["documents_without_card"] and not report.unfinished
        report = collection.check(repair=True)
        assert report.ok and report.repaired == {"documents_without_card": 1}, report.summary()
        assert [d.doc_id for d in collection.documents()] == [old["doc_id"]]
        for mode in MODES:
            for question in QUESTIONS:
                items = collection.retrieve(question, mode=mode, k=K, doc=old["doc_id"]).items
                now = [[i.chunk.chunk_id, i.chunk.page, round(i.score, 6)] for i in items]
                assert now == old["ranked"][mode][question], (mode, question)
        answer = collection.ask(QUESTIONS[0], mode="bm25", doc=old["doc_id"])
        # The same passage, cited the same; the answer now opens with its short answer (issue 30), read
        # off the table's row the superlative picks, which it cites too.
        cited = [[c.chunk_id, c.page] for c in answer.citations]
        assert all(c in cited for c in old["answer"][1]), (cited, old["answer"][1])
        assert answer.short == "Kestrel Harbour"
        assert any(passage in old["answer"][0] for passage in answer.support)

    with sqlite3.connect(folder / DB_NAME) as db:
        version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (SCHEMA_VERSION,)
    assert not (folder / f"{DB_NAME}.before-upgrade").exists()  # an upgrade, if any, committed
