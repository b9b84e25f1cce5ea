"""Themes and key entities from a language model (VizRAG's top layer), behind `Themer`.

For each chunk the model sees the chunk's text and the entities extracted from it; when a vision
model is configured it also sees a picture of the chunk's own hypergraph (entities labelled E1,
E2, ...) and answers from both. It returns a one-sentence theme, the key entities (names from
the list) and a few keywords. A chunk whose call fails gets the offline theme.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from hyperfolio.hypergraph.layers import ChunkTheme, chunk_text
from hyperfolio.hypergraph.layers_offline import OfflineThemer
from hyperfolio.hypergraph.ledger import BuildLedger
from hyperfolio.llm.errors import ModelCallError, ModelUnavailableError
from hyperfolio.llm.fence import PICTURE_RULE, Fence, with_evidence_rule
from hyperfolio.llm.messages import system_message, user_message
from hyperfolio.llm.protocols import StructuredChatModel
from hyperfolio.model import Chunk
from hyperfolio.phrases import clip, normalize_name, one_line

log = logging.getLogger(__name__)

STAGE = "themes"
REPLY_TOKENS = 200  # a sentence, a few names and keywords: enough, and a rambling model stops there


class ThemeReply(BaseModel):
    theme: str = Field(description="one sentence: what this part of the document is about")
    key_entities: list[str] = Field(default_factory=list, description="names copied from the entity list")
    keywords: list[str] = Field(default_factory=list)


PROMPT = with_evidence_rule("""\
You index a document for retrieval. For the passage you are given, write its theme - one \
sentence saying what this part of the document is about - and pick its key entities: the few \
entities from the given list that the theme turns on, most central first (copy their names \
exactly). Add up to six keywords. If a picture of the passage's entity graph is attached, use it \
to see which entities connect the others. Reply in JSON with `theme`, `key_entities`, `keywords`.""")


class LLMThemer:
    name = "llm"

    def __init__(
        self,
        chat: StructuredChatModel,
        *,
        vision: StructuredChatModel | None = None,
        picture: Callable[[str], bytes | None] | None = None,
        key_entities: int = 5,
        max_chars: int = 2500,
        stage: str = STAGE,
    ) -> None:
        self.chat = chat
        self.vision = vision
        self.picture = picture  # chunk id -> PNG of its hypergraph (when a vision model reads it)
        self.key_entities = key_entities
        self.max_chars = max_chars
        self.stage = stage
        self.fallback = OfflineThemer(key_entities)
        self.fallbacks = 0
        self.ledger: BuildLedger | None = None  # records which chunk themes the model wrote

    def messages(self, chunk: Chunk, names: list[str], image: bytes | None = None) -> list[dict[str, Any]]:
        """The passage (with its section) and its entities' names, each fenced: all come from the document."""
        scope = " > ".join(p for p in chunk.section_path if p)
        passage = (f"Section: {scope}\n" if scope else "") + clip(one_line(chunk_text(chunk)), self.max_chars)
        entities = "; ".join(names)
        fence = Fence.over([passage, entities])
        text = f"Passage ({chunk.modality}):\n{fence.quote(passage, 'passage')}\n\nEntities:\n"
        text += fence.quote(entities, "entities")
        if image:
            text += f"\n\n{PICTURE_RULE}"
        return [system_message(PROMPT), user_message(text, [image] if image else [])]

    def themes(self, chunks, entities, edges) -> list[ChunkTheme]:
        todo = [c for c in chunks if entities.get(c.chunk_id)]
        conversations = []
        for chunk in todo:
            image = self.picture(chunk.chunk_id) if self.vision is not None and self.picture else None
            conversations.append(self.messages(chunk, [n for _, n in entities[chunk.chunk_id]], image))
        model = self.vision if self.vision is not None and self.picture else self.chat
        replies = model.complete_json_many(
            conversations, ThemeReply, stage=self.stage, return_exceptions=True, max_tokens=REPLY_TOKENS
        )
        offline = {t.chunk_id: t for t in self.fallback.themes(chunks, entities, edges)}
        out: list[ChunkTheme] = []
        for chunk, reply in zip(todo, replies, strict=True):
            if not isinstance(reply, ThemeReply):
                if not isinstance(reply, ModelCallError):
                    raise reply
                # A stage taken offline by the breaker was announced once; its skipped calls stay quiet.
                say = log.debug if isinstance(reply, ModelUnavailableError) else log.warning
                say("theme of %s failed; using the offline theme: %s", chunk.chunk_id, reply)
                self.fallbacks += 1
                if self.ledger is not None:
                    self.ledger.offline(chunk.doc_id, self.stage, chunk.chunk_id, str(reply))
                if chunk.chunk_id in offline:
                    out.append(offline[chunk.chunk_id])
                continue
            if self.ledger is not None:
                self.ledger.model(chunk.doc_id, self.stage, chunk.chunk_id)
            ids = {normalize_name(n): e for e, n in entities[chunk.chunk_id]}
            key = [ids[normalize_name(n)] for n in reply.key_entities if normalize_name(n) in ids]
            key = list(dict.fromkeys(key))[: self.key_entities]
            theme = one_line(reply.theme) or (offline[chunk.chunk_id].description if chunk.chunk_id in offline else "")
            if theme:
                keywords = [one_line(k) for k in reply.keywords if k.strip()][:6]
                out.append(ChunkTheme(chunk.chunk_id, theme, key, keywords))
        return out
