"""Parsing stage: files in, `Document`s out (pages of typed chunks with section paths).

`parse_file` is the one entry point; it validates the file, dispatches on the suffix and
fills the document identity (content hash, title, source). Parsers read, never write.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperfolio.config import ParseOptions
from hyperfolio.errors import ParseError, UnsupportedFileError
from hyperfolio.model import Document, Page
from hyperfolio.parse.file_titles import file_title
from hyperfolio.parse.guard import parse_errors
from hyperfolio.parse.limits import cap_page_chars, check_limits, check_pages, check_size

log = logging.getLogger(__name__)

__all__ = [
    "SUPPORTED_SUFFIXES",
    "file_kind",
    "finish_document",
    "inspect_bytes",
    "page_count",
    "parse_bytes",
    "parse_file",
    "quick_page_count",
    "read_file",
    "read_pages",
]

_KINDS: dict[str, str] = {
    ".pdf": "pdf",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".txt": "text",
    ".text": "text",
    ".docx": "word",
    ".pptx": "slides",
    ".xlsx": "spreadsheet",
    ".csv": "csv",
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".tif": "image",
    ".tiff": "image",
}
SUPPORTED_SUFFIXES: tuple[str, ...] = tuple(_KINDS)
_TEXT_KINDS = frozenset({"markdown", "html", "text", "csv"})  # bytes that must be text: a NUL means a wrong file

Parser = Callable[[Path, bytes, ParseOptions], tuple[list[Page], str | None, dict[str, Any]]]


@dataclass(frozen=True)
class _Format:
    """Where a kind's functions live (a module of this package, imported only when a file of that kind
    comes, so reading a text file never pays for PyMuPDF, markdown-it or the Office libraries)."""

    module: str
    parse: str = ""  # the whole-file parser (PDFs are read in parts: `read_pages`, `finish_document`)
    check: str = ""  # for binary kinds: (path, bytes) -> pages, or a ParseError when they do not open
    count: str = ""  # pages from a deck's, workbook's or image's directory or header alone


_FORMATS: dict[str, _Format] = {
    "pdf": _Format("pdf", check="pdf_page_count"),
    "markdown": _Format("markdown", "parse_markdown"),
    "html": _Format("html", "parse_html"),
    "text": _Format("text", "parse_text"),
    "word": _Format("word", "parse_word", "check_word"),
    "slides": _Format("slides", "parse_slides", "check_slides", "count_slides"),
    "spreadsheet": _Format("spreadsheet", "parse_spreadsheet", "check_spreadsheet", "count_sheets"),
    "csv": _Format("spreadsheet", "parse_csv"),
    "image": _Format("image", "parse_image", "check_image", "count_frames"),
}


def _function(kind: str, role: str) -> Any:
    """The `role` function ("parse", "check", "count") of a kind, or None when it has none. Parse and
    check functions come wrapped in `parse_errors`: whatever a library raises on a damaged file reaches
    the caller as a ParseError naming it (count functions answer 1 for a file they cannot read)."""
    name = getattr(_FORMATS[kind], role)
    if not name:
        return None
    function = getattr(importlib.import_module(f"hyperfolio.parse.{_FORMATS[kind].module}"), name)
    if role == "count":
        return function

    def guarded(path: Path, *args: Any, **kwargs: Any) -> Any:
        with parse_errors(path, kind):
            return function(path, *args, **kwargs)

    return guarded


def _parser(kind: str) -> Parser:
    parse: Parser = _function(kind, "parse")
    return parse


def _quick_count(kind: str, source: Path | io.BytesIO) -> int:
    """Pages of a slide deck, workbook or image from its directory or header alone; 1 for other kinds."""
    count = _function(kind, "count")
    return int(count(source)) if count is not None else 1


def file_kind(path: Path) -> str:
    """The parser a file goes to, by suffix; UnsupportedFileError names the supported ones."""
    kind = _KINDS.get(path.suffix.lower())
    if kind is None:
        supported = ", ".join(SUPPORTED_SUFFIXES)
        reason = f"unsupported file type {path.suffix or '(no suffix)'!r}; supported: {supported}"
        raise UnsupportedFileError(str(path), reason)
    return kind


def read_file(path: str | Path) -> bytes:
    """The file's bytes, or a ParseError naming the file and why it cannot be read."""
    path = Path(path)
    name = str(path)
    file_kind(path)
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
    return data


