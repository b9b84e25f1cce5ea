"""A service for a team: scoped API keys, per-key rate limits and the audit log.

One service on loopback serves two collections, `alpha` and `beta`, each holding one small document; keys
are made in its key store (`<root>/.service/keys.sqlite`) as `hyperfolio keys create` makes them, and every
surface is asked with them: the HTTP API, the OpenAI- and Ollama-compatible endpoints and MCP. Services
over a root of their own check what holds without keys.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("fastapi", reason="pip install -e '.[serve]' installs the service")

import httpx2  # noqa: E402  (the MCP SDK's HTTP client)
from fastapi.testclient import TestClient  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.types import CallToolResult, TextContent  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from hyperfolio.cli import app as cli  # noqa: E402
from hyperfolio.collection import Collection  # noqa: E402
from hyperfolio.errors import HyperfolioError  # noqa: E402
from hyperfolio.server.access import (  # noqa: E402
    ALL,
    LOCAL,
    Operation,
    Principal,
    RateLimiter,
    decide,
    operation,
)
from hyperfolio.server.app import ServerConfig, create_app  # noqa: E402
from hyperfolio.server.keys import KEYS_FILE, SERVICE_DIR, KeyStore  # noqa: E402
from hyperfolio.server.library import Library  # noqa: E402

PROBLEM = "application/problem+json"
ALPHA = "# Alpha turbines\n\nThe alpha turbine fleet produced 42 gigawatt hours of electricity in 2024.\n"
BETA = "# Beta vaults\n\nThe beta ledger lists 17 vaults under the northern harbour.\n"
ASK = {"question": "How much electricity did the alpha turbine fleet produce?", "mode": "bm25"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def root(tmp_path_factory, embedder) -> Path:  # noqa: ANN001 - the session's embedder
    made = tmp_path_factory.mktemp("team")
    for name, text in (("alpha", ALPHA), ("beta", BETA)):
        source = made / f"{name}.md"
        source.write_text(text)
        with Collection(made / "root" / name, embedder=embedder) as col:
            assert col.add([source]).results[0].ok
    return made / "root"


@pytest.fixture(scope="module")
def store(root) -> Iterator[KeyStore]:  # noqa: ANN001
    made = KeyStore(root)  # a connection of its own, as the CLI's is: the service reads what it writes
    yield made
    made.close()


@pytest.fixture(scope="module")
def url(root, store, serve_app) -> Iterator[str]:  # noqa: ANN001
    store.create("first", "read", ["alpha"])  # keys exist before the service starts: it asks for them
    with serve_app(create_app(ServerConfig(root=root, api_key="service-key-77", warm=False))) as base:
        yield base


@pytest.fixture(scope="module")
def api(url) -> Iterator[httpx.Client]:  # noqa: ANN001
    with httpx.Client(base_url=url, timeout=60) as client:
        yield client


def new_key(store: KeyStore, scope: str, collections: list[str] | None = None, rate: int | None = None) -> str:
    return store.create(f"{scope}-{'-'.join(collections or ['all'])}", scope, collections, rate)[1]


def doc_of(api: httpx.Client, token: str, collection: str) -> str:
    docs = api.get(f"/api/collections/{collection}/documents", headers=bearer(token))
    assert docs.status_code == 200, docs.text
    return docs.json()[0]["doc_id"]


def refused(response: httpx.Response, status: int, *words: str) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith(PROBLEM)
    body = response.json()
    assert body["status"] == status and all(w in body["detail"] for w in words), body
    return body


# ---------------------------------------------------------------------- scopes
def test_a_read_key_reads_but_cannot_upload_remove_or_create(api, store):
    reader = new_key(store, "read")
    doc = doc_of(api, reader, "alpha")
    assert api.post("/api/collections/alpha/ask", json=ASK, headers=bearer(reader)).status_code == 200
    assert api.get(f"/api/collections/alpha/documents/{doc}/pages", headers=bearer(reader)).status_code == 200
    files = [("files", ("notes.md", b"# Notes\n\nAnything at all.\n"))]
    refused(api.post("/api/collections/alpha/documents", files=files, headers=bearer(reader)), 403, "'write'")
    refused(api.delete(f"/api/collections/alpha/documents/{doc}", headers=bearer(reader)), 403, "'write'")
    refused(api.post("/api/collections", json={"name": "gamma"}, headers=bearer(reader)), 403, "'write'")
    refused(api.get("/api/audit", headers=bearer(reader)), 403, "'admin'")
    assert doc_of(api, reader, "alpha") == doc  # nothing was removed
    assert Library(store.path.parents[1]).names() == ["alpha", "beta"]  # nothing was made


def test_a_write_key_limited_to_alpha_creates_only_alpha(api, store):
    writer = new_key(store, "write", ["alpha"])
    made = api.post("/api/collections", json={"name": "alpha"}, headers=bearer(writer))
    assert made.status_code == 200 and made.json() == {"name": "alpha", "created": False}
    refused(api.post("/api/collections", json={"name": "gamma"}, headers=bearer(writer)), 403, "'gamma'")


def test_a_key_for_alpha_does_not_see_beta_over_http(api, store):
    alpha_only = bearer(new_key(store, "read", ["alpha"]))
    everyone = bearer(new_key(store, "read"))
    beta_doc = doc_of(api, everyone["Authorization"][7:], "beta")
    listed = api.get("/api/collections", headers=alpha_only).json()
    assert [c["name"] for c in listed] == ["alpha"]
    assert [c["name"] for c in api.get("/api/collections", headers=everyone).json()] == ["alpha", "beta"]
    refused(api.get("/api/collections/beta/documents", headers=alpha_only), 403, "'beta'")
    refused(api.post("/api/collections/beta/ask", json=ASK, headers=alpha_only), 403, "'beta'")
    refused(api.get(f"/api/collections/beta/documents/{beta_doc}/pages", headers=alpha_only), 403, "'beta'")
    refused(api.get("/api/collections/beta/stats", headers=alpha_only), 403, "'beta'")
    assert api.get("/api/ready", headers=alpha_only).json()["collections"] == 1


def test_a_key_for_alpha_does_not_see_beta_as_a_chat_model(api, store):
    alpha_only = bearer(new_key(store, "read", ["alpha"]))
    models = api.get("/v1/models", headers=alpha_only).json()
    assert [m["id"] for m in models["data"]] == ["hyperfolio/alpha"]
    tags = api.get("/api/tags", headers=alpha_only).json()
    assert [m["name"] for m in tags["models"]] == ["hyperfolio/alpha:latest"]
    question = [{"role": "user", "content": "How many vaults does the beta ledger list?"}]
    for model in ("hyperfolio/beta", "hyperfolio/nowhere"):  # a hidden collection reads as one that is not
        chat = api.post("/v1/chat/completions", json={"model": model, "messages": question}, headers=alpha_only)
        assert chat.status_code == 404 and chat.json()["error"]["code"] == "model_not_found", chat.text
        one = api.get(f"/v1/models/{model}", headers=alpha_only)
        assert one.status_code == 404 and one.json()["error"]["code"] == "model_not_found"
        ollama = api.post("/api/chat", json={"model": model, "messages": question, "stream": False}, headers=alpha_only)
        assert ollama.status_code == 404 and set(ollama.json()) == {"error"}, ollama.text
    hidden = api.post(
        "/v1/chat/completions", json={"model": "hyperfolio/beta", "messages": question}, headers=alpha_only
    )
    assert "beta" in hidden.json()["error"]["message"] and "17" not in hidden.text
    asked = [{"role": "user", "content": ASK["question"]}]
    answer = api.post(
        "/v1/chat/completions", json={"model": "hyperfolio/alpha:bm25", "messages": asked}, headers=alpha_only
    )
    assert answer.status_code == 200 and "42" in answer.json()["choices"][0]["message"]["content"]


def test_refusals_come_in_each_surface_s_shape(api, store):
    reader = bearer(new_key(store, "read", ["alpha"]))
    openai = api.get("/v1/models", headers=bearer("hfk_00000000_" + "x" * 43))
    assert openai.status_code == 401 and openai.json()["error"]["code"] == "invalid_api_key"
    assert openai.headers["www-authenticate"] == "Bearer"
    ollama = api.get("/api/tags")
    assert ollama.status_code == 401 and set(ollama.json()) == {"error"} and "API key" in ollama.json()["error"]
    refused(api.get("/api/collections"), 401, "API key")
    refused(api.get("/api/keys", headers=reader), 403, "'admin'")
    assert api.get("/api/health").status_code == 200  # the probe needs no key
    assert api.get("/").status_code == 200  # nor the web app's page, which asks for the key itself


# ---------------------------------------------------------------------- MCP
async def mcp_calls(url: str, token: str, calls: list[tuple[str, dict[str, Any]]]) -> list[CallToolResult]:
    with anyio.fail_after(60):
        async with (
            httpx2.AsyncClient(headers=bearer(token), timeout=60) as http,
            streamable_http_client(f"{url}/mcp/", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return [await session.call_tool(name, arguments) for name, arguments in calls]


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def test_mcp_tools_go_through_the_same_rule(url, store, tmp_path):
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nA note.\n")
    token = new_key(store, "read", ["alpha", "ghost"])
    listed, beta, alpha, adding, ghost, page = anyio.run(
        mcp_calls,
        url,
        token,
        [
            ("list_collections", {}),
            ("ask", {"question": "How many vaults?", "collection": "beta", "mode": "bm25"}),
            ("ask", {**ASK, "collection": "alpha"}),
            ("add_document", {"path": str(note), "collection": "alpha"}),
            ("list_documents", {"collection": "ghost"}),
            ("get_page", {"doc": "anything", "page": 1, "collection": "beta"}),
        ],
    )
    assert [row["name"] for row in listed.structured_content["collections"]] == ["alpha"]
    assert beta.is_error and "may not use collection 'beta'" in text_of(beta) and "17" not in text_of(beta)
    assert not alpha.is_error and "42" in alpha.structured_content["answer"]
    assert adding.is_error and "'write'" in text_of(adding)
    assert ghost.is_error and "(collections: alpha)" in text_of(ghost) and "beta" not in text_of(ghost)
    assert page.is_error and "may not use collection 'beta'" in text_of(page)


def test_mcp_without_a_key_is_refused_with_401(url):
    hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    response = httpx.post(f"{url}/mcp/", json=hello)
    refused(response, 401, "API key")


# ---------------------------------------------------------------------- revocation, rate limits, the store
def test_a_revoked_key_is_refused_on_its_very_next_request(api, store):
    token = new_key(store, "read")
    key_id = token.split("_")[1]
    assert api.get("/api/collections", headers=bearer(token)).status_code == 200
    result = CliRunner().invoke(cli, ["keys", "revoke", key_id, "--root", str(store.path.parents[1])])
    assert result.exit_code == 0 and f"revoked key {key_id}" in result.output, result.output
    refused(api.get("/api/collections", headers=bearer(token)), 401, "unknown or revoked")
    second = new_key(store, "read")  # revoked over HTTP by an admin key: the service's own --api-key is one
    assert api.get("/v1/models", headers=bearer(second)).status_code == 200
    gone = api.delete(f"/api/keys/{second.split('_')[1]}", headers=bearer("service-key-77"))
    assert gone.status_code == 200 and gone.json()["revoked"], gone.text
    assert api.get("/v1/models", headers=bearer(second)).status_code == 401
    refused(api.delete("/api/keys/ffffffff", headers=bearer("service-key-77")), 404, "no key")


def test_over_its_rate_a_key_gets_429_with_retry_after(api, store):
    token = new_key(store, "read", rate=3)
    statuses = [api.get("/api/collections", headers=bearer(token)).status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    limited = refused(api.get("/api/collections", headers=bearer(token)), 429, "3 requests a minute")
    retry = api.get("/v1/models", headers=bearer(token))
    assert retry.status_code == 429 and retry.json()["error"]["code"] == "rate_limit_exceeded"
    assert 1 <= int(retry.headers["retry-after"]) <= 20 and limited["title"] == "Too many requests"
    other = new_key(store, "read", rate=3)  # a bucket per key: another is not held back
    assert api.get("/api/collections", headers=bearer(other)).status_code == 200
    assert api.get("/api/collections", headers=bearer("service-key-77")).status_code == 200


def test_the_secret_is_stored_only_as_a_hash(root, store):
    key, token = store.create("hashed", "read")
    secret = token.rsplit("_", 1)[1]
    stored = b"".join(p.read_bytes() for p in (root / SERVICE_DIR).iterdir() if p.is_file())
    assert secret.encode() not in stored and token.encode() not in stored
    with sqlite3.connect(root / SERVICE_DIR / KEYS_FILE) as db:
        [(kept,)] = db.execute("SELECT hash FROM keys WHERE id = ?", (key.key_id,)).fetchall()
        columns = [row[1] for row in db.execute("PRAGMA table_info(keys)")]
    assert kept == hashlib.sha256(token.encode()).hexdigest() and "secret" not in columns
    assert store.verify(token) is not None and store.verify(token[:-1] + ("A" if token[-1] != "A" else "B")) is None


def test_the_key_store_is_not_a_collection(api, root):
    assert (root / SERVICE_DIR / KEYS_FILE).is_file()
    assert Library(root).names() == ["alpha", "beta"]
    listed = api.get("/api/collections", headers=bearer("service-key-77")).json()
    assert [c["name"] for c in listed] == ["alpha", "beta"]
    result = CliRunner().invoke(cli, ["collections", "--root", str(root), "--json"])
    assert [c["name"] for c in json.loads(result.output)] == ["alpha", "beta"]


# ---------------------------------------------------------------------- the audit log
def wait_job(api: httpx.Client, headers: dict[str, str], job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while (job := api.get(f"/api/jobs/{job_id}", headers=headers).json())["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    return job


def test_uploads_removals_and_key_changes_are_audited(api, store, root):
    writer_key, writer = store.create("writer-wendy", "write", ["alpha"])
    headers = bearer(writer)
    files = [("files", ("audited.md", b"# Audited\n\nThe audited memo names 9 harbours.\n"))]
    upload = api.post("/api/collections/alpha/documents", files=files, headers=headers)
    assert upload.status_code == 202, upload.text
    job = wait_job(api, headers, upload.json()["job_id"])
    assert job["status"] == "done", job
    refused(api.get(f"/api/jobs/{job['job_id']}", headers=bearer(new_key(store, "read", ["beta"]))), 404)
    [doc] = [r["doc_id"] for r in job["results"] if r.get("doc_id")]
    assert api.delete(f"/api/collections/alpha/documents/{doc}", headers=headers).status_code == 200
    made = CliRunner().invoke(cli, ["keys", "create", "--name", "bob", "--scope", "admin", "--root", str(root)])
    assert made.exit_code == 0, made.output
    bob = made.output.strip().splitlines()[-1]
    assert bob.startswith("hfk_") and KeyStore(root).verify(bob) is not None
    assert CliRunner().invoke(cli, ["keys", "revoke", bob.split("_")[1], "--root", str(root)]).exit_code == 0
    rows = api.get("/api/audit", params={"limit": 200}, headers=bearer("service-key-77")).json()
    mine = [r for r in rows if r["key_id"] == writer_key.key_id]
    assert [r["action"] for r in mine] == ["remove_document", "upload"]  # newest first
    assert mine[0]["document"] == doc and mine[0]["collection"] == "alpha" and mine[0]["key_name"] == "writer-wendy"
    assert "audited.md" in mine[1]["detail"] and mine[1]["at"].endswith("Z")
    changes = [(r["action"], r["document"]) for r in rows if r["action"] in ("create_key", "revoke_key")]
    assert changes[:2] == [("revoke_key", bob.split("_")[1]), ("create_key", bob.split("_")[1])]
    assert ("create_key", writer_key.key_id) in changes
    listed = CliRunner().invoke(cli, ["keys", "audit", "--limit", "3", "--json", "--root", str(root)])
    assert [r["action"] for r in json.loads(listed.output)][:1] == ["revoke_key"]
    limited_admin = bearer(new_key(store, "admin", ["alpha"]))
    refused(api.get("/api/audit", headers=limited_admin), 403, "needs all")


def test_keys_list_never_shows_a_secret(root):
    made = CliRunner().invoke(
        cli, ["keys", "create", "-n", "carol", "-s", "write", "-c", "beta", "--rate", "30", "--root", str(root)]
    )
    token = made.output.strip().splitlines()[-1]
    listed = CliRunner().invoke(cli, ["keys", "list", "--json", "--root", str(root)])
    carol = next(k for k in json.loads(listed.output) if k["name"] == "carol")
    assert carol == carol | {"scope": "write", "collections": ["beta"], "rate": 30, "revoked": None}
    assert token.rsplit("_", 1)[1] not in listed.output
    wrong = CliRunner().invoke(cli, ["keys", "create", "-n", "dave", "-s", "owner", "--root", str(root)])
    assert wrong.exit_code == 1 and "use one of read, write, admin" in wrong.output


# ---------------------------------------------------------------------- without keys, as before
def test_loopback_without_keys_is_open_as_before(tmp_path):
    with TestClient(create_app(ServerConfig(root=tmp_path, mcp=False, warm=False))) as client:
        assert client.get("/api/collections").json() == []
        assert client.post("/api/collections", json={"name": "mine"}).status_code == 201
        assert client.get("/v1/models").status_code == 200
        [row] = client.get("/api/audit").json()
        assert (row["key_id"], row["key_name"], row["action"], row["collection"]) == (
            "",
            "local",
            "create_collection",
            "mine",
        )
        assert [c["name"] for c in client.get("/api/collections").json()] == ["mine"]
        KeyStore(tmp_path).create("first", "read")  # from now on, a key is needed, loopback too
        refused(client.get("/api/collections"), 401, "needs an API key")


def test_beyond_loopback_the_service_starts_with_keys_in_its_store(tmp_path):
    wide = ServerConfig(root=tmp_path, host="0.0.0.0")
    with pytest.raises(HyperfolioError, match="keys create"):
        wide.check()
    store = KeyStore(tmp_path)
    key, _ = store.create("first", "read")
    wide.check()
    store.revoke(key.key_id)
    store.close()
    wide.check()  # revoking the last key does not open the service: it still asks for a key, which none is
    with TestClient(create_app(ServerConfig(root=tmp_path, mcp=False, warm=False))) as client:
        refused(client.get("/api/collections"), 401, "needs an API key")


# ---------------------------------------------------------------------- the rule itself
def test_operations_and_the_rule():
    assert operation("GET", "/api/health") is None and operation("GET", "/") is None
    assert operation("GET", "/api/collections/a/documents") == Operation("read", "a")
    assert operation("POST", "/api/collections/a/documents") == Operation("write", "a")
    assert operation("DELETE", "/api/collections/a/documents/d") == Operation("write", "a")
    assert operation("POST", "/api/collections/a/ask/stream") == Operation("read", "a")
    assert operation("POST", "/api/collections/a/conversations/c/ask") == Operation("read", "a")
    assert operation("POST", "/api/collections") == Operation("write", None)
    assert operation("GET", "/api/audit") == operation("DELETE", "/api/keys/k") == Operation("admin", ALL)
    assert operation("POST", "/v1/chat/completions") == operation("POST", "/mcp/") == Operation("read", None)
    reader = Principal("k1", "r", "read", frozenset({"a"}))
    writer = Principal("k2", "w", "write", None)
    assert decide(reader, "read", "a") is None and decide(reader, "read", None) is None
    assert decide(reader, "read", "b").status == 403 and decide(reader, "write", "a").status == 403
    assert decide(writer, "write", "b") is None and decide(writer, "admin", ALL).status == 403
    assert decide(LOCAL, "admin", ALL) is None


def test_the_bucket_refills_with_time():
    now = [0.0]
    limiter = RateLimiter(clock=lambda: now[0])
    assert [limiter.take("k", 2) for _ in range(3)] == [0, 0, 30]
    now[0] = 29.0
    assert limiter.take("k", 2) == 1
    now[0] = 30.0
    assert limiter.take("k", 2) == 0 and limiter.take("other", 2) == 0


def test_a_conversation_belongs_to_the_key_that_made_it(api, store):
    mine, theirs = bearer(new_key(store, "read", ["alpha"])), bearer(new_key(store, "read", ["alpha"]))
    threads = "/api/collections/alpha/conversations"
    made = api.post(threads, headers=mine)
    assert made.status_code == 201, made.text
    thread = made.json()["id"]
    asked = api.post(f"{threads}/{thread}/ask", json=ASK, headers=mine)
    assert asked.status_code == 200 and asked.json()["turn"] == 1
    assert [t["id"] for t in api.get(threads, headers=mine).json()] == [thread]
    assert api.get(threads, headers=theirs).json() == []  # another key lists none of it
    refused(api.get(f"{threads}/{thread}", headers=theirs), 404, "no conversation")
    refused(api.post(f"{threads}/{thread}/ask", json=ASK, headers=theirs), 404, "no conversation")
    refused(api.delete(f"{threads}/{thread}", headers=theirs), 404, "no conversation")
    assert len(api.get(f"{threads}/{thread}", headers=mine).json()["turns"]) == 1  # still there, still one turn


def test_a_write_key_for_one_collection_may_not_add_a_server_path_over_mcp(url, store, tmp_path):
    """`add_document` reads any path the service's user can: a key scoped to one collection would read
    another's kept sources, or anything else on the machine, through it."""
    note = tmp_path / "elsewhere.md"
    note.write_text("# Elsewhere\n\nA file outside every collection.\n")
    (adding,) = anyio.run(
        mcp_calls,
        url,
        new_key(store, "write", ["alpha"]),
        [("add_document", {"path": str(note), "collection": "alpha"})],
    )
    assert adding.is_error and "'admin'" in text_of(adding)


def test_the_gate_reads_the_route_path_under_a_prefix(root, store):
    """Served under --root-path (or mounted), paths carry a prefix: the rule must still guard them."""
    store.create("prefix-test", "read", ["alpha"])
    app = create_app(ServerConfig(root=root, warm=False, mcp=False))
    with TestClient(app, root_path="/hf") as client:
        assert client.get("/hf/api/keys").status_code == 401
        assert client.get("/hf/api/audit").status_code == 401
        assert client.get("/hf/api/health").status_code == 200


def test_two_processes_revoking_one_key_log_one_revocation(tmp_path, monkeypatch):
    cli_side, service_side = KeyStore(tmp_path), KeyStore(tmp_path)  # two connections, as CLI and service
    key, _ = cli_side.create("shared", "read")
    stale = service_side.get(key.key_id)  # the service read the key just before the CLI revoked it
    first = cli_side.revoke(key.key_id)
    monkeypatch.setattr(service_side, "get", lambda key_id: stale)
    second = service_side.revoke(key.key_id)
    assert second.revoked == first.revoked is not None  # the revocation that happened, not a second one
    assert [e.action for e in cli_side.audit()].count("revoke_key") == 1
    cli_side.close()
    service_side.close()
