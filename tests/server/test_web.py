"""The web app at `/` end to end in a real browser (Debian's Chromium, driven by Playwright).

The service runs in a thread on a loopback port; the browser may reach nothing else. Screenshots of
each step go to $HYPERFOLIO_TEST_ARTIFACTS/web (default ./test-artifacts/web) for a person to look at.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from hyperfolio.sample import SAMPLE_QUESTION, SAMPLE_TITLE, write_sample_report

pytest.importorskip("fastapi", reason="pip install -e '.[serve]' installs the service")
playwright = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[test]' installs Playwright")
expect = playwright.expect
pytestmark = pytest.mark.long  # a real browser: run by .ci/run (`pytest -m long`)

CORRUPT_PDF = b"%PDF-1.4 garbage"
NOTES = "# Site notes\n\nThe Baltic wind farm at Kriegers Flak opened in 2021 with 40 turbines.\n"
SECRET = "Rv8-saffron-Lighthouse-3307"
LOCKED_PAGES = [
    "# Harbour Survey\nThis survey describes the port of Lindqvist and its approaches.",
    "# Cranes\nThe Lindqvist terminal runs 23 gantry cranes along its northern quay.",
]


def artifacts() -> Path:
    folder = Path(os.environ.get("HYPERFOLIO_TEST_ARTIFACTS", "test-artifacts")) / "web"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, serve_app) -> Iterator[str]:
    """The service on a free loopback port with an empty root; yields its base URL."""
    from hyperfolio.server.app import ServerConfig, create_app

    app = create_app(ServerConfig(root=tmp_path_factory.mktemp("web") / "root", mcp=False))
    with serve_app(app) as url:
        yield url


@dataclass
class Tab:
    page: playwright.Page
    outside: list[str] = field(default_factory=list)  # requests for anything but the loopback service
    errors: list[str] = field(default_factory=list)  # uncaught errors, CSP refusals, server errors

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(artifacts() / name))

    def check_clean(self) -> None:
        assert not self.outside, f"the page reached beyond loopback: {self.outside}"
        assert not self.errors, f"errors in the page: {self.errors}"


@pytest.fixture
def tab(browser) -> Iterator[Tab]:
    """A fresh browser context on a laptop-sized screen, with every non-loopback request refused."""
    context = browser.new_context(viewport={"width": 1440, "height": 900}, device_scale_factor=1)
    page = context.new_page()
    tab = Tab(page)

    def gate(route: playwright.Route) -> None:
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            tab.outside.append(route.request.url)
            route.abort()

    context.route("**/*", gate)
    page.on("pageerror", lambda error: tab.errors.append(str(error)))
    page.on("response", lambda r: tab.errors.append(f"{r.status} {r.url}") if r.status >= 500 else None)
    page.on(
        "console",
        lambda msg: (
            tab.errors.append(msg.text) if msg.type == "error" and "Content Security Policy" in msg.text else None
        ),
    )
    page.set_default_timeout(20_000)
    yield tab
    context.close()


def open_app(tab: Tab, service: str) -> playwright.Page:
    page = tab.page
    page.goto(f"{service}/")
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(page.locator("#collection")).to_have_value("default")
    return page


def upload_row(page: playwright.Page, name: str) -> playwright.Locator:
    return page.get_by_test_id("upload-row").filter(has=page.locator(f'[title="{name}"]'))


def ensure_sample(service: str, folder: Path) -> None:
    """The sample report indexed in `default` (through the API), whatever ran before."""
    with httpx.Client(base_url=service, timeout=60) as client:
        client.post("/api/collections", json={"name": "default"}).raise_for_status()
        if any(d["title"] == SAMPLE_TITLE for d in client.get("/api/collections/default/documents").json()):
            return
        pdf = write_sample_report(folder / "northwind-report.pdf")
        job = client.post(
            "/api/collections/default/documents", files=[("files", (pdf.name, pdf.read_bytes(), "application/pdf"))]
        ).json()
        deadline = time.monotonic() + 40
        while client.get(f"/api/jobs/{job['job_id']}").json()["status"] not in ("done", "failed"):
            assert time.monotonic() < deadline, "the sample report took too long to index"
            time.sleep(0.2)


def test_upload_ask_and_see_the_cited_region(tab: Tab, service: str, tmp_path: Path) -> None:
    page = open_app(tab, service)
    pdf = write_sample_report(tmp_path / "northwind-report.pdf")

    # Upload through the file chooser; the row follows the job's events to the end.
    page.set_input_files("#file-input", str(pdf))
    row = upload_row(page, pdf.name)
    expect(row).to_have_attribute("data-status", "done", timeout=40_000)
    expect(row).to_contain_text("4 pages")
    document = page.get_by_test_id("document").filter(has_text=SAMPLE_TITLE)
    expect(document.get_by_test_id("doc-status")).to_have_text("ready")
    expect(document).to_contain_text("4 pages")
    tab.shot("01-uploaded.png")

    # Ask with Enter: a cited answer, and the evidence hypergraph beside it.
    page.get_by_label("Question").fill(SAMPLE_QUESTION)
    page.get_by_label("Question").press("Enter")
    answer = page.get_by_test_id("answer")
    expect(answer).to_contain_text("North Sea", timeout=30_000)
    expect(answer).to_contain_text("1,850")
    citation = page.get_by_test_id("citation").first
    expect(citation).to_contain_text("page 2")
    expect(answer.locator(".marker").first).to_have_text("1")
    graph = page.locator("#graph-frame")
    expect(graph).to_have_attribute(
        "src",
        "/api/collections/default/graph?query=Which%20region%20had%20the%20highest"
        "%20installed%20capacity%20in%202024%3F&format=html&mode=auto",
    )
    expect(page.frame_locator("#graph-frame").locator("#graph canvas")).to_be_visible()
    expect(page.locator("#graph-loading")).to_be_hidden()
    page.wait_for_timeout(1500)  # the graph's layout settles before the picture
    tab.shot("02-answer.png")

    # The graph can take the whole window for a closer look; Escape brings it back beside the answer.
    page.get_by_role("button", name="Expand").click()
    panel = page.locator("#graph-panel")
    expect(panel).to_have_class(re.compile(r"\bexpanded\b"))
    assert panel.bounding_box()["width"] > 1300
    page.wait_for_timeout(800)
    tab.shot("02b-graph-expanded.png")
    page.keyboard.press("Escape")
    expect(panel).not_to_have_class(re.compile(r"\bexpanded\b"))

    # The first citation opens page 2 with Table 1 highlighted over the page image.
    citation.click()
    image = page.get_by_test_id("page-image")
    highlight = page.get_by_test_id("citation-highlight")
    expect(highlight).to_be_visible()
    assert image.evaluate("img => img.complete && img.naturalWidth") > 0
    expect(page.locator("#page-indicator")).to_have_text("Page 2 of 4")
    shown, box = image.bounding_box(), highlight.bounding_box()
    assert shown and box and box["width"] > 10 and box["height"] > 10
    assert shown["x"] - 1 <= box["x"] and box["x"] + box["width"] <= shown["x"] + shown["width"] + 1
    assert shown["y"] - 1 <= box["y"] and box["y"] + box["height"] <= shown["y"] + shown["height"] + 1
    (x0, y0, x1, y1), width, height = table_box(service)  # where the store says Table 1 is, in points
    assert abs((box["x"] - shown["x"]) / shown["width"] - x0 / width) < 0.01
    assert abs((box["x"] + box["width"] - shown["x"]) / shown["width"] - x1 / width) < 0.01
    assert abs((box["y"] - shown["y"]) / shown["height"] - y0 / height) < 0.01
    assert abs((box["y"] + box["height"] - shown["y"]) / shown["height"] - y1 / height) < 0.01
    expect(page.locator("#viewer-passage")).to_contain_text("North Sea | 1,850")
    # Inside the table's outline, the answering row's cells are marked: the region's name, then its capacity.
    marks = highlight.locator(".highlight-mark")
    expect(marks).to_have_count(2)
    expect(highlight).to_have_class(re.compile(r"\bhas-marks\b"))
    key, value = (marks.nth(i).bounding_box() for i in range(2))
    assert key and value and key["x"] + key["width"] < value["x"]
    for mark in (key, value):
        assert box["x"] <= mark["x"] and mark["x"] + mark["width"] <= box["x"] + box["width"]
        row = (mark["y"] + mark["height"] / 2 - box["y"]) / box["height"]
        assert 0.2 < row < 0.4  # the first of four rows under the header
    tab.shot("03-citation.png")

    # Escape closes the viewer and gives focus back; Enter on the citation opens it again.
    page.keyboard.press("Escape")
    expect(page.locator("#viewer")).to_be_hidden()
    expect(citation).to_be_focused()
    page.keyboard.press("Enter")
    expect(highlight).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#viewer")).to_be_hidden()
    tab.check_clean()


def table_box(service: str) -> tuple[list[float], float, float]:
    """Table 1's box on page 2 of the sample report, and the page's width and height, in points."""
    with httpx.Client(base_url=service, timeout=30) as client:
        docs = client.get("/api/collections/default/documents").json()
        doc = next(d for d in docs if d["title"] == SAMPLE_TITLE)
        pages = client.get(f"/api/collections/default/documents/{doc['doc_id']}/pages").json()
    page = next(p for p in pages if p["number"] == 2)
    table = next(c["bbox"] for c in page["chunks"] if c["modality"] == "table")
    return table, page["width"], page["height"]


def test_corrupt_pdf_fails_with_the_reason_and_the_ready_document_stays(tab: Tab, service: str, tmp_path: Path) -> None:
    ensure_sample(service, tmp_path)
    with httpx.Client(base_url=service, timeout=30) as client:  # what the service says about such a file
        refusal = client.post("/api/collections/default/documents", files=[("files", ("x.pdf", CORRUPT_PDF))]).json()
    reason = refusal["rejected"][0]["reason"]
    page = open_app(tab, service)

    # Alone, the corrupt file is refused outright (problem+json): its row fails with the service's reason.
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(CORRUPT_PDF)
    page.set_input_files("#file-input", str(broken))
    row = upload_row(page, broken.name)
    expect(row).to_have_attribute("data-status", "failed")
    expect(row.get_by_test_id("upload-detail")).to_have_text(reason)

    # Dropped together with a good file: the good one is indexed, the corrupt one is listed as rejected.
    page.evaluate(
        """([notes, corrupt]) => {
            const dt = new DataTransfer();
            dt.items.add(new File([notes], "site-notes.md", { type: "text/markdown" }));
            dt.items.add(new File([corrupt], "scan.pdf", { type: "application/pdf" }));
            const zone = document.getElementById("dropzone");
            for (const type of ["dragenter", "dragover", "drop"]) {
                zone.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: dt }));
            }
        }""",
        [NOTES, CORRUPT_PDF.decode()],
    )
    expect(upload_row(page, "scan.pdf")).to_have_attribute("data-status", "failed")
    expect(upload_row(page, "scan.pdf").get_by_test_id("upload-detail")).to_have_text(reason)
    expect(upload_row(page, "site-notes.md")).to_have_attribute("data-status", "done", timeout=30_000)

    documents = page.get_by_test_id("document")
    expect(documents.filter(has_text=SAMPLE_TITLE).get_by_test_id("doc-status")).to_have_text("ready")
    expect(documents.filter(has_text="Site notes").get_by_test_id("doc-status")).to_have_text("ready")
    expect(documents.filter(has_text="broken")).to_have_count(0)
    tab.shot("04-failed-upload.png")

    # A citation of a Markdown document opens its text, the cited passage marked.
    page.get_by_label("Retrieval mode").select_option("bm25")
    page.get_by_label("Question").fill("When did the Kriegers Flak wind farm open?")
    page.get_by_label("Question").press("Enter")
    expect(page.get_by_test_id("answer")).to_contain_text("2021", timeout=30_000)
    page.get_by_test_id("citation").filter(has_text="Site notes").first.click()
    expect(page.locator("#page-text .text-chunk.cited")).to_contain_text("Kriegers Flak opened in 2021")
    expect(page.get_by_test_id("page-image")).to_be_hidden()
    tab.shot("05-text-citation.png")
    page.keyboard.press("Escape")
    tab.check_clean()


def test_an_encrypted_pdf_asks_for_its_password_and_is_indexed(
    tab: Tab, service: str, tmp_path: Path, encrypted_pdf
) -> None:
    page = open_app(tab, service)
    sent: list[str] = []  # every URL the page requested: the password must travel in a body, never a URL
    page.on("request", lambda request: sent.append(request.url))
    pdf = encrypted_pdf(tmp_path / "harbour-survey.pdf", LOCKED_PAGES, SECRET)

    # Refused as it arrives: the row asks for the password in a masked field, which takes focus.
    page.set_input_files("#file-input", str(pdf))
    row = upload_row(page, pdf.name)
    expect(row).to_have_attribute("data-status", "locked")
    expect(row.locator(".chip")).to_have_text("locked")
    expect(row.get_by_test_id("upload-detail")).to_have_text("Encrypted: enter its password to index it.")
    field = row.get_by_label(f"Password for {pdf.name}")
    expect(field).to_have_attribute("type", "password")
    expect(field).to_be_focused()
    unlock = row.get_by_role("button", name=f"Unlock {pdf.name}")
    tab.shot("06-encrypted.png")

    # A wrong password says so and empties the field for another try.
    field.fill("guess")
    unlock.click()
    expect(row.get_by_test_id("upload-detail")).to_have_text("Wrong password: try again.")
    expect(field).to_have_value("")
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(field).to_be_focused()
    tab.shot("07-wrong-password.png")

    # The right one (Enter sends it): the file is indexed, its field gone, the document ready.
    field.fill(SECRET)
    field.press("Enter")
    expect(row).to_have_attribute("data-status", "done", timeout=40_000)
    expect(row).to_contain_text("2 pages")
    expect(row.get_by_test_id("password-form")).to_have_count(0)
    expect(page.locator("#choose-files")).to_be_focused()
    document = page.get_by_test_id("document").filter(has_text=re.compile(r"harbour.survey", re.IGNORECASE))
    expect(document.get_by_test_id("doc-status")).to_have_text("ready")
    expect(document).to_contain_text("2 pages")
    tab.shot("08-unlocked.png")
    assert not any(SECRET in url or "guess" in url for url in sent)
    tab.check_clean()


def test_a_three_turn_conversation_is_a_thread_that_a_reload_keeps(tab: Tab, service: str, tmp_path: Path) -> None:
    ensure_sample(service, tmp_path)
    page = open_app(tab, service)
    question = page.get_by_label("Question")
    answer, thread = page.get_by_test_id("answer"), page.get_by_test_id("thread")

    question.fill(SAMPLE_QUESTION)
    question.press("Enter")
    expect(answer).to_contain_text("North Sea", timeout=30_000)
    expect(thread).to_be_hidden()  # one turn: nothing above the answer yet

    question.fill("and in 2022?")
    question.press("Enter")
    asked = page.get_by_test_id("answer-question")
    expect(asked).to_contain_text("read as: Which region had the highest installed capacity in 2022?", timeout=30_000)
    turns = thread.get_by_test_id("turn")
    expect(turns).to_have_count(1)
    expect(turns.first).to_contain_text(SAMPLE_QUESTION)
    expect(turns.first.get_by_test_id("citation")).to_contain_text("page 2")  # the first turn keeps its citation

    question.fill("why?")
    question.press("Enter")
    expect(asked).to_contain_text("read as: Why is it North Sea", timeout=30_000)
    expect(turns).to_have_count(2)
    expect(turns.nth(1)).to_contain_text("and in 2022?")
    expect(page.locator("#citations").get_by_test_id("citation").first).to_contain_text("page 2")
    tab.shot("06-conversation.png")

    page.reload()  # the thread is the collection's: read back, not kept in the page
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(turns).to_have_count(2, timeout=20_000)
    expect(asked).to_contain_text("why?")
    expect(answer).to_contain_text("North Sea")
    expect(turns.nth(0).get_by_test_id("citation")).to_contain_text("page 2")
    tab.shot("07-conversation-reloaded.png")

    page.get_by_test_id("new-conversation").click()
    expect(thread).to_be_hidden()
    expect(asked).to_be_hidden()
    page.locator("#conversations-block summary").click()
    expect(page.get_by_test_id("conversation").first).to_have_text(SAMPLE_QUESTION)
    tab.check_clean()
