"""Conversations: the turns a thread keeps, and a follow-up rewritten into a question that stands alone."""

from hyperfolio.dialogue.followups import CITED_SCOPE, Rewrite, rewrite_offline
from hyperfolio.dialogue.turns import Turn, turns_from_messages

__all__ = ["CITED_SCOPE", "Rewrite", "Turn", "rewrite_offline", "turns_from_messages"]
