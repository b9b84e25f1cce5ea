"""What adding documents will cost in model work, before any model call: calls, tokens, time, price.

Extraction is planned exactly as the extractor will run it (the same split of each page into calls
that fit the server's context, the same prompts, the same JSON instruction when the server cannot
take a schema), so its calls and prompt tokens are counted, not guessed. The later stages depend on
what extraction finds, so they are planned on the offline graph of the same pages, through the
stages' own prompt builders: a theme call per chunk with entities, a summary per entity with many
descriptions, a detection call per group of facts sharing a head (and a resolution per conflict
the offline rules find: the model may find more), refinement calls for the anchors the refiner
would choose. Reply lengths come from this collection's own history with the model when it has
one (tokens per call, by stage), else from a prior. Time uses the server's measured speeds and
slots; price an optional price table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import BaseModel

from hyperfolio.config import BuildOptions
from hyperfolio.hypergraph.extract import PageUnit
from hyperfolio.hypergraph.extract_model import LLMExtractor, PageExtraction
from hyperfolio.hypergraph.extract_offline import OfflineExtractor
from hyperfolio.hypergraph.layers_model import LLMThemer, ThemeReply
from hyperfolio.hypergraph.merge import MergedGraph, merge
from hyperfolio.hypergraph.reconcile import detection_batches
from hyperfolio.hypergraph.reconcile_model import DetectReply, LLMDetector, LLMResolver, ResolveReply
from hyperfolio.hypergraph.reconcile_offline import OfflineDetector
from hyperfolio.hypergraph.refine import NOT_ANCHORS, select_anchors
from hyperfolio.hypergraph.summarise_model import STAGE as SUMMARY_STAGE
from hyperfolio.hypergraph.summarise_model import DescriptionSummariser, Summary
from hyperfolio.llm.budget import call_budget, schema_overhead
from hyperfolio.llm.server_profile import ServerProfile
from hyperfolio.llm.usage import StageUsage, estimate_tokens
from hyperfolio.model import Document

# Reply tokens per call when the collection has no history: what instruct models write for these
# replies (a page's entities and facts; a one-sentence theme with keywords; a refined relation list).
PRIOR_REPLY = {"extract": 450, "themes": 60, "refine": 250, "reconcile": 40, SUMMARY_STAGE: 80}
PRIOR_REFINE_PROMPT = 1200  # a group of anchors with their star edges listed
MAX_ANCHORS_PER_CALL = 8  # refine_anchors' group size


@dataclass
class StageEstimate:
    stage: str
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    note: str = ""

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, messages: list[dict[str, Any]], overhead: int, reply: int) -> None:
        self.calls += 1
        self.prompt_tokens += estimate_tokens(messages) + overhead
        self.completion_tokens += reply


@dataclass
class WorkEstimate:
    documents: int = 0
    pages: int = 0
    chunks: int = 0
    stages: list[StageEstimate] = field(default_factory=list)
    seconds: float | None = None  # with a probed server: expected wall time of the model work
    price: float | None = None  # with a price table
    server: str = ""

    @property
    def calls(self) -> int:
        return sum(s.calls for s in self.stages)

    @property
    def tokens(self) -> int:
        return sum(s.total_tokens for s in self.stages)

    def to_dict(self) -> dict[str, Any]:
        stages = [
            {"stage": s.stage, "calls": s.calls, "prompt_tokens": s.prompt_tokens,
             "completion_tokens": s.completion_tokens, "note": s.note}
            for s in self.stages
        ]  # fmt: skip
        return {
            "documents": self.documents,
            "pages": self.pages,
            "chunks": self.chunks,
            "stages": stages,
            "calls": self.calls,
            "tokens": self.tokens,
            "seconds": self.seconds,
            "price": self.price,
            "server": self.server,
        }


def _mode(profile: ServerProfile | None) -> str | None:
    """The structured-output mode the profile says works first (None while unknown)."""
    structured = profile.structured if profile is not None else {}
    return next((m for m, ok in structured.items() if ok), None)


class _Planner:
    """Plans each stage's calls for one server profile, with reply lengths from history or priors."""

    def __init__(self, profile: ServerProfile | None, history: Mapping[str, StageUsage], max_tokens: int | None):
        self.profile = profile
        self.history = history
        self.cap = call_budget(profile, cap=max_tokens).max_tokens
        self.max_tokens = max_tokens
        self.stages = {
            name: StageEstimate(name) for name in ("extract", SUMMARY_STAGE, "reconcile", "themes", "refine")
        }
        self.sources: dict[str, str] = {}

    def reply(self, stage: str, prior_stage: str | None = None) -> int:
        past = self.history.get(stage)
        if past is not None and past.calls >= 3:
            self.sources[stage] = f"replies as long as this collection's {stage}"
            return min(self.cap, round(past.completion_tokens / past.calls))
        self.sources.setdefault(stage, "reply length from a prior")
        return min(self.cap, PRIOR_REPLY[prior_stage or stage])

    def schema(self, reply_type: type[BaseModel]) -> int:
        return schema_overhead(reply_type, _mode(self.profile))

    def extraction(self, units: list[PageUnit]) -> None:
        planner = LLMExtractor(cast(Any, None))  # its planning and prompts only: no call is made
        room, _ = planner.page_room(self.profile, self.max_tokens, _mode(self.profile))
        stage, overhead, reply = self.stages["extract"], self.schema(PageExtraction), self.reply("extract")
        for unit in units:
            usable = [c for c in unit.chunks if planner.usable(c)]
            for part in planner.plan(usable, room) if usable else []:
                stage.add(planner.messages(unit, part, room), overhead, reply)

    def summaries(self, merged: MergedGraph) -> None:
        summariser = DescriptionSummariser(cast(Any, None))
        stage, overhead, reply = self.stages[SUMMARY_STAGE], self.schema(Summary), self.reply(SUMMARY_STAGE)
        for entity in summariser.todo(merged):
            stage.add(summariser.messages(entity), overhead, reply)

    def reconciliation(self, merged: MergedGraph, units: list[PageUnit]) -> None:
        detector, resolver = LLMDetector(cast(Any, None)), LLMResolver(cast(Any, None))
        stage, reply = self.stages["reconcile"], self.reply("reconcile")
        tables = {c.chunk_id for u in units for c in u.chunks if c.modality == "table"}
        evidence = {c.chunk_id: c.text for u in units for c in u.chunks}
        for batch in detection_batches(merged, tables):
            for group in batch:
                stage.add(detector.messages(detector.trim(group)), self.schema(DetectReply), reply)
            for conflict in OfflineDetector().confirm(batch):  # the model confirms at least these
                stage.add(resolver.messages(conflict, evidence), self.schema(ResolveReply), reply)

    def themes(self, graphs: list[Any], units: list[PageUnit]) -> None:
        names: dict[str, list[str]] = {}
        for graph in graphs:
            for entity in graph.entities:
                for chunk_id in entity.chunks:
                    names.setdefault(chunk_id, []).append(entity.name)
        themer = LLMThemer(cast(Any, None))  # its prompts only: no call is made
        stage, overhead, reply = self.stages["themes"], self.schema(ThemeReply), self.reply("themes")
        for chunk in (c for u in units for c in u.chunks if c.chunk_id in names):
            stage.add(themer.messages(chunk, names[chunk.chunk_id]), overhead, reply)

    def refinement(self, merged: MergedGraph, units: list[PageUnit], min_pages: int, cover: int) -> None:
        page_of = {c.chunk_id: (c.doc_id, c.page) for u in units for c in u.chunks}
        spans = {}
        for key, entity in merged.entities.items():
            pages = {page_of[c] for c in entity.chunks if c in page_of}
            if entity.type not in NOT_ANCHORS and len(pages) >= min_pages:
                spans[key] = pages
        anchors = select_anchors(spans, {k: merged.entities[k].name for k in spans}, cover)
        calls, stage = -(-len(anchors) // MAX_ANCHORS_PER_CALL), self.stages["refine"]
        stage.calls += calls
        stage.prompt_tokens += calls * PRIOR_REFINE_PROMPT
        stage.completion_tokens += calls * self.reply("refine")


def estimate_work(
    documents: Sequence[Document],
    profile: ServerProfile | None,
    *,
    history: Mapping[str, StageUsage] | None = None,
    max_tokens: int | None = None,
    build: BuildOptions | None = None,
    slots: int = 1,
    price_input: float = 0.0,
    price_output: float = 0.0,
    offline: OfflineExtractor | None = None,
) -> WorkEstimate:
    """Model calls and tokens per stage for adding `documents` with the model path on."""
    build = build or BuildOptions()
    plan = _Planner(profile, history or {}, max_tokens)
    offline = offline or OfflineExtractor()
    out = WorkEstimate(server=profile.describe() if profile is not None else "")
    for doc in documents:
        doc.assign_chunk_ids()
        units = [PageUnit(doc.doc_id, doc.title, p.number, list(p.chunks)) for p in doc.pages]
        out.documents += 1
        out.pages += len(doc.pages)
        out.chunks += sum(len(u.chunks) for u in units)
        if not build.hypergraph:  # no graph, no model work while adding
            continue
        plan.extraction(units)
        graphs = offline.extract_document(units)
        merged = merge(graphs, build.max_description_chars)
        plan.summaries(merged)
        if build.reconcile:
            plan.reconciliation(merged, units)
        if build.themes:
            plan.themes(graphs, units)
        if build.refine:  # "full" refinement is a cost baseline: planned like anchors, a lower bound
            plan.refinement(merged, units, build.anchor_min_pages, build.anchor_cover)
    notes = {
        SUMMARY_STAGE: "one per entity with many descriptions",
        "reconcile": "one per group of facts sharing a head, one per conflict the rules find",
        "themes": "one per chunk with entities",
        "refine": f"the anchors refinement would choose, {MAX_ANCHORS_PER_CALL} a call",
    }
    for name, stage in plan.stages.items():
        stage.note = "; ".join(x for x in (notes.get(name, ""), plan.sources.get(name, "")) if x)
    out.stages = [s for s in plan.stages.values() if s.calls]
    if profile is not None:
        per_stage = [profile.seconds_for(s.prompt_tokens, s.completion_tokens) for s in out.stages]
        if all(t is not None for t in per_stage):
            out.seconds = sum(cast(float, t) for t in per_stage) / max(1, slots)
    if price_input or price_output:
        prompt = sum(s.prompt_tokens for s in out.stages)
        completion = sum(s.completion_tokens for s in out.stages)
        out.price = (prompt * price_input + completion * price_output) / 1_000_000
    return out
