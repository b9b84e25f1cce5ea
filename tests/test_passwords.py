"""Encrypted PDFs and Office files: unlocked with a password or a prompt, identified by their own bytes,
parsed on workers from the decrypted bytes, and the password written nowhere."""

from __future__ import annotations

import hashlib
import io
import logging
import zipfile
from pathlib import Path

import msoffcrypto
import pymupdf
import pytest
from docx import Document as WordDocument
from msoffcrypto.format.ooxml import OOXMLFile

from hyperfolio import Collection
from hyperfolio.errors import ParseError
from hyperfolio.parse.unlock import MAX_ATTEMPTS, NEEDED, is_encrypted, unlock, unlock_file

SECRET = "Qx7-tangerine-Vault-2291"  # distinctive, so finding it anywhere on disk means it leaked
OWNER = "owner-Kp4-unrelated"

PAGES = [
    "# Harbour Survey\nThis survey describes the port of Lindqvist and its approaches.",
    "# Cranes\nThe Lindqvist terminal runs 23 gantry cranes along its northern quay.",
    "# Outlook\nDredging of the western channel is planned for the coming winter.",
]


def encrypt_pdf(plain: Path, target: Path, user_pw: str = SECRET) -> Path:
    """`plain` saved again under AES-256 with a user password (and an owner password)."""
    with pymupdf.open(plain) as doc:
        doc.save(target, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=user_pw, owner_pw=OWNER)
    return target


