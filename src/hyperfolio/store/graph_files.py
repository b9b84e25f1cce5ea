"""Graphs of large vector spaces kept beside the database, so a reopened collection need not make them again.

A space's graph (`ann.GraphIndex`) takes half an hour of both cores at a million chunks; made once, it is
written here. A graph names rows by their place in the space's matrix, which holds the ready documents'
vectors in storage order, so a saved graph is named by how many rows it covers and a fingerprint of those
rows' rowids. It is taken again only when the matrix starts with exactly those rows (the rows added since
join it as they would have); after a deletion, or a document that stopped being ready, it no longer
matches and is made again. A file is written under a temporary name and renamed, so a reader never sees
half of one; a file that cannot be read is deleted and the graph made again.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np

from hyperfolio.store.base import space_label

log = logging.getLogger(__name__)

SUFFIX = ".faiss"


def fingerprint(rowids: np.ndarray) -> str:
    """Which rows, in which order: a digest of their rowids."""
    return hashlib.sha1(np.ascontiguousarray(rowids, dtype="<i8").tobytes()).hexdigest()[:16]


@dataclass(frozen=True)
class GraphFiles:
    """Where one space's saved graph lives: `<folder>/<space>-<rows>-<fingerprint>.faiss`."""

    folder: Path
    space: str

    @property
    def stem(self) -> str:
        return space_label(self.space)

    def saved(self) -> list[tuple[int, str, Path]]:
        """(rows, fingerprint, path) of every graph saved for the space, the most rows first."""
        found = []
        for path in self.folder.glob(f"{self.stem}-*{SUFFIX}"):
            parts = path.name[: -len(SUFFIX)].rsplit("-", 2)
            if len(parts) == 3 and parts[1].isdigit():
                found.append((int(parts[1]), parts[2], path))
        return sorted(found, key=lambda f: -f[0])

    def load(self, rowids: np.ndarray, dim: int) -> faiss.IndexHNSWSQ | None:
        """The saved graph over the first rows of a matrix whose rows have these rowids, if one matches."""
        for rows, digest, path in self.saved():
            if rows > len(rowids) or digest != fingerprint(rowids[:rows]):
                continue
            try:
                index = faiss.read_index(str(path))
            except (RuntimeError, OSError) as exc:  # cut short or damaged: made again
                log.warning("%s: cannot read the saved graph (%s); it will be made again", path, exc)
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            if isinstance(index, faiss.IndexHNSWSQ) and index.d == dim and index.ntotal == rows:
                return index
        return None

    def save(self, index: faiss.Index, rowids: np.ndarray) -> None:
        """Write the graph over rows with these rowids, replacing the space's older files. A graph that cannot
        be written (a full or read-only disk) is only made again next time, so that is a warning."""
        final = self.folder / f"{self.stem}-{len(rowids)}-{fingerprint(rowids)}{SUFFIX}"
        partial = self.folder / f".{final.name}.{os.getpid()}.{threading.get_ident()}.part"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            faiss.write_index(index, str(partial))
            os.replace(partial, final)
        except (RuntimeError, OSError) as exc:
            log.warning("%s: cannot save the graph of %r (%s); it will be made again", self.folder, self.space, exc)
            with contextlib.suppress(OSError):
                partial.unlink()
            return
        for _, _, path in self.saved():
            if path != final:
                with contextlib.suppress(OSError):
                    path.unlink()
