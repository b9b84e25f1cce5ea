"""How a service is run: where its collections live, who may reach it, what it accepts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hyperfolio.errors import HyperfolioError

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

    def check(self) -> None:
        """A service reachable from other machines must ask for a key."""
        if self.host not in LOOPBACK and not self.api_key:
            raise HyperfolioError(
                f"--host {self.host} makes the service reachable from other machines: set an API key "
                "(--api-key or HYPERFOLIO_API_KEY), or keep the default --host 127.0.0.1"
            )
        if self.max_upload_mb <= 0 or self.max_pages < 1:
            raise HyperfolioError("--max-upload-mb and --max-pages must be positive")
