"""What `add` shows while it works: lines that fit 80 columns, embedding that moves batch by batch, one page
count from the plan to the summary, and a time left from measured rates rather than the start-up."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

from hyperfolio.cli import app
from hyperfolio.cli.progress import BarProgress as _BarProgress
from hyperfolio.collection import AddProgress, AddResult, Collection
from hyperfolio.config import Settings
from hyperfolio.ingest.progress import Tracker


class FakeClock:
    """Seconds that pass only when a test says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class WordCountEmbedder:
    """Cheap vectors (no model to load): these tests look at the batches, not at the vectors."""

    name = "word-count"
    dim = 8

    def __init__(self) -> None:
        self.calls: list[int] = []

    def embed(self, texts):
        self.calls.append(len(texts))
        return np.array([[len(t.split()) % 7 + 1, len(t) % 5 + 1, 1, 0, 0, 0, 0, 0] for t in texts], dtype=np.float32)


def offline_settings() -> Settings:
    return Settings.load(user=False, build={"hypergraph": False})  # the graph is not what these tests watch


def rendered(bar: _BarProgress, width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None, force_terminal=True)
    console.print(bar)
    return console.export_text().splitlines()


def test_the_progress_keeps_file_stage_counts_and_time_left_within_80_columns():
    clock = FakeClock()
    bar = _BarProgress(Console(file=io.StringIO()), clock=clock)
    names = [f"/data/reports/{'quarterly-operations-review-of-the-northern-region-' * 2}{n}.pdf" for n in range(7)]
    bar.planned(dict.fromkeys(names, 10))
    bar.file_started(names[0])
    bar.pages_parsed(10, 10)
    clock.now = 5
    bar.chunks_embedded(0, 80)
    for done in range(16, 81, 16):
        clock.now += 1
        bar.chunks_embedded(done, 80)
    clock.now += 4
    bar.file_finished(AddResult(names[0], "added", pages=10, chunks=80))
    bar.file_started(names[1])
    bar.pages_parsed(10, 10)
    clock.now += 1
    bar.chunks_embedded(0, 80)
    clock.now += 2
    bar.chunks_embedded(40, 80)
    lines = rendered(bar, 80)
    assert lines and all(len(line) <= 80 for line in lines), lines
    shown = " ".join(lines)
    for essential in ("file 2/7", "embedding 40/80 chunks", "20/70 pages", "left"):
        assert essential in shown, (essential, lines)
    assert "quarterly-operations" in shown and ".pdf" in shown  # the name shortened, not gone
    narrow = " ".join(rendered(bar, 60))
    assert "file 2/7" in narrow and "40/80 chunks" in narrow and "left" in narrow


def test_the_time_left_follows_measured_rates_not_the_start_up():
    """The first file carries worker start-up and model loading (40 s of its 50); the others are parsed
    ahead and take 10 s each. Elapsed time over pages done said 100 s left after the first file."""
    clock = FakeClock()
    tracker = Tracker(clock)
    names = ["a.pdf", "b.pdf", "c.pdf"]
    tracker.planned(dict.fromkeys(names, 10))

    def run_file(name: str, parse: float, first_batch: float) -> list[float | None]:
        seen = []
        tracker.file_started(name)
        clock.now += parse
        tracker.pages_parsed(10, 10)
        tracker.chunks_embedded(0, 40)
        clock.now += first_batch
        tracker.chunks_embedded(10, 40)
        for done in (20, 30, 40):
            clock.now += 2
            tracker.chunks_embedded(done, 40)
            seen.append(tracker.seconds_left())
        tracker.graph_stage("extracting")
        clock.now += 2
        seen.append(tracker.seconds_left())
        tracker.file_finished(name, "added", 10, 40)
        seen.append(tracker.seconds_left())
        return seen

    assert tracker.seconds_left() is None  # nothing measured yet: no guess
    run_file("a.pdf", parse=30, first_batch=12)  # 30 s of it starting workers, 10 s loading the model
    after_first = tracker.seconds_left()
    assert after_first is not None and 18 <= after_first <= 24, after_first  # truly 20 s
    during = run_file("b.pdf", parse=0, first_batch=2)
    truths = [16, 14, 12, 10, 10]  # after each batch, after the graph, once the file is done
    for shown, truth in zip(during, truths, strict=True):
        assert shown is not None and abs(shown - truth) <= 2, (during, truths)
    assert run_file("c.pdf", parse=0, first_batch=2)[-1] is None  # all done: no time left shown


