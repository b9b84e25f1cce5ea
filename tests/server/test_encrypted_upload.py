"""Encrypted PDFs and Office files uploaded to the service: the password is checked as the file arrives,
used for the job's indexing, and kept nowhere (no file, job summary, event or log line holds it)."""

from __future__ import annotations

import io
import json
import logging
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="pip install -e '.[serve]' installs the service")

from docx import Document as WordDocument  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from msoffcrypto.format.ooxml import OOXMLFile  # noqa: E402

from hyperfolio.collection import Collection  # noqa: E402
from hyperfolio.server.app import ServerConfig, create_app  # noqa: E402
from hyperfolio.server.jobs import PASSWORD_NEEDED  # noqa: E402

SECRET = "Zt9-marigold-Lantern-4471"  # distinctive, so finding it anywhere means it leaked
NAME = "Harbour Survey.pdf"
PAGES = [
    "# Harbour Survey\nThis survey describes the port of Lindqvist and its approaches.",
    "# Cranes\nThe Lindqvist terminal runs 23 gantry cranes along its northern quay.",
    "# Outlook\nDredging of the western channel is planned for the coming winter.",
]
DOCUMENTS = "/api/collections/docs/documents"
PROBLEM = "application/problem+json"


def events_of(client: TestClient, url: str) -> list[dict]:
    with client.stream("GET", url) as stream:
        return [json.loads(line[5:]) for line in stream.iter_lines() if line.startswith("data:")]


def assert_problem(response, status: int, *words: str) -> dict:  # noqa: ANN001 - an httpx response
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body = response.json()
    for word in words:
        assert word in body["detail"], body["detail"]
    return body


def encrypted_docx(path: Path, text: str) -> Path:
    document = WordDocument()
    document.add_paragraph(text)
    plain, locked = io.BytesIO(), io.BytesIO()
    document.save(plain)
    OOXMLFile(plain).encrypt(SECRET, locked)
    path.write_bytes(locked.getvalue())
    return path


@pytest.fixture
def survey(tmp_path, encrypted_pdf) -> Path:
    return encrypted_pdf(tmp_path / "survey.pdf", PAGES, SECRET)


