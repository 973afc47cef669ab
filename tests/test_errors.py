"""Errors are sorted in one place: the environment's problems become the person's message, anything else is a
bug, logged with its traceback and shown as an internal error that names the log."""

from __future__ import annotations

import errno
import logging

import psycopg
import pytest

from localrag.core import paths
from localrag.core.errors import DiskFull, KnownError, StoreUnavailable, as_known, describe


@pytest.mark.parametrize(
    ("exc", "kind", "words"),
    [
        (
            psycopg.OperationalError("connection to server failed: Connection refused"),
            StoreUnavailable,
            "refused",
        ),
        (
            psycopg.errors.QueryCanceled("canceling statement due to statement timeout"),
            StoreUnavailable,
            "timeout",
        ),
        (psycopg.errors.DiskFull("could not extend file"), DiskFull, "disk is full"),
        (OSError(errno.ENOSPC, "No space left on device", "/data/x"), DiskFull, "disk is full"),
        (FileNotFoundError(errno.ENOENT, "No such file or directory", "/gone.pdf"), KnownError, "/gone.pdf"),
        (PermissionError(errno.EACCES, "Permission denied", "/secret.pdf"), KnownError, "Permission denied"),
    ],
)
def test_environment_problems_become_the_persons_message(exc, kind, words):
    known = as_known(exc)
    assert isinstance(known, kind) and words in known.message


@pytest.mark.parametrize(
    "exc",
    [
        psycopg.errors.UndefinedColumn('column "no_such_column" does not exist'),
        psycopg.ProgrammingError("the query has 2 placeholders but 1 parameters were passed"),
        TypeError("unsupported operand"),
        KeyError("title"),
    ],
)
def test_anything_else_is_a_bug_logged_with_its_traceback(exc, caplog):
    assert as_known(exc) is None
    try:
        raise exc
    except Exception as raised:
        with caplog.at_level(logging.ERROR):
            message, known = describe(raised, "searching")
    assert not known
    assert message.startswith("Internal error") and type(exc).__name__ in message
    assert str(paths.log_file()) in message
    record = next(r for r in caplog.records if r.levelno == logging.ERROR)
    assert record.exc_info is not None and record.exc_info[1] is exc
