"""A persistent cache of model replies, kept in the collection's database (`store.model_records`).

The key is a hash of the model name, the messages (image payloads replaced by their hashes),
the requested JSON schema and the sampling parameters. The server's address is not part of it,
so the same model behind another URL reuses the replies. A re-run with the same inputs therefore
makes no HTTP call.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hyperfolio.model import CachedReply
from hyperfolio.store import ModelRecordStore, model_records_from


def _hash_images(value: Any) -> Any:
    """A copy of a message structure with every data URL replaced by the hash of its bytes."""
    if isinstance(value, Mapping):
        return {k: _hash_images(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_hash_images(v) for v in value]
    if isinstance(value, bytes):
        return "bytes:sha256:" + hashlib.sha256(value).hexdigest()
    if isinstance(value, str) and value.startswith("data:") and len(value) > 256:
        return "data:sha256:" + hashlib.sha256(value.encode()).hexdigest()
    return value


def cache_key(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    schema: Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
) -> str:
    """A stable hex digest of everything that determines a reply (but not where the server is)."""
    payload = {
        "model": model,
        "messages": _hash_images(list(messages)),
        "schema": schema,
        "params": {k: v for k, v in sorted((params or {}).items()) if v is not None},
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ResponseCache:
    """Model replies by key, in the collection's model records; safe to share between threads.

    Given a collection's location, it opens the records there and closes them with itself.
    """

    def __init__(self, records: ModelRecordStore | str | Path) -> None:
        self.records, self._owned = model_records_from(records)
        self.where = self.records.where
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    key = staticmethod(cache_key)

    def get(self, key: str) -> CachedReply | None:
        found = self.records.reply(key)
        with self._lock:
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
        return found

    def put(self, key: str, model: str, response: str, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        self.records.put_reply(key, model, response, prompt_tokens, completion_tokens)

    def discard(self, key: str) -> None:
        self.records.discard_reply(key)

    def clear(self, model: str | None = None) -> int:
        """Forget every reply (or every reply of one model); returns how many were removed."""
        return self.records.clear_replies(model)

    def __len__(self) -> int:
        return self.records.count_replies()

    def close(self) -> None:
        if self._owned:
            self.records.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
