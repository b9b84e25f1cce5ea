"""The MCP server as agents reach it: over stdio (a spawned process) and mounted at `/mcp` in the service.

Both go through the SDK's own client, so a change in the SDK's wire format or in how the tools
are declared shows up here rather than in an agent.
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, ImageContent, TextContent

from hyperfolio.sample import SAMPLE_QUESTION, SAMPLE_TITLE, write_sample_report

TOOLS = {"list_collections", "list_documents", "add_document", "ask", "retrieve", "get_page", "draw_hypergraph"}
PNG = b"\x89PNG\r\n\x1a\n"
SECRET = "Wq3-juniper-Keystone-8812"  # distinctive, so finding it anywhere means it leaked
LOCKED_PAGES = [
    "# Harbour Survey\nThis survey describes the port of Lindqvist and its approaches.",
    "# Cranes\nThe Lindqvist terminal runs 23 gantry cranes along its northern quay.",
]


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


async def stdio_session_calls(root: Path, pdf: Path, locked: Path, errlog: Any) -> dict[str, Any]:
    """One server process, every call the tests look at; their results by name."""
    code = f"from hyperfolio.server.mcp import run_stdio; run_stdio({str(root)!r})"
    params = StdioServerParameters(command=sys.executable, args=["-c", code])
    out: dict[str, Any] = {}
    with anyio.fail_after(120):
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            out["hello"] = await session.initialize()
            out["tools"] = (await session.list_tools()).tools
            out["add"] = await session.call_tool("add_document", {"path": str(pdf)})
            out["documents"] = await session.call_tool("list_documents", {})
            out["ask"] = await session.call_tool("ask", {"question": SAMPLE_QUESTION})
            out["thread"] = await session.call_tool("ask", {"question": SAMPLE_QUESTION, "conversation": "new"})
            thread = (out["thread"].structured_content or {}).get("conversation", "?")
            out["followup"] = await session.call_tool("ask", {"question": "and in 2022?", "conversation": thread})
            out["no_thread"] = await session.call_tool("ask", {"question": "why?", "conversation": "nope"})
            cited = (out["ask"].structured_content or {"citations": [{}]})["citations"][0]
            doc = cited.get("doc_id", "?")
            where = {"doc": doc, "page": cited.get("page", 1), "boxes": [cited["bbox"]] if cited.get("bbox") else None}
            where["quote"] = cited.get("quotes") or None
            out["page"] = await session.call_tool("get_page", where)
            knobs = {"question": SAMPLE_QUESTION, "mode": "concept", "options": {"scoring": "keyword", "concepts": 5}}
            out["knobs"] = await session.call_tool("retrieve", knobs)
            out["bad_knob"] = await session.call_tool("retrieve", {**knobs, "options": {"nope": 1}})
            out["missing"] = await session.call_tool("ask", {"question": "anything", "collection": "nope"})
            out["bad_page"] = await session.call_tool("get_page", {"doc": doc, "page": 99})
            vault = {"path": str(locked), "collection": "vault"}  # its own collection: `default` stays as above
            out["locked"] = await session.call_tool("add_document", vault)
            out["wrong"] = await session.call_tool("add_document", {**vault, "password": "guess"})
            out["unlocked"] = await session.call_tool("add_document", {**vault, "password": SECRET})
            question = "How many gantry cranes does the Lindqvist terminal run?"
            out["ask_unlocked"] = await session.call_tool("ask", {"question": question, "collection": "vault"})
    return out


@pytest.fixture(scope="module")
def calls(tmp_path_factory, encrypted_pdf) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("mcp")
    pdf = write_sample_report(base / "report.pdf")
    locked = encrypted_pdf(base / "survey.pdf", LOCKED_PAGES, SECRET)
    log = base / "server.log"
    with log.open("w") as errlog:
        try:
            out = anyio.run(stdio_session_calls, base / "root", pdf, locked, errlog)
        except BaseException:
            print(log.read_text(), file=sys.stderr)  # the server's own account, for the failure report
            raise
    out["base"] = base
    return out


def test_says_its_name_and_the_installed_version(calls):
    from importlib.metadata import version

    info = calls["hello"].server_info
    assert info.name == "hyperfolio"
    assert info.version and info.version == version("hyperfolio")


def test_lists_the_tools(calls):
    tools = {tool.name: tool for tool in calls["tools"]}
    assert set(tools) >= TOOLS
    assert all(tools[name].description for name in TOOLS)
    assert tools["ask"].input_schema["required"] == ["question"]


def test_add_document_reports_pages_and_chunks(calls):
    added = calls["add"]
    assert not added.is_error, text_of(added)
    [row] = added.structured_content["files"]
    assert row["status"] == "added" and row["pages"] == 4 and row["chunks"] > 0
    assert "added" in text_of(added)
    [doc] = calls["documents"].structured_content["documents"]
    assert doc["title"] == SAMPLE_TITLE and doc["status"] == "ready"


def test_ask_answers_with_a_cited_page(calls):
    asked = calls["ask"]
    assert not asked.is_error, text_of(asked)
    data = asked.structured_content
    assert "North Sea" in data["answer"]
    first = data["citations"][0]
    assert first["title"] == SAMPLE_TITLE and first["page"] == 2
    text = text_of(asked)
    assert "[1] " + SAMPLE_TITLE in text and "page 2" in text and first["doc_id"] in text


def test_ask_continues_a_conversation(calls):
    thread = calls["thread"].structured_content
    assert thread["conversation"] and thread["short"] == "North Sea"
    assert f"Conversation: {thread['conversation']}" in text_of(calls["thread"])
    followup = calls["followup"].structured_content
    assert followup["question"] == "Which region had the highest installed capacity in 2022?"
    assert followup["conversation"] == thread["conversation"]
    assert text_of(calls["followup"]).startswith("(Read as: Which region had the highest installed capacity in 2022?)")
    assert calls["no_thread"].is_error and "no conversation 'nope'" in text_of(calls["no_thread"])


def test_retrieve_takes_the_mode_s_knobs_as_every_face_does(calls):
    assert not calls["knobs"].is_error, text_of(calls["knobs"])
    assert calls["knobs"].structured_content["strategy"] == "concept"
    assert calls["bad_knob"].is_error and "unknown setting 'nope'" in text_of(calls["bad_knob"])


def test_get_page_returns_the_picture_and_its_text(calls):
    page = calls["page"]
    assert not page.is_error, text_of(page)
    images = [block for block in page.content if isinstance(block, ImageContent)]
    assert len(images) == 1 and images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data).startswith(PNG)
    assert "North Sea" in text_of(page)


def test_get_page_marks_what_answers_inside_the_cited_box(calls):
    cited = calls["ask"].structured_content["citations"][0]
    assert cited["cells"][:2] == ["North Sea", "1,850"]
    assert 'quote "North Sea" | "1,850"' in text_of(calls["ask"])  # the agent reads what to pass on
    tools = {tool.name: tool for tool in calls["tools"]}
    assert "cells" in tools["get_page"].input_schema["properties"]["quote"]["description"]
    regions = calls["page"].structured_content["regions"]
    assert [r["quote"] for r in regions][:2] == ["North Sea", "1,850"]
    x0, y0, x1, y1 = cited["bbox"]
    for found in regions:
        assert found["found"] == "exact" and found["boxes"]
        assert all(x0 - 1 <= b[0] and b[2] <= x1 + 1 and y0 - 1 <= b[1] and b[3] <= y1 + 1 for b in found["boxes"])
    assert 'Marked "North Sea": [' in text_of(calls["page"])


def test_add_document_opens_an_encrypted_pdf_with_its_password(calls):
    tools = {tool.name: tool for tool in calls["tools"]}
    assert tools["add_document"].input_schema["properties"]["password"]["format"] == "password"
    locked = calls["locked"]
    assert locked.is_error and "password is needed" in text_of(locked) and "password argument" in text_of(locked)
    assert locked.structured_content["files"][0]["status"] == "failed"
    wrong = calls["wrong"]
    assert wrong.is_error and "survey.pdf: failed - wrong password" in text_of(wrong)
    unlocked = calls["unlocked"]
    assert not unlocked.is_error, text_of(unlocked)
    [row] = unlocked.structured_content["files"]
    assert row["status"] == "added" and row["pages"] == 2
    asked = calls["ask_unlocked"].structured_content
    assert "23 gantry cranes" in asked["answer"] and asked["citations"][0]["page"] == 2
    # The password is in no file of the collections, nor in the server's own log.
    for path in [p for p in (calls["base"] / "root").rglob("*") if p.is_file()] + [calls["base"] / "server.log"]:
        assert SECRET.encode() not in path.read_bytes(), f"the password is in {path}"


def test_errors_are_one_clear_line(calls):
    missing = calls["missing"]
    assert missing.is_error
    message = text_of(missing)
    assert "no collection named 'nope'" in message and "default" in message
    assert "Traceback" not in message and "\n" not in message
    bad = calls["bad_page"]
    assert bad.is_error and "there is no page 99" in text_of(bad)


async def list_tools_over_http(url: str) -> set[str]:
    with anyio.fail_after(60):
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return {tool.name for tool in (await session.list_tools()).tools}


def test_mounted_in_the_service_at_mcp(tmp_path, serve_app):
    from hyperfolio.server.app import ServerConfig, create_app

    app = create_app(ServerConfig(root=tmp_path / "root"))
    with serve_app(app) as base:
        for url in (f"{base}/mcp", f"{base}/mcp/", base.replace("127.0.0.1", "localhost") + "/mcp/"):
            assert anyio.run(list_tools_over_http, url) >= TOOLS, url
        # A page from elsewhere naming another host (DNS rebinding) is turned away.
        hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        refused = httpx.post(f"{base}/mcp/", json=hello, headers={"Host": "evil.example"})
        assert refused.status_code == 421


def test_add_line_says_what_the_model_built_and_what_fell_back():
    from hyperfolio.collection import AddResult
    from hyperfolio.server.mcp import _add_line

    built = {"extract": {"model": 3, "offline": 1}, "themes": {"model": 9, "offline": 0}}
    result = AddResult("/x/report.pdf", "added", "d1", "Report", 4, 9, built=built, model_calls=14)
    assert _add_line(result) == (
        "report.pdf: added as d1 'Report', 4 pages, 9 chunks; "
        "model built 3 of 4 extract (1 fell back offline), 9 of 9 themes; 14 model calls"
    )
    offline = AddResult("/x/report.pdf", "added", "d1", "Report", 4, 9)
    assert _add_line(offline) == "report.pdf: added as d1 'Report', 4 pages, 9 chunks"


def test_ask_and_retrieve_share_one_signature_under_their_own_names(tmp_path):
    from hyperfolio.server.library import Library
    from hyperfolio.server.mcp import build_mcp

    library = Library(tmp_path)
    try:
        tools = {tool.name: tool for tool in anyio.run(build_mcp(library).list_tools)}
    finally:
        library.close()
    assert list(tools) == [
        "list_collections",
        "list_documents",
        "add_document",
        "ask",
        "retrieve",
        "get_page",
        "draw_hypergraph",
    ]
    ask, retrieve = tools["ask"], tools["retrieve"]
    shared = ["question", "mode", "k", "doc", "collection", "options"]
    assert list(ask.input_schema["properties"]) == [*shared, "conversation"]  # ask alone continues a thread
    assert list(retrieve.input_schema["properties"]) == shared
    assert {k: ask.input_schema["properties"][k] for k in shared} == retrieve.input_schema["properties"]
    assert (ask.input_schema["title"], retrieve.input_schema["title"]) == ("askArguments", "retrieveArguments")
    assert ask.description.startswith("Answer a question") and "get_page" in ask.description
    assert retrieve.description.startswith("Rank the passages")
    assert ask.annotations.read_only_hint and not tools["add_document"].annotations.read_only_hint
