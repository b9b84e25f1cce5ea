"""The one place where a parser's unexpected failure becomes a ParseError.

Libraries raise anything on damaged input: KeyError for a missing relationship, zlib.error from a
corrupt zip member, AssertionError from the standard library's HTML parser, TypeError from an image
header without dimensions, RecursionError on deep nesting, MemoryError on a file declaring absurd
sizes. The package's entry points run parsers inside `parse_errors`, so callers (the CLI, the
service, the ingestion workers) only ever see a Document or a one-line ParseError naming the file
and the reason; fuzzing (tests/parse/test_fuzz_parsers.py) holds every parser to that.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hyperfolio.errors import ParseError

log = logging.getLogger(__name__)

MAX_REASON = 240  # characters: a reason is read on one line, beside the file's name
_WHAT = {
    "pdf": "PDF",
    "markdown": "Markdown file",
    "html": "HTML file",
    "text": "text file",
    "csv": "CSV file",
    "word": "Word file",
    "slides": "PowerPoint file",
    "spreadsheet": "Excel file",
    "image": "image",
}


def one_line(text: str) -> str:
    """`text` on one line of at most MAX_REASON characters: library messages span lines or quote whole parts."""
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1].rstrip() + "…"


def describe(exc: BaseException) -> str:
    """What went wrong, for a user: the message, with the exception's name where the message alone says
    nothing (a KeyError's message is just the key)."""
    message = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    message = one_line(message)
    if not message:
        return type(exc).__name__
    if isinstance(exc, LookupError | TypeError | AttributeError) or " " not in message:
        return one_line(f"{type(exc).__name__}: {message}")
    return message


@contextmanager
def parse_errors(path: Path, kind: str) -> Iterator[None]:
    """Let a ParseError through (made one line if a library's message made it longer); turn any other
    exception into one naming the file and what it was meant to be. KeyboardInterrupt and SystemExit
    are not exceptions of the file and pass untouched."""
    name = str(path)
    what = _WHAT.get(kind, "file")
    try:
        yield
    except ParseError as exc:
        reason = one_line(exc.reason) or "cannot be read"
        if reason != exc.reason:
            raise type(exc)(exc.path, reason) from exc
        raise
    except RecursionError as exc:
        raise ParseError(name, f"not a valid {what}: its structure is nested too deeply to read") from exc
    except MemoryError as exc:
        raise ParseError(name, f"the {what} is too large to read (memory ran out)") from exc
    except Exception as exc:
        log.debug("%s: unexpected failure reading the %s", name, what, exc_info=True)  # the traceback, for a bug report
        raise ParseError(name, one_line(f"not a valid {what}: {describe(exc)}")) from exc
