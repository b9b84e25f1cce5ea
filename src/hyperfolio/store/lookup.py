"""A document named the way people name it: by id, id prefix, file name, title or source path."""

from __future__ import annotations

from pathlib import Path

from hyperfolio.errors import DocumentNotFound, HyperfolioError
from hyperfolio.model import DocumentInfo
from hyperfolio.store.base import Store


def find_document(store: Store, ref: str) -> DocumentInfo:
    """The one document `ref` names; several or none is an error saying so."""
    direct = store.get_document(ref)
    if direct is not None:
        return direct
    docs = store.list_documents()
    exact = [d for d in docs if ref in (d.doc_id, d.source, d.title, Path(d.source).name)]
    if not exact:
        exact = [d for d in docs if d.doc_id.startswith(ref)]
    if len(exact) == 1:
        return exact[0]
    if len(exact) > 1:
        raise HyperfolioError(f"{ref!r} matches {len(exact)} documents; use a document id")
    raise DocumentNotFound(ref)
