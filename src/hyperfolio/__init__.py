"""hyperfolio: ask questions of complex documents through a layered multimodal hypergraph.

The public API lives here; everything else is an implementation detail.
"""

from typing import TYPE_CHECKING, Any

from hyperfolio.config import ParseOptions, Settings
from hyperfolio.errors import DocumentNotFound, HyperfolioError, ParseError, UnsupportedFileError
from hyperfolio.model import (
    Answer,
    Chunk,
    Citation,
    Document,
    DocumentInfo,
    EvidenceItem,
    EvidencePackage,
    Page,
)

if TYPE_CHECKING:
    from hyperfolio.collection import AddReport, AddResult, Collection, Conversation, Turn

_LAZY = {"AddReport", "AddResult", "Collection", "Conversation", "Turn"}


def __getattr__(name: str) -> Any:
    """The collection module (and all it wires) loads on first use: worker processes that only
    parse, and `import hyperfolio.parse`, stay light."""
    if name in _LAZY:
        from hyperfolio import collection

        return getattr(collection, name)
    raise AttributeError(f"module 'hyperfolio' has no attribute {name!r}")


__all__ = [
    "AddReport",
    "AddResult",
    "Answer",
    "Chunk",
    "Citation",
    "Collection",
    "Conversation",
    "Document",
    "DocumentInfo",
    "DocumentNotFound",
    "EvidenceItem",
    "EvidencePackage",
    "HyperfolioError",
    "Page",
    "ParseError",
    "ParseOptions",
    "Settings",
    "Turn",
    "UnsupportedFileError",
]
