"""The installed package's version, read once from its metadata, for every face that reports it
(`hyperfolio --version`, the service's OpenAPI schema, the MCP server's initialize reply)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def package_version() -> str:
    try:
        return version("hyperfolio")
    except PackageNotFoundError:  # pragma: no cover - imported from a source tree that was never installed
        return "0+unknown"
