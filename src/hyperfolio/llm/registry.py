"""Which language model serves which role, from settings; None when a role has none (offline).

Roles: "extract" (entities and hyperedges from pages), "keywords" (query decomposition),
"answer" (answers with citations) and "vision" (figures and page images). A role is served when
a model name resolves for it: `models.<role>_model`, else `models.model`. The vision role needs
its own `vision_model`, so a text-only model is never sent images by accident.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hyperfolio.config import ModelOptions, Settings
from hyperfolio.llm.cache import ResponseCache
from hyperfolio.llm.errors import ModelConfigError
from hyperfolio.llm.flow import AdaptiveLimit, CircuitBreaker
from hyperfolio.llm.server_profile import ProfileStore, ServerProfile
from hyperfolio.llm.usage import StageUsage, UsageMeter
from hyperfolio.store import open_model_records

if TYPE_CHECKING:  # the HTTP client stack loads only when a role has a model
    from hyperfolio.llm.loop_thread import LoopThread
    from hyperfolio.llm.openai_compat import OpenAICompatClient
    from hyperfolio.llm.transport import ServerLink

log = logging.getLogger(__name__)

ROLES = ("extract", "keywords", "answer", "vision", "judge")
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class Endpoint:
    role: str
    base_url: str
    model: str
    api_key: str = ""

    def __repr__(self) -> str:  # never print the key
        return f"Endpoint(role={self.role!r}, base_url={self.base_url!r}, model={self.model!r})"


def _options(settings: Settings | ModelOptions) -> ModelOptions:
    return settings if isinstance(settings, ModelOptions) else settings.models


def resolve_endpoint(role: str, settings: Settings | ModelOptions) -> Endpoint | None:
    """The server and model for `role`, or None when no model is configured for it."""
    if role not in ROLES:
        raise ValueError(f"unknown model role {role!r}; expected one of {', '.join(ROLES)}")
    opts = _options(settings)
    model = getattr(opts, f"{role}_model") or ("" if role == "vision" else opts.model)
    if not model:
        return None
    api_key = getattr(opts, f"{role}_api_key") or opts.api_key
    base_url = getattr(opts, f"{role}_base_url") or opts.base_url
    if not base_url:
        if not api_key:
            raise ModelConfigError(
                f"model {model!r} is configured for {role} but no server is: set HYPERFOLIO_MODELS_BASE_URL "
                "(or [models] base_url, or OPENAI_BASE_URL)"
            )
        base_url = OPENAI_DEFAULT_URL
    return Endpoint(role=role, base_url=base_url, model=model, api_key=api_key)


def make_chat_model(
    role: str,
    settings: Settings | ModelOptions,
    cache: ResponseCache | None = None,
    usage: UsageMeter | None = None,
    link: ServerLink | None = None,
) -> OpenAICompatClient | None:
    """A client for `role` (it also serves as the VisionModel for "vision"), or None when offline."""
    endpoint = resolve_endpoint(role, settings)
    if endpoint is None:
        return None
    from hyperfolio.llm.openai_compat import OpenAICompatClient

    opts = _options(settings)
    return OpenAICompatClient(
        endpoint.base_url,
        endpoint.model,
        api_key=endpoint.api_key,
        role=role,
        timeout=opts.timeout,
        max_retries=opts.max_retries,
        concurrency=opts.concurrency,
        temperature=opts.temperature,
        max_tokens=opts.max_tokens or None,
        structured=opts.structured,
        cache=cache if opts.cache else None,
        usage=usage,
        max_retry_wait=opts.max_retry_wait,
        stream=opts.stream,
        link=link,
    )


def make_vision_model(
    settings: Settings | ModelOptions, cache: ResponseCache | None = None, usage: UsageMeter | None = None
) -> OpenAICompatClient | None:
    return make_chat_model("vision", settings, cache, usage)


class ModelSet:
    """The clients of every configured role over one collection database, sharing cache and usage.

    Clients are made on first use; each role has its own (its role is the default stage name in
    the usage table). Clients of the same server share one ServerLink: one event loop, one
    in-flight limit sized to the server, one circuit breaker and the server's profile, probed on
    first use and kept in the collection database.
    """

    def __init__(self, settings: Settings | ModelOptions, location: str | Path | None = None) -> None:
        self.options = _options(settings)
        self.records = open_model_records(location) if location is not None else None
        self.cache = ResponseCache(self.records) if self.records is not None and self.options.cache else None
        self.usage = UsageMeter(self.records)
        self.profiles = ProfileStore(self.records)
        self._lock = threading.Lock()
        self._clients: dict[str, OpenAICompatClient | None] = {}
        self._links: dict[str, ServerLink] = {}
        self._runner: LoopThread | None = None

    def _link(self, base_url: str, model: str) -> ServerLink:
        key = f"{base_url}|{model}"
        if key not in self._links:
            from hyperfolio.llm.loop_thread import LoopThread
            from hyperfolio.llm.transport import ServerLink

            if self._runner is None:
                self._runner = LoopThread("hyperfolio-llm")
            opts = self.options
            self._links[key] = ServerLink(
                AdaptiveLimit(opts.concurrency),
                CircuitBreaker(opts.breaker_failures, opts.breaker_cooldown),
                profiles=self.profiles,
                runner=self._runner,
            )
        return self._links[key]

    def get(self, role: str) -> OpenAICompatClient | None:
        with self._lock:
            if role not in self._clients:
                endpoint = resolve_endpoint(role, self.options)
                client = None
                if endpoint is not None:
                    link = self._link(endpoint.base_url, endpoint.model)
                    client = make_chat_model(role, self.options, self.cache, self.usage, link)
                    assert client is not None
                    self._prepare(client)
                self._clients[role] = client
            return self._clients[role]

    def profile(self, role: str = "extract") -> ServerProfile | None:
        """The profile of the server serving `role` (probed now if it was not yet), None offline."""
        client = self.get(role)
        return None if client is None else client.link.profile

    def _prepare(self, client: OpenAICompatClient) -> None:
        """Give a new client its server's profile: the stored one, else a fresh probe (when allowed)."""
        link, opts = client.link, self.options
        if link.profile is None:
            profile = self.profiles.get(client.base_url, client.model)
            if profile is None and opts.probe:
                log.info("probing model server %s (%s)", client.base_url, client.model)
                profile = client.probe()
                self.profiles.put(profile)
                log.info("model server: %s", profile.describe())
            if profile is None:
                profile = ServerProfile(client.base_url, client.model)
            if opts.context_tokens:
                profile.context_tokens = opts.context_tokens
            link.profile = profile
            _size_limit(link.limit, profile)
        client.adopt(link.profile)

    @property
    def configured(self) -> bool:
        """True when at least one role has a model (the language-model path is on)."""
        return any(resolve_endpoint(role, self.options) is not None for role in ROLES)

    def snapshot(self) -> dict[str, StageUsage]:
        return self.usage.snapshot()

    def close(self) -> None:
        with self._lock:
            for client in self._clients.values():
                if client is not None:
                    client.close()
            self._clients.clear()
            self._links.clear()
        if self._runner is not None:
            self._runner.stop()
        if self.records is not None:
            self.records.close()

    def __enter__(self) -> ModelSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _size_limit(limit: AdaptiveLimit, profile: ServerProfile) -> None:
    """Requests in flight from what the server is: its slots; hosted APIs and vLLM batch, so the
    configured ceiling; llama-cpp-python serves one at a time; otherwise learned while running."""
    if profile.slots:
        limit.set_slots(profile.slots)
    elif profile.kind in ("openai", "vllm"):
        limit.set_slots(limit.ceiling)
    elif profile.kind == "llama-cpp-python":
        limit.set_slots(1)
