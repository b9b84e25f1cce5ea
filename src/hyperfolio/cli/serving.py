"""Commands that serve: `serve` (the HTTP API, the web app and MCP over HTTP) and `mcp` (MCP over stdio,
for an agent host). Both need the `serve` extra, imported only here."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Annotated

import typer

from hyperfolio.cli.printers import console, fail
from hyperfolio.config import data_home
from hyperfolio.errors import HyperfolioError

RootOpt = Annotated[
    Path | None,
    typer.Option(
        "--root",
        "-r",
        envvar="HYPERFOLIO_ROOT",
        help="Folder whose collections are served (each by its folder name). Default: the data root, "
        "~/.local/share/hyperfolio, where -c NAME finds them too.",
    ),
]


def serve(
    root: RootOpt = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on; beyond loopback a key is required.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option("--port", "-p", help="Port to listen on.")] = 8765,
    api_key: Annotated[
        str, typer.Option("--api-key", envvar="HYPERFOLIO_API_KEY", help="Bearer token every API call must send.")
    ] = "",
    cors: Annotated[
        list[str] | None, typer.Option("--cors-origin", help="A web origin allowed to call the API (repeatable).")
    ] = None,
    max_upload_mb: Annotated[float, typer.Option("--max-upload-mb", help="Largest file accepted.")] = 200.0,
    max_pages: Annotated[int, typer.Option("--max-pages", help="Most pages accepted per document.")] = 2000,
    workers: Annotated[
        int, typer.Option("--workers", "-w", help="Parse and embed processes per upload (0: on the ingest thread).")
    ] = 0,
    mcp: Annotated[bool, typer.Option("--mcp/--no-mcp", help="Also serve the MCP endpoint at /mcp.")] = True,
    rate_limit: Annotated[
        int,
        typer.Option("--rate-limit", help="Requests per minute of a key (hyperfolio keys) without its own --rate."),
    ] = 120,
) -> None:
    """Serve the HTTP API, the web app (/) and MCP (/mcp) over the collections under --root."""
    try:
        import uvicorn

        from hyperfolio.server.app import ServerConfig, create_app
    except ImportError as exc:
        fail(f"the service needs its extra: pip install 'hyperfolio[serve]' ({exc.name} is missing)")
    config = ServerConfig(
        root=root or data_home(),
        host=host,
        port=port,
        api_key=api_key,
        cors_origins=list(cors or []),
        max_upload_mb=max_upload_mb,
        max_pages=max_pages,
        workers=workers,
        mcp=mcp,
        rate_limit=rate_limit,
    )
    try:
        service = create_app(config)
    except HyperfolioError as exc:
        fail(str(exc))
    shown = f"[{host}]" if ":" in host else host
    keyed = api_key or not service.state.service.gate.is_open()
    console.print(
        f"hyperfolio serving {config.root} on http://{shown}:{port}/ — API schema /openapi.json"
        + (", MCP /mcp/" if mcp else "")
        + ("" if keyed else " (no key: loopback only)")
    )
    logging.getLogger("uvicorn.access").addFilter(hide_keys)
    uvicorn.run(service, host=host, port=port, log_level=os.environ.get("HYPERFOLIO_LOG", "warning").lower())


def hide_keys(record: logging.LogRecord) -> bool:
    """Access-log filter: the API key a browser sends as `?key=` (event streams cannot send headers)
    never reaches the log."""
    if isinstance(record.args, tuple):
        record.args = tuple(re.sub(r"([?&]key=)[^&\s]*", r"\1***", a) if isinstance(a, str) else a for a in record.args)
    return True


def mcp_stdio(
    root: RootOpt = None,
) -> None:
    """Serve the MCP tools over stdio, for an agent host to start (list, add, ask, retrieve, page, draw)."""
    try:
        from hyperfolio.server.mcp import run_stdio
    except ImportError as exc:
        fail(f"the MCP server needs its extra: pip install 'hyperfolio[serve]' ({exc.name} is missing)")
    run_stdio(root or data_home())
