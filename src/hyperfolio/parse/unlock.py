"""Password-protected PDFs and Office files: turning their bytes into plain bytes the parsers read.

Decryption happens once, in the process that read the file; parsers and workers only ever see the
plain bytes. The password lives in memory for the call and is never written, logged or put in an
error message. A file's identity stays the hash of its own (encrypted) bytes, chosen by the caller.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Protocol

from hyperfolio.errors import ParseError

__all__ = [
    "MAX_ATTEMPTS",
    "NEEDED",
    "OFFICE_SUFFIXES",
    "OLE_MAGIC",
    "Password",
    "PasswordPrompt",
    "WrongPassword",
    "is_encrypted",
    "office_encrypted",
    "read_unlocked",
    "unlock",
    "unlock_file",
]

NEEDED = "encrypted: a password is needed (hyperfolio add --password, or Collection.add(..., password=...))"
MAX_ATTEMPTS = 3  # answers a prompt may give for one file before it fails
OFFICE_SUFFIXES = frozenset({".docx", ".docm", ".pptx", ".pptm", ".xlsx", ".xlsm"})
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # an encrypted OOXML file is an OLE container, not a zip


class PasswordPrompt(Protocol):
    """Asked for each encrypted file; `attempt` is how many wrong passwords it was already given (0 the
    first time), so a prompt can say "wrong password, try again". None gives the file up."""

    def __call__(self, path: Path, attempt: int) -> str | None: ...


Password = str | PasswordPrompt  # one password tried on every encrypted file, or a prompt per file


class WrongPassword(ParseError):
    """The password given does not open the file (a prompt may ask again)."""


def is_encrypted(path: Path, data: bytes) -> bool:
    """Whether the file needs a password before it can be read: a PDF with a user password, or an
    encrypted .docx/.pptx/.xlsx. A PDF whose only password is the owner's reads without one: False.
    A file too broken to tell is not encrypted here; its parser reports what is wrong with it."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        if b"/Encrypt" not in data:  # every encrypted PDF names its encryption dictionary in the trailer
            return False
        import pymupdf

        try:
            with pymupdf.open(stream=data, filetype="pdf") as doc:
                return bool(doc.needs_pass)
        except Exception:
            return False
    return suffix in OFFICE_SUFFIXES and office_encrypted(data)


def office_encrypted(data: bytes) -> bool:
    """Whether the bytes are an OLE container holding an encrypted Office package (rather than a zip
    package, or an old binary .doc/.xls/.ppt)."""
    if not data.startswith(OLE_MAGIC):
        return False
    try:
        import msoffcrypto

        return bool(msoffcrypto.OfficeFile(io.BytesIO(data)).is_encrypted())
    except Exception:  # msoffcrypto cannot tell: look for the stream every encrypted package carries
        return b"E\x00n\x00c\x00r\x00y\x00p\x00t\x00i\x00o\x00n\x00I\x00n\x00f\x00o" in data


def unlock(path: Path, data: bytes, password: str) -> bytes:
    """The plain bytes of an encrypted file; WrongPassword when `password` does not open it."""
    if path.suffix.lower() == ".pdf":
        return _unlock_pdf(str(path), data, password)
    if path.suffix.lower() in OFFICE_SUFFIXES:
        return _unlock_office(str(path), data, password)
    raise ParseError(str(path), f"{path.suffix or 'this'} files are not decrypted; only PDF and Office files are")


def unlock_file(path: Path, data: bytes, password: Password | None) -> bytes:
    """`unlock` with what the caller gave: a string is tried once; a prompt is asked until it gives a
    password that opens the file, gives up (None) or has given MAX_ATTEMPTS wrong ones."""
    name = str(path)
    if password is None:
        raise ParseError(name, NEEDED)
    if isinstance(password, str):
        return unlock(path, data, password)
    for attempt in range(MAX_ATTEMPTS):
        given = password(path, attempt)
        if given is None:
            raise ParseError(name, NEEDED)
        try:
            return unlock(path, data, given)
        except WrongPassword:
            continue
    raise WrongPassword(name, f"wrong password ({MAX_ATTEMPTS} tries)")


def read_unlocked(path: Path, password: Password | None = None) -> bytes:
    """The bytes the parsers read from `path`: its own, or decrypted when it is encrypted."""
    from hyperfolio.parse import read_file  # late: the package may one day import this module

    data = read_file(path)
    return unlock_file(path, data, password) if is_encrypted(path, data) else data


def _unlock_pdf(name: str, data: bytes, password: str) -> bytes:
    """Authenticate and write the whole document again without encryption. Nothing is dropped: the
    write keeps every object (page labels, outline, metadata, annotations, forms), only decrypted."""
    import pymupdf

    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:
        raise ParseError(name, f"not a valid PDF: {exc}") from None
    with doc:
        if not doc.needs_pass:
            return data
        if not doc.authenticate(password):
            raise WrongPassword(name, "wrong password")
        # Ask nothing of `needs_pass` from here on: MuPDF answers it by authenticating with an empty
        # password, which replaces the key just derived, and the pages would be written empty.
        if doc.is_repaired and b"%%EOF" not in data[-2048:]:  # a clean rewrite would hide the truncation
            raise ParseError(name, "not a valid PDF: the file is truncated (no end-of-file marker)")
        try:
            return bytes(doc.tobytes(encryption=pymupdf.mupdf.PDF_ENCRYPT_NONE))
        except Exception as exc:
            raise ParseError(name, f"cannot decrypt this PDF: {type(exc).__name__}: {exc}") from None


def _unlock_office(name: str, data: bytes, password: str) -> bytes:
    """Decrypt an OOXML package with msoffcrypto-tool; the password is checked before decrypting."""
    import msoffcrypto
    from msoffcrypto import exceptions

    try:
        office = msoffcrypto.OfficeFile(io.BytesIO(data))
        if not office.is_encrypted():
            return data
        if not password:  # msoffcrypto reads an empty password as no key at all
            raise WrongPassword(name, "wrong password")
        office.load_key(password=password, verify_password=True)
        out = io.BytesIO()
        office.decrypt(out)
    except ParseError:
        raise
    except exceptions.InvalidKeyError:
        raise WrongPassword(name, "wrong password") from None
    except Exception as exc:  # an unsupported scheme or a damaged container: one line, no password in it
        raise ParseError(name, f"cannot decrypt this file: {type(exc).__name__}: {exc}") from None
    return out.getvalue()
