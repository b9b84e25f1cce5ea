"""What adding documents will cost in model work, before any model call: calls, tokens, time, price.

Extraction is planned exactly as the extractor will run it (the same split of each page into calls
that fit the server's context, the same prompts, the same JSON instruction when the server cannot
take a schema), so its calls and prompt tokens are counted, not guessed. Themes are one call per
chunk that has entities; which chunks have entities, and how many entities span pages (the anchors
that refinement re-examines) and which facts share a head (the groups reconciliation checks)
are read off the offline graph of the same pages. Reply lengths come
from this collection's own history with the model when it has one (tokens per call, by stage),
else from a prior. Time uses the server's measured speeds and slots; price an optional price table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from hyperfolio.build.extract import PageUnit
from hyperfolio.build.extract_llm import LLMExtractor, PageExtraction
from hyperfolio.build.extract_offline import OfflineExtractor
from hyperfolio.build.layers import chunk_text
from hyperfolio.build.merge import merge
from hyperfolio.build.reconcile import OfflineDetector, detection_batches
from hyperfolio.build.reconcile_llm import DETECT_PROMPT, DetectReply, LLMResolver, ResolveReply
from hyperfolio.build.themes_llm import PROMPT as THEME_PROMPT
from hyperfolio.build.themes_llm import ThemeReply
from hyperfolio.model import Document
from hyperfolio.models.budget import call_budget, schema_overhead
from hyperfolio.models.openai_compat import system_message, user_message
from hyperfolio.models.server_profile import ServerProfile
from hyperfolio.models.usage import StageUsage, estimate_tokens
from hyperfolio.phrases import clip, one_line

# Reply tokens per call when the collection has no history: what instruct models write for these
# replies (a page's entities and facts; a one-sentence theme with keywords; a refined relation list).
PRIOR_REPLY = {"extract": 450, "themes": 60, "refine": 250, "reconcile": 40, "resolve": 80}


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
        return {
            "documents": self.documents,
            "pages": self.pages,
            "chunks": self.chunks,
            "stages": [
                {
                    "stage": s.stage,
                    "calls": s.calls,
                    "prompt_tokens": s.prompt_tokens,
                    "completion_tokens": s.completion_tokens,
                    "note": s.note,
                }
                for s in self.stages
            ],
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


def _reply_tokens(stage: str, history: Mapping[str, StageUsage], cap: int) -> tuple[int, str]:
    past = history.get(stage)
    if past is not None and past.calls >= 3:
        return min(cap, round(past.completion_tokens / past.calls)), f"replies as long as this collection's {stage}"
    return min(cap, PRIOR_REPLY[stage]), "reply length from a prior"


def estimate_work(
    documents: Sequence[Document],
    profile: ServerProfile | None,
    *,
    history: Mapping[str, StageUsage] | None = None,
    max_tokens: int | None = None,
    anchor_min_pages: int = 2,
    slots: int = 1,
    price_input: float = 0.0,
    price_output: float = 0.0,
    offline: OfflineExtractor | None = None,
) -> WorkEstimate:
    """Model calls and tokens per stage for adding `documents` with the model path on."""
    history = history or {}
    planner = LLMExtractor(cast(Any, None))  # planning only: no call is made
    budget = call_budget(profile, cap=max_tokens)
    room, _ = planner.page_room(profile, max_tokens, _mode(profile))
    extract = StageEstimate("extract")
    themes = StageEstimate("themes")
    refine = StageEstimate("refine")
    detect = StageEstimate("reconcile")
    reply_extract, note_extract = _reply_tokens("extract", history, budget.max_tokens)
    reply_theme, note_theme = _reply_tokens("themes", history, budget.max_tokens)
    reply_refine, note_refine = _reply_tokens("refine", history, budget.max_tokens)
    reply_detect, note_detect = _reply_tokens("reconcile", history, budget.max_tokens)
    detect_schema = schema_overhead(DetectReply, _mode(profile))
    resolve_schema = schema_overhead(ResolveReply, _mode(profile))
    resolver = LLMResolver(cast(Any, None))  # planning only: its prompts, no call
    extract_schema = schema_overhead(PageExtraction, _mode(profile))
    theme_schema = schema_overhead(ThemeReply, _mode(profile))
    out = WorkEstimate(server=profile.describe() if profile is not None else "")
    offline = offline or OfflineExtractor()
    for doc in documents:
        out.documents += 1
        doc.assign_chunk_ids()
        out.pages += len(doc.pages)
        units = [PageUnit(doc.doc_id, doc.title, p.number, list(p.chunks)) for p in doc.pages]
        out.chunks += sum(len(u.chunks) for u in units)
        for unit in units:
            usable = [c for c in unit.chunks if planner._usable(c)]
            if not usable:
                continue
            for part in planner.plan(usable, room):
                extract.calls += 1
                extract.prompt_tokens += estimate_tokens(planner.messages(unit, part, room)) + extract_schema
                extract.completion_tokens += reply_extract
        graphs = offline.extract_document(units)
        names: dict[str, list[str]] = {}
        for graph in graphs:
            for entity in graph.entities:
                for chunk_id in entity.chunks:
                    names.setdefault(chunk_id, []).append(entity.name)
        for unit in units:
            for chunk in unit.chunks:
                if chunk.chunk_id in names:
                    themes.calls += 1
                    text = f"Passage ({chunk.modality}):\n{clip(one_line(chunk_text(chunk)), 2500)}\n\nEntities: "
                    text += "; ".join(names[chunk.chunk_id])
                    messages = [system_message(THEME_PROMPT), user_message(text)]
                    themes.prompt_tokens += estimate_tokens(messages) + theme_schema
                    themes.completion_tokens += reply_theme
        merged = merge(graphs)
        tables = {c.chunk_id for u in units for c in u.chunks if c.modality == "table"}
        evidence = {c.chunk_id: c.text for u in units for c in u.chunks}
        for batch in detection_batches(merged, tables):
            for conflict in OfflineDetector().confirm(batch):  # the model confirms at least these
                detect.calls += 1
                detect.prompt_tokens += estimate_tokens(resolver.messages(conflict, evidence)) + resolve_schema
                detect.completion_tokens += PRIOR_REPLY["resolve"]
            for group in batch:
                detect.calls += 1
                lines = "\n".join(
                    f"[{i}] (new) {f.head_name} | {f.relation} | {f.tail_name}" for i, f in enumerate(group, 1)
                )
                messages = [system_message(DETECT_PROMPT), user_message(f"Facts:\n{lines}\n\nWhich pairs conflict?")]
                detect.prompt_tokens += estimate_tokens(messages) + detect_schema
                detect.completion_tokens += reply_detect
        pages_of = {c.chunk_id: c.page for u in units for c in u.chunks}
        anchors = [e for e in merged.entities.values() if len({pages_of.get(c) for c in e.chunks}) >= anchor_min_pages]
        refine.calls += len(anchors)
        refine.prompt_tokens += len(anchors) * 600
        refine.completion_tokens += len(anchors) * reply_refine
    extract.note = note_extract
    themes.note = f"one per chunk with entities; {note_theme}"
    refine.note = f"one per entity on {anchor_min_pages}+ pages (at most); {note_refine}"
    detect.note = f"one per group of facts sharing a head, one per conflict the rules find; {note_detect}"
    out.stages = [s for s in (extract, detect, themes, refine) if s.calls]
    if profile is not None:
        per_call = [profile.seconds_for(s.prompt_tokens, s.completion_tokens) for s in out.stages]
        if all(t is not None for t in per_call):
            out.seconds = sum(cast(float, t) for t in per_call) / max(1, slots)
    if price_input or price_output:
        prompt = sum(s.prompt_tokens for s in out.stages)
        completion = sum(s.completion_tokens for s in out.stages)
        out.price = (prompt * price_input + completion * price_output) / 1_000_000
    return out
