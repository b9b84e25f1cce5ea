"""Images (.png, .jpg/.jpeg, .tif/.tiff) via Pillow: one page per image, made searchable by OCR.

A photographed or scanned page is a page, so each image (each frame of a multi-page TIFF)
becomes one, sized in points at the image's resolution (72 dpi when it records none). Its
OCR text is chunked with the boxes Tesseract reports, so answers point at the paragraph on
the picture, as they do on a scanned PDF page. Without Tesseract the picture is still
indexed, as an image chunk, and the document records that its text could not be read.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hyperfolio.config import ParseOptions
from hyperfolio.errors import ParseError
from hyperfolio.model import BBox, Page
from hyperfolio.parse.chunking import Block, blocks_to_chunks, union_bbox
from hyperfolio.parse.ocr import MAX_PIXELS, MIN_SIDE_PX, clean_ocr_text, tesseract_available
from hyperfolio.parse.office_common import one_line

if TYPE_CHECKING:
    from PIL import Image

log = logging.getLogger(__name__)

_FORMATS = {"PNG": "png", "JPEG": "jpg", "MPO": "jpg", "TIFF": "tiff"}
OCR_UNAVAILABLE = "OCR unavailable (Tesseract not installed): the image is indexed without its text"
_OCR_TIMEOUT = 60.0  # seconds per page: a full page of small print takes a few


def open_image(path: Path, data: bytes) -> Image.Image:
    """The image with its first frame decoded, or a ParseError saying why it cannot be read."""
    from PIL import Image, UnidentifiedImageError

    name = str(path)
    try:
        img = Image.open(io.BytesIO(data))
    except UnidentifiedImageError as exc:
        kind = path.suffix.lstrip(".").upper() or "image"
        raise ParseError(name, f"not a valid image: the file is corrupt or not a {kind} image") from exc
    except Image.DecompressionBombError as exc:
        raise ParseError(name, f"the image is too large to read safely: {one_line(exc)}") from exc
    except Exception as exc:
        raise ParseError(name, f"not a valid image: {one_line(exc)}") from exc
    if img.format not in _FORMATS:
        raise ParseError(name, f"not a valid image: a {img.format} file, not PNG, JPEG or TIFF")
    try:
        img.load()
    except Image.DecompressionBombError as exc:
        raise ParseError(name, f"the image is too large to read safely: {one_line(exc)}") from exc
    except Exception as exc:  # truncated or damaged pixel data
        raise ParseError(name, f"not a valid image: the image data is truncated or damaged ({one_line(exc)})") from exc
    return img


def _frame_count(img: Image.Image) -> int:
    return max(int(getattr(img, "n_frames", 1)), 1) if img.format == "TIFF" else 1


def check_image(path: Path, data: bytes) -> int:
    """Validate an upload; its pages are its frames (TIFF) or one."""
    return _frame_count(open_image(path, data))


def count_frames(source: Path | io.BytesIO) -> int:
    """Pages of an image without decoding it (for progress); 1 when unreadable."""
    try:
        from PIL import Image

        with Image.open(source) as img:
            return _frame_count(img)
    except Exception:
        return 1


def _frames(img: Image.Image) -> Iterator[tuple[Image.Image, tuple[float, float]]]:
    """Each page of the file with its resolution: every frame of a TIFF (each may have its own);
    only the first of a JPEG (the others are previews)."""
    from PIL import ImageOps

    for index in range(_frame_count(img)):
        img.seek(index)
        dpi = _dpi(img.info)
        frame = img.copy()
        yield (ImageOps.exif_transpose(frame) or frame), dpi  # phone photos store their rotation apart


def _dpi(info: dict[str | tuple[int, int], Any]) -> tuple[float, float]:
    """An image's resolution; 72 (a pixel a point) when unset or implausible."""
    raw = info.get("dpi")
    try:
        x, y = (float(raw[0]), float(raw[1])) if raw else (72.0, 72.0)
    except (TypeError, ValueError, IndexError):
        x, y = 72.0, 72.0
    return (x if 10 <= x <= 4800 else 72.0, y if 10 <= y <= 4800 else 72.0)


def _for_ocr(frame: Image.Image) -> Image.Image:
    """Flatten onto white (transparent pixels would read as black) and reduce to RGB or grey."""
    from PIL import Image

    if frame.mode in ("RGB", "L"):
        return frame
    if frame.mode in ("RGBA", "LA", "PA") or (frame.mode == "P" and "transparency" in frame.info):
        rgba = frame.convert("RGBA")
        white = Image.new("RGB", rgba.size, "white")
        white.paste(rgba, mask=rgba.getchannel("A"))
        return white
    if frame.mode in ("I;16", "I;16B", "I;16L", "I"):
        return frame.point(lambda v: v / 256).convert("L")
    return frame.convert("RGB")


