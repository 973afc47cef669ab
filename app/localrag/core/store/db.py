"""Connections to PostgreSQL: the embedded server or any server given by URL."""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
from pgvector.psycopg import register_vector

from localrag.core.errors import StoreUnavailable

log = logging.getLogger("localrag.store")


def mask_password(conninfo: str) -> str:
    """The connection string with any password replaced by ``***`` (URL and key=value forms)."""
    masked = re.sub(r"(password\s*=\s*)(\S+)", r"\1***", conninfo)
    return re.sub(r"(postgres(?:ql)?://[^:/@\s]+:)([^@\s]*)@", r"\1***@", masked)


def connect(conninfo: str, *, autocommit: bool = False, timeout: int = 10) -> psycopg.Connection[Any]:
    """Open a connection with the pgvector type registered.

    Raises:
        StoreUnavailable: the server cannot be reached, or it lacks pgvector.
    """
    try:
        conn = psycopg.connect(conninfo, autocommit=autocommit, connect_timeout=timeout)
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoreUnavailable(f"Cannot connect to PostgreSQL ({mask_password(conninfo)}): {first}") from exc
    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        # The vector type does not exist yet: create the extension once, then register it.
        conn.rollback()
        ensure_pgvector(conn)
        register_vector(conn)
    return conn


def one(cursor: psycopg.Cursor[Any]) -> Any:
    """The row of a query that always returns one (an aggregate, ``INSERT … RETURNING``); none is a bug."""
    row = cursor.fetchone()
    if row is None:
        raise LookupError("the query returned no row")
    return row


def ensure_pgvector(conn: psycopg.Connection[Any]) -> None:
    """Create the extensions the schema needs, with a one-line error if the server lacks pgvector."""
    try:
        with conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        if not available:
            raise StoreUnavailable(
                "This PostgreSQL server does not have the pgvector extension installed "
                "(https://github.com/pgvector/pgvector); install it or use the embedded server."
            ) from exc
        raise StoreUnavailable(f"Cannot enable pgvector: {str(exc).strip().splitlines()[0]}") from exc
    if not conn.autocommit:
        conn.commit()


def server_versions(conn: psycopg.Connection[Any]) -> dict[str, str]:
    row = conn.execute(
        "SELECT current_setting('server_version'), "
        "(SELECT extversion FROM pg_extension WHERE extname = 'vector')"
    ).fetchone()
    assert row is not None
    return {"postgresql": row[0], "pgvector": row[1] or ""}


class ConnectionPool:
    """Idle connections kept for reuse, so that a retrieval does not open one (a few ms) each time.

    A connection is lent to one thread at a time and comes back rolled back to idle; one that raised, closed
    or broke while lent is closed instead. An idle connection is checked with one round trip before it is
    lent, so that one the server dropped (a restart) is replaced rather than failing its next query. ``clear``
    closes the idle ones.
    """

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]], keep: int = 4) -> None:
        self._connect = connect
        self._keep = keep
        self._idle: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is not None and not _alive(conn):
            conn.close()
            conn = None
        if conn is None:
            conn = self._connect()
        try:
            yield conn
        except BaseException:
            conn.close()
            raise
        if conn.closed or conn.broken:
            return
        try:
            conn.rollback()
        except psycopg.Error:
            conn.close()
            return
        with self._lock:
            if len(self._idle) < self._keep:
                self._idle.append(conn)
                return
        conn.close()

    def clear(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _alive(conn: psycopg.Connection[Any]) -> bool:
    if conn.closed or conn.broken:
        return False
    try:
        conn.execute("SELECT 1")
        conn.rollback()
    except psycopg.Error:
        return False
    return True


# The SQL expression of a document's title as shown: one set by hand, else the one found (alias d).
SHOWN_TITLE = "coalesce(nullif(d.meta->'edited'->>'title', ''), d.title)"
