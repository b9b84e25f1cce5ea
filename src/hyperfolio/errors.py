"""Exceptions that name what failed and why, so a user can act on them."""

from __future__ import annotations


class HyperfolioError(Exception):
    """Base of every error this package raises on purpose."""


class ConfigError(HyperfolioError, ValueError):
    """A setting is unknown or has a value of the wrong kind; the message names where it was set."""


class ParseError(HyperfolioError):
    """A file could not be turned into a document."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason

    def __reduce__(self) -> tuple:  # travels back intact from worker processes and Ray tasks
        return (type(self), (self.path, self.reason))


class UnsupportedFileError(ParseError):
    """The file's type is not one hyperfolio reads."""


class StoreError(HyperfolioError):
    """The collection's storage refused an operation."""


class DuplicateDocument(StoreError):
    """The same content was written meanwhile (by another process): carry on from what it wrote."""


class DocumentNotFound(HyperfolioError):
    def __init__(self, ref: str) -> None:
        super().__init__(f"no document matches {ref!r} in this collection")
        self.ref = ref

    def __reduce__(self) -> tuple:
        return (type(self), (self.ref,))


class ConversationNotFound(HyperfolioError):
    """No stored conversation by this id for this owner (another owner's is not told apart from none)."""

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"no conversation {conversation_id!r} in this collection")
        self.conversation_id = conversation_id

    def __reduce__(self) -> tuple:
        return (type(self), (self.conversation_id,))
