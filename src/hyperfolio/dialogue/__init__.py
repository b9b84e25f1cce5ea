"""Conversations: the turns a thread keeps, and a follow-up rewritten into a question that stands alone."""

from hyperfolio.dialogue.followups import CITED_SCOPE, Rewrite, rewrite_offline
from hyperfolio.dialogue.turns import Turn, message_text, turns_from_messages

__all__ = ["CITED_SCOPE", "Rewrite", "Turn", "message_text", "rewrite_offline", "turns_from_messages"]
