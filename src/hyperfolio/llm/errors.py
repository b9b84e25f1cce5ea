"""Errors raised by the language-model plug-ins; each names the model, the server and the reason."""

from __future__ import annotations

from hyperfolio.errors import HyperfolioError


class ModelConfigError(HyperfolioError):
    """The model settings are incomplete or contradictory."""


class ModelCallError(HyperfolioError):
    """A call to a language model failed after every allowed attempt."""

    def __init__(self, model: str, base_url: str, reason: str, *, stage: str = "", attempts: int = 1) -> None:
        where = f"model {model!r} at {base_url}"
        if stage:
            where += f" (stage {stage})"
        tries = f" after {attempts} attempt{'s' if attempts != 1 else ''}" if attempts > 1 else ""
        super().__init__(f"{where}: {reason}{tries}")
        self.model = model
        self.base_url = base_url
        self.reason = reason
        self.stage = stage
        self.attempts = attempts


class ModelTimeoutError(ModelCallError):
    """The server did not answer within the per-call timeout."""


class ModelConnectionError(ModelCallError):
    """The server could not be reached."""


class ModelHTTPError(ModelCallError):
    """The server answered with an HTTP error status."""

    def __init__(
        self, model: str, base_url: str, status: int, body: str, *, stage: str = "", attempts: int = 1
    ) -> None:
        excerpt = " ".join(body.split())[:300]
        super().__init__(model, base_url, f"HTTP {status}: {excerpt or '(empty body)'}", stage=stage, attempts=attempts)
        self.status = status
        self.body = body


class ModelOutputError(ModelCallError):
    """The reply could not be turned into the requested JSON, even after repair and one retry."""

    def __init__(self, model: str, base_url: str, reason: str, *, raw: str = "", stage: str = "", attempts: int = 1):
        super().__init__(model, base_url, reason, stage=stage, attempts=attempts)
        self.raw = raw


class ModelUnavailableError(ModelCallError):
    """The stage's circuit is open after repeated failures: the call was not sent."""


class ModelContextError(ModelCallError):
    """The prompt does not fit the model's context; `context_tokens` is the length the server named."""

    def __init__(
        self, model: str, base_url: str, reason: str, *, context_tokens: int | None = None, stage: str = ""
    ) -> None:
        super().__init__(model, base_url, reason, stage=stage)
        self.context_tokens = context_tokens
