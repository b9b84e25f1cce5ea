"""Parsing stage: files in, `Document`s out (pages of typed chunks with section paths).

`parse_file` is the one entry point; it validates the file, dispatches on the suffix and
fills the document identity (content hash, title, source). Parsers read, never write.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hyperfolio.config import ParseOptions
from hyperfolio.errors import ParseError, UnsupportedFileError
from hyperfolio.model import Document, Page

__all__ = ["SUPPORTED_SUFFIXES", "parse_file"]

_KINDS: dict[str, str] = {
    ".pdf": "pdf",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".txt": "text",
    ".text": "text",
}
SUPPORTED_SUFFIXES: tuple[str, ...] = tuple(_KINDS)

Parser = Callable[[Path, bytes, ParseOptions], tuple[list[Page], str | None, dict[str, Any]]]


def _parser(kind: str) -> Parser:
    # Imported lazily so reading a text file never pays for PyMuPDF or markdown-it.
    if kind == "pdf":
        from hyperfolio.parse.pdf import parse_pdf

        return parse_pdf
    if kind == "markdown":
        from hyperfolio.parse.markdown import parse_markdown

        return parse_markdown
    if kind == "html":
        from hyperfolio.parse.html import parse_html

        return parse_html
    from hyperfolio.parse.text import parse_text

    return parse_text


def parse_file(
    path: str | Path,
    options: ParseOptions | None = None,
    on_page: Callable[[int, int], None] | None = None,
) -> Document:
    """Read one file into a `Document`; raises ParseError/UnsupportedFileError naming file and reason.

    `on_page(done, total)` reports progress through paginated formats (PDF).
    """
    options = options or ParseOptions()
    path = Path(path)
    name = str(path)
    kind = _KINDS.get(path.suffix.lower())
    if kind is None:
        supported = ", ".join(SUPPORTED_SUFFIXES)
        reason = f"unsupported file type {path.suffix or '(no suffix)'!r}; supported: {supported}"
        raise UnsupportedFileError(name, reason)
    if not path.exists():
        raise ParseError(name, "file not found")
    if not path.is_file():
        raise ParseError(name, "not a regular file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ParseError(name, f"cannot read file: {exc.strerror or exc}") from exc
    if not data:
        raise ParseError(name, "file is empty (0 bytes)")

    if kind == "pdf":
        from hyperfolio.parse.pdf import parse_pdf

        pages, title, meta = parse_pdf(path, data, options, on_page=on_page)
    else:
        pages, title, meta = _parser(kind)(path, data, options)
    if not any(c.text.strip() and not c.placeholder for p in pages for c in p.chunks) and not any(
        c.image for p in pages for c in p.chunks
    ):
        raise ParseError(name, "no extractable content (no text, tables or images found)")
    digest = hashlib.sha256(data).hexdigest()
    return Document(
        doc_id=digest[:16],
        source=str(path.resolve()),
        title=title or path.stem,
        kind=kind,
        pages=pages,
        content_hash=digest,
        meta=meta,
    )