def page_count(path: Path, data: bytes) -> int:
    """Pages a file will be read as: a PDF's pages, a deck's slides, a workbook's sheets, an image's
    frames (those three counted cheaply, so an estimate); one for other formats."""
    kind = file_kind(path)
    if kind == "pdf":
        return int(_function(kind, "check")(path, data))
    return _quick_count(kind, io.BytesIO(data))


def inspect_bytes(path: Path, data: bytes, options: ParseOptions | None = None) -> int:
    """Pages of a file received as bytes (an upload), or a ParseError when it cannot be what its name
    says: an unsupported suffix, an empty file, binary bytes under a text name, a PDF, Office file
    or image that does not open, or one beyond the resource limits of `options` (parse/limits.py)."""
    kind = file_kind(path)
    if not data:
        raise ParseError(str(path), "file is empty (0 bytes)")
    if kind in _TEXT_KINDS and b"\x00" in data[:65536]:
        raise ParseError(str(path), f"binary content under a {kind} name (a {path.suffix} file is text)")
    options = options or ParseOptions()
    check_limits(path, kind, data, options)
    check = _function(kind, "check")
    pages = int(check(path, data)) if check is not None else 1
    check_pages(path, pages, options)
    return pages


def quick_page_count(path: Path) -> int:
    """Pages of a file without reading it all (for progress); 1 when unknown or a format without pages."""
    kind = _KINDS.get(path.suffix.lower())
    try:
        if kind == "pdf":
            import pymupdf

            with pymupdf.open(path) as doc:
                return max(doc.page_count, 1)
        return _quick_count(kind, path) if kind else 1
    except Exception:  # a broken file: the parser reports it properly later
        return 1


def read_pages(
    path: Path,
    data: bytes,
    options: ParseOptions,
    numbers: Sequence[int],
    on_page: Callable[[int, int], None] | None = None,
) -> Any:
    """Pass 1 of a PDF on some of its 0-based pages: the part of parsing that runs on workers."""
    from hyperfolio.parse.pdf import read_pdf_pages

    with parse_errors(path, "pdf"):
        return read_pdf_pages(path, data, options, numbers, on_page=on_page)


def finish_document(
    path: Path,
    data: bytes,
    options: ParseOptions,
    parts: Sequence[Any] | None = None,
    on_page: Callable[[int, int], None] | None = None,
    content_hash: str | None = None,
) -> Document:
    """The whole `Document`: PDF pages from `parts` read by `read_pages` (read here when None);
    other formats parsed here, whole. `content_hash`: the bytes' sha256 when the caller has it."""
    kind = file_kind(path)
    name = str(path)
    if kind == "pdf":
        from hyperfolio.parse.pdf import assemble_pdf, read_pdf_pages

        with parse_errors(path, kind):
            if parts is None:
                parts = [read_pdf_pages(path, data, options, on_page=on_page)]
            pages, title, meta = assemble_pdf(path, data, parts, options)
    else:
        pages, title, meta = _parser(kind)(path, data, options)
        if kind != "spreadsheet":  # a sheet is one page, bounded by its cells (MAX_TABLE_CELLS) instead
            for message in cap_page_chars(pages, options.max_page_chars):
                log.warning("%s: %s", name, message)
                meta.setdefault("warnings", []).append(message)
    if not any(c.text.strip() and not c.placeholder for p in pages for c in p.chunks) and not any(
        c.image for p in pages for c in p.chunks
    ):
        raise ParseError(name, "no extractable content (no text, tables or images found)")
    digest = content_hash or hashlib.sha256(data).hexdigest()
    return Document(
        doc_id=digest[:16],
        source=str(path.resolve()),
        title=title or file_title(path),
        kind=kind,
        pages=pages,
        content_hash=digest,
        meta=meta,
    )


def parse_file(
    path: str | Path,
    options: ParseOptions | None = None,
    on_page: Callable[[int, int], None] | None = None,
) -> Document:
    """Read one file into a `Document`; raises ParseError/UnsupportedFileError naming file and reason.

    `on_page(done, total)` reports progress through paginated formats (PDF).
    """
    path = Path(path)
    options = options or ParseOptions()
    if path.is_file():  # a file too large is refused before its bytes are read
        check_size(path, path.stat().st_size, options)
    return parse_bytes(path, read_file(path), options, on_page=on_page)


def parse_bytes(
    path: Path, data: bytes, options: ParseOptions, on_page: Callable[[int, int], None] | None = None
) -> Document:
    """A whole document from a file's (decrypted) bytes, once they keep the resource limits."""
    check_limits(path, file_kind(path), data, options)
    return finish_document(path, data, options, on_page=on_page)