def test_the_time_left_counts_whole_files_not_their_cheapest_last_batches():
    """The collection embeds a file's chunks longest first, so its batches get cheaper to the end: a rate from
    the latest batches said 21 s where 33 s were left after the first file, then 34.5 s where 25 s were left
    halfway through the second. The first file also waits 20 s for the workers and 12 s for the model."""
    clock = FakeClock()
    tracker = Tracker(clock)
    names = ["a.pdf", "b.pdf", "c.pdf", "d.pdf"]
    tracker.planned(dict.fromkeys(names, 10))
    batches = [3.0, 3.0, 2.0, 1.0, 0.6, 0.4]  # 16 chunks each: 10 s a file, then 1 s of hypergraph

    def run_file(name: str, startup: float = 0.0, model_load: float = 0.0, stop_after: int = 6) -> None:
        tracker.file_started(name)
        clock.now += startup
        tracker.pages_parsed(10, 10)
        tracker.chunks_embedded(0, 96)
        for number, seconds in enumerate(batches[:stop_after], 1):
            clock.now += seconds + (model_load if number == 1 else 0.0)
            tracker.chunks_embedded(16 * number, 96)
        if stop_after < len(batches):
            return
        tracker.graph_stage("extracting")
        clock.now += 1.0
        tracker.file_finished(name, "added", 10, 96)

    run_file("a.pdf", startup=20.0, model_load=12.0)
    after_first = tracker.seconds_left()
    assert after_first is not None and abs(after_first - 33.0) <= 3.3, after_first  # 3 files of 11 s
    run_file("b.pdf", stop_after=3)
    halfway = tracker.seconds_left()
    assert halfway is not None and abs(halfway - 25.0) <= 2.5, halfway  # 2 s of embedding, 1 s, 2 files


def test_a_slow_document_does_not_make_every_page_slow():
    """Parsing costs per page differ by file (a scanned document needs OCR): the median file's rate, so one
    such file among four does not make the parsing forecast for the files after it four times longer."""
    from hyperfolio.ingest.progress import Rate

    rate = Rate(window=4, robust=True)
    for pages, seconds in [(10, 1.0), (10, 1.0), (10, 30.0), (10, 2.0), (10, 2.0)]:
        rate.add(pages, seconds)
    assert rate.steady == rate.any == 0.2
    assert Rate(window=4).steady is None and Rate(window=4, robust=True).steady is None


def test_embedding_progress_moves_batch_by_batch(tmp_path: Path):
    """A document of a few hundred chunks (fewer than the old 256-chunk batch) reports several steps."""
    body = "\n\n".join(f"## Station {n}\n\nStation {n} produced {n * 7} megawatt hours in May." for n in range(240))
    source = tmp_path / "stations.md"
    source.write_text(f"# Stations\n\n{body}\n")
    steps: list[tuple[int, int]] = []

    class Recorder(AddProgress):
        def chunks_embedded(self, count: int, total: int = 0) -> None:
            steps.append((count, total))

    embedder = WordCountEmbedder()
    col = Collection(tmp_path / "col", settings=offline_settings(), embedder=embedder)
    report = col.add([source], progress=Recorder())
    col.close()
    total = report.results[0].chunks
    assert total >= 200, total
    counts = [count for count, of in steps if of == total]
    assert counts[0] == 0 and counts[-1] == total and counts == sorted(counts)
    assert len([c for c in counts if 0 < c < total]) >= 4, counts  # it moves, not 0 then done
    assert max(b - a for a, b in zip(counts, counts[1:], strict=False)) <= 32, counts
    assert sum(embedder.calls) == total  # every chunk embedded once


def test_pages_agree_from_the_plan_to_the_summary_for_a_docx_with_a_page_break(tmp_path: Path, docx_writer):
    """A .docx counts as one page up front and two once read: the bar's total, its last count, the
    events of the service and the summary all end with the parsed count."""
    docs = tmp_path / "docs"
    docs.mkdir()
    docx_writer(docs / "fleet.docx")
    (docs / "notes.md").write_text("# Notes\n\nThe harbour dredging begins in March.\n")
    clock = FakeClock()
    bar = _BarProgress(Console(file=io.StringIO()), clock=clock)
    col = Collection(tmp_path / "col", settings=offline_settings(), embedder=WordCountEmbedder())
    report = col.add([docs], progress=bar)
    stored = sum(d.num_pages for d in col.documents())
    col.close()
    fleet = next(r for r in report.results if r.path.endswith("fleet.docx"))
    assert fleet.pages == 2
    assert report.pages == stored == 3
    assert bar.tracker.pages_total == bar.tracker.pages_done == report.pages
    assert "3/3 pages" in " ".join(rendered(bar, 80))


