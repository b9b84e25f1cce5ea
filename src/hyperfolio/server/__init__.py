"""The service face: HTTP API, web app and MCP server over the public `Collection` API."""
