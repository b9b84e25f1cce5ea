"""The language-model extractor: one structured call per page-level unit (Hyper-M2RAG section 4.2).

The model sees the document title, the page's section path and the page's chunks, numbered so
it can say which chunks support each entity and hyperedge, all fenced as evidence (llm/fence.py)
so that text on the page is read as data, never as instructions. Tables are shown as their rows;
figures as a description from the vision model when one is configured, otherwise as caption and
OCR text. The reply is validated against a typed schema, then checked against the page: edge
members must be entities of the page (a member the model forgot to list is added when the page
text names it, dropped otherwise) and an edge's level follows its member count. A page whose
call fails after the client's retries is extracted offline instead, so one bad reply never
sinks a document; such pages are logged and counted in `fallback_pages`.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field

from hyperfolio.hypergraph.extract import FACT, HIGH, LOW, ExtractedEdge, ExtractedEntity, PageGraph, PageUnit
from hyperfolio.hypergraph.extract_offline import OfflineExtractor
from hyperfolio.hypergraph.facts_offline import ConceptNamer, concept_name
from hyperfolio.hypergraph.grounding import PageText
from hyperfolio.hypergraph.ledger import BuildLedger, page_item
from hyperfolio.llm.budget import call_budget, schema_overhead, tokens_of
from hyperfolio.llm.errors import ModelCallError, ModelContextError, ModelUnavailableError
from hyperfolio.llm.fence import EVIDENCE_RULE, PICTURE_RULE, SIZING, Fence, with_evidence_rule
from hyperfolio.llm.protocols import StructuredChatModel, VisionModel
from hyperfolio.llm.replies import LenientReply, Numbers, Strength
from hyperfolio.llm.server_profile import ServerProfile
from hyperfolio.model import Chunk
from hyperfolio.phrases import clip, normalize_name, one_line

log = logging.getLogger(__name__)

STAGE = "extract"
_VISUAL_WORDS = {"visual", "image", "figure", "chart", "graph", "picture", "photo", "diagram", "plot", "map"}


# --------------------------------------------------------------------------- reply schema
def _modality(value: Any) -> str:
    word = str(value or "").strip().lower()
    if word in _VISUAL_WORDS:
        return "visual"
    return "table" if word == "table" else "text"


Modality = Annotated[str, BeforeValidator(_modality)]


class EntityReply(BaseModel):
    name: str
    type: str = "concept"
    description: str = ""
    aliases: list[str] = Field(default_factory=list)
    modality: Modality = Field("text", description="text, table or visual")
    chunk_refs: Numbers = Field(default_factory=list, description="numbers of the chunks that mention it")
    concept: str = Field("", description="the general category it is an instance of, e.g. Company, Metric, Year")


class PairReply(BaseModel):
    source: str
    target: str
    description: str = ""
    keywords: list[str] = Field(default_factory=list)
    strength: Strength = 1.0
    chunk_refs: Numbers = Field(default_factory=list)


class GroupReply(BaseModel):
    members: list[str] = Field(description="three or more entity names")
    description: str = ""
    keywords: list[str] = Field(default_factory=list)
    chunk_refs: Numbers = Field(default_factory=list)


class FactReply(BaseModel):
    head: str
    relation: str = Field(description="a short snake_case label, e.g. capacity_in_teu, part_of")
    tail: str
    chunk_refs: Numbers = Field(default_factory=list)


class PageExtraction(LenientReply):
    entities: list[EntityReply] = Field(default_factory=list)
    low_edges: list[PairReply] = Field(default_factory=list)
    high_edges: list[GroupReply] = Field(default_factory=list)
    facts: list[FactReply] = Field(default_factory=list)


def relation_key(text: str) -> str:
    """A relation label in one canonical form: lower-case words joined by underscores."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "_".join(words[:6])


