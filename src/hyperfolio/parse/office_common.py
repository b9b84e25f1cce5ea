"""Machinery shared by the Word, PowerPoint, spreadsheet and image parsers.

Office files are zip packages, and an encrypted one is an OLE container instead; both are
told apart here so every parser reports the same one-line reasons. Embedded pictures become
image blocks the same way in every format, and table header detection is one rule for all.
"""

from __future__ import annotations

import io
import logging
import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hyperfolio.config import ParseOptions
from hyperfolio.errors import ParseError
from hyperfolio.model import BBox
from hyperfolio.parse.chunking import Block, rectangular, table_text
from hyperfolio.parse.ocr import ocr_image, tesseract_available
from hyperfolio.parse.unlock import OLE_MAGIC, office_encrypted

log = logging.getLogger(__name__)

EMU_PER_POINT = 12_700  # Office measures in English Metric Units: 914,400 per inch, 72 points per inch
OCR_UNAVAILABLE = "OCR unavailable (Tesseract not installed): pictures are indexed without their text"
_MAX_REASON = 200
_NUMBER = re.compile(r"^[-+(]?[$€£¥]?\s*[-+]?\d[\d,.\s]*%?\)?$")
_SAFE_EXT = re.compile(r"^[a-z0-9]{1,5}$")
_MAIN_PARTS = {  # what each format's main part declares in [Content_Types].xml
    "Word": b"wordprocessingml.document.main+xml",
    "PowerPoint": b"presentationml.presentation.main+xml",
    "Excel": b"spreadsheetml.sheet.main+xml",
}
_DESCRIBED = {
    "Word": "a Word document (.docx)",
    "PowerPoint": "a PowerPoint deck (.pptx)",
    "Excel": "an Excel workbook (.xlsx)",
}
_STREAM_REPR = re.compile(r"(file )?'?<_io\.BytesIO object at 0x[0-9a-f]+>'?\s*")
_YEAR = re.compile(r"^(19|20)\d\d$")  # a year heads a column more often than it is a value


def emu_to_points(emu: int | float | None) -> float:
    return (emu or 0) / EMU_PER_POINT


def one_line(exc: BaseException) -> str:
    """An exception as a short single line: library messages can span lines or embed XML."""
    text = " ".join(_STREAM_REPR.sub("", str(exc)).split())
    if not text:
        return type(exc).__name__
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 1].rstrip() + "…"


def check_package(path: Path, data: bytes, what: str) -> None:
    """Refuse what is not a readable Office package, with the reason a user can act on.

    `what` names the format ("Word", "PowerPoint", "Excel"). Encrypted files come first because
    they are zip packages wrapped in an OLE container: "not a zip" would send the user the wrong way.
    """
    name = str(path)
    if data.startswith(OLE_MAGIC):
        if office_encrypted(data):
            raise ParseError(name, "encrypted; a password is needed to read it")
        old = {"Word": ".doc", "PowerPoint": ".ppt", "Excel": ".xls"}.get(what, "binary")
        raise ParseError(
            name, f"not a valid {what} file: an old binary Office ({old}) file; save it as {path.suffix.lower()}"
        )
    if not data.startswith(b"PK"):
        raise ParseError(name, f"not a valid {what} file: not a zip package (the file is corrupt or not a {what} file)")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            types = package.read("[Content_Types].xml") if "[Content_Types].xml" in package.namelist() else None
    except zipfile.BadZipFile as exc:
        raise ParseError(name, f"not a valid {what} file: the zip package is truncated or damaged") from exc
    except (OSError, ValueError, EOFError, RuntimeError) as exc:
        raise ParseError(name, f"not a valid {what} file: damaged zip package ({one_line(exc)})") from exc
    if types is None:
        raise ParseError(name, f"not a valid {what} file: a zip archive without Office content")
    found = [family for family, marker in _MAIN_PARTS.items() if marker in types]
    if found and what not in found:  # another Office format under this name: say which, so it can be renamed
        raise ParseError(name, f"not a valid {what} file: it is {_DESCRIBED[found[0]]}")


