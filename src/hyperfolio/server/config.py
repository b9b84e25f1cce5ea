"""How a service is run: where its collections live, who may reach it, what it accepts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hyperfolio.errors import HyperfolioError
from hyperfolio.server.keys import MAX_RATE, KeyStore

LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass
class ServerConfig:
    root: Path
    host: str = "127.0.0.1"
    port: int = 8765
    api_key: str = ""
    cors_origins: list[str] = field(default_factory=list)
    max_upload_mb: float = 200.0
    max_pages: int = 2000
    workers: int = 0  # parse processes per ingest; 0 parses on the ingest thread
    warm: bool = True  # load the models at start-up, so the first question is as fast as the others
    mcp: bool = True
    rate_limit: int = 120  # requests per minute of a key from the key store that has no rate of its own

    def check(self) -> None:
        """A service reachable from other machines must ask for a key: its --api-key, or the keys of its
        key store (`hyperfolio keys create`)."""
        if self.host not in LOOPBACK and not self.api_key and not self._has_keys():
            raise HyperfolioError(
                f"--host {self.host} makes the service reachable from other machines: set an API key "
                "(--api-key or HYPERFOLIO_API_KEY) or create keys (hyperfolio keys create --root ...), "
                "or keep the default --host 127.0.0.1"
            )
        if self.max_upload_mb <= 0 or self.max_pages < 1:
            raise HyperfolioError("--max-upload-mb and --max-pages must be positive")
        if not 1 <= self.rate_limit <= MAX_RATE:
            raise HyperfolioError(f"--rate-limit is 1-{MAX_RATE} requests per minute")

    def _has_keys(self) -> bool:
        store = KeyStore(self.root)
        try:
            return store.has_keys()
        finally:
            store.close()
