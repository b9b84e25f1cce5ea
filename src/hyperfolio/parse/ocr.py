"""Tesseract OCR behind a small, failure-tolerant wrapper.

OCR is an enhancement, never a requirement: when Tesseract is missing or a call
fails or times out, we log once and return an empty string so parsing goes on.
"""

from __future__ import annotations

import functools
import io
import logging
import os
import re
import shutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image

log = logging.getLogger(__name__)

# Tesseract's own threading fights with our page-level work on small machines.
os.environ.setdefault("OMP_THREAD_LIMIT", "1")

MIN_SIDE_PX = 24  # smaller images hold no legible text
MAX_PIXELS = 12_000_000  # larger images take too long; callers should downscale


@functools.cache
def tesseract_available() -> bool:
    """True when both pytesseract and the tesseract binary can be used."""
    try:
        import pytesseract
    except ImportError:
        log.warning("pytesseract is not installed; OCR is disabled")
        return False
    cmd = getattr(pytesseract.pytesseract, "tesseract_cmd", "tesseract")
    if shutil.which(cmd) is None:
        log.warning("tesseract binary not found; OCR is disabled (install tesseract-ocr)")
        return False
    return True


DECODE_PIXELS = 150_000_000  # an embedded picture larger than this is kept without its OCR text


def _to_image(data: bytes | Image.Image) -> Image.Image:
    from PIL import Image

    img: Image.Image
    if isinstance(data, bytes | bytearray):
        img = Image.open(io.BytesIO(data))
        if img.width * img.height > DECODE_PIXELS:  # from the header: a picture this size is not decoded
            raise ValueError(f"{img.width:,} x {img.height:,} pixels is more than OCR decodes ({DECODE_PIXELS:,})")
        img.load()
    else:
        img = data
    if img.mode not in ("RGB", "L"):
        img = img.convert("RGB")
    return img


def ocr_image(data: bytes | Image.Image, lang: str = "eng", timeout: float = 20.0) -> str:
    """Recognise the text of an image; "" when OCR is unavailable, fails or times out."""
    if not tesseract_available():
        return ""
    try:
        img = _to_image(data)
    except Exception as exc:  # undecodable image bytes are not worth failing a document for
        log.warning("OCR skipped: cannot decode image (%s)", exc)
        return ""
    w, h = img.size
    if min(w, h) < MIN_SIDE_PX:
        return ""
    import pytesseract

    if w * h > MAX_PIXELS:
        scale = (MAX_PIXELS / (w * h)) ** 0.5
        img = img.resize((max(1, int(w * scale)), max(1, int(h * scale))))
    fast = _ocr_in_process(img, lang)
    if fast is not None:
        return clean_ocr_text(fast)
    try:
        text = pytesseract.image_to_string(img, lang=lang, timeout=timeout)
    except RuntimeError as exc:  # pytesseract signals its timeout this way
        log.warning("OCR timed out after %.0f s (%s)", timeout, exc)
        return ""
    except Exception as exc:
        log.warning("OCR failed: %s", exc)
        return ""
    return clean_ocr_text(text)


def clean_ocr_text(text: str) -> str:
    """What Tesseract read that looks like writing: runs of blank lines closed up, tokens shaped like no
    word or number dropped ("|i", "hs)", "SS|", a chart's gridlines read as letters; a number keeps its
    value when a stray bracket clings to it, "17]" -> "17"), and lines left without a legible token gone.
    MuPDF's in-process Tesseract, the fast path, reports no word confidences, so shape is the test."""
    lines: list[str] = []
    for line in text.splitlines():
        line = " ".join(token for raw in line.split() if (token := legible_token(raw)))
        if not line:
            if lines and lines[-1]:
                lines.append("")
            continue
        alnum = sum(ch.isalnum() for ch in line)
        if alnum < 2 or alnum < 0.4 * len(line):
            continue
        lines.append(line)
    return "\n".join(lines).strip()


