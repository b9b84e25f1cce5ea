"""The language-model answerer: an answer with citations from the structured evidence package.

The prompt lays out the package the way Hyper-M2RAG's generator reads it: numbered source chunks
(with document title, page and modality; tables as rows, figures as caption and OCR text), then
the hyperedges and entities that led to them when the dual strategy supplied any. The model
answers in JSON - answer, the numbers of the chunks it used, and whether the evidence suffices.
When the call fails, or the model cites nothing it was shown, the fallback answerer (the
extractive one) answers instead, and `Answer.answerer` says why. Everything taken from the
documents is fenced as evidence (llm/fence.py), and only numbers of chunks the prompt showed
become citations, whatever the reply or the documents say. Of those, only the chunks that hold the
answer's numbers (or its names and words) stay citations (answer/citations.py); `Answer.meta` says
how many were dropped and how well the kept ones support the answer.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from hyperfolio.answer.citations import OFF, CitationCheck, check_citations
from hyperfolio.answer.conflicts import ValueConflict, find_conflicts
from hyperfolio.answer.expected import Kind, expected_kind
from hyperfolio.answer.extractive import INSUFFICIENT, MARKER, Answerer
from hyperfolio.answer.quotes import overlapping
from hyperfolio.answer.short import short_of_reply
from hyperfolio.llm.budget import call_budget, tokens_of
from hyperfolio.llm.errors import ModelCallError
from hyperfolio.llm.fence import BLOCK_CHARS, PICTURE_RULE, Fence, with_evidence_rule, without_tags
from hyperfolio.llm.messages import user_message
from hyperfolio.llm.protocols import StructuredChatModel
from hyperfolio.llm.replies import Numbers
from hyperfolio.model import Answer, EvidenceItem, EvidencePackage
from hyperfolio.phrases import clip, one_line

log = logging.getLogger(__name__)

STAGE = "answer"

SYSTEM_PROMPT = with_evidence_rule("""\
You answer questions about documents using only the evidence you are given: numbered source \
chunks from the documents, and - when available - relations (hyperedges) and entities from a \
knowledge hypergraph built over them, which show how facts on different pages connect.

Reply in JSON with:
- answer: a direct, concise answer. Give the exact value, name or phrase when the question asks \
for one; add a short explanation only when the question calls for it.
- citations: the numbers of the source chunks that support the answer (the [n] opening each chunk).
- sufficient: false when the evidence does not contain the answer (then say so in answer and \
cite nothing); true otherwise.

