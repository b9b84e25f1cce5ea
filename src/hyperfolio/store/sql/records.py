"""A collection's bookkeeping (who built what, seconds per stage), its counts and its integrity checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from hyperfolio.errors import StoreError
from hyperfolio.store.integrity import Finding, SqlCheck, keyword_repairs, repair_rows, run_checks
from hyperfolio.store.sql.host import SqlHost


class RecordTables(SqlHost):
    """model_builds and stage_times, the store's stats and its checks; the backend names its own checks."""

    checks: ClassVar[tuple[SqlCheck, ...]]  # every check the backend runs, its keyword index's among them

    def _location(self) -> str:
        """Where the collection is, as stats show it."""
        raise NotImplementedError

    def _database_bytes(self) -> int:
        raise NotImplementedError

    # ------------------------------------------------------------------ who built what (hypergraph/ledger.py)
    def record_builds(self, doc_id: str, rows: list[tuple[str, str, str, str]]) -> None:
        """Replace a document's record of which parts the model or the offline path built.

        `rows` are (stage, item, how, reason); a rebuild writes the whole record anew.
        """
        with self._write() as cur:
            cur.execute("DELETE FROM model_builds WHERE doc_id = ?", (doc_id,))
            cur.executemany(
                self.dialect.upsert(
                    "model_builds(doc_id, stage, item, how, reason)",
                    "VALUES (?, ?, ?, ?, ?)",
                    ("doc_id", "stage", "item"),
                ),
                [(doc_id, *row) for row in rows],
            )

    def builds(self, doc_id: str | None = None, how: str | None = None) -> list[tuple[str, str, str, str, str]]:
        """(doc_id, stage, item, how, reason) rows, optionally of one document and one kind."""
        query, params = "SELECT doc_id, stage, item, how, reason FROM model_builds WHERE 1 = 1", list[str]()
        if doc_id is not None:
            query, params = query + " AND doc_id = ?", [*params, doc_id]
        if how is not None:
            query, params = query + " AND how = ?", [*params, how]
        return [tuple(r) for r in self._query(query + " ORDER BY doc_id, stage, item", params)]

    def build_counts(self) -> dict[str, dict[str, int]]:
        """{stage: {how: count}} over the collection."""
        out: dict[str, dict[str, int]] = {}
        query = "SELECT stage, how, COUNT(*) FROM model_builds GROUP BY stage, how" + self.dialect.stated(
            " ORDER BY 1, 2"
        )
        for stage, how, n in self._query(query):
            out.setdefault(stage, {})[how] = int(n)
        return out

    # ------------------------------------------------------------------ stage times
    def add_stage_times(self, doc_id: str, seconds: dict[str, float]) -> None:
        """Add to a document's seconds per indexing stage (a resumed run adds what it spent)."""
        try:
            with self._write() as cur:
                cur.executemany(
                    "INSERT INTO stage_times (doc_id, stage, seconds) VALUES (?, ?, ?)"
                    " ON CONFLICT (doc_id, stage) DO UPDATE SET seconds = stage_times.seconds + excluded.seconds",
                    [(doc_id, stage, float(s)) for stage, s in seconds.items()],
                )
        except self.dialect.error as exc:  # e.g. busy: a caller reports it, the document's own result stands
            raise StoreError(f"stage times of {doc_id} not recorded: {exc}") from exc

    def stage_times(self, doc_id: str | None = None) -> dict[str, float]:
        """Seconds per stage of one document, or summed over the collection."""
        query, params = "SELECT stage, SUM(seconds) FROM stage_times", list[str]()
        if doc_id is not None:
            query, params = query + " WHERE doc_id = ?", [doc_id]
        rows = self._query(query + " GROUP BY stage" + self.dialect.stated(" ORDER BY stage"), params)
        return {stage: float(total) for stage, total in rows}

    def stats(self) -> dict[str, Any]:
        order = self.dialect.stated(" ORDER BY 1")
        return {
            "path": self._location(),
            "documents": self._count("SELECT COUNT(*) FROM documents"),
            "pages": self._count("SELECT COUNT(*) FROM pages"),
            "chunks": self._count("SELECT COUNT(*) FROM chunks"),
            "chunks_by_modality": self._counts("SELECT modality, COUNT(*) FROM chunks GROUP BY modality" + order),
            "documents_by_stage": self._counts("SELECT stage, COUNT(*) FROM doc_status GROUP BY stage" + order),
            "vectors": self._count("SELECT COUNT(*) FROM vectors"),
            "entities": self._count("SELECT COUNT(*) FROM entities"),
            "hyperedges": self._count("SELECT COUNT(*) FROM hyperedges"),
            **self.graph_stats(),
            "built_by": self.build_counts(),
            "stage_seconds": self.stage_times(),
            "database_bytes": self._database_bytes(),
        }

    def graph_stats(self) -> dict[str, Any]:
        raise NotImplementedError

    # ------------------------------------------------------------------ integrity (store/integrity.py)
    def integrity(self) -> list[Finding]:
        return run_checks(self.checks, self._query) + self.keyword_findings()

    def repair(self, findings: Sequence[Finding]) -> dict[str, int]:
        changed = repair_rows(self.checks, findings, self.transaction)
        if any(changed.values()):  # rows of documents went: what is derived from them is read again
            with self._write() as cur:
                self._documents_changed(cur)
        stale = keyword_repairs(findings, changed)
        if stale is not None:
            changed.update(dict.fromkeys(stale, self._rebuild_keywords()))
        self._vectors_dropped()
        return changed