# Word shapes: a lower-case or capitalised word (hyphens and apostrophes inside), an acronym, a number
# with its currency, unit or ordinal, a code mixing capitals and digits ("COVID-19", "H1N1", "U.S.").
_WORD_SHAPE = re.compile(
    r"[A-Za-z][a-z]+(?:[-'’][A-Za-z]+)*(?:'s|’s)?|[AaI]|[A-Za-z](?:-[A-Za-z]+)+|[a-z][A-Z][a-z]+"
    r"|[A-Z]{2,}(?:[-'’&][A-Z]+)*(?:'?s)?"
    r"|[-+−]?[$€£¥]?\d(?:[\d,./:–-]*\d)?(?:%|st|nd|rd|th|[A-Za-z]{1,3})?"
    r"|[A-Z][A-Za-z]*(?:[-.]?[A-Z0-9]+)+\.?"
    r"|(?:[A-Z]\.){2,}|[&+=/–—-]"
    r"|[\w.-]+@[\w.-]+\.[a-z]{2,}|(?:https?://|www\.)?[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|gov|edu|int|io|co|uk|de)(?:/\S*)?"
)
_SHORT_WORDS = frozenset("a i am an as at be by do go he if in is it me my no of oh ok on or so to up us vs we".split())
_EDGE = "|[]{}()<>\"'“”‘’`.,;:!?*_~^°"


def legible_token(token: str) -> str:
    """The token with stray marks trimmed from its edges when what is left has a word's or number's
    shape, else "" (a one- or two-letter lower-case fragment is a word only when it is a common one)."""
    core = token.strip(_EDGE)
    if not core:
        return ""
    if not _WORD_SHAPE.fullmatch(core):
        return ""
    if core.isalpha() and core.islower() and len(core) <= 2 and core not in _SHORT_WORDS:
        return ""
    if core.isalpha() and len(core) == 1 and core not in "aAI":
        return ""
    start = token.find(core)
    end = start + len(core)
    lead = token[:start] if token[:start] in ("(", "“", '"', "‘", "$") else ""
    tail = token[end:] if re.fullmatch(r"[)”\"’]?[.,;:!?%]?", token[end:]) else ""
    return f"{lead}{core}{tail}"


@functools.cache
def _tessdata() -> str | None:
    """Where MuPDF's built-in Tesseract finds its language files, if anywhere."""
    try:
        import pymupdf

        return pymupdf.get_tessdata() or None
    except Exception:
        return None


def _ocr_in_process(img: Image.Image, lang: str) -> str | None:
    """OCR through MuPDF's linked Tesseract: ~5x faster than spawning the binary per image.

    Returns None (caller falls back to pytesseract) when that engine is unusable. The
    image is already size-capped, which is what bounds its run time.
    """
    tessdata = _tessdata()
    if tessdata is None:
        return None
    try:
        import pymupdf

        buffer = io.BytesIO()
        img.save(buffer, format="PNG")
        pix = pymupdf.Pixmap(buffer.getvalue())
        if pix.alpha:
            pix = pymupdf.Pixmap(pix, 0)
        with pymupdf.open("pdf", pix.pdfocr_tobytes(language=lang, tessdata=tessdata)) as doc:
            blocks = [b for page in doc for b in page.get_text("blocks", sort=True) if b[6] == 0]
            return "\n".join(" ".join(b[4].split()) for b in blocks)
    except Exception as exc:
        log.debug("in-process OCR unavailable (%s); using pytesseract", exc)
        return None


def ocr_textpage(page: object, dpi: int, lang: str = "eng") -> object | None:
    """A PyMuPDF TextPage built by OCR of the rendered page, keeping word positions.

    Layout survives (blocks, lines, font sizes estimated from glyph height), so OCR'd
    pages go through the same heading and chunking logic as born-digital ones.
    None when OCR cannot run.
    """
    if not tesseract_available() or _tessdata() is None:
        return None
    try:
        return page.get_textpage_ocr(dpi=dpi, full=True, language=lang, tessdata=_tessdata())  # type: ignore[attr-defined]
    except Exception as exc:
        log.warning("page OCR failed: %s", exc)
        return None