@contextmanager
def reading(path: Path, what: str, doing: str = "not a valid") -> Iterator[None]:
    """Turn any library failure inside the block into a one-line ParseError naming the format.

    Libraries raise KeyError, lxml syntax errors, zip errors and more on damaged parts;
    users need the file and a reason, never a traceback.
    """
    try:
        yield
    except ParseError:
        raise
    except MemoryError as exc:
        raise ParseError(str(path), f"the {what} file is too large to read") from exc
    except Exception as exc:
        log.debug("%s: %s file failed to read", path, what, exc_info=True)  # the traceback, for a bug report
        raise ParseError(str(path), f"{doing} {what} file: {one_line(exc)}") from exc


def safe_ext(ext: str) -> str:
    """An image suffix safe to use in a file name (the collection stores pictures under it)."""
    ext = ext.lower().lstrip(".")
    ext = {"jpeg": "jpg", "tif": "tiff"}.get(ext, ext)
    return ext if _SAFE_EXT.match(ext) else "bin"


def ocr_wanted(options: ParseOptions) -> bool:
    return options.ocr and options.ocr_images


def picture_block(
    image: bytes,
    ext: str,
    options: ParseOptions,
    section_path: list[str],
    name: str,
    caption: str | None = None,
    bbox: BBox | None = None,
) -> Block:
    """An embedded picture as an image block: its text is the caption plus OCR, so figures are searchable.

    `name` stands in for the text when neither exists, so the chunk still says what it is.
    """
    ocr_text = ocr_image(image, options.ocr_language, timeout=15) if ocr_wanted(options) else ""
    parts = [p for p in (caption, ocr_text) if p]
    return Block(
        modality="image",
        text="\n".join(parts) if parts else f"[picture {name}]",
        bbox=bbox,
        section_path=list(section_path),
        caption=caption,
        ocr_text=ocr_text or None,
        image=image,
        image_ext=safe_ext(ext),
    )


def ocr_missing(options: ParseOptions, pictures: int) -> bool:
    """Whether pictures were indexed without the OCR the options asked for (recorded in document meta)."""
    return pictures > 0 and ocr_wanted(options) and not tesseract_available()


def is_number(cell: str) -> bool:
    return bool(_NUMBER.match(cell.strip())) and any(ch.isdigit() for ch in cell)


def header_rows(rows: list[list[str]], marked: bool = False) -> int:
    """1 when the first row of a table reads as its header, else 0.

    `marked`: the format flags the row (Word's repeat-header, bold cells, PowerPoint's first-row
    style). Otherwise a header is a row of short labels, none of them numbers, above either a
    numeric column or rows that are not all labels themselves.
    """
    if len(rows) < 2:
        return 0
    first = [c.strip() for c in rows[0]]
    filled = [c for c in first if c]
    if not filled or len(filled) * 2 < len(first) or any(is_number(c) and not _YEAR.match(c) for c in filled):
        return 0
    if marked:
        return 1
    if any(len(c) > 60 or c.endswith((".", ";")) for c in filled):
        return 0
    body = rows[1:]
    for col in range(len(first)):
        values = [r[col].strip() for r in body if col < len(r) and r[col].strip()]
        if values and sum(is_number(v) for v in values) * 2 >= len(values):
            return 1
    return 1 if len(set(filled)) == len(filled) and len(filled) >= 2 else 0


def table_block(
    rows: list[list[str]],
    section_path: list[str],
    marked_header: bool = False,
    caption: str | None = None,
    bbox: BBox | None = None,
) -> Block | None:
    """A table block with rectangular cells, or None when no cell holds anything."""
    if not any(cell.strip() for row in rows for cell in row):
        return None
    rows, cut = rectangular(rows)
    if cut:
        log.warning(
            "a table of %d columns keeps its first %d rows (%d more are not indexed)", len(rows[0]), len(rows), cut
        )
    return Block(
        modality="table",
        text=table_text(rows, caption),
        bbox=bbox,
        section_path=list(section_path),
        table=rows,
        table_header_rows=header_rows(rows, marked_header),
        caption=caption,
    )