def ocr_paragraphs(frame: Image.Image, lang: str, to_points: tuple[float, float]) -> list[tuple[str, BBox]]:
    """Tesseract's paragraphs with their boxes in points (`to_points`: points per pixel, x and y).

    Words are grouped as Tesseract grouped them (block, paragraph, line); lines of noise it
    reads from graphics are dropped. Raises on OCR failure so the caller can record it.
    """
    import pytesseract

    img = _for_ocr(frame)
    w, h = img.size
    if min(w, h) < MIN_SIDE_PX:
        return []
    shrink = 1.0
    if w * h > MAX_PIXELS:  # larger images take too long: read a smaller copy, scale boxes back
        shrink = (MAX_PIXELS / (w * h)) ** 0.5
        img = img.resize((max(1, int(w * shrink)), max(1, int(h * shrink))))
    data = pytesseract.image_to_data(img, lang=lang, output_type=pytesseract.Output.DICT, timeout=_OCR_TIMEOUT)
    sx, sy = to_points[0] / shrink, to_points[1] / shrink
    lines: dict[tuple[int, int, int], list[tuple[str, BBox]]] = {}
    for i, word in enumerate(data["text"]):
        word = (word or "").strip()
        if not word or float(data["conf"][i]) < 0:
            continue
        left, top, width, height = (int(data[k][i]) for k in ("left", "top", "width", "height"))
        box = (left * sx, top * sy, (left + width) * sx, (top + height) * sy)
        key = (int(data["block_num"][i]), int(data["par_num"][i]), int(data["line_num"][i]))
        lines.setdefault(key, []).append((word, box))
    paragraphs: dict[tuple[int, int], list[tuple[str, BBox | None]]] = {}
    for (block, par, _), words in lines.items():
        text = clean_ocr_text(" ".join(word for word, _ in words))
        if text:
            paragraphs.setdefault((block, par), []).append((text, union_bbox([box for _, box in words])))
    out: list[tuple[str, BBox]] = []
    for parts in paragraphs.values():
        merged = union_bbox([b for _, b in parts])
        if merged is not None:
            out.append((" ".join(text for text, _ in parts), merged))
    return out


def _png(frame: Image.Image) -> bytes:
    buffer = io.BytesIO()
    frame.save(buffer, format="PNG")
    return buffer.getvalue()


def parse_image(path: Path, data: bytes, options: ParseOptions) -> tuple[list[Page], str | None, dict[str, Any]]:
    """One page per image or TIFF frame: the picture as an image chunk, its OCR text as boxed text chunks."""
    img = open_image(path, data)
    fmt = _FORMATS[str(img.format)]
    frames = _frame_count(img)
    use_ocr = options.ocr and tesseract_available()
    warnings: list[str] = []
    pages: list[Page] = []
    try:
        for number, (frame, dpi) in enumerate(_frames(img), 1):
            per_point = (72.0 / dpi[0], 72.0 / dpi[1])
            width, height = frame.size[0] * per_point[0], frame.size[1] * per_point[1]
            # a single PNG or JPEG is kept as it came; TIFF frames become PNG, which any viewer shows
            picture = data if fmt != "tiff" and frames == 1 else _png(frame)
            paragraphs: list[tuple[str, BBox]] = []
            read = False
            if use_ocr:
                try:
                    paragraphs = ocr_paragraphs(frame, options.ocr_language, per_point)
                    read = True
                except Exception as exc:  # a timeout or a Tesseract failure costs the text, not the page
                    warnings.append(f"page {number}: OCR failed ({one_line(exc)})")
                    log.warning("%s: page %d: OCR failed: %s", path, number, one_line(exc))
            where = path.name if frames == 1 else f"{path.name}, frame {number} of {frames}"
            ocr_text = "\n".join(text for text, _ in paragraphs)
            blocks = [
                Block(
                    modality="image",
                    text=f"[image {where}]",
                    bbox=(0.0, 0.0, width, height),
                    ocr_text=ocr_text or None,
                    image=picture,
                    image_ext="png" if picture is not data else fmt,
                )
            ]
            blocks += [Block(modality="text", text=text, bbox=box, meta={"ocr": True}) for text, box in paragraphs]
            pages.append(
                Page(
                    number=number,
                    chunks=blocks_to_chunks(number, blocks, options),
                    width=width,
                    height=height,
                    ocr=read,
                    vision_dominant=len(ocr_text) < options.min_page_chars,
                )
            )
    except ParseError:
        raise
    except Exception as exc:  # a frame that does not decode past the first
        raise ParseError(str(path), f"not a valid image: {one_line(exc)}") from exc
    finally:
        img.close()
    meta: dict[str, Any] = {"format": fmt, "frames": frames}
    if options.ocr and not use_ocr:
        log.warning("%s: %s", path, OCR_UNAVAILABLE)
        meta["ocr"] = "unavailable"
        warnings.insert(0, OCR_UNAVAILABLE)
    if warnings:
        meta["warnings"] = warnings
    return pages, None, meta
