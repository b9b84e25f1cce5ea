"""What an `add` reports: per file, per run, and the callbacks it makes while it works.

Plain data, apart from the pipeline that fills it, so the CLI, the service and MCP can name these
types without loading the store or the models.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hyperfolio.hypergraph.ledger import MODEL, OFFLINE
from hyperfolio.hypergraph.pipeline import EXTRACTION_COUNTS
from hyperfolio.llm.usage import StageUsage
from hyperfolio.parse import SUPPORTED_SUFFIXES
from hyperfolio.store.base import Store

Paths = Iterable[str | Path] | str | Path  # files, folders or glob patterns, or one of them


@dataclass
class AddResult:
    path: str
    status: str  # "added", "resumed", "replaced", "skipped", "failed", "unsupported" (in a folder: not read)
    doc_id: str = ""
    title: str = ""
    pages: int = 0
    chunks: int = 0
    seconds: float = 0.0
    reason: str = ""
    stage_seconds: dict[str, float] = field(default_factory=dict)  # this run's seconds per stage
    # With a model configured: per stage, how many parts (pages, themes...) the model built and how
    # many fell back to the offline path; and the model calls this file took (cache hits apart).
    built: dict[str, dict[str, int]] = field(default_factory=dict)
    model_calls: int = 0

    @property
    def ok(self) -> bool:
        return self.status != "failed"

    @property
    def model_built_nothing(self) -> bool:
        """A model was asked to build parts of this file and every one fell back offline."""
        return bool(self.built) and all(not by.get(MODEL) for by in self.built.values())

    def model_summary(self) -> str:
        """ "model built 3 of 4 extract (1 fell back offline), 9 of 9 themes; 14 model calls" ("" offline)."""
        if not self.built:
            return ""
        parts = []
        for stage, by in sorted(self.built.items()):
            model, offline = by.get(MODEL, 0), by.get(OFFLINE, 0)
            parts.append(
                f"{model} of {model + offline} {stage}" + (f" ({offline} fell back offline)" if offline else "")
            )
        calls = f"{self.model_calls} model call" + ("" if self.model_calls == 1 else "s")
        return "model built " + ", ".join(parts) + f"; {calls}"


@dataclass
class AddReport:
    results: list[AddResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> list[AddResult]:
        return [r for r in self.results if not r.ok]

    @property
    def pages(self) -> int:
        return sum(r.pages for r in self.results if r.status in {"added", "resumed", "replaced"})

    @property
    def model_built_nothing(self) -> bool:
        """Files were built with a configured model this run, and the model built none of their parts."""
        built = [r for r in self.results if r.built]
        return bool(built) and all(r.model_built_nothing for r in built)


class AddProgress:
    """Callbacks for long ingestion; the CLI draws a progress bar from them (`ingest.progress.Tracker`)."""

    def planned(self, pages: dict[str, int]) -> None:
        """Called once before work starts: each file's pages, a quick count (1 for formats without pages,
        whose pages are made when they are read); `pages_parsed` gives the count each file is stored with."""

    def file_started(self, path: str) -> None: ...

    def file_finished(self, result: AddResult) -> None: ...

    def chunks_embedded(self, count: int, total: int = 0) -> None:
        """Chunks of the current file embedded so far, after each batch (`EMBED_BATCH_CHUNKS`), from 0."""

    def pages_parsed(self, done: int, total: int) -> None:
        """Pages of the current file parsed so far, of its `total`; the last call gives its parsed count."""

    def graph_stage(self, stage: str) -> None: ...

    def preparing(self, what: str) -> None:
        """Before the first file with new content: the models are loading (on a first use, also being
        prepared), a one-time cost of the run that no file's time includes."""


def expand_paths(paths: Iterable[str | Path]) -> tuple[list[Path], list[AddResult]]:
    """Files, folders (recursively, supported types only) and glob patterns -> files."""
    files: list[Path] = []
    problems: list[AddResult] = []
    for raw in paths:
        text = str(raw)
        path = Path(text).expanduser()
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
            found = [p for p in inside if p.suffix.lower() in SUPPORTED_SUFFIXES]
            for other in inside:  # listed in the report, not skipped silently
                if other.suffix.lower() not in SUPPORTED_SUFFIXES:
                    kind = other.suffix or "(no suffix)"
                    problems.append(AddResult(str(other), "unsupported", reason=f"unsupported file type {kind}"))
            if not found:
                problems.append(AddResult(text, "failed", reason="folder holds no supported files"))
            files.extend(found)
        elif path.exists():
            files.append(path)
        elif any(ch in text for ch in "*?["):
            matched = sorted(Path(p) for p in glob.glob(str(path), recursive=True) if Path(p).is_file())
            if not matched:
                problems.append(AddResult(text, "failed", reason="pattern matches no files"))
            files.extend(matched)
        else:
            problems.append(AddResult(text, "failed", reason="no such file or folder"))
    unique = list(dict.fromkeys(p.resolve() for p in files))
    return unique, problems


def collection_stats(store: Store, configured_embedder: str, usage: dict[str, StageUsage]) -> dict[str, Any]:
    """`Collection.stats`: the store's counts, a model's extraction counts shown apart from reconciliation's
    (they are recorded with them, per document), the embedder, and model usage per stage."""
    out = store.stats()
    totals = out.get("reconciliation", {})
    extraction = {name: totals.pop(name) for name in EXTRACTION_COUNTS if name in totals}
    if extraction:
        out["extraction"] = extraction
    out["embedder"] = store.get_meta("embedder") or configured_embedder
    out["model_usage"] = {stage: asdict(u) for stage, u in usage.items()}
    return out
