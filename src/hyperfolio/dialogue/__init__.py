"""Conversations: the turns a thread keeps, and a follow-up rewritten into a question that stands alone."""

from hyperfolio.dialogue.followups import (
    CITED_SCOPE,
    Asking,
    OfflineRewriter,
    Rewrite,
    Rewriter,
    carried,
    rewrite_offline,
)
from hyperfolio.dialogue.turns import Turn, owned, turns_from_messages

__all__ = [
    "CITED_SCOPE",
    "Asking",
    "OfflineRewriter",
    "Rewrite",
    "Rewriter",
    "Turn",
    "carried",
    "owned",
    "rewrite_offline",
    "turns_from_messages",
]
