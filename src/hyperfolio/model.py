"""Core data shapes shared by every stage.

This module imports nothing from the project, so every stage can depend on it.
Parsers produce `Document`s; the store persists them; retrieval returns an
`EvidencePackage`; the answerer returns an `Answer` whose citations point back
to document, page and region.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

Modality = Literal["text", "table", "image", "formula"]
MODALITIES: tuple[Modality, ...] = ("text", "table", "image", "formula")

BBox = tuple[float, float, float, float]
"""Region on a page in PDF points: (x0, y0, x1, y1), origin top-left."""


@dataclass
class Chunk:
    """One retrievable piece of a page, of a single modality.

    `text` is what gets indexed and shown: prose for text chunks, a row-per-line
    rendering for tables, caption plus OCR for images. The richer payload
    (table cells, image bytes) sits beside it.
    """

    page: int  # 1-based page number
    order: int  # reading order within the page, 0-based
    modality: Modality
    text: str
    bbox: BBox | None = None
    section_path: list[str] = field(default_factory=list)
    table: list[list[str]] | None = None  # cells, rows x columns
    table_header_rows: int = 0
    caption: str | None = None
    ocr_text: str | None = None
    image: bytes | None = None  # transient: parsers fill it, the collection writes it to disk
    image_ext: str = "png"
    image_path: str | None = None  # set once the bytes live on disk
    placeholder: bool = False  # synthetic text for a page with too little text
    chunk_id: str = ""  # assigned by the collection: "<doc_id>:<page>:<order>"
    doc_id: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Page:
    """A page-level multimodal unit (Hyper-M2RAG's PMU)."""

    number: int  # 1-based
    chunks: list[Chunk] = field(default_factory=list)
    width: float = 0.0
    height: float = 0.0
    ocr: bool = False  # text came from OCR because the page had no text layer
    vision_dominant: bool = False  # mostly images, little text


@dataclass
class Document:
    doc_id: str  # content hash prefix: the same bytes give the same id
    source: str  # path the document was read from
    title: str
    kind: str  # "pdf", "word", "slides", "spreadsheet", "csv", "image", "markdown", "html", "text"
    pages: list[Page] = field(default_factory=list)
    content_hash: str = ""  # full sha256 of the file bytes
    meta: dict[str, Any] = field(default_factory=dict)
    added_at: float = 0.0  # when the store first took it (0: now, as it is written)

    @property
    def chunks(self) -> list[Chunk]:
        return [c for p in self.pages for c in p.chunks]

    def assign_chunk_ids(self) -> None:
        """Chunk ids are "<doc_id>:<page>:<order>", set once the document's id is known."""
        for chunk in self.chunks:
            chunk.doc_id = self.doc_id
            chunk.chunk_id = f"{self.doc_id}:{chunk.page}:{chunk.order}"


@dataclass
class DocumentInfo:
    """What the store knows about an indexed document, without its pages."""

    doc_id: str
    source: str
    title: str
    kind: str
    content_hash: str
    num_pages: int
    num_chunks: int
    status: str
    added_at: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)  # what the parser recorded about the file


@dataclass
class Entity:
    """A hypergraph vertex (filled by the hypergraph build, a later stage)."""

    entity_id: str
    name: str
    type: str = ""
    description: str = ""
    modality: str = "text"
    aliases: list[str] = field(default_factory=list)
    norm_name: str = ""  # canonical key the entity was merged under
    concept: str = ""  # concept name (HVM-GraphRAG: every entity belongs to exactly one concept)


# Entity types that are values (numbers, quantities, dates, table cells): facts keep them as tails, but they
# link no chunks to each other (not in sentence or figure hyperedges, not walked, not embedded).
VALUE_TYPES = frozenset({"quantity", "date", "table_value"})


@dataclass
class Hyperedge:
    """A relation over two or more entities; has its own id so two facts over one entity set stay two."""

    edge_id: str
    level: str  # "low" (pairwise), "high" (n-ary), "refine", "fact" (head, relation, tail)
    description: str = ""
    keywords: list[str] = field(default_factory=list)
    strength: float = 1.0
    members: list[tuple[str, str]] = field(default_factory=list)  # (entity_id, role)
    relation: str = ""  # facts only


@dataclass
class EntityHit:
    """An entity reached by graph retrieval, with why it was reached."""

    entity: Entity
    score: float
    pages: list[tuple[str, int]] = field(default_factory=list)  # (doc_id, page) of its provenance
    via: str = ""  # the keyword that matched it


@dataclass
class HyperedgeHit:
    hyperedge: Hyperedge
    score: float
    member_names: list[str] = field(default_factory=list)
    pages: list[tuple[str, int]] = field(default_factory=list)
    via: str = ""


