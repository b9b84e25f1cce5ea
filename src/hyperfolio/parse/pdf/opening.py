"""Opening a PDF: corrupt, truncated, encrypted and empty files become ParseErrors naming why."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from hyperfolio.errors import ParseError


def open_pdf(path: Path, data: bytes) -> pymupdf.Document:
    """Open and validate: corrupt, truncated, encrypted and empty PDFs become ParseErrors."""
    name = str(path)
    if not data.lstrip()[:1024].startswith(b"%PDF") and b"%PDF-" not in data[:1024]:
        raise ParseError(name, "not a valid PDF: no %PDF header (the file is corrupt or not a PDF)")
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:
        raise ParseError(name, f"not a valid PDF: {exc}") from exc
    if doc.needs_pass and not doc.authenticate(""):
        doc.close()
        raise ParseError(
            name,
            "encrypted; a password is required to read this PDF "
            "(hyperfolio add --password, or Collection.add(..., password=...))",
        )
    if doc.is_repaired and b"%%EOF" not in data[-2048:]:
        doc.close()
        raise ParseError(name, "not a valid PDF: the file is truncated (no end-of-file marker)")
    if doc.page_count == 0:
        doc.close()
        raise ParseError(name, "the PDF has zero pages")
    return doc


def ends_with_eof(data: bytes) -> bool:
    """Whether the file ends with its %%EOF marker, as a complete PDF does (trailing whitespace aside)."""
    return data[-4096:].rstrip(b"\x00\t\n\f\r ").endswith(b"%%EOF")


def pdf_page_count(path: Path, data: bytes) -> int:
    doc = open_pdf(path, data)
    try:
        return doc.page_count
    finally:
        doc.close()
