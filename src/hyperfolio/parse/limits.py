"""Resource limits a file must keep before any parser opens it: bytes, pages, pixels, and what its
compressed parts inflate to. A file made to hurt (a decompression bomb, a zip bomb, a gigapixel
image, a 10,000-page PDF) is refused here with one line naming the file, the limit and the setting.

The checks read directories, headers and stream dictionaries, not content: a PDF's Flate stream is
inflated (and thrown away, a megabyte at a time) only when its compressed size could hold more than
the limit, since deflate never expands more than about 1032 times.
"""

from __future__ import annotations

import io
import re
import warnings
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol, TypeVar

from hyperfolio.config import ParseOptions
from hyperfolio.errors import ParseError
from hyperfolio.model import Page
from hyperfolio.parse.guard import parse_errors

MB = 2**20
DEFLATE_MAX_RATIO = 1032  # the most one deflate pass can expand its input
_CHUNK = MB
_PILLOW_PIXELS = re.compile(r"\((\d+) pixels\)")
_FLATE = re.compile(r"/Fl(?:ateDecode)?\b")  # the filter's name, or its abbreviation in inline images


def megabytes(size: int) -> str:
    """A size people read at a glance: '0.4 MB', '3.0 MB', '1,100 MB'."""
    return f"{size / MB:.1f} MB" if size < 10 * MB else f"{size / MB:,.0f} MB"


def file_bytes_limit(options: ParseOptions) -> int:
    return int(options.max_file_mb * MB)


def _past_limit(name: str, found: str, limit: str, setting: str) -> ParseError:
    """Every refusal reads the same: what was found, the limit, and the setting that raises it."""
    return ParseError(name, f"{found}; the limit is {limit} (parse.{setting})")


def check_size(path: Path, size: int, options: ParseOptions) -> None:
    """Refuse a file larger than parse.max_file_mb before its bytes are read."""
    if size > file_bytes_limit(options):
        raise _past_limit(str(path), megabytes(size), f"{options.max_file_mb:g} MB per file", "max_file_mb")


class _HasText(Protocol):
    text: str


_T = TypeVar("_T", bound=_HasText)


def keep_first_chars(items: list[_T], limit: int) -> list[_T]:
    """The leading `items` holding `limit` characters of text, the last one cut to fit (a page's
    segments or chunks under parse.max_page_chars)."""
    kept, budget = [], limit
    for item in items:
        if budget <= 0:
            break
        if len(item.text) > budget:
            item.text = item.text[:budget]
        kept.append(item)
        budget -= len(item.text)
    return kept


def cap_page_chars(pages: list[Page], limit: int) -> list[str]:
    """Keep each page's chunks within `limit` characters (parse.max_page_chars), cutting the chunk that
    crosses it and dropping the rest; returns a warning per page cut. Paginated text formats rarely reach
    it, but one word of a million characters, or a Word file without page breaks, does."""
    warnings_said: list[str] = []
    for page in pages:
        total = sum(len(c.text) for c in page.chunks)
        if total <= limit:
            continue
        page.chunks = keep_first_chars(page.chunks, limit)
        warnings_said.append(
            f"page {page.number} has {total} characters; keeping the first {limit} (parse.max_page_chars)"
        )
    return warnings_said


def check_limits(path: Path, kind: str, data: bytes, options: ParseOptions) -> None:
    """Every limit a file of `kind` has, on its (decrypted) bytes; ParseError names the one broken.
    Damage the header readers trip on (a TIFF frame without dimensions, an unsupported zip version)
    is reported in one line by `parse_errors`, as the parsers' own failures are."""
    check_size(path, len(data), options)
    with parse_errors(path, kind):
        if kind == "pdf":
            _check_pdf(path, data, options)
        elif kind in {"word", "slides", "spreadsheet"}:
            check_archive(path, data, options)
        elif kind == "image":
            _check_image(path, data, options)


def check_pages(path: Path, pages: int, options: ParseOptions) -> None:
    if pages > options.max_pages:
        raise _past_limit(str(path), f"{pages:,} pages", f"{options.max_pages:,} pages per document", "max_pages")


