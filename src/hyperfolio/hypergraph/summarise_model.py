"""Merged descriptions summarised by a language model (Hyper-M2RAG canonical merging).

Offline (in `merge`), an entity seen on many pages keeps its distinct descriptions, deduplicated
and capped. With a model configured, an entity with several descriptions gets one summary
that keeps every fact, so its vertex reads as one coherent statement.
"""

from __future__ import annotations

import logging

from pydantic import BaseModel

from hyperfolio.hypergraph.merge import MergedEntity, MergedGraph
from hyperfolio.llm.fence import Fence, with_evidence_rule
from hyperfolio.llm.protocols import StructuredChatModel
from hyperfolio.phrases import one_line

log = logging.getLogger(__name__)

STAGE = "merge"
_INSTRUCTION = with_evidence_rule(
    "Several pages of one document describe the same entity. Write one description of at most "
    "three sentences that keeps every distinct fact in the evidence block and adds nothing else."
)


class Summary(BaseModel):
    description: str = ""


def _listing(name: str, type_: str, descriptions: list[str]) -> str:
    """The entity and its descriptions, fenced: every word of them was read from the document."""
    text = f"Entity: {name} ({type_})\n" + "\n".join(f"- {d}" for d in descriptions)
    return Fence.over([text]).quote(text, "entity")


class DescriptionSummariser:
    def __init__(self, chat: StructuredChatModel, min_descriptions: int = 3, max_chars: int = 600) -> None:
        self.chat = chat
        self.min_descriptions = min_descriptions
        self.max_chars = max_chars

    def todo(self, merged: MergedGraph) -> list[MergedEntity]:
        """The entities whose merged descriptions are many enough to summarise."""
        return [e for e in merged.entities.values() if len(e.descriptions) >= self.min_descriptions]

    def messages(self, entity: MergedEntity) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": _INSTRUCTION},
            {"role": "user", "content": _listing(entity.name, entity.type, entity.descriptions)},
        ]

    def __call__(self, merged: MergedGraph) -> int:
        """Summarise in place the entities with enough descriptions; returns how many were summarised."""
        todo = self.todo(merged)
        if not todo:
            return 0
        batch = [self.messages(e) for e in todo]
        replies = self.chat.complete_json_many(batch, Summary, stage=STAGE, return_exceptions=True)
        done = 0
        for entity, reply in zip(todo, replies, strict=True):
            if isinstance(reply, Summary) and reply.description.strip():
                entity.descriptions = [one_line(reply.description)[: self.max_chars]]
                done += 1
            else:
                log.warning("keeping the merged descriptions of %r: %s", entity.name, reply)
        return done
