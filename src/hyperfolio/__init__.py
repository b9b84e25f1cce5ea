"""hyperfolio: ask questions of complex documents through a layered multimodal hypergraph.

The public API lives here; everything else is an implementation detail.
"""

from hyperfolio.collection import AddReport, AddResult, Collection
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

__all__ = [
    "AddReport",
    "AddResult",
    "Answer",
    "Chunk",
    "Citation",
    "Collection",
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
    "UnsupportedFileError",
]
