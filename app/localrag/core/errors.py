"""Errors from the environment (a bad file, a dead server, a missing model) as opposed to bugs.

A ``KnownError`` carries a message meant for the user; anything else is a bug and is logged with its
traceback.
"""

from __future__ import annotations


class KnownError(Exception):
    """An environment problem with a one-line explanation for the user."""

    code = "error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else self.code


class StoreUnavailable(KnownError):
    """The database cannot be reached or is not usable (for example, pgvector is missing)."""

    code = "store_unavailable"


class ModelMissing(KnownError):
    """A model file is missing or cannot be loaded."""

    code = "model_missing"


class BadDocument(KnownError):
    """A file that cannot be indexed. ``code`` says why.

    Codes: ``encrypted``, ``corrupt``, ``empty``, ``unsupported``, ``too_large``, ``needs_ocr``,
    ``unreadable``.
    """

    code = "corrupt"


class AlreadyRunning(KnownError):
    """Another Local RAG process owns this data folder."""

    code = "already_running"