# --------------------------------------------------------------------------- prompt
SYSTEM_PROMPT = with_evidence_rule("""\
You build a knowledge hypergraph from one page of a document at a time.

From the page you are shown, list:
1. entities - the specific things the page talks about: people, organisations, places, products, \
methods, metrics, dates, quantities with their units, and named concepts. Tables and figures are \
entities too (name them by their label, e.g. "Table 2", or by what they show), and so are a \
table's column headers and row keys, and the important things a figure shows. For each give a \
short type, a one-sentence description grounded in the page, aliases that the page itself uses, \
its modality ("text", "table" or "visual") and chunk_refs, the numbers of the chunks it appears in.
2. low_edges - pairwise relations: source and target (entity names from your list), a \
description of how they relate on this page, a few keywords, and a strength between 0 and 1.
3. high_edges - facts that only make sense with three or more entities together: a chart with \
its caption and the values it plots, a table row with its key and column values, a sentence \
linking several entities. Give members (entity names from your list), a description, keywords \
and chunk_refs.
4. facts - what the page asserts about single entities, as head, relation, tail triples: the head \
and tail are entity names from your list and the relation is a short snake_case label \
(capacity_in_teu, part_of, founded_in, revenue_in_2023). Put a time or scope the page gives into the \
relation, so facts about different years stay apart. A table row gives one fact per cell: the \
row key, the column header as the relation, and the cell value.
Each entity also gets a concept: the general category it is an instance of (Company, Person, City, \
Metric, Dataset, Method, Year, Amount ...), one word or two, reused across entities of that kind.

Use names exactly as they appear on the page. Do not invent facts that the page does not state. \
Prefer a few precise entities over many vague ones.""")


# The same task in a third of the words, for models with a small context (4,096 tokens or fewer),
# where every token of instructions is a token less of the page.
COMPACT_PROMPT = with_evidence_rule("""\
Turn one page of a document into a knowledge hypergraph. List entities: the specific things the page \
names (organisations, people, places, products, methods, metrics, dates, amounts with units, tables \
and figures by their label), each with a type, a one-sentence description from the page, modality \
(text, table or visual), chunk_refs (numbers of the chunks naming it) and concept (its general \
category: Company, Metric, Year ...). low_edges: two entities of your list and how they relate. \
high_edges: three or more entities that one statement or table row ties together. facts: head, \
snake_case relation, tail; one per table cell (row key, column header, value). Copy names exactly as \
the page writes them and state nothing the page does not.""")
COMPACT_CONTEXT = 4096


def _table_rows(chunk: Chunk) -> str:
    if not chunk.table:
        return chunk.text
    lines = []
    for i, row in enumerate(chunk.table):
        cells = " | ".join(one_line(c) for c in row)
        prefix = "header: " if i < chunk.table_header_rows else ""
        lines.append(prefix + cells)
    return "\n".join(lines)


