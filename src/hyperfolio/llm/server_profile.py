"""What a model server can do, learned once per server and model and kept in the collection database.

A profile says which kind of server it is, its context length, its parallel slots, whether it
streams, which structured-output modes it accepted or refused, and how fast it reads a prompt and
writes tokens (measured by one short streamed probe). Flow control sizes its concurrency from the
slots, prompts and `max_tokens` are sized from the context, and `hyperfolio estimate` turns the
token counts into time. Servers tell these things in different places: llama.cpp's server at
`/props` (`total_slots`, `n_ctx`), vLLM at `/v1/models` (`max_model_len`), Ollama at `/api/show`;
a context length also shows in the error a server returns for a prompt that is too long, and the
client learns it from there when nothing else said.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hyperfolio.llm.owned_records import RecordsUser
from hyperfolio.store import ModelRecordStore

PROFILE_MAX_AGE = 7 * 24 * 3600.0  # seconds before a server is probed again
# The speed probe's prompt (about 120 tokens): long enough to time prompt reading, short to write.
PROBE_MARKER = "hyperfolio probe:"  # starts every probe prompt (test servers answer probes aside)
PROBE_PROMPT = (
    PROBE_MARKER
    + " this is a speed test of a language model server. "
    + "A short passage follows so that reading it takes measurable time. "
    + "Rivers carry water from mountains to the sea; cities grow along their banks; ports trade goods. " * 3
    + "Reply with the numbers from one to twenty, written as digits and separated by spaces, and nothing else."
)
FORMAT_PROBE_PROMPT = PROBE_MARKER + ' reply with the JSON object {"ok": true} and nothing else.'
FORMAT_PROBE_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
DEFAULT_CONTEXT = 4096  # assumed when a server does not say (most local servers allow at least this)

# Phrases servers use when a prompt does not fit, with the context length in them.
_CONTEXT_PATTERNS = (
    re.compile(r"context window of (\d+)", re.I),  # llama-cpp-python
    re.compile(r"maximum context length is (\d+)", re.I),  # OpenAI, vLLM
    re.compile(r"context (?:size|length) (?:of |is |= ?)?(\d+)", re.I),  # llama.cpp, others
    re.compile(r"n_ctx(?:_slot)?\s*[=:]\s*(\d+)", re.I),
)


@dataclass
class ServerProfile:
    base_url: str
    model: str
    kind: str = "unknown"  # llama.cpp, llama-cpp-python, vllm, ollama, openai or unknown
    context_tokens: int | None = None
    slots: int | None = None
    streaming: bool | None = None
    structured: dict[str, bool | None] = field(default_factory=dict)
    prompt_tps: float | None = None  # prompt tokens read per second (one request)
    generation_tps: float | None = None  # tokens written per second (one request)
    probed_at: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.base_url}|{self.model}"

    @property
    def context(self) -> int:
        """The context length to plan with: the server's, else a common default."""
        return self.context_tokens or DEFAULT_CONTEXT

    def seconds_for(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """Expected time of one request of this size on an idle slot, when the speeds are known."""
        if not self.prompt_tps or not self.generation_tps:
            return None
        return prompt_tokens / self.prompt_tps + completion_tokens / self.generation_tps

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ServerProfile:
        data = json.loads(text)
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})

    def describe(self) -> str:
        """One line for people: kind, context, slots, speeds, structured output."""
        parts = [f"{self.model} at {self.base_url} ({self.kind})"]
        parts.append(f"context {self.context_tokens or f'~{DEFAULT_CONTEXT} (assumed)'} tokens")
        parts.append(f"{self.slots} slot(s)" if self.slots else "slots unknown (learned while running)")
        if self.prompt_tps and self.generation_tps:
            parts.append(f"reads {self.prompt_tps:.0f} tok/s, writes {self.generation_tps:.1f} tok/s")
        mode = next((m for m, ok in self.structured.items() if ok), None)
        if mode:
            parts.append(f"structured output: {mode}")
        return ", ".join(parts)


def context_from_error(body: str) -> int | None:
    """The context length a server names in its 'prompt too long' error, if it names one."""
    for pattern in _CONTEXT_PATTERNS:
        match = pattern.search(body or "")
        if match:
            value = int(match.group(1))
            if 128 <= value <= 10_000_000:
                return value
    return None


def read_props(props: dict[str, Any], profile: ServerProfile) -> None:
    """Fill `profile` from a llama.cpp server's /props."""
    slots = props.get("total_slots")
    if isinstance(slots, int) and slots > 0:
        profile.slots = slots
    settings = props.get("default_generation_settings") or {}
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    if isinstance(n_ctx, int) and n_ctx > 0:
        # llama.cpp splits its context among the slots.
        profile.context_tokens = n_ctx
    profile.kind = "llama.cpp"


def read_models(data: dict[str, Any], profile: ServerProfile) -> None:
    """Fill `profile` from a /v1/models listing (vLLM says max_model_len; owners hint at the kind)."""
    for item in data.get("data") or []:
        if not isinstance(item, dict):
            continue
        if item.get("id") not in (profile.model, None) and len(data.get("data") or []) > 1:
            continue
        limit = item.get("max_model_len") or item.get("context_length") or item.get("context_window")
        if isinstance(limit, int) and limit > 0:
            profile.context_tokens = profile.context_tokens or limit
        owner = str(item.get("owned_by") or "")
        if profile.kind == "unknown":
            if owner == "vllm" or "max_model_len" in item:
                profile.kind = "vllm"
            elif owner == "library" or owner == "ollama":
                profile.kind = "ollama"
            elif owner == "me":
                # llama-cpp-python: one request at a time behind a lock (a queued request even cuts a
                # running stream short), and a 2048-token context unless started with --n_ctx.
                profile.kind = "llama-cpp-python"
                profile.slots = profile.slots or 1
                if profile.context_tokens is None:
                    profile.notes.append("context assumed 2048 (llama-cpp-python's default)")
                    profile.context_tokens = 2048
            elif owner in ("openai", "system", "openai-internal"):
                profile.kind = "openai"


def read_ollama_show(data: dict[str, Any], profile: ServerProfile) -> None:
    info = data.get("model_info") or {}
    for key, value in info.items():
        if key.endswith(".context_length") and isinstance(value, int):
            profile.context_tokens = profile.context_tokens or value
    profile.kind = "ollama"


class ProfileStore(RecordsUser):
    """Profiles kept in the collection's model records (or in memory without them); records opened
    from a location are closed with the store."""

    def __init__(self, records: ModelRecordStore | str | Path | None = None) -> None:
        super().__init__(records)
        self._lock = threading.Lock()
        self._memory: dict[str, ServerProfile] = {}

    def get(self, base_url: str, model: str, max_age: float = PROFILE_MAX_AGE) -> ServerProfile | None:
        key = f"{base_url}|{model}"
        with self._lock:
            if key in self._memory:
                return self._memory[key]
        if self._records is None:
            return None
        row = self._records.profile(key)
        if row is None or time.time() - row[1] > max_age:
            return None
        try:
            profile = ServerProfile.from_json(row[0])
        except (ValueError, TypeError):
            return None
        with self._lock:
            self._memory[key] = profile
        return profile

    def put(self, profile: ServerProfile) -> None:
        with self._lock:
            self._memory[profile.key] = profile
        if self._records is not None:
            self._records.put_profile(profile.key, profile.to_json(), profile.probed_at or time.time())

    def forget(self) -> None:
        with self._lock:
            self._memory.clear()
        if self._records is not None:
            self._records.forget_profiles()