@dataclass
class Citation:
    doc_id: str
    title: str
    page: int
    bbox: BBox | None
    section_path: list[str]
    chunk_id: str
    modality: Modality
    page_label: str = ""  # the printed page number where it differs from the PDF's ("5" on PDF page 8),
    # or the unit a format pages by: "slide 3" (PowerPoint), "sheet Revenue" (spreadsheets)
    # What answers inside the region, set on an answer's citations (evidence items' citations leave them
    # empty): the sentence holding the answer, or for a table the answering row's cells, its key first.
    quote: str = ""
    cells: list[str] = field(default_factory=list)

    # Labels that name their own unit; server/mcp.py and server/static/app.js read them the same way.
    UNIT_LABELS = ("slide ", "sheet ")

    def label(self) -> str:
        """Where the evidence is, as people cite it: `Report p.8 (printed 5)` for a PDF page, but
        `Deck slide 3` or `Book sheet Revenue` where the format has its own unit; then the region."""
        region = ""
        if self.bbox:
            x0, y0, x1, y1 = self.bbox
            region = f" @({x0:.0f},{y0:.0f},{x1:.0f},{y1:.0f})"
        if self.page_label.startswith(self.UNIT_LABELS):
            return f"{self.title} {self.page_label}{region}"
        printed = f" (printed {self.page_label})" if self.page_label else ""
        return f"{self.title} p.{self.page}{printed}{region}"

    def quotes(self) -> list[str]:
        """The texts to mark inside the region (the page image's and page regions' `quote`): the answering
        row's cells, else the quoted sentence; none when the answerer said none."""
        return list(self.cells) if self.cells else [self.quote] if self.quote else []


@dataclass
class EvidenceItem:
    chunk: Chunk
    score: float
    rank: int  # 1-based rank in the package
    citation: Citation
    sources: dict[str, float] = field(default_factory=dict)  # per-retriever scores


@dataclass
class PageScore:
    """A page's place in a page-level ranking: its score comes from its chunks'."""

    doc_id: str
    page: int
    score: float
    chunk_ids: list[str] = field(default_factory=list)  # its ranked chunks, best first


@dataclass
class EvidencePackage:
    question: str
    strategy: str
    items: list[EvidenceItem] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    entities: list[EntityHit] = field(default_factory=list)  # graph strategies only
    hyperedges: list[HyperedgeHit] = field(default_factory=list)
    ranked_pages: list[PageScore] = field(default_factory=list)  # strategies that score pages (auto)

    def by_modality(self) -> dict[str, list[EvidenceItem]]:
        groups: dict[str, list[EvidenceItem]] = {}
        for item in self.items:
            groups.setdefault(item.chunk.modality, []).append(item)
        return groups

    def pages(self, k: int | None = None) -> list[tuple[str, int]]:
        """Distinct (doc_id, page) of the top-k items, in rank order."""
        seen: list[tuple[str, int]] = []
        for item in self.items[:k]:
            key = (item.chunk.doc_id, item.chunk.page)
            if key not in seen:
                seen.append(key)
        return seen

    def page_ranking(self, k: int | None = None) -> list[tuple[str, int]]:
        """The first k distinct pages: the strategy's own page ranking, else pages in item order."""
        if self.ranked_pages:
            return [(p.doc_id, p.page) for p in self.ranked_pages[:k]]
        return self.pages()[:k]


# How long a question and a quote to mark may be, on every face (the API, the chat endpoints, MCP): a
# question is a sentence or two, a quote at most a passage (600 characters) with room to spare.
MAX_QUESTION_CHARS = 4000
MAX_QUOTE_CHARS = 2000


class Scope(TypedDict, total=False):
    """How a question is asked, the same on every face (library, CLI, service, MCP): `mode` (the
    collection's default when absent), `k` evidence items, `doc` the documents it is scoped to (ids, file
    names or titles; the whole collection when absent) and `options`, the mode's knobs for this call."""

    mode: str | None
    k: int | None
    doc: str | Sequence[str] | None
    options: dict[str, Any] | None


@dataclass
class Answer:
    question: str
    text: str
    citations: list[Citation]
    evidence: EvidencePackage
    sufficient: bool  # False when the evidence does not support an answer
    answerer: str = "extractive"
    support: list[str] = field(default_factory=list)  # the extracted passages, in order
    short: str = ""  # the answer itself (a number, a name, a cell ...) when one could be read off the evidence
    # What the answerer recorded about the answer: the language-model answerer's citation check puts
    # citations_given, citations_dropped, citations_added and citation_support here (answer/citations.py).
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Decision:
    """One reconciliation decision: what happened to a fact, why, and on what evidence."""

    doc_id: str
    kind: str  # "mutual", "temporal", "granularity", "duplicate"
    decision: str  # "kept", "merged", "revised", "dropped"
    fact: str  # the fact as text: "head | relation | tail"
    other: str  # the fact it was weighed against
    reason: str
    evidence: list[str] = field(default_factory=list)  # chunk ids
    decided_by: str = "offline"
    created_at: float = 0.0


@dataclass
class FactRow:
    """An accepted fact as the store holds it: a fact hyperedge (head, relation, tail) and its evidence."""

    edge_id: str
    head_id: str
    relation: str
    tail_id: str
    description: str = ""
    chunks: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CachedReply:
    """A model's reply kept in the collection's cache, with the tokens it cost when it was made."""

    response: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    created_at: float


@dataclass
class ConversationRecord:
    """A stored thread: its id, owner, title (its first question), times, and turns as plain data."""

    conversation_id: str
    owner: str
    title: str
    created_at: float
    updated_at: float
    turns: list[dict[str, Any]] = field(default_factory=list)