def _too_many_pixels(name: str, said: str, options: ParseOptions) -> ParseError:
    """The refusal of an image of `said` ("6,000 x 4,000 pixels") past parse.max_image_pixels."""
    return _past_limit(name, f"an image of {said}", f"{options.max_image_pixels:,} pixels", "max_image_pixels")


def check_pixels(name: str, width: int, height: int, options: ParseOptions) -> None:
    if width * height > options.max_image_pixels:
        raise _too_many_pixels(name, f"{width:,} x {height:,} pixels", options)


def check_archive(path: Path, data: bytes, options: ParseOptions) -> None:
    """An Office package's members by their declared sizes (zipfile never inflates a member beyond
    its declared size, so the sum bounds what reading them costs)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            members = package.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return  # not a zip: the format check says what it is
    total = sum(m.file_size for m in members)
    limit = int(options.max_archive_mb * MB)
    if total > limit:
        found = f"its parts inflate to {megabytes(total)}"
        raise _past_limit(str(path), found, f"{options.max_archive_mb:g} MB", "max_archive_mb")


def _check_image(path: Path, data: bytes, options: ParseOptions) -> None:
    """Every frame's dimensions, from the headers alone (nothing is decoded)."""
    from PIL import Image

    try:
        with warnings.catch_warnings():  # Pillow warns past its own size; the limit below decides
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:  # Pillow's own guard (twice its warning size) came first
        pixels = _PILLOW_PIXELS.search(str(exc))
        said = f"{int(pixels.group(1)):,} pixels" if pixels else "more pixels than Pillow will open"
        raise _too_many_pixels(str(path), said, options) from None
    except Exception:
        return  # not an image: the image parser says why
    with image:
        frames = getattr(image, "n_frames", 1)
        for index in range(min(frames, 10_000)):
            if index:
                try:
                    image.seek(index)
                except (EOFError, OSError, ValueError):
                    break
            check_pixels(str(path), image.width, image.height, options)


def _check_pdf(path: Path, data: bytes, options: ParseOptions) -> None:
    """Pages, then every Flate stream whose compressed size could inflate past the stream limit."""
    import pymupdf

    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception:
        return  # the PDF parser reports what is wrong with it
    with doc:
        if doc.needs_pass:
            return  # read once decrypted
        check_pages(path, doc.page_count, options)
        limit = int(options.max_stream_mb * MB)
        for xref in range(1, doc.xref_length()):
            try:
                if not doc.xref_is_stream(xref):
                    continue
                _, filters = doc.xref_get_key(xref, "Filter")
            except Exception:
                continue
            layers = len(_FLATE.findall(filters))
            if not layers:
                continue
            raw = doc.xref_stream_raw(xref)
            if layers == 1 and len(raw) * DEFLATE_MAX_RATIO <= limit:
                continue
            size = _inflated_size(raw, layers, limit)
            if size > limit:
                found = f"a compressed stream (object {xref}) inflates past it, a decompression bomb"
                raise _past_limit(str(path), found, f"{options.max_stream_mb:g} MB", "max_stream_mb")


def _inflated_size(raw: bytes, layers: int, limit: int) -> int:
    """Bytes `raw` inflates to through `layers` Flate passes, counted a megabyte at a time and given
    up as soon as it passes `limit`; a damaged stream counts what came out before the damage."""
    chunks: Iterable[bytes] = [raw]
    for _ in range(layers):
        chunks = _inflate(chunks)
    total = 0
    try:
        for chunk in chunks:
            total += len(chunk)
            if total > limit:
                break
    except zlib.error:
        pass
    return total


def _inflate(chunks: Iterable[bytes]) -> Iterator[bytes]:
    decoder = zlib.decompressobj()
    for chunk in chunks:
        pending = chunk
        while pending:
            out = decoder.decompress(pending, _CHUNK)
            if out:
                yield out
            pending = decoder.unconsumed_tail
            if decoder.eof:
                return
