"""The HTTP API, endpoint by endpoint, through httpx (FastAPI's TestClient) on a real collection."""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path

import pymupdf
import pytest

pytest.importorskip("fastapi", reason="pip install -e '.[serve]' installs the service")

from fastapi.testclient import TestClient  # noqa: E402
from PIL import Image, ImageStat  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from hyperfolio.cli import app as cli  # noqa: E402
from hyperfolio.collection import Collection  # noqa: E402
from hyperfolio.sample import SAMPLE_QUESTION, write_sample_report  # noqa: E402
from hyperfolio.server.app import ServerConfig, create_app  # noqa: E402

PROBLEM = "application/problem+json"
MODES = ("auto", "bm25", "dense", "hybrid", "dual", "concept", "topdown")


def events_of(client: TestClient, url: str) -> list[dict]:
    """Read a server-sent event stream to its end."""
    found = []
    with client.stream("GET", url) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:"):
                found.append(json.loads(line[5:]))
    return found


def wait_done(client: TestClient, job: dict) -> list[dict]:
    events = events_of(client, job["events"])
    assert events[-1]["type"] == "done", events[-3:]
    return events


def long_pdf(path: Path, pages: int) -> Path:
    doc = pymupdf.open()
    for n in range(pages):
        page = doc.new_page()
        text = f"Chapter {n}. The turbine fleet of site {n} produced {100 + n} gigawatt hours in the year. " * 12
        page.insert_textbox(pymupdf.Rect(50, 50, 550, 800), text, fontsize=10)
    doc.save(path)
    return path


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    return write_sample_report(tmp_path_factory.mktemp("pdf") / "sample-report.pdf")


@pytest.fixture(scope="module")
def client(tmp_path_factory, sample):
    root = tmp_path_factory.mktemp("root")
    app = create_app(ServerConfig(root=root, mcp=False, max_upload_mb=2.0))
    with TestClient(app) as c:
        assert c.post("/api/collections", json={"name": "docs"}).status_code == 201
        upload = c.post("/api/collections/docs/documents", files=[("files", ("Report 2024.pdf", sample.read_bytes()))])
        assert upload.status_code == 202, upload.text
        c.events = wait_done(c, upload.json())
        c.root = root
        yield c


@pytest.fixture(scope="module")
def doc_id(client) -> str:
    docs = client.get("/api/collections/docs/documents").json()
    assert len(docs) == 1
    return docs[0]["doc_id"]