def test_an_encrypted_upload_needs_its_password_and_keeps_it_nowhere(tmp_path, survey, caplog, written_nowhere):
    caplog.set_level(logging.DEBUG)
    root = tmp_path / "root"
    data = survey.read_bytes()
    with TestClient(create_app(ServerConfig(root=root, mcp=False, warm=False))) as c:
        assert c.post("/api/collections", json={"name": "docs"}).status_code == 201

        # Refused as it arrives, naming the file, with `encrypted` for a client to ask for the password.
        missing = assert_problem(c.post(DOCUMENTS, files=[("files", (NAME, data))]), 422, NAME, "password is needed")
        assert missing["rejected"] == [{"name": NAME, "status": 422, "reason": PASSWORD_NEEDED, "encrypted": True}]
        wrong = c.post(DOCUMENTS, files=[("files", (NAME, data))], data={"password": "guess"})
        assert assert_problem(wrong, 422, f"{NAME}: wrong password")["rejected"][0]["encrypted"] is True
        empty = c.post(DOCUMENTS, files=[("files", (NAME, data))], data={"password": ""})
        assert_problem(empty, 422, "password is needed")
        too_long = c.post(DOCUMENTS, files=[("files", (NAME, data))], data={"password": "x" * 1025})
        assert_problem(too_long, 422, "password")
        assert "x" * 50 not in too_long.text  # a refused password is not echoed either
        assert not (root / "docs" / "uploads").exists() or not any((root / "docs" / "uploads").rglob("*.pdf"))

        # Beside a plain file, a wrong password refuses only the encrypted one.
        mixed = c.post(
            DOCUMENTS,
            files=[("files", (NAME, data)), ("files", ("notes.md", b"# Notes\n\nTide tables for Lindqvist.\n"))],
            data={"password": "guess"},
        )
        assert mixed.status_code == 202, mixed.text
        assert [f["name"] for f in mixed.json()["files"]] == ["notes.md"]
        refused = {"name": NAME, "status": 422, "reason": "wrong password", "encrypted": True}
        assert mixed.json()["rejected"] == [refused]
        assert events_of(c, mixed.json()["events"])[-1]["status"] == "done"

        # With the right password: pages counted decrypted, indexed, answered and cited by page.
        right = c.post(DOCUMENTS, files=[("files", (NAME, data))], data={"password": SECRET})
        assert right.status_code == 202, right.text
        job = right.json()
        assert job["files"] == [{"name": NAME, "pages": 3}] and job["rejected"] == []
        events = events_of(c, job["events"])
        assert events[-1]["type"] == "done" and events[-1]["status"] == "done"
        result = events[-2]
        assert result["status"] == "added" and result["pages"] == 3, result
        asked = c.post(
            "/api/collections/docs/ask",
            json={"question": "How many gantry cranes does the Lindqvist terminal run?", "doc": [result["doc_id"]]},
        ).json()
        assert "23 gantry cranes" in asked["answer"]
        assert asked["citations"][0]["page"] == 2 and asked["citations"][0]["doc_id"] == result["doc_id"]

        # Nothing the API answers holds it.
        answered = [
            c.get(f"/api/jobs/{job['job_id']}").text,
            c.get("/api/collections/docs/jobs").text,
            c.get(f"/api/collections/docs/documents/{result['doc_id']}").text,
            json.dumps(events),
            right.text,
        ]
        assert all(SECRET not in text for text in answered)
        assert "password" not in c.get(f"/api/jobs/{job['job_id']}").json()
    # The service kept the file as it came (encrypted), and wrote the password nowhere.
    [stored] = (root / "docs" / "uploads").rglob("*.pdf")
    assert stored.read_bytes() == data
    written_nowhere(root, SECRET)
    assert all(SECRET not in record.getMessage() for record in caplog.records)


def test_an_encrypted_word_file_is_checked_as_it_arrives(tmp_path, written_nowhere):
    path = encrypted_docx(tmp_path / "inspection.docx", "The north quay was inspected by diver Ottilie Brandt.")
    with TestClient(create_app(ServerConfig(root=tmp_path / "root", mcp=False, warm=False))) as c:
        c.post("/api/collections", json={"name": "docs"})
        sent = [("files", ("inspection.docx", path.read_bytes()))]
        assert_problem(c.post(DOCUMENTS, files=sent), 422, "inspection.docx", "password is needed")
        assert_problem(c.post(DOCUMENTS, files=sent, data={"password": "guess"}), 422, "wrong password")
        right = c.post(DOCUMENTS, files=sent, data={"password": SECRET})
        assert right.status_code == 202, right.text
        assert events_of(c, right.json()["events"])[-2]["status"] == "added"
    written_nowhere(tmp_path / "root", SECRET)


def test_an_encrypted_upload_left_unfinished_asks_for_its_password_again(tmp_path, survey):
    """A stopped service forgot the password with the job: resumed, the file fails saying it is needed."""
    stored = tmp_path / "docs" / "uploads" / "0123abcd" / "survey.pdf"
    stored.parent.mkdir(parents=True)
    stored.write_bytes(survey.read_bytes())
    Collection(tmp_path / "docs").close()
    with TestClient(create_app(ServerConfig(root=tmp_path, mcp=False, warm=False))) as c:
        deadline = time.monotonic() + 60
        while not (jobs := c.get("/api/collections/docs/jobs").json()) or jobs[0]["status"] != "done":
            assert time.monotonic() < deadline, jobs
            time.sleep(0.05)
        assert jobs[0]["failures"] == [{"name": "survey.pdf", "reason": PASSWORD_NEEDED}]
    assert not stored.exists()  # nothing refers to it: the service's copy is gone, upload it again
