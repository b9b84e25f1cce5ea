"""How much to put in one model call: prompt room and reply length, from the server's profile.

A page's extraction should fit in one call. The context is split between the prompt and the
reply: the reply gets a share of it (enough for a page's entities and facts), bounded so that on a
slow server one call still ends in reasonable time; the rest is room for the prompt. When a page
is larger than the room, its chunks go in several calls (hypergraph/extract_model.py), never clipped
silently to nothing. Characters are turned into tokens conservatively (3.5 a token), since a
prompt that overflows costs a failed call.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from hyperfolio.llm.json_shape import json_instruction
from hyperfolio.llm.server_profile import DEFAULT_CONTEXT, ServerProfile

PLANNING_CHARS_PER_TOKEN = 3.5
SAFETY_TOKENS = 48  # chat template tokens and estimation error


@dataclass(frozen=True)
class CallBudget:
    context: int
    prompt_tokens: int  # room for everything sent (system and user messages)
    max_tokens: int  # the reply's length limit

    def chars(self, tokens: int) -> int:
        return int(tokens * PLANNING_CHARS_PER_TOKEN)


def tokens_of(text: str) -> int:
    """A conservative token count for planning (more than the four-characters rule gives)."""
    return int(len(text) / PLANNING_CHARS_PER_TOKEN) + 1


def call_budget(
    profile: ServerProfile | None,
    *,
    reply_share: float = 0.3,
    min_reply: int = 256,
    max_reply: int = 2048,
    seconds_per_call: float = 180.0,
    cap: int | None = None,
) -> CallBudget:
    """The split of the server's context for one call; `cap` is a configured `max_tokens`."""
    context = profile.context if profile is not None else DEFAULT_CONTEXT
    reply = int(min(max_reply, max(min_reply, context * reply_share)))
    if profile is not None and profile.generation_tps:
        reply = min(reply, max(min_reply, int(profile.generation_tps * seconds_per_call)))
    if cap:
        reply = min(reply, cap)
    reply = min(reply, context // 2)
    return CallBudget(context, max(64, context - reply - SAFETY_TOKENS), reply)


def schema_overhead(reply_type: type[BaseModel], mode: str | None) -> int:
    """Prompt tokens the JSON instruction adds when the server cannot take the schema as a response
    format (every mode but `json_schema` carries the schema in the prompt; see openai_compat)."""
    if mode == "json_schema":
        return 0
    return tokens_of(json_instruction(reply_type.model_json_schema()))