class LLMExtractor:
    """Entities and hyperedges of each page from a structured chat model (the `extract` role)."""

    name = "llm"

    def __init__(
        self,
        chat: StructuredChatModel,
        vision: VisionModel | None = None,
        multimodal: bool = True,
        batch: int = 32,
        *,
        resolve_image: Callable[[str], bytes | None] | None = None,
        offline: OfflineExtractor | None = None,
        max_chunk_chars: int = 3000,
        max_page_chars: int = 12000,
        stage: str = STAGE,
        keep_note: Callable[[str, str], None] | None = None,
    ) -> None:
        self.chat = chat
        self.vision = vision
        self.multimodal = multimodal
        self.batch = max(1, int(batch))
        self.resolve_image = resolve_image
        self.offline = offline or OfflineExtractor(multimodal=multimodal)
        self.max_chunk_chars = max_chunk_chars
        self.max_page_chars = max_page_chars
        self.stage = stage
        self.pages = 0  # pages sent to the model
        self.fallback_pages = 0  # pages extracted offline because the model call failed
        self.image_fallbacks = 0  # figures described by caption and OCR because the vision call failed
        self.errors: list[str] = []  # one line per failed page: "<doc_id> p.<page>: <reason>"
        self.dropped_items = 0  # reply items that did not validate (or repeated), dropped with a count
        self.invented = 0  # entities whose names the page does not support, dropped
        self.unmatched_facts = 0  # facts whose head or tail the page does not state, dropped
        self.table_facts = 0  # table facts added to model-built pages from the tables' own cells
        self.ledger: BuildLedger | None = None  # records which pages the model built and which fell back
        self.system_prompt = SYSTEM_PROMPT  # the compact one on small contexts (set by page_room)
        self.on_progress: Callable[[int, int], None] | None = None  # (calls done, calls in all)
        self._lock = threading.Lock()
        self._figure_notes: dict[str, str] = {}
        self.keep_note = keep_note  # stores a figure description with its chunk, for answering later

    # ------------------------------------------------------------------ chunks the model sees
    def usable(self, chunk: Chunk) -> bool:
        if chunk.placeholder:
            return False
        if chunk.modality in ("text", "formula"):
            return bool(chunk.text.strip())
        return self.multimodal and chunk.modality in ("table", "image")

    def _describe_figures(self, units: list[PageUnit]) -> None:
        """Vision descriptions of every figure that has its bytes on disk, a few at a time."""
        if self.vision is None or self.resolve_image is None or not self.multimodal:
            return
        todo = [
            c
            for u in units
            for c in u.chunks
            if c.modality == "image" and c.image_path and not c.placeholder and c.chunk_id not in self._figure_notes
        ]
        if not todo:
            return
        with ThreadPoolExecutor(max_workers=min(self.batch, 4)) as pool:
            for chunk, note in zip(todo, pool.map(self._describe_one, todo), strict=True):
                if note:
                    self._figure_notes[chunk.chunk_id] = note
                    if self.keep_note is not None:
                        self.keep_note(chunk.chunk_id, note)

    def _describe_one(self, chunk: Chunk) -> str:
        assert self.vision is not None and self.resolve_image is not None
        try:
            data = self.resolve_image(chunk.image_path or "")
        except OSError as exc:
            log.warning("cannot read figure %s: %s", chunk.image_path, exc)
            data = None
        if not data:
            return ""
        prompt = (
            "Describe this figure from a document in at most five sentences: what kind of figure it is, "
            f"what it shows, and every label, category and number you can read in it. {PICTURE_RULE}"
        )
        if chunk.caption:  # the caption is the document's text: fenced like any other evidence
            caption = one_line(chunk.caption)
            prompt += f" {EVIDENCE_RULE}\nIts caption:\n{Fence.over([caption]).quote(caption)}"
        try:
            return one_line(self.vision.describe(prompt, [data]))
        except ModelCallError as exc:
            log.warning("vision model failed on %s; using caption and OCR text: %s", chunk.chunk_id, exc)
            with self._lock:
                self.image_fallbacks += 1
            return ""

    def _chunk_text(self, chunk: Chunk, limit: int | None = None) -> tuple[str, str]:
        """(label, text) of one chunk as the model sees it: its kind, and its text clipped to `limit`."""
        if chunk.modality == "table":
            label = "table"
            body = (f"caption: {one_line(chunk.caption)}\n" if chunk.caption else "") + _table_rows(chunk)
        elif chunk.modality == "image":
            label = "figure"
            parts = []
            if chunk.caption:
                parts.append(f"caption: {one_line(chunk.caption)}")
            note = self._figure_notes.get(chunk.chunk_id)
            if note:
                parts.append(f"what it shows: {note}")
            if chunk.ocr_text:
                parts.append(f"text read from it: {one_line(chunk.ocr_text)}")
            body = "\n".join(parts) or chunk.text
        else:
            label = chunk.modality
            body = chunk.text.strip()
        return label, clip(body, limit or self.max_chunk_chars)

    def _render_chunk(self, number: int, chunk: Chunk, limit: int | None = None) -> str:
        """One numbered chunk as an evidence block, under a stand-in tag of the real one's length: for sizing."""
        label, text = self._chunk_text(chunk, limit)
        return SIZING.quote(text, f"[{number}] ({label})")

    def page_room(
        self, profile: ServerProfile | None, cap: int | None = None, mode: str | None = None
    ) -> tuple[int, int]:
        """(characters of page text that fit one call, reply tokens) on a server with this profile,
        the schema in the prompt unless `mode` is json_schema."""
        budget = call_budget(profile, cap=cap)
        self.system_prompt = COMPACT_PROMPT if budget.context <= COMPACT_CONTEXT else SYSTEM_PROMPT
        # System prompt, page header (fenced), closing instruction, and the schema when it rides in the prompt.
        fixed = tokens_of(self.system_prompt) + 100 + schema_overhead(PageExtraction, mode)
        room = budget.chars(max(64, budget.prompt_tokens - fixed))
        return max(400, min(self.max_page_chars, room)), budget.max_tokens

    def _room(self) -> tuple[int, int]:
        chat = self.chat
        mode = getattr(chat, "structured_mode", None)
        return self.page_room(getattr(chat, "profile", None), getattr(chat, "max_tokens", None), mode)

    def plan(self, chunks: list[Chunk], room: int) -> list[list[Chunk]]:
        """The page's chunks in calls of at most `room` characters each (one call when they fit)."""
        parts: list[list[Chunk]] = [[]]
        used = 0
        for chunk in chunks:
            size = min(len(self._render_chunk(1, chunk, room)), room)
            if parts[-1] and used + size > room:
                parts.append([])
                used = 0
            parts[-1].append(chunk)
            used += size
        return parts

    def messages(self, unit: PageUnit, chunks: list[Chunk], room: int | None = None) -> list[dict[str, Any]]:
        """The conversation for one page (or part of one); `chunks` are numbered from 1."""
        room = room or self.max_page_chars
        paths = list(dict.fromkeys(tuple(c.section_path) for c in chunks if c.section_path))
        # A heading chunk's path is a prefix of its section's: show only the deepest paths.
        deepest = [p for p in paths if not any(len(q) > len(p) and q[: len(p)] == p for q in paths)]
        sections = [" > ".join(p) for p in deepest]
        # The title and headings are the document's own text too: they go in a block of their own.
        head = [f"Document: {unit.title or unit.doc_id}", f"Page: {unit.page}"]
        if sections:
            head.append("Section: " + " | ".join(sections[:4]))
        shown: list[tuple[str, str]] = []
        used = 0
        for number, chunk in enumerate(chunks, 1):
            kind, body = self._chunk_text(chunk, min(self.max_chunk_chars, room))
            label = f"[{number}] ({kind})"
            size = len(SIZING.quote(body, label))
            if used + size > room and shown:
                break
            shown.append((label, body))
            used += size
        fence = Fence.over(["\n".join(head)] + [body for _, body in shown])
        text = fence.quote("\n".join(head), "page") + "\n\nChunks of this page:\n"
        text += "\n".join(fence.quote(body, label) for label, body in shown)
        text += "\n\nExtract the entities, low_edges, high_edges and facts of this page."
        return [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": text}]

    # ------------------------------------------------------------------ the reply, checked against the page
    def to_graph(self, unit: PageUnit, chunks: list[Chunk], reply: PageExtraction) -> PageGraph:
        reading = _PageReading(unit, chunks, self._visible_text)
        for item in reply.entities:
            reading.add_entity(item)
        reading.index_aliases()
        for pair in reply.low_edges:
            reading.add_edge(
                [pair.source, pair.target], pair.description, pair.keywords, pair.strength, pair.chunk_refs
            )
        for group in reply.high_edges:
            reading.add_edge(group.members, group.description, group.keywords, 1.0, group.chunk_refs)
        for fact in reply.facts:
            reading.add_fact(fact)
        with self._lock:
            self.invented += reading.invented
            self.unmatched_facts += reading.unmatched_facts
        return reading.graph

    def _visible_text(self, chunk: Chunk) -> str:
        if chunk.modality == "image":
            parts = (chunk.caption, self._figure_notes.get(chunk.chunk_id), chunk.ocr_text)
            return " ".join(p for p in parts if p)
        if chunk.modality == "table" and chunk.table:
            return (chunk.caption or "") + "\n" + _table_rows(chunk)
        return chunk.text

    # ------------------------------------------------------------------ the document
    def extract_document(self, units: list[PageUnit]) -> list[PageGraph]:
        self._describe_figures(units)
        graphs: list[PageGraph | None] = [None] * len(units)
        usable = [[c for c in u.chunks if self.usable(c)] for u in units]
        for i, unit in enumerate(units):
            if not usable[i]:
                graphs[i] = PageGraph(unit.doc_id, unit.page)
        calls = self._ask_pages(units, usable)
        for i, unit in enumerate(units):
            if graphs[i] is None:
                graphs[i] = self._page_graph(unit, i, calls)
        failed = [i for i in range(len(units)) if graphs[i] is None]
        if self.multimodal and any(c.modality == "table" and c.table for u in units for c in u.chunks):
            self._add_table_graphs(units, graphs)
        if failed:
            # Offline statistics span the document, so the fallback sees every page, keeps the failed ones.
            offline = self.offline.extract_document(units)
            for i in failed:
                graphs[i] = offline[i]
        done = [g for g in graphs if g is not None]
        self._name_concepts(units, done)
        return done

    def _ask_pages(self, units: list[PageUnit], usable: list[list[Chunk]]) -> _PageCalls:
        """Every page's usable chunks, in calls that fit the server; the calls a smaller context than
        assumed refused are planned again once, with the learned context."""
        calls = _PageCalls()
        room, reply_tokens = self._room()
        jobs = [(i, part) for i, chunks in enumerate(usable) if chunks for part in self.plan(chunks, room)]
        replanned = False
        finished = [0, len(jobs)]  # calls done, calls in this round

        def tick() -> None:
            finished[0] += 1
            if self.on_progress is not None:
                self.on_progress(finished[0], finished[1])

        while jobs:
            retry: list[tuple[int, list[Chunk]]] = []
            for start in range(0, len(jobs), self.batch):
                group = jobs[start : start + self.batch]
                conversations = [self.messages(units[i], part, room) for i, part in group]
                replies = self.chat.complete_json_many(
                    conversations,
                    PageExtraction,
                    stage=self.stage,
                    return_exceptions=True,
                    max_tokens=reply_tokens,
                    on_done=tick,
                )
                for (i, part), reply in zip(group, replies, strict=True):
                    if isinstance(reply, ModelContextError) and not replanned:
                        retry.append((i, part))  # the server's context is smaller than assumed: split again
                    else:
                        self._take_reply(calls, units[i], i, part, reply)
            jobs = []
            if retry:
                # The server's context (now learned) or its tokenizer took less than planned: plan
                # again with the learned context and at most half the room.
                replanned = True
                learned, reply_tokens = self._room()
                room = max(400, min(learned, room // 2))
                jobs = [(i, piece) for i, part in retry for piece in self.plan(part, room)]
                finished[:] = [0, len(jobs)]
        return calls

    def _take_reply(
        self, calls: _PageCalls, unit: PageUnit, i: int, part: list[Chunk], reply: PageExtraction | BaseException
    ) -> None:
        """File one call's outcome under its page: a graph of the part, or why the page falls back."""
        if isinstance(reply, PageExtraction):
            with self._lock:
                self.dropped_items += reply.dropped
            graph = self.to_graph(unit, part, reply)
            if graph.entities:
                calls.parts.setdefault(i, []).append(graph)
            else:  # valid JSON that names nothing on the page (a weak model echoing the schema)
                calls.failures.setdefault(i, "the model's reply named nothing found on the page")
        elif isinstance(reply, ModelCallError):
            calls.failures.setdefault(i, str(reply))
            if isinstance(reply, ModelUnavailableError):
                calls.quiet.add(i)  # the breaker announced the stage offline once already
        else:
            raise reply  # a bug, not a model failure

    def _page_graph(self, unit: PageUnit, i: int, calls: _PageCalls) -> PageGraph | None:
        """The page's graph from its calls, recorded in the ledger; None (logged) when it falls back offline."""
        self.pages += 1
        if i in calls.failures:
            failure = calls.failures[i]
            say = log.debug if i in calls.quiet else log.warning
            say("extraction of %s page %d failed; extracting it offline: %s", unit.doc_id, unit.page, failure)
            self.errors.append(f"{unit.doc_id} p.{unit.page}: {failure}")
            self.fallback_pages += 1
            if self.ledger is not None:
                self.ledger.offline(unit.doc_id, self.stage, page_item(unit.page), failure)
            return None
        graph = _joined(unit, calls.parts.get(i, []))
        if self.ledger is not None:
            self.ledger.model(unit.doc_id, self.stage, page_item(unit.page))
        return graph

    def _add_table_graphs(self, units: list[PageUnit], graphs: list[PageGraph | None]) -> None:
        """Table cells, headers and row keys enter the graph as the offline path reads them, whatever
        the model wrote of them; merging later collapses what both name the same way."""
        for i, tables in enumerate(self.offline.table_graphs(units)):
            built = graphs[i]
            if built is not None and tables.entities:
                with self._lock:
                    self.table_facts += sum(1 for e in tables.edges if e.level == FACT)
                graphs[i] = _joined(units[i], [built, tables])

    def _name_concepts(self, units: list[PageUnit], graphs: list[PageGraph]) -> None:
        """An entity the model gave no concept gets one the offline way, from the whole document's text."""
        untyped = [e for g in graphs for e in g.entities if not e.concept]
        if untyped:
            namer = ConceptNamer([self._visible_text(c) for u in units for c in u.chunks])
            for entity in untyped:
                entity.concept = namer.concept(entity.name, entity.type)


@dataclass
class _PageCalls:
    """What the model's calls gave, by page index: graphs of the parts, failures, failures already announced."""

    parts: dict[int, list[PageGraph]] = field(default_factory=dict)
    failures: dict[int, str] = field(default_factory=dict)
    quiet: set[int] = field(default_factory=set)


class _PageReading:
    """One reply checked against its page: the entities the page supports (a name it does not is
    counted as invented), and the edges and facts among them (one naming what the page does not state
    is counted as unmatched)."""

    def __init__(self, unit: PageUnit, chunks: list[Chunk], visible: Callable[[Chunk], str]) -> None:
        self.graph = PageGraph(unit.doc_id, unit.page)
        self.chunks = chunks
        self.ids = [c.chunk_id for c in chunks]
        self.visible = visible
        self.page = PageText("\n".join(visible(c) for c in chunks))
        self.chunk_texts: dict[str, PageText] = {}  # read when a member missing from the entity list needs them
        self.by_key: dict[str, ExtractedEntity] = {}
        self.alias_key: dict[str, str] = {}
        self.invented = 0
        self.unmatched_facts = 0

    def chunk_ids(self, refs: list[int]) -> list[str]:
        return list(dict.fromkeys(self.ids[r - 1] for r in refs if 1 <= r <= len(self.ids)))

    def add_entity(self, item: EntityReply) -> None:
        name = one_line(item.name)
        key = normalize_name(name)
        if not key:
            return
        if not self.page.supports(name):
            self.invented += 1  # a name the page does not support (e.g. a schema echoed back)
            return
        cited = self.chunk_ids(item.chunk_refs) or list(self.ids)
        found = self.by_key.get(key)
        if found is None:
            found = ExtractedEntity(
                name, one_line(item.type).lower() or "concept", item.modality, one_line(item.description)
            )
            found.concept = concept_name(one_line(item.concept)) if item.concept.strip() else ""
            self.by_key[key] = found
            self.graph.entities.append(found)
        found.chunks.extend(c for c in cited if c not in found.chunks)
        for alias in item.aliases:
            alias = one_line(alias)
            if alias and alias != found.name and alias not in found.aliases:
                found.aliases.append(alias)

    def index_aliases(self) -> None:
        """Aliases of the listed entities, once they are all in: members may be named by one."""
        self.alias_key = {normalize_name(a): k for k, e in self.by_key.items() for a in e.aliases if normalize_name(a)}

    def member(self, name: str) -> ExtractedEntity | None:
        name = one_line(name)
        key = normalize_name(name)
        if not key:
            return None
        found = self.by_key.get(key) or self.by_key.get(self.alias_key.get(key, ""))
        if found is None and self.page.supports(name):
            # Stated on the page (as "1,850" for "1,850 MW") but missing from the entity list: add it
            # rather than lose the edge.
            if not self.chunk_texts:
                self.chunk_texts.update((c.chunk_id, PageText(self.visible(c))) for c in self.chunks)
            cited = [c for c, text in self.chunk_texts.items() if text.supports(name)] or list(self.ids)
            found = ExtractedEntity(name, "concept", "text", "", [], cited, 0.5)
            self.by_key[key] = found
            self.graph.entities.append(found)
        return found

    def add_edge(
        self, names: list[str], description: str, keywords: list[str], strength: float, refs: list[int]
    ) -> None:
        members: list[ExtractedEntity] = []
        for name in names:
            found = self.member(name)
            if found is not None and all(found is not m for m in members):
                members.append(found)
        if len(members) < 2:
            return
        cited = self.chunk_ids(refs) or list(dict.fromkeys(c for m in members for c in m.chunks)) or list(self.ids)
        self.graph.edges.append(
            ExtractedEdge(
                LOW if len(members) == 2 else HIGH,
                [m.name for m in members],
                one_line(description) or " / ".join(m.name for m in members),
                [one_line(k) for k in keywords if k.strip()][:10],
                strength,
                cited,
            )
        )

    def add_fact(self, fact: FactReply) -> None:
        head, tail, relation = self.member(fact.head), self.member(fact.tail), relation_key(fact.relation)
        if head is None or tail is None or head is tail or not relation:
            self.unmatched_facts += 1  # it names what the page does not state (or nothing)
            return
        cited = self.chunk_ids(fact.chunk_refs) or [c for c in head.chunks if c in tail.chunks] or list(self.ids)
        said = f"{head.name} {relation.replace('_', ' ')} {tail.name}"
        self.graph.edges.append(
            ExtractedEdge(
                FACT,
                [head.name, tail.name],
                said,
                [relation],
                1.0,
                cited,
                {head.name: "head", tail.name: "tail"},
                relation,
            )
        )


def _joined(unit: PageUnit, graphs: list[PageGraph]) -> PageGraph:
    """One page's graph from the graphs of its parts (calls); merging later collapses repeated names."""
    out = PageGraph(unit.doc_id, unit.page)
    for graph in graphs:
        out.entities.extend(graph.entities)
        out.edges.extend(graph.edges)
    return out
