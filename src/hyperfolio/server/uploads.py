"""Uploaded files: checked as they arrive (type, size, pages, password), then kept under the collection.

A file is refused with the status that says why; an upload is refused only when none of its files
can be indexed. Names sent by clients are shown to people, never used as paths.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

from fastapi import UploadFile

from hyperfolio.collection import Collection
from hyperfolio.errors import ParseError
from hyperfolio.parse import SUPPORTED_SUFFIXES, inspect_bytes
from hyperfolio.parse.unlock import WrongPassword, is_encrypted, unlock
from hyperfolio.server.config import ServerConfig
from hyperfolio.server.jobs import PASSWORD_NEEDED, Upload
from hyperfolio.server.problems import Problem

UPLOAD_DIR = "uploads"
READ_BLOCK = 1 << 20
MAX_PASSWORD = 1024  # characters; PDF and Office passwords are far shorter


def receive_all(
    col: Collection, files: list[UploadFile], config: ServerConfig, password: str | None
) -> tuple[list[Upload], list[dict[str, Any]]]:
    """The files that can be indexed, stored, and the others with why; none can: the upload is refused."""
    if not files:
        raise Problem(400, "no files in the upload (send multipart/form-data with 'files' parts)")
    accepted: list[Upload] = []
    rejected: list[dict[str, Any]] = []
    for part in files:
        try:
            accepted.append(receive(col, part, config, password))
        except Problem as exc:
            shown = shown_name(part.filename)
            rejected.append({"name": shown, "status": exc.status, "reason": exc.detail, **exc.extra})
    if not accepted:
        worst = max(r["status"] for r in rejected)
        first = rejected[0]
        raise Problem(worst, f"{first['name']}: {first['reason']}", rejected=rejected)
    return accepted, rejected


def receive(col: Collection, part: UploadFile, config: ServerConfig, password: str | None) -> Upload:
    """Check and store one uploaded file under the collection's uploads folder, in a fresh directory.
    An encrypted file is stored as it came (its identity is its own bytes) and checked decrypted."""
    shown = shown_name(part.filename)
    suffix = Path(safe_name(shown)).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        supported = ", ".join(SUPPORTED_SUFFIXES)
        raise Problem(415, f"unsupported file type {suffix or '(no suffix)'!r}; supported: {supported}")
    limit = int(config.max_upload_mb * (1 << 20))
    chunks, size = [], 0
    while block := part.file.read(READ_BLOCK):
        size += len(block)
        if size > limit:
            raise Problem(413, f"larger than the upload limit of {config.max_upload_mb:g} MB")
        chunks.append(block)
    data = b"".join(chunks)
    target = col.path / UPLOAD_DIR / uuid.uuid4().hex / safe_name(shown)
    encrypted = is_encrypted(target, data)
    try:
        pages = inspect_bytes(target, unlocked(target, data, password) if encrypted else data, col.settings.parse)
    except ParseError as exc:
        raise Problem(415 if "unsupported" in exc.reason else 422, exc.reason) from None
    if pages > config.max_pages:
        raise Problem(413, f"{pages} pages; the limit is {config.max_pages} pages per document")
    target.parent.mkdir(parents=True)
    target.write_bytes(data)
    return Upload(shown, target, pages, encrypted)


def unlocked(target: Path, data: bytes, password: str | None) -> bytes:
    """The decrypted bytes, so a missing or wrong password is refused with the upload rather than
    found later by the job; `encrypted` in the refusal tells a client that a password would help."""
    if not password:
        raise Problem(422, PASSWORD_NEEDED, encrypted=True)
    try:
        return unlock(target, data, password)
    except WrongPassword:
        raise Problem(422, "wrong password", encrypted=True) from None


def discard(collection_dir: Path, source: str) -> None:
    """Delete the service's copy of an uploaded file once its document is removed (never a file the
    collection indexed from elsewhere)."""
    path = Path(source)
    if path.parent.parent == (collection_dir / UPLOAD_DIR).resolve() and path.is_file():
        shutil.rmtree(path.parent, ignore_errors=True)


def shown_name(filename: str | None) -> str:
    """The uploaded file's own name, reduced to its last part: shown to people, never used as a path."""
    base = (filename or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    return base[:200] or "upload"


def safe_name(shown: str) -> str:
    """A file name made only of safe characters that keeps the suffix (parsers dispatch on it)."""
    stem, dot, suffix = shown.rpartition(".")
    if not dot:
        stem, suffix = shown, ""
    clean = "".join(c if c.isalnum() or c in "-_ " else "_" for c in stem).strip(" _")[:80] or "document"
    return f"{clean}.{suffix.lower()}" if suffix else clean
