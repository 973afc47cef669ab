"""Errors from the environment (a bad file, a dead server, a missing model) as opposed to bugs: sorted here.

A ``KnownError`` carries a message meant for the user; ``as_known`` turns the environment's own exceptions
(database unreachable, disk full, file unreadable) into one. Anything else is a bug: ``describe`` logs it with
its traceback and gives the person an internal-error line that names the log file.
"""

from __future__ import annotations

import logging


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


class StoreBusy(StoreUnavailable):
    """Every connection the process may use stayed in use too long: the request may be tried again soon."""

    code = "store_busy"


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


class DiskFull(KnownError):
    """A disk (the data folder's, or a temporary one) has no space left."""

    code = "disk_full"


# -- sorting an exception: the environment's problem, or a bug
# ----------------------------------------------------


def as_known(exc: BaseException) -> KnownError | None:
    """The environment problem ``exc`` stands for, with a message for the person; ``None`` when it is a bug.

    Environment problems: a ``KnownError``; the database gone, refusing connections, out of space or
    cancelling a statement that ran too long (``psycopg.OperationalError``); a file or disk that cannot be
    read or written (``OSError``). Everything else (a ``ProgrammingError`` in our SQL, a ``TypeError``...) is
    a bug.
    """
    if isinstance(exc, KnownError):
        return exc
    import errno

    import psycopg

    if isinstance(exc, psycopg.errors.DiskFull) or (isinstance(exc, OSError) and exc.errno == errno.ENOSPC):
        return DiskFull(f"The disk is full: {_first_line(exc)}")
    if isinstance(exc, psycopg.OperationalError):
        return StoreUnavailable(f"The database is not reachable: {_first_line(exc)}")
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        return KnownError(f"{exc.strerror or _first_line(exc)}{where}", code="os_error")
    return None


def internal_error(exc: BaseException) -> str:
    """What the person sees for a bug: what failed, and where its traceback is."""
    from localrag.core import paths

    return f"Internal error ({type(exc).__name__}: {_first_line(exc)}). Details are in {paths.log_file()}."


def describe(exc: BaseException, what: str, logger: logging.Logger | None = None) -> tuple[str, bool]:
    """Sort ``exc`` for the person: ``(message, True)`` for an environment problem (logged as a warning), else
    ``(internal error message, False)`` with the traceback logged as an error. ``what`` names the work that
    failed, for the log."""
    log = logger or logging.getLogger("localrag")
    known = as_known(exc)
    if known is not None:
        log.warning("%s: %s", what, known.message)
        return known.message, True
    log.error("%s failed (a bug)", what, exc_info=exc)
    return internal_error(exc), False


def _first_line(exc: BaseException) -> str:
    if isinstance(exc, KnownError):
        return exc.message
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