@pytest.fixture
def survey(tmp_path, pdf_writer) -> Path:
    """A three-page encrypted PDF with page labels, an outline and metadata."""
    plain = pdf_writer(tmp_path / "plain.pdf", PAGES, title="Harbour Survey")
    with pymupdf.open(plain) as doc:
        doc.set_page_labels([{"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1}])
        doc.set_toc([[1, "Harbour Survey", 1], [2, "Cranes", 2], [2, "Outlook", 3]])
        doc.set_metadata({"title": "Harbour Survey", "author": "Port Authority", "subject": "quays"})
        doc.save(tmp_path / "labelled.pdf")
    folder = tmp_path / "docs"
    folder.mkdir()
    return encrypt_pdf(tmp_path / "labelled.pdf", folder / "survey.pdf")


def test_unlock_a_pdf_with_the_right_wrong_and_no_password(survey):
    data = survey.read_bytes()
    assert is_encrypted(survey, data)
    plain = unlock(survey, data, SECRET)
    assert not is_encrypted(survey, plain)
    with pymupdf.open(stream=plain, filetype="pdf") as doc:  # faithful: text, labels, outline, metadata
        assert not doc.needs_pass and doc.page_count == 3
        assert "23 gantry cranes" in doc[1].get_text()
        assert [page.get_label() for page in doc] == ["i", "ii", "iii"]
        assert doc.get_toc() == [[1, "Harbour Survey", 1], [2, "Cranes", 2], [2, "Outlook", 3]]
        assert doc.metadata["author"] == "Port Authority" and doc.metadata["subject"] == "quays"
    assert unlock(survey, data, OWNER)[:5] == b"%PDF-"  # the owner's password opens it too

    with pytest.raises(ParseError) as wrong:
        unlock(survey, data, "not-the-password")
    assert wrong.value.reason == "wrong password"
    with pytest.raises(ParseError) as none:
        unlock_file(survey, data, None)
    assert none.value.reason == NEEDED and "\n" not in NEEDED
    assert "--password" in NEEDED and "password=" in NEEDED


def test_pdfs_without_a_user_password_are_not_encrypted(tmp_path, pdf_writer):
    plain = pdf_writer(tmp_path / "plain.pdf", PAGES)
    assert not is_encrypted(plain, plain.read_bytes())
    owner_only = encrypt_pdf(plain, tmp_path / "owner-only.pdf", user_pw="")  # opens without a password
    assert not is_encrypted(owner_only, owner_only.read_bytes())
    assert not is_encrypted(tmp_path / "notes.txt", b"/Encrypt is just a word here")


def test_an_encrypted_pdf_is_indexed_with_its_password_and_cited_by_page(
    tmp_path, embedder, survey, caplog, written_nowhere
):
    caplog.set_level(logging.DEBUG)
    col = Collection(tmp_path / "col", embedder=embedder)
    result = col.add([survey], password=SECRET).results[0]
    assert result.status == "added", result.reason
    assert result.pages == 3  # counted on the decrypted bytes
    assert result.doc_id == hashlib.sha256(survey.read_bytes()).hexdigest()[:16]  # identity: the file's own bytes
    answer = col.ask("How many gantry cranes does the terminal run?", doc="survey.pdf")
    assert answer.sufficient and "23 gantry cranes" in answer.text
    assert answer.citations[0].page == 2

    asked: list[int] = []

    def prompt(path: Path, attempt: int) -> str | None:
        asked.append(attempt)
        return SECRET

    again = col.add([survey], password=prompt).results[0]  # known by its encrypted bytes: no password asked
    assert again.status == "skipped" and "already indexed" in again.reason
    assert asked == []
    col.close()
    written_nowhere(tmp_path / "col", SECRET)
    assert all(SECRET not in record.getMessage() for record in caplog.records)


def test_a_prompt_is_asked_once_per_file_and_again_after_a_wrong_answer(tmp_path, embedder, pdf_writer):
    folder = tmp_path / "docs"
    folder.mkdir()
    plain = pdf_writer(tmp_path / "plain.pdf", PAGES)
    first = encrypt_pdf(plain, folder / "a.pdf")
    second = encrypt_pdf(pdf_writer(tmp_path / "other.pdf", ["A note on tides at Lindqvist."]), folder / "b.pdf")
    given_up = encrypt_pdf(pdf_writer(tmp_path / "third.pdf", ["Ballast rules."]), folder / "c.pdf")
    hopeless = encrypt_pdf(pdf_writer(tmp_path / "fourth.pdf", ["Pilotage fees."]), folder / "d.pdf")
    asked: list[tuple[str, int]] = []

    def prompt(path: Path, attempt: int) -> str | None:
        asked.append((path.name, attempt))
        if path.name == "a.pdf" and attempt == 0:
            return "a typo"
        return {"a.pdf": SECRET, "b.pdf": SECRET, "c.pdf": None}.get(path.name, "always wrong")

    col = Collection(tmp_path / "col", embedder=embedder)
    report = col.add([first, second, given_up, hopeless], password=prompt)
    by_name = {Path(r.path).name: r for r in report.results}
    assert by_name["a.pdf"].status == "added" and by_name["b.pdf"].status == "added"
    assert by_name["c.pdf"].status == "failed" and by_name["c.pdf"].reason == NEEDED
    assert by_name["d.pdf"].status == "failed" and by_name["d.pdf"].reason.startswith("wrong password")
    assert asked == [("a.pdf", 0), ("a.pdf", 1), ("b.pdf", 0), ("c.pdf", 0)] + [
        ("d.pdf", n) for n in range(MAX_ATTEMPTS)
    ]
    col.close()


def test_no_password_or_a_wrong_one_fails_the_file_with_one_line(tmp_path, embedder, survey, pdf_writer):
    readable = pdf_writer(tmp_path / "docs" / "open.pdf", PAGES)
    col = Collection(tmp_path / "col", embedder=embedder)
    report = col.add([survey, readable])
    assert [r.status for r in report.results] == ["failed", "added"]
    assert report.results[0].reason == NEEDED
    wrong = col.add([survey], password="guess").results[0]
    assert wrong.status == "failed" and wrong.reason == "wrong password"
    col.close()


def test_workers_parse_the_decrypted_bytes(tmp_path, embedder, pdf_writer, written_nowhere):
    pages = [f"# Berth {n}\nBerth {n} takes vessels up to {100 + n} metres." for n in range(1, 13)]
    pages[6] = "# Berth 7\nBerth 7 is reserved for the icebreaker Kestrel during winter."
    folder = tmp_path / "docs"
    folder.mkdir()
    locked = encrypt_pdf(pdf_writer(tmp_path / "berths.pdf", pages), folder / "berths.pdf")
    col = Collection(tmp_path / "col", embedder=embedder)
    result = col.add([locked], workers=2, password=SECRET).results[0]
    assert result.status == "added", result.reason
    assert result.pages == 12
    answer = col.ask("Which berth is reserved for the icebreaker?", doc="berths.pdf")
    assert "Kestrel" in answer.text and answer.citations[0].page == 7
    col.close()
    written_nowhere(tmp_path / "col", SECRET)


def test_estimate_reads_an_encrypted_file_with_its_password(tmp_path, embedder, survey):
    col = Collection(tmp_path / "col", embedder=embedder)
    assert col.estimate(survey, password=SECRET).pages == 3
    with pytest.raises(ParseError) as failure:
        col.estimate(survey)
    assert failure.value.reason == NEEDED
    col.close()


def encrypted_docx(path: Path, text: str, password: str = SECRET) -> Path:
    """A .docx made with python-docx, then encrypted (agile, as Office does) with msoffcrypto-tool."""
    document = WordDocument()
    document.add_heading("Quay Inspection", level=1)
    document.add_paragraph(text)
    plain = io.BytesIO()
    document.save(plain)
    encrypted = io.BytesIO()
    OOXMLFile(plain).encrypt(password, encrypted)
    path.write_bytes(encrypted.getvalue())
    return path


def test_an_encrypted_docx_unlocks_to_a_zip_package(tmp_path):
    path = encrypted_docx(tmp_path / "inspection.docx", "The north quay was inspected by diver Ottilie Brandt.")
    data = path.read_bytes()
    assert not zipfile.is_zipfile(io.BytesIO(data)) and is_encrypted(path, data)
    plain = unlock(path, data, SECRET)
    assert zipfile.is_zipfile(io.BytesIO(plain)) and not is_encrypted(path, plain)
    with zipfile.ZipFile(io.BytesIO(plain)) as package:
        assert b"Ottilie Brandt" in package.read("word/document.xml")
    assert not msoffcrypto.OfficeFile(io.BytesIO(plain)).is_encrypted()
    for wrong in ("guess", ""):
        with pytest.raises(ParseError) as failure:
            unlock(path, data, wrong)
        assert failure.value.reason == "wrong password"


def test_an_encrypted_docx_is_indexed_and_answers(tmp_path, embedder, written_nowhere):
    from hyperfolio.parse import SUPPORTED_SUFFIXES

    if ".docx" not in SUPPORTED_SUFFIXES:
        pytest.skip("the Word parser is not registered in hyperfolio.parse yet")
    path = encrypted_docx(tmp_path / "inspection.docx", "The north quay was inspected by diver Ottilie Brandt.")
    col = Collection(tmp_path / "col", embedder=embedder)
    result = col.add([path], password=SECRET).results[0]
    assert result.status == "added", result.reason
    assert result.doc_id == hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    answer = col.ask("Who inspected the north quay?", doc="inspection.docx")
    assert "Ottilie Brandt" in answer.text
    assert col.add([path], password=SECRET).results[0].status == "skipped"
    col.close()
    written_nowhere(tmp_path / "col", SECRET)