def test_the_cli_bar_ends_on_the_summary_page_count(tmp_path: Path, monkeypatch, docx_writer):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no user settings
    docs = tmp_path / "docs"
    docs.mkdir()
    docx_writer(docs / "fleet.docx")
    col = tmp_path / "col"
    settings = col / "settings.toml"
    settings.parent.mkdir()
    settings.write_text("[build]\nhypergraph = false\n")
    result = CliRunner().invoke(app, ["add", str(docs), "-c", str(col), "-w", "0"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    bar = re.findall(r"(\d+)/(\d+) pages", result.output)
    summary = re.search(r"(\d+) pages? indexed", result.output)
    assert bar and summary, result.output
    assert bar[-1] == (summary.group(1), summary.group(1)) == ("2", "2"), result.output


@pytest.mark.parametrize("status", ["skipped", "failed"])
def test_a_file_not_indexed_leaves_the_total(status: str):
    tracker = Tracker(FakeClock())
    tracker.planned({"a.pdf": 4, "b.pdf": 6})
    tracker.file_started("a.pdf")
    tracker.file_finished("a.pdf", status, 4, 9)
    tracker.file_started("b.pdf")
    tracker.pages_parsed(6, 6)
    tracker.file_finished("b.pdf", "added", 6, 12)
    assert (tracker.pages_done, tracker.pages_total) == (6, 6)


def test_the_service_events_move_through_embedding_and_count_parsed_pages(tmp_path: Path, docx_writer):
    """The web app draws these events: it showed '0 / 74 chunks' until a file was done, and a .docx as one page."""
    from hyperfolio.server.jobs import Job, JobProgress, Upload

    docs = tmp_path / "docs"
    docs.mkdir()
    fleet = docx_writer(docs / "fleet.docx")
    stations = docs / "stations.md"
    stations.write_text("# Stations\n\n" + "\n\n".join(f"## Station {n}\n\nIt made {n} MWh." for n in range(120)))
    job = Job("j1", "docs", [Upload("fleet.docx", fleet, 1), Upload("stations.md", stations, 1)])
    job.started = 1.0
    col = Collection(tmp_path / "col", settings=offline_settings(), embedder=WordCountEmbedder())
    report = col.add([fleet, stations], progress=JobProgress(job))
    col.close()
    progress = [e for e in job.events if e["type"] == "progress"]
    last_fleet = [e for e in progress if e["file"] == "fleet.docx"][-1]
    assert last_fleet["file_pages"] == last_fleet["file_pages_done"] == 2
    embedded = [e["chunks_done"] for e in progress if e["file"] == "stations.md" and e["stage"] == "embedding"]
    assert len([n for n in embedded if 0 < n < embedded[-1]]) >= 3, embedded
    assert progress[-1]["pages_done"] == progress[-1]["pages_total"] == report.pages


def test_rates_follow_the_latest_measurements():
    """While workers parse ahead they take cores from the embedder; once they are done it runs faster."""
    from hyperfolio.ingest.progress import Rate

    rate = Rate(window=4)
    rate.add(16, 30.0)  # the first batch: the model loading
    assert rate.any == 30.0 / 16 and rate.steady is None
    for _ in range(6):
        rate.add(16, 8.0)  # workers parsing beside it
    for _ in range(4):
        rate.add(16, 2.0)  # alone
    assert rate.steady == rate.any == 2.0 / 16
    rate.add(0, 5.0)  # no units, nothing measured
    assert rate.steady == 2.0 / 16


def test_between_two_files_the_line_names_the_file_just_finished():
    tracker = Tracker(FakeClock())
    tracker.planned({"a.pdf": 1, "b.pdf": 1})
    tracker.file_started("a.pdf")
    assert tracker.file_number == 1
    tracker.file_finished("a.pdf", "added", 1, 2)
    assert (tracker.file_number, tracker.current, tracker.stage) == (1, "a.pdf", "added")
    tracker.file_started("b.pdf")
    assert tracker.file_number == 2


class SlowLoadingEmbedder(WordCountEmbedder):
    """A model that takes 40 s (of the fake clock) to load, on its first use: as the graph embedder's
    distillation does on a first run."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock, self.loaded = clock, False

    def load(self) -> None:
        if not self.loaded:
            self.clock.now += 40
            self.loaded = True

    def embed(self, texts):
        self.load()
        self.clock.now += 0.01 * len(texts)
        return super().embed(texts)


def test_models_load_before_the_first_file_so_its_rates_are_its_own(tmp_path: Path):
    """The first use of the graph embedder distils it (tens of seconds) inside the first file's graph step;
    the time left then said five minutes with one to go. Loading comes first now, announced, outside every file."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(3):
        (docs / f"note{n}.md").write_text("# Note\n\n" + "\n\n".join(f"Station {k} made {k} MWh." for k in range(40)))
    clock = FakeClock()
    seen: list[str] = []

    class Recording(_BarProgress):
        def preparing(self, what: str) -> None:
            seen.append(f"preparing {what}")
            super().preparing(what)

        def file_started(self, path: str) -> None:
            seen.append("file")
            super().file_started(path)

    bar = Recording(Console(file=io.StringIO()), clock=clock)
    embedder = SlowLoadingEmbedder(clock)
    col = Collection(tmp_path / "col", settings=offline_settings(), embedder=embedder)
    col.add([docs], progress=bar)
    col.add([docs], progress=bar)  # nothing new, nothing loaded again
    col.close()
    assert seen[:2] == ["preparing loading the embedding models", "file"] and seen.count("file") == 6, seen
    first_embedding = bar.tracker.embed.first
    assert first_embedding is not None and first_embedding[1] < 5, first_embedding  # not the 40 s of loading