Never rely on outside knowledge. Cite only chunk numbers that appear in the evidence.""")


ACROSS_RULE = (
    "The question is about several documents: answer for each one, naming the document (its title as the "
    "chunks give it) before its part of the answer, and say plainly where they disagree."
)
CONFLICTS_HEADING = "Values the documents state differently (each with its document and page):"
SELECTED_HEADING = "Passages that most likely hold the answer, found without a model (check them against the chunks):"
SELECTED_CHARS = 300
KIND_HINTS = {
    Kind.YES_NO: "yes or no, then the reason in a few words",
    Kind.COUNT: "a count (a whole number)",
    Kind.PERCENT: "a percentage",
    Kind.MONEY: "an amount of money with its currency and unit",
    Kind.YEAR: "a year",
    Kind.DATE: "a date",
    Kind.NUMBER: "a number with its unit",
    Kind.NAME: "a name",
    Kind.IDENTIFIER: "a number, code or address exactly as written",
    Kind.LIST: "a list of the items, separated by commas",
    Kind.EXPLANATION: "the reason or explanation, in one or two sentences",
    Kind.TEXT: "a short phrase from the evidence",
}
CONFLICT_RULE = (
    "Where the documents give different values for the same thing (listed under the values they state "
    "differently), do not choose one: state both values, each with the document that reports it."
)


class AnswerReply(BaseModel):
    answer: str = ""
    citations: Numbers = Field(default_factory=list)
    sufficient: bool = True


def chunk_body(item: EvidenceItem) -> str:
    chunk = item.chunk
    if chunk.modality == "table" and chunk.table:
        rows = [" | ".join(one_line(c) for c in row) for row in chunk.table]
        return ((f"Caption: {one_line(chunk.caption)}\n") if chunk.caption else "") + "\n".join(rows)
    if chunk.modality == "image":
        parts = []
        if chunk.caption:
            parts.append(f"Caption: {one_line(chunk.caption)}")
        if chunk.meta.get("description"):
            parts.append(f"What it shows (vision model): {one_line(str(chunk.meta['description']))}")
        if chunk.ocr_text:
            parts.append(f"Text in the figure: {one_line(chunk.ocr_text)}")
        return "\n".join(parts) or chunk.text
    return chunk.text.strip()


@dataclass(eq=False)  # compared and hashed by identity, as a worker object is
class LLMAnswerer:
    """Answers from the evidence package with a structured chat model (the `answer` role)."""

    name = "llm"

    chat: StructuredChatModel
    fallback: Answerer
    _: KW_ONLY
    max_chunks: int = 10
    max_chunk_chars: int = 2000
    max_hyperedges: int = 10
    max_entities: int = 10
    stage: str = STAGE
    vision: StructuredChatModel | None = None  # answers instead when the evidence carries a picture of its graph
    check_support: bool = True  # keep only citations whose chunk holds the answer

    def _room(self) -> int | None:
        """Characters of evidence that fit the model's context beside the instructions, when known."""
        profile = getattr(self.chat, "profile", None)
        if profile is None:
            return None
        budget = call_budget(profile, cap=getattr(self.chat, "max_tokens", None), reply_share=0.15, min_reply=200)
        return budget.chars(max(200, budget.prompt_tokens - tokens_of(SYSTEM_PROMPT) - 100))

    def shown(self, question: str, evidence: EvidencePackage) -> tuple[list[EvidenceItem], int]:
        """The chunks the prompt shows (and so the only ones the model may cite), and the characters
        each may take."""
        items = evidence.items[: self.max_chunks]
        per_chunk, room = self.max_chunk_chars, self._room()
        if room is not None and items:
            # Chunks take most of the room, best first; at least 300 characters each, or fewer chunks.
            share = int(room * 0.75) - len(question)
            keep = max(1, min(len(items), share // 300))
            items, per_chunk = items[:keep], max(200, min(per_chunk, share // keep - 80 - BLOCK_CHARS))
        return items, per_chunk

    def _graph_sections(self, evidence: EvidencePackage) -> list[tuple[str, list[str]]]:
        """The hypergraph's part of the evidence: (heading, lines), the lines quoting the documents."""
        sections: list[tuple[str, list[str]]] = []
        if evidence.hyperedges:
            lines = []
            for hit in evidence.hyperedges[: self.max_hyperedges]:
                pages = ", ".join(f"p.{p}" for _, p in hit.pages[:6])
                members = "; ".join(hit.member_names)
                description = clip(one_line(hit.hyperedge.description), 400)
                lines.append(f"- ({hit.hyperedge.level}; {pages}) {members}: {description}")
            sections.append(("Relations from the hypergraph:", lines))
        if evidence.entities:
            lines = []
            for entity_hit in evidence.entities[: self.max_entities]:
                entity = entity_hit.entity
                kind = ", ".join(x for x in (entity.type, entity.modality) if x)
                description = clip(one_line(entity.description), 200)
                pages = ", ".join(f"p.{p}" for _, p in entity_hit.pages[:6])
                lines.append(f"- {entity.name} ({kind}; {pages}): {description}")
            sections.append(("Entities from the hypergraph:", lines))
        if evidence.meta.get("disputed"):
            lines = [
                f"- {' '.join(d['fact'].split(' | '))} (contradicted; the collection holds:"
                f" {' '.join(d['instead'].split(' | '))})"
                for d in evidence.meta["disputed"][:10]
            ]
            sections.append(("Statements in these chunks found wrong while indexing; do not rely on them:", lines))
        return sections

    def messages(
        self, question: str, evidence: EvidencePackage, conflicts: Sequence[ValueConflict] | None = None
    ) -> list[dict[str, Any]]:
        """System instructions, then the question and the evidence, every document-derived text fenced;
        across documents, the values they state differently (`conflicts`, found here when not given)."""
        items, per_chunk = self.shown(question, evidence)
        conflicts = self._conflicts(question, evidence, conflicts)
        selected = self._selected(question, evidence, items)
        sources = []
        for number, item in enumerate(items, 1):
            cite = item.citation
            modality = "figure" if cite.modality == "image" else cite.modality
            section = f" | section: {' > '.join(cite.section_path)}" if cite.section_path else ""
            head = f"{cite.title} | page {cite.page} | {modality}{section}"
            sources.append((f"[{number}]", head + "\n" + clip(chunk_body(item), per_chunk)))
        sections = self._graph_sections(evidence)
        if conflicts:
            sections.insert(0, (CONFLICTS_HEADING, [conflict_line(c) for c in conflicts]))
        if selected:  # the offline reading first: a small model leans on it, a large one checks it
            sections.insert(0, (SELECTED_HEADING, selected))
        room = self._room()
        if room is not None:  # graph context only as far as the rest of the room goes
            used = len(question) + sum(len(text) + BLOCK_CHARS for _, text in sources)
            kept = []
            for heading, lines in sections:
                used += len(heading) + BLOCK_CHARS
                fits = []
                for line in lines:
                    if used + len(line) + 1 > room:
                        break
                    fits.append(line)
                    used += len(line) + 1
                if fits:
                    kept.append((heading, fits))
            sections = kept
        fence = Fence.over([text for _, text in sources] + [line for _, lines in sections for line in lines])
        kind = expected_kind(question)
        parts = [f"Question: {question}", f"Expected answer: {KIND_HINTS.get(kind, str(kind))}."]
        first = [(h, lines) for h, lines in sections if h == SELECTED_HEADING]
        parts.extend(heading + "\n" + fence.quote("\n".join(lines)) for heading, lines in first)
        parts.append("Source chunks:\n" + "\n".join(fence.quote(t, n) for n, t in sources))
        parts.extend(
            heading + "\n" + fence.quote("\n".join(lines)) for heading, lines in sections if heading != SELECTED_HEADING
        )
        if evidence.meta.get("across_documents"):
            parts.append(ACROSS_RULE)
        if any(heading == CONFLICTS_HEADING for heading, _ in sections):
            parts.append(CONFLICT_RULE)
        parts.append("Answer the question from this evidence.")
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "\n\n".join(parts)}]

    def _selected(self, question: str, evidence: EvidencePackage, items: Sequence[EvidenceItem]) -> list[str]:
        """The offline answerer's reading of the shown chunks: its short answer and the passages it read
        it from, each with the number of its chunk (`[n]`); none when it found nothing."""
        offline = self.fallback.answer(question, replace(evidence, items=list(items)))
        if not offline.sufficient or not offline.support:
            return []
        numbers = {item.citation.chunk_id: n for n, item in enumerate(items, 1)}
        lines = [f"likely answer: {offline.short}"] if offline.short else []
        for text, chunk_id in zip(offline.support, offline.meta.get("support_chunks", []), strict=False):
            if chunk_id in numbers:
                lines.append(f"[{numbers[chunk_id]}] {clip(one_line(text), SELECTED_CHARS)}")
        return lines if len(lines) > (1 if offline.short else 0) else []

    @staticmethod
    def _conflicts(
        question: str, evidence: EvidencePackage, given: Sequence[ValueConflict] | None
    ) -> list[ValueConflict]:
        """The values the documents of a question across documents state differently (answer/conflicts.py)."""
        if given is not None:
            return list(given)
        return find_conflicts(question, evidence) if evidence.meta.get("across_documents") else []

    def _fallback(self, question: str, evidence: EvidencePackage, why: str) -> Answer:
        answer = self.fallback.answer(question, evidence)
        answer.answerer = f"{answer.answerer} (model failed: {why})"
        return answer

    def reply(
        self,
        question: str,
        evidence: EvidencePackage,
        on_text: Callable[[str], None] | None = None,
        conflicts: Sequence[ValueConflict] | None = None,
    ) -> AnswerReply:
        """The model's reply to the question over the evidence (raises ModelCallError)."""
        messages = self.messages(question, evidence, conflicts)
        model = self.chat
        picture = evidence.meta.get("picture")
        if self.vision is not None and picture and Path(picture).is_file():
            # VizRAG: the vision model answers from the text and a picture of the evidence's hypergraph.
            text = messages[-1]["content"] + "\n\nThe attached picture shows how the evidence's entities (E…) and "
            text += f"hyperedges (H…) connect; the relations listed above use the same names. {PICTURE_RULE}"
            messages = [messages[0], user_message(text, [Path(picture).read_bytes()])]
            model = self.vision
        return model.complete_json(messages, AnswerReply, stage=self.stage, on_text=_answer_field(on_text))

    def answer(self, question: str, evidence: EvidencePackage, on_text: Callable[[str], None] | None = None) -> Answer:
        """`on_text` gets the answer as the model writes it (from the JSON reply's `answer` field)."""
        items, _ = self.shown(question, evidence)
        if not items:
            return Answer(question, INSUFFICIENT, [], evidence, sufficient=False, answerer=self.name)
        conflicts = self._conflicts(question, evidence, None)
        try:
            reply = self.reply(question, evidence, on_text, conflicts)
        except ModelCallError as exc:
            log.warning("the answer model failed; answering extractively: %s", exc)
            return self._fallback(question, evidence, one_line(exc.reason)[:200])
        return self.from_reply(question, evidence, reply, conflicts=conflicts)

    def from_reply(
        self,
        question: str,
        evidence: EvidencePackage,
        reply: AnswerReply,
        *,
        check: bool | None = None,
        conflicts: Sequence[ValueConflict] | None = None,
    ) -> Answer:
        """The answer a reply makes: its text, and the citations it gave that name shown chunks and -
        with the check on (`check`, else `self.check_support`) - support the answer; its meta carries the
        conflicting values the prompt showed. Separate from the call, so one reply can be read both ways
        (benchmarks/citation_precision.py)."""
        items, _ = self.shown(question, evidence)
        found = {"conflicts": [c.as_dict() for c in self._conflicts(question, evidence, conflicts)]}
        found = found if found["conflicts"] else {}
        bare = bare_answer(reply.answer)  # the model's own markers: renumbered from `citations` below
        if not reply.sufficient:  # cites nothing, so shows no markers (as its streamed draft did not)
            return Answer(
                question, bare or INSUFFICIENT, [], evidence, sufficient=False, answerer=self.name, meta=found
            )
        # Only numbers of chunks the prompt showed: "[99]", or a number copied from a document's own
        # reference list, names no evidence and is dropped.
        cited: list[EvidenceItem] = []
        for number in dict.fromkeys(n for n in reply.citations if 1 <= n <= len(items)):
            if all(items[number - 1].citation != item.citation for item in cited):
                cited.append(items[number - 1])
        if not cited or not bare:
            return self._fallback(question, evidence, "no valid citations" if bare else "empty answer")
        # A model cites most of what it was shown: keep what holds the answer (answer/citations.py).
        enabled = self.check_support if check is None else check
        result = check_citations(bare, question, cited, items) if enabled else CitationCheck(cited, OFF, 0)
        citations = [overlapping(item, bare) for item in result.kept]  # each with its sentence holding the answer
        markers = "".join(f"[{i}]" for i in range(1, len(citations) + 1))
        return Answer(
            question=question,
            text=f"{bare} {markers}",
            citations=citations,
            evidence=evidence,
            sufficient=True,
            answerer=self.name,
            support=[bare],
            short=short_of_reply(question, bare),
            meta={
                "citations_given": len(cited),
                "citations_dropped": result.dropped,
                "citations_added": result.added,
                "citation_support": result.status,
                **found,
            },
        )


_SPACE_BEFORE_STOP = re.compile(r"\s+([.,;:])")


def bare_answer(written: str) -> str:
    """A model's answer text as the finished answer shows it, before its citations, numbered afresh,
    are appended: the block tags it echoed dropped, whitespace folded, and its own citation markers
    dropped with the space they leave before a stop. The one reading of a model's text, so that what
    a draft of it shows (server/chat_replies.Draft) is the start of the finished answer."""
    text = one_line(MARKER.sub("", without_tags(written)))  # folded after: a marker mid-sentence leaves no gap
    return _SPACE_BEFORE_STOP.sub(r"\1", text)


def conflict_line(conflict: ValueConflict) -> str:
    """A conflict as the prompt lists it: what, then each document's value with its title and page."""
    a, b = conflict.sides
    return (
        f"- {conflict.what}: {a.title}, page {a.page}, reports {a.value}; {b.title}, page {b.page}, reports {b.value}"
    )


_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_ANSWER_KEY = re.compile(r'"answer"\s*:\s*"')


def partial_answer(reply: str) -> str:
    """The `answer` string of a JSON reply still being written: decoded up to where the text stops."""
    found = _ANSWER_KEY.search(reply)
    if found is None:
        return ""
    out: list[str] = []
    i = found.end()
    while i < len(reply):
        c = reply[i]
        if c == '"':
            break
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(reply):
            break  # an escape cut in two: wait for the rest
        code = reply[i + 1]
        if code == "u":
            digits = reply[i + 2 : i + 6]
            if len(digits) < 4:
                break
            if all(d in "0123456789abcdefABCDEF" for d in digits):
                out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(code, code))
        i += 2
    return "".join(out)


def _answer_field(on_text: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """Turn raw-reply callbacks into answer-text callbacks, called only when the answer grew."""
    if on_text is None:
        return None
    shown = ""

    def forward(reply: str) -> None:
        nonlocal shown
        text = partial_answer(reply)
        if text != shown:
            shown = text
            on_text(text)

    return forward
