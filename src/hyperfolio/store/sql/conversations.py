"""Conversations kept in the collection's store, so a thread outlives the process that served it.

A turn is stored as the plain data `dialogue.Turn.to_dict` makes (one JSON column): what a follow-up
needs of it is read back whole, never queried by field. `owner` is who started the thread (an API key's
id; "" for one person on a laptop): a thread is listed and read only by its owner.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from hyperfolio.model import ConversationRecord
from hyperfolio.store.sql.host import SqlHost

TITLE_CHARS = 120  # a thread is titled by its first question, cut to this


class ConversationTables(SqlHost):
    """conversations and conversation_turns."""

    def create_conversation(self, owner: str = "") -> ConversationRecord:
        now = time.time()
        record = ConversationRecord(secrets.token_hex(8), owner, "", now, now)
        with self._write() as cur:
            cur.execute(
                "INSERT INTO conversations(conversation_id, owner, title, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (record.conversation_id, owner, "", now, now),
            )
        return record

    def add_turn(self, conversation_id: str, turn: dict[str, Any]) -> int:
        """Append a turn; its number (from 1). The thread takes its first question as its title."""
        now = time.time()
        with self._write() as cur:
            rows = cur.execute(
                "SELECT COUNT(*) FROM conversation_turns WHERE conversation_id = ?", (conversation_id,)
            ).fetchall()
            n = int(rows[0][0]) + 1
            cur.execute(
                "INSERT INTO conversation_turns(conversation_id, n, turn) VALUES (?, ?, ?)",
                (conversation_id, n, self.dialect.json(turn)),
            )
            title = str(turn.get("question", ""))[:TITLE_CHARS]
            cur.execute(
                "UPDATE conversations SET updated_at = ?,"
                " title = CASE WHEN title = '' THEN ? ELSE title END WHERE conversation_id = ?",
                (now, title, conversation_id),
            )
        return n

    def get_conversation(self, conversation_id: str) -> ConversationRecord | None:
        rows = self._query(
            "SELECT conversation_id, owner, title, created_at, updated_at FROM conversations WHERE conversation_id = ?",
            (conversation_id,),
        )
        if not rows:
            return None
        found = rows[0]
        record = ConversationRecord(found[0], found[1], found[2], float(found[3]), float(found[4]))
        turns = self._query(
            "SELECT turn FROM conversation_turns WHERE conversation_id = ? ORDER BY n", (conversation_id,)
        )
        record.turns = [dict(self.dialect.from_json(turn)) for (turn,) in turns]
        return record

    def list_conversations(self, owner: str = "", limit: int = 100) -> list[ConversationRecord]:
        """An owner's threads, the latest first (without their turns)."""
        rows = self._query(
            "SELECT conversation_id, owner, title, created_at, updated_at FROM conversations WHERE owner = ?"
            " ORDER BY updated_at DESC, conversation_id LIMIT ?",
            (owner, limit),
        )
        return [ConversationRecord(r[0], r[1], r[2], float(r[3]), float(r[4])) for r in rows]

    def delete_conversation(self, conversation_id: str) -> bool:
        """Remove a thread and its turns; whether there was one."""
        with self._write() as cur:
            cur.execute("DELETE FROM conversation_turns WHERE conversation_id = ?", (conversation_id,))
            gone = cur.execute("DELETE FROM conversations WHERE conversation_id = ?", (conversation_id,))
            return bool(getattr(gone, "rowcount", 0))