def assert_problem(response, status: int, *words: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body = response.json()
    assert body["status"] == status and body["title"] and body["detail"]
    for word in words:
        assert word in body["detail"], body["detail"]
    return body


# ---------------------------------------------------------------------- service
def test_health_ready_and_schema(client):
    assert client.get("/api/health").json() == {"status": "ok"}
    ready = client.get("/api/ready").json()
    assert ready["status"] == "ready" and ready["collections"] == 1
    schema = client.get("/openapi.json").json()
    paths = set(schema["paths"])
    for path in (
        "/api/collections",
        "/api/collections/{name}/documents",
        "/api/collections/{name}/documents/{doc}",
        "/api/collections/{name}/documents/{doc}/pages",
        "/api/collections/{name}/documents/{doc}/pages/{page}/image",
        "/api/jobs/{job_id}",
        "/api/jobs/{job_id}/events",
        "/api/collections/{name}/ask",
        "/api/collections/{name}/ask/stream",
        "/api/collections/{name}/retrieve",
        "/api/collections/{name}/graph",
        "/api/collections/{name}/conflicts",
        "/api/collections/{name}/stats",
    ):
        assert path in paths, path
    assert client.get("/docs").status_code == 404  # no page that would load scripts from a CDN


def test_operations_keep_their_ids_and_tags(client):
    """The routers are split by tag; clients generated from the schema depend on these names."""
    schema = client.get("/openapi.json").json()
    operations = {
        (method, path): (op["operationId"], op["tags"])
        for path, item in schema["paths"].items()
        for method, op in item.items()
    }
    expected = {
        ("get", "/api/health"): ("health_api_health_get", ["service"]),
        ("get", "/api/ready"): ("ready_api_ready_get", ["service"]),
        ("get", "/api/collections"): ("list_collections_api_collections_get", ["collections"]),
        ("post", "/api/collections"): ("create_collection_api_collections_post", ["collections"]),
        ("get", "/api/collections/{name}/stats"): ("stats_api_collections__name__stats_get", ["collections"]),
        ("get", "/api/collections/{name}/conflicts"): (
            "conflicts_api_collections__name__conflicts_get",
            ["collections"],
        ),
        ("get", "/api/collections/{name}/documents"): (
            "list_documents_api_collections__name__documents_get",
            ["documents"],
        ),
        ("post", "/api/collections/{name}/documents"): ("upload_api_collections__name__documents_post", ["documents"]),
        ("get", "/api/collections/{name}/documents/{doc}"): (
            "get_document_api_collections__name__documents__doc__get",
            ["documents"],
        ),
        ("delete", "/api/collections/{name}/documents/{doc}"): (
            "delete_document_api_collections__name__documents__doc__delete",
            ["documents"],
        ),
        ("get", "/api/collections/{name}/documents/{doc}/pages"): (
            "pages_api_collections__name__documents__doc__pages_get",
            ["documents"],
        ),
        ("get", "/api/collections/{name}/documents/{doc}/pages/{page}/image"): (
            "page_image_api_collections__name__documents__doc__pages__page__image_get",
            ["documents"],
        ),
        ("get", "/api/collections/{name}/documents/{doc}/pages/{page}/regions"): (
            "page_regions_api_collections__name__documents__doc__pages__page__regions_get",
            ["documents"],
        ),
        ("get", "/api/collections/{name}/jobs"): ("list_jobs_api_collections__name__jobs_get", ["ingestion"]),
        ("get", "/api/jobs/{job_id}"): ("get_job_api_jobs__job_id__get", ["ingestion"]),
        ("get", "/api/jobs/{job_id}/events"): ("job_events_api_jobs__job_id__events_get", ["ingestion"]),
        ("post", "/api/collections/{name}/ask"): ("ask_api_collections__name__ask_post", ["questions"]),
        ("post", "/api/collections/{name}/ask/stream"): (
            "ask_stream_api_collections__name__ask_stream_post",
            ["questions"],
        ),
        ("post", "/api/collections/{name}/retrieve"): ("retrieve_api_collections__name__retrieve_post", ["questions"]),
        ("post", "/api/collections/{name}/conversations"): (
            "create_api_collections__name__conversations_post",
            ["conversations"],
        ),
        ("get", "/api/collections/{name}/conversations"): (
            "list_conversations_api_collections__name__conversations_get",
            ["conversations"],
        ),
        ("get", "/api/collections/{name}/conversations/{conversation}"): (
            "get_api_collections__name__conversations__conversation__get",
            ["conversations"],
        ),
        ("delete", "/api/collections/{name}/conversations/{conversation}"): (
            "delete_api_collections__name__conversations__conversation__delete",
            ["conversations"],
        ),
        ("post", "/api/collections/{name}/conversations/{conversation}/ask"): (
            "ask_api_collections__name__conversations__conversation__ask_post",
            ["conversations"],
        ),
        ("post", "/api/collections/{name}/conversations/{conversation}/ask/stream"): (
            "ask_stream_api_collections__name__conversations__conversation__ask_stream_post",
            ["conversations"],
        ),
        ("get", "/api/collections/{name}/graph"): ("graph_api_collections__name__graph_get", ["pictures"]),
        ("get", "/api/keys"): ("list_keys_api_keys_get", ["access"]),
        ("delete", "/api/keys/{key_id}"): ("revoke_key_api_keys__key_id__delete", ["access"]),
        ("get", "/api/audit"): ("audit_api_audit_get", ["access"]),
        ("get", "/v1/models"): ("list_models_v1_models_get", ["openai-compatible"]),
        ("get", "/v1/models/{model}"): ("get_model_v1_models__model__get", ["openai-compatible"]),
        ("post", "/v1/chat/completions"): ("chat_completions_v1_chat_completions_post", ["openai-compatible"]),
        ("get", "/api/version"): ("version_api_version_get", ["ollama-compatible"]),
        ("get", "/api/tags"): ("tags_api_tags_get", ["ollama-compatible"]),
        ("post", "/api/show"): ("show_api_show_post", ["ollama-compatible"]),
        ("post", "/api/chat"): ("chat_api_chat_post", ["ollama-compatible"]),
    }
    assert operations == expected
    assert list(operations) == list(expected)  # the schema's order: service, collections, ..., pictures, chat
    job = schema["paths"]["/api/jobs/{job_id}"]["get"]
    assert [(p["name"], p["in"], p["required"]) for p in job["parameters"]] == [("job_id", "path", True)]


# ---------------------------------------------------------------------- collections
def test_collections(client):
    names = [c["name"] for c in client.get("/api/collections").json()]
    assert names == ["docs"]
    made = client.post("/api/collections", json={"name": "other"})
    assert made.status_code == 201 and made.json()["created"] is True
    again = client.post("/api/collections", json={"name": "other"})
    assert again.status_code == 200 and again.json()["created"] is False
    assert_problem(client.post("/api/collections", json={"name": "../etc"}), 422, "name")
    assert_problem(client.get("/api/collections/missing/documents"), 404, "missing")
    assert_problem(client.get("/api/collections/..%2F..%2Fetc/documents"), 404)
    assert not (client.root.parent / "etc").exists()


# ---------------------------------------------------------------------- ingestion
def test_upload_progress_events(client):
    kinds = [e["type"] for e in client.events]
    assert kinds[0] == "queued" and kinds[1] == "started" and kinds[2] == "planned"
    assert kinds[-2:] == ["file", "done"]
    if "preparing" in kinds:  # the models loading: before any file's progress, naming no file
        assert kinds.index("preparing") < kinds.index("progress")
    progress = [e for e in client.events if e["type"] == "progress"]
    stages = {e["stage"] for e in progress}
    assert {"parsing", "embedding"} <= stages
    assert progress[-1]["pages_done"] == progress[-1]["pages_total"] == 4
    assert all(e["file"] == "Report 2024.pdf" for e in progress)
    result = client.events[-2]
    assert result["status"] == "added" and result["pages"] == 4 and result["name"] == "Report 2024.pdf"
    assert "path" not in result  # the server's own paths stay on the server
    done = client.events[-1]
    assert done["status"] == "done" and done["pages"] == 4 and done["pages_per_second"] > 0
    seqs = [e["seq"] for e in client.events]
    assert seqs == list(range(1, len(seqs) + 1))


def test_job_summary_and_resume_from_last_event(client):
    jobs = client.get("/api/collections/docs/jobs").json()
    assert jobs and jobs[0]["status"] == "done" and jobs[0]["pages_done"] == 4
    job_id = jobs[0]["job_id"]
    assert client.get(f"/api/jobs/{job_id}").json()["results"][0]["status"] == "added"
    later = []
    with client.stream("GET", f"/api/jobs/{job_id}/events", headers={"Last-Event-ID": "5"}) as stream:
        later = [json.loads(line[5:]) for line in stream.iter_lines() if line.startswith("data:")]
    assert later[0]["seq"] == 6 and later[-1]["type"] == "done"
    assert_problem(client.get("/api/jobs/nope"), 404, "nope")


@pytest.mark.parametrize(
    ("name", "data", "status", "words"),
    [
        ("broken.pdf", b"%PDF-1.4 this is not really a pdf", 422, ["not a valid PDF"]),
        ("truncated.pdf", None, 422, ["truncated"]),
        ("picture.gif", b"GIF89a0000", 415, ["unsupported file type", ".gif"]),
        ("notes.txt", b"\x00\x01\x02binary", 422, ["binary"]),
        ("empty.md", b"", 422, ["empty"]),
        ("huge.txt", b"a" * (2 * 1024 * 1024 + 10), 413, ["upload limit"]),
    ],
)
def test_bad_uploads_are_refused_and_nothing_is_lost(client, doc_id, sample, name, data, status, words):
    if data is None:
        data = sample.read_bytes()[:3000]
    before = client.get("/api/collections/docs/documents").json()
    response = client.post("/api/collections/docs/documents", files=[("files", (name, data))])
    body = assert_problem(response, status, name, *words)
    assert body["rejected"][0]["name"] == name
    assert client.get("/api/collections/docs/documents").json() == before
    assert client.post("/api/collections/docs/ask", json={"question": SAMPLE_QUESTION}).json()["citations"]


def test_good_and_bad_files_in_one_upload(client, sample):
    files = [("files", ("again.pdf", sample.read_bytes())), ("files", ("junk.pdf", b"junk"))]
    response = client.post("/api/collections/docs/documents", files=files)
    assert response.status_code == 202
    body = response.json()
    assert [f["name"] for f in body["files"]] == ["again.pdf"]
    assert body["rejected"][0]["name"] == "junk.pdf" and "PDF" in body["rejected"][0]["reason"]
    events = wait_done(client, body)
    assert events[-2]["status"] == "skipped"  # same content as the indexed report
    assert len(client.get("/api/collections/docs/documents").json()) == 1
    assert [p.name for p in (client.root / "docs" / "uploads").rglob("*.pdf")] == ["Report 2024.pdf"]


def test_uploads_left_unfinished_are_indexed_at_start_up(tmp_path):
    stored = tmp_path / "docs" / "uploads" / "0123abcd" / "notes.md"  # as a stopped service left it
    stored.parent.mkdir(parents=True)
    stored.write_text("# Notes\n\nThe Baltic wind farm produced 97 gigawatt hours in 2024.\n")
    Collection(tmp_path / "docs").close()  # the collection exists; the upload never got indexed
    with TestClient(create_app(ServerConfig(root=tmp_path, mcp=False))) as c:
        for _ in range(200):
            jobs = c.get("/api/collections/docs/jobs").json()
            if jobs and jobs[0]["status"] == "done":
                break
            time.sleep(0.05)
        assert jobs[0]["results"][0]["status"] == "added" and jobs[0]["results"][0]["name"] == "notes.md"
        assert c.get("/api/ready").json()["status"] == "ready"
        docs = c.get("/api/collections/docs/documents").json()
        assert [d["status"] for d in docs] == ["ready"]
    with TestClient(create_app(ServerConfig(root=tmp_path, mcp=False))) as c:  # nothing left to resume
        while c.get("/api/ready").status_code == 503:  # start-up (warming, resuming) still running
            time.sleep(0.05)
        assert c.get("/api/collections/docs/jobs").json() == []


def test_page_limit(tmp_path, sample):
    app = create_app(ServerConfig(root=tmp_path, mcp=False, max_pages=3))
    with TestClient(app) as c:
        c.post("/api/collections", json={"name": "small"})
        response = c.post("/api/collections/small/documents", files=[("files", ("r.pdf", sample.read_bytes()))])
        assert_problem(response, 413, "4 pages", "limit is 3")
        assert not (tmp_path / "small" / "uploads").exists() or not any((tmp_path / "small" / "uploads").iterdir())


def test_uploaded_names_never_become_paths(client, tmp_path):
    evil = "../../../../tmp/evil name.md"
    response = client.post("/api/collections/docs/documents", files=[("files", (evil, b"# Evil\n\nText."))])
    assert response.status_code == 202
    events = wait_done(client, response.json())
    assert events[-2]["name"] == "evil name.md" and events[-2]["status"] == "added"
    stored = list((client.root / "docs" / "uploads").rglob("*.md"))
    assert [p.name for p in stored] == ["evil name.md"]
    assert stored[0].resolve().is_relative_to((client.root / "docs" / "uploads").resolve())
    doc = next(d for d in client.get("/api/collections/docs/documents").json() if d["kind"] == "markdown")
    assert "source" not in doc
    removed = client.delete(f"/api/collections/docs/documents/{doc['doc_id']}")
    assert removed.status_code == 200 and removed.json()["removed"] is True
    assert not list((client.root / "docs" / "uploads").rglob("*.md"))
    assert_problem(client.get(f"/api/collections/docs/documents/{doc['doc_id']}"), 404)


def test_questions_keep_working_while_an_ingest_runs(client, tmp_path):
    pdf = long_pdf(tmp_path / "long.pdf", 40)
    job = client.post("/api/collections/docs/documents", files=[("files", ("long.pdf", pdf.read_bytes()))]).json()
    answered_during = []
    for _ in range(20):
        answer = client.post("/api/collections/docs/ask", json={"question": SAMPLE_QUESTION, "mode": "hybrid"})
        assert answer.status_code == 200 and answer.json()["citations"]
        if client.get(f"/api/jobs/{job['job_id']}").json()["status"] in ("queued", "running"):
            answered_during.append(answer)
    assert answered_during, "the ingest ended before any question was asked"
    wait_done(client, job)
    long_doc = next(d for d in client.get("/api/collections/docs/documents").json() if d["title"] == "long")
    assert long_doc["status"] == "ready" and long_doc["num_pages"] == 40
    client.delete(f"/api/collections/docs/documents/{long_doc['doc_id']}")


# ---------------------------------------------------------------------- documents and pages
def test_document_and_pages(client, doc_id):
    doc = client.get(f"/api/collections/docs/documents/{doc_id}").json()
    assert doc["status"] == "ready" and doc["num_pages"] == 4 and doc["title"]
    pages = client.get(f"/api/collections/docs/documents/{doc_id}/pages").json()
    assert [p["number"] for p in pages] == [1, 2, 3, 4]
    assert pages[1]["width"] > 500 and any(c["modality"] == "table" for c in pages[1]["chunks"])
    assert_problem(client.get("/api/collections/docs/documents/nothing/pages"), 404, "nothing")


def test_page_image_highlights_the_cited_region(client, doc_id):
    answer = client.post("/api/collections/docs/ask", json={"question": SAMPLE_QUESTION, "mode": "bm25"}).json()
    cited = answer["citations"][0]
    x0, y0, x1, y1 = cited["bbox"]
    url = f"/api/collections/docs/documents/{doc_id}/pages/{cited['page']}/image"
    plain = client.get(url, params={"dpi": 72})
    marked = client.get(url, params={"dpi": 72, "box": f"{x0},{y0},{x1},{y1}"})
    assert plain.headers["content-type"] == marked.headers["content-type"] == "image/png"
    a = Image.open(io.BytesIO(plain.content)).convert("RGB")
    b = Image.open(io.BytesIO(marked.content)).convert("RGB")
    assert a.size == b.size
    inside = (int((x0 + x1) / 2), int(y0 + 3))  # at 72 dpi a point is a pixel
    outside = (5, 5)
    assert a.getpixel(inside) != b.getpixel(inside)  # tinted where cited
    assert a.getpixel(outside) == b.getpixel(outside)  # untouched elsewhere
    assert_problem(client.get(url, params={"box": "1,2,3"}), 400, "four numbers")
    assert_problem(client.get(url.replace(f"/{cited['page']}/", "/99/")), 400, "no page 99")
    assert_problem(client.get(url, params={"dpi": 5000}), 422, "dpi")


def test_page_regions_and_image_mark_what_answers_inside_the_cited_block(client, doc_id):
    answer = client.post("/api/collections/docs/ask", json={"question": SAMPLE_QUESTION, "mode": "bm25"}).json()
    cited = answer["citations"][0]
    assert cited["cells"][:2] == ["North Sea", "1,850"] and cited["quote"] == ""
    box = ",".join(str(v) for v in cited["bbox"])
    base = f"/api/collections/docs/documents/{doc_id}/pages/{cited['page']}"
    params = [("box", box), ("quote", "North Sea"), ("quote", "1,850"), ("quote", "Not on this page at all")]
    found = client.get(f"{base}/regions", params=params)
    assert found.status_code == 200, found.text
    data = found.json()
    assert data["page"] == 2 and data["width"] > 500 and data["boxes"] == [cited["bbox"]]
    key, value, missing = data["quotes"]
    assert key["found"] == value["found"] == "exact" and missing == {
        "quote": "Not on this page at all",
        "found": None,
        "boxes": [],
    }
    x0, y0, x1, y1 = cited["bbox"]
    assert all(x0 - 1 <= b[0] and b[2] <= x1 + 1 and y0 - 1 <= b[1] and b[3] <= y1 + 1 for b in key["boxes"])
    # The picture: the cells' lines filled more strongly than the block around them.
    marked = Image.open(io.BytesIO(client.get(f"{base}/image", params=[*params, ("dpi", "72")]).content))
    block = Image.open(io.BytesIO(client.get(f"{base}/image", params=[("box", box), ("dpi", "72")]).content))
    cell = tuple(round(v) for v in key["boxes"][0])  # at 72 dpi a point is a pixel
    assert ImageStat.Stat(marked.convert("L").crop(cell)).mean < ImageStat.Stat(block.convert("L").crop(cell)).mean
    assert_problem(client.get(f"{base}/regions", params={"box": "1,2,3"}), 400, "four numbers")
    assert_problem(client.get(f"{base}/regions", params={"quote": "x" * 2001}), 400, "at most 2000")
    assert_problem(client.get(base.replace("/pages/2", "/pages/0") + "/regions"), 400, "no page 0")
    assert_problem(client.get("/api/collections/docs/documents/nothing/pages/1/regions"), 404, "nothing")


# ---------------------------------------------------------------------- questions
@pytest.mark.parametrize("mode", MODES)
def test_ask_every_mode(client, mode):
    response = client.post("/api/collections/docs/ask", json={"question": SAMPLE_QUESTION, "mode": mode, "k": 4})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["evidence"]["strategy"] == mode and answer["answer"]
    assert answer["citations"] and answer["citations"][0]["page"] >= 1
    assert "North Sea" in answer["answer"]


def test_retrieve_scoped_with_options(client, doc_id):
    body = {"question": SAMPLE_QUESTION, "mode": "concept", "doc": [doc_id], "options": {"concepts": 5}}
    evidence = client.post("/api/collections/docs/retrieve", json=body).json()
    assert evidence["strategy"] == "concept" and evidence["items"]
    assert {i["citation"]["doc_id"] for i in evidence["items"]} == {doc_id}
    bad = client.post("/api/collections/docs/retrieve", json={**body, "options": {"no_such_knob": 1}})
    assert_problem(bad, 400, "no_such_knob")


def test_bad_questions(client):
    assert_problem(client.post("/api/collections/docs/ask", json={"question": ""}), 422, "question")
    assert_problem(client.post("/api/collections/docs/ask", json={"question": "x", "mode": "magic"}), 422, "mode")
    assert_problem(client.post("/api/collections/docs/ask", json={"question": "x", "k": 0}), 422, "k")
    assert_problem(client.post("/api/collections/docs/ask", content=b"{not json"), 422)
    assert_problem(client.post("/api/collections/docs/ask", json={"question": "x", "doc": ["zzz"]}), 404, "zzz")


def test_ask_stream_sends_evidence_then_answer(client):
    with client.stream("POST", "/api/collections/docs/ask/stream", json={"question": SAMPLE_QUESTION}) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        lines = list(stream.iter_lines())
    names = [line[6:].strip() for line in lines if line.startswith("event:")]
    data = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
    assert names == ["evidence", "answer"]
    assert data[0]["items"] and data[1]["citations"] and "North Sea" in data[1]["answer"]


# ---------------------------------------------------------------------- pictures, conflicts, stats
@pytest.mark.needs("graphviz")
@pytest.mark.parametrize(("fmt", "start"), [("png", b"\x89PNG"), ("svg", b"<?xml"), ("html", b"<!DOCTYPE html>")])
def test_graph_pictures(client, doc_id, fmt, start):
    response = client.get("/api/collections/docs/graph", params={"doc": doc_id, "format": fmt})
    assert response.status_code == 200, response.text
    assert response.content.lstrip()[: len(start)].lower() == start.lower()
    assert int(response.headers["x-entities"]) > 0 and int(response.headers["x-hyperedges"]) > 0


def test_graph_of_a_question_and_bad_requests(client):
    response = client.get("/api/collections/docs/graph", params={"query": SAMPLE_QUESTION, "format": "html"})
    assert response.status_code == 200 and b"vis" in response.content
    assert_problem(client.get("/api/collections/docs/graph"), 400, "exactly one")
    assert_problem(
        client.get("/api/collections/docs/graph", params={"entity": "Nothing Of The Sort"}), 400, "no entity"
    )
    assert_problem(client.get("/api/collections/docs/graph", params={"doc": "x", "format": "gif"}), 422, "format")


def test_conflicts_and_stats(client, doc_id):
    conflicts = client.get("/api/collections/docs/conflicts").json()
    assert isinstance(conflicts, list)
    assert all({"kind", "decision", "fact", "reason"} <= set(c) for c in conflicts)
    assert client.get("/api/collections/docs/conflicts", params={"doc": doc_id}).status_code == 200
    stats = client.get("/api/collections/docs/stats").json()
    assert stats["documents"] >= 1 and stats["chunks"] > 0 and stats["embedder"]


# ---------------------------------------------------------------------- web app assets
def test_web_app_assets(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert client.get("/static/vis-network.min.js").status_code == 200
    assert_problem(client.get("/static/app.py"), 404)
    assert client.get("/static/..%2Fapp.py").status_code == 404


# ---------------------------------------------------------------------- security
def test_beyond_loopback_needs_a_key(tmp_path):
    with pytest.raises(Exception, match="API key"):
        create_app(ServerConfig(root=tmp_path, host="0.0.0.0", mcp=False))


def test_api_key_and_cors(tmp_path):
    config = ServerConfig(root=tmp_path, host="0.0.0.0", api_key="s3cret", cors_origins=["http://app.example"])
    config.mcp = False
    with TestClient(create_app(config)) as c:
        refused = c.get("/api/collections")
        assert_problem(refused, 401, "API key")
        assert refused.headers["www-authenticate"] == "Bearer"
        assert_problem(c.get("/api/collections", headers={"Authorization": "Bearer wrong"}), 401)
        assert c.get("/api/collections", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert c.get("/api/collections", params={"key": "s3cret"}).status_code == 200  # EventSource cannot send headers
        assert c.get("/api/health").status_code == 200  # liveness probes carry no key
        preflight = c.options(
            "/api/collections",
            headers={"Origin": "http://app.example", "Access-Control-Request-Method": "GET"},
        )
        assert preflight.headers["access-control-allow-origin"] == "http://app.example"
        other = c.get("/api/health", headers={"Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in other.headers


# ---------------------------------------------------------------------- the CLI over the service
def test_cli_asks_a_running_service(client, serve_app, monkeypatch):
    monkeypatch.delenv("HYPERFOLIO_API_KEY", raising=False)
    with serve_app(client.app) as url:
        runner = CliRunner()
        out = runner.invoke(cli, ["ask", SAMPLE_QUESTION, "-c", "docs", "--server", url, "--evidence"])
        assert out.exit_code == 0, out.output
        assert "North Sea" in out.output and "p.2" in out.output and "evidence" in out.output
        as_json = runner.invoke(
            cli, ["retrieve", SAMPLE_QUESTION, "-c", "docs", "--json"], env={"HYPERFOLIO_SERVER": url}
        )
        assert as_json.exit_code == 0 and json.loads(as_json.output)["items"]
        missing = runner.invoke(cli, ["ask", "x", "-c", "nope", "--server", url])
        assert missing.exit_code == 1 and "no collection named 'nope'" in " ".join(missing.output.split())
    gone = CliRunner().invoke(cli, ["ask", "x", "--server", "http://127.0.0.1:9"])
    assert gone.exit_code == 1 and "cannot reach" in " ".join(gone.output.split())


def test_concurrent_questions(client):
    errors: list[str] = []

    def asker(mode: str) -> None:
        for _ in range(3):
            r = client.post("/api/collections/docs/ask", json={"question": SAMPLE_QUESTION, "mode": mode})
            if r.status_code != 200 or not r.json()["citations"]:
                errors.append(f"{mode}: {r.status_code} {r.text[:200]}")

    threads = [threading.Thread(target=asker, args=(m,)) for m in MODES]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_service_keeps_the_latest_finished_jobs_not_every_one(tmp_path, monkeypatch):
    monkeypatch.setattr("hyperfolio.server.jobs.KEEP_FINISHED", 2)
    with TestClient(create_app(ServerConfig(root=tmp_path, mcp=False, warm=False))) as client:
        client.post("/api/collections", json={"name": "notes"})
        made = []
        for n in range(4):
            note = (f"note-{n}.md", f"# Note {n}\n\nThe depot on pier {n} holds {10 + n} crates.\n".encode())
            job = client.post("/api/collections/notes/documents", files=[("files", note)]).json()
            wait_done(client, job)
            made.append(job["job_id"])
        kept = [j["job_id"] for j in client.get("/api/collections/notes/jobs").json()]
        assert sorted(kept) == sorted(made[1:])  # the newest is running-or-just-done, and two finished before it
        assert_problem(client.get(f"/api/jobs/{made[0]}"), 404, made[0], "latest 2 finished")
        assert client.get(f"/api/jobs/{made[-1]}").json()["status"] == "done"
        assert len(client.get("/api/collections/notes/documents").json()) == 4  # the documents stay
