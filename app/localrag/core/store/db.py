"""Connections to PostgreSQL: the embedded server or any server given by URL."""

from __future__ import annotations

import contextlib
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import psycopg_pool
from pgvector.psycopg import register_vector

from localrag.core.errors import KnownError, StoreBusy, StoreUnavailable

log = logging.getLogger("localrag.store")

CONNECT_TIMEOUT_S = 10
# How long a new connection waits for a slot of a server that has none free (each process is capped, but the
# window, ``serve`` and any number of commands share one server).
FULL_WAIT_S = 10.0
# How long a borrower waits for a free pooled connection before ``StoreBusy``.
WAIT_S = 3.0
CLOSE_WAIT_S = 5.0


def mask_password(conninfo: str) -> str:
    """The connection string with any password replaced by ``***`` (URL and key=value forms)."""
    masked = re.sub(r"(password\s*=\s*)(\S+)", r"\1***", conninfo)
    return re.sub(r"(postgres(?:ql)?://[^:/@\s]+:)([^@\s]*)@", r"\1***@", masked)


def connect(
    conninfo: str, *, autocommit: bool = False, timeout: int = CONNECT_TIMEOUT_S
) -> psycopg.Connection[Any]:
    """Open a connection with the pgvector type registered. A server with no connection slot free ("too many
    clients") is asked again for up to ``FULL_WAIT_S``.

    Raises:
        StoreUnavailable: the server cannot be reached, or it lacks pgvector.
    """
    deadline = time.monotonic() + FULL_WAIT_S
    while True:
        try:
            conn = psycopg.connect(conninfo, autocommit=autocommit, connect_timeout=timeout)
            break
        except psycopg.Error as exc:
            if _server_full(exc) and time.monotonic() < deadline:
                time.sleep(0.05 + random.random() * 0.1)
                continue
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StoreUnavailable(
                f"Cannot connect to PostgreSQL ({mask_password(conninfo)}): {first}"
            ) from exc
    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        # The vector type does not exist yet: create the extension once, then register it.
        conn.rollback()
        ensure_pgvector(conn)
        register_vector(conn)
    if not conn.autocommit:
        conn.rollback()  # registering read the type's oid: leave the connection idle
    return conn


def _server_full(exc: psycopg.Error) -> bool:
    return getattr(exc, "sqlstate", None) == "53300" or "too many clients" in str(exc)


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
    """Connections kept open for reuse (``psycopg_pool``), and capped, so that a process never opens more than
    its share of the server's connections. A connection the server refused (full, restarting) is tried again
    in the background while borrowers wait.

    ``connection()`` lends one to one thread at a time; it comes back rolled back to idle, and one that
    raised, closed or broke while lent is closed instead. An idle connection is checked with one round trip
    before it is lent, so that one the server dropped (a restart) is replaced rather than failing its next
    query. When all ``size`` are lent, a borrower waits up to ``wait_s`` for one to come back, then gets
    ``StoreBusy``; when none can be opened, ``StoreUnavailable`` with the server's reason. The pool opens on
    first use; ``clear`` closes it (the next use opens it again), ``resize`` changes the cap.
    """

    def __init__(self, conninfo: Callable[[], str], size: int = 4, wait_s: float = WAIT_S) -> None:
        self._conninfo = conninfo
        self.size = max(1, size)
        self.wait_s = wait_s
        self._pool: psycopg_pool.ConnectionPool[Any] | None = None
        self._lock = threading.Lock()

    def _open(self) -> psycopg_pool.ConnectionPool[Any]:
        with self._lock:
            if self._pool is None:
                self._pool = psycopg_pool.ConnectionPool(
                    self._conninfo,
                    configure=_configure,
                    kwargs={"connect_timeout": CONNECT_TIMEOUT_S},
                    min_size=0,
                    max_size=self.size,
                    timeout=self.wait_s,
                    check=psycopg_pool.ConnectionPool.check_connection,
                    reconnect_timeout=self.wait_s,
                    name="localrag",
                    open=True,
                )
            return self._pool

    @contextlib.contextmanager
    def connection(self, wait_s: float | None = None) -> Iterator[psycopg.Connection[Any]]:
        """A connection for this thread, waiting up to ``wait_s`` (default: the pool's) for a free one.

        Raises:
            StoreBusy: every connection stayed lent for ``wait_s``.
            StoreUnavailable: the server cannot be reached.
        """
        pool = self._open()
        try:
            conn = pool.getconn(timeout=self.wait_s if wait_s is None else wait_s)
        except psycopg_pool.PoolTimeout as exc:
            raise self._why_not(pool, wait_s) from exc
        try:
            yield conn
        except BaseException:
            conn.close()
            pool.putconn(conn)
            raise
        if not conn.closed and not conn.broken:
            try:
                conn.rollback()
            except psycopg.Error:
                conn.close()
        pool.putconn(conn)

    def _why_not(self, pool: psycopg_pool.ConnectionPool[Any], wait_s: float | None) -> KnownError:
        waited = self.wait_s if wait_s is None else wait_s
        if pool.get_stats().get("pool_size", 0) >= self.size:
            return StoreBusy(
                f"The database is busy: all {self.size} connections of this process stayed in use for "
                f"{waited:g} s; try again in a moment."
            )
        try:  # the pool could not open one: the server's own reason
            connect(self._conninfo(), timeout=CONNECT_TIMEOUT_S).close()
        except StoreUnavailable as exc:
            return exc
        return StoreBusy("The database did not answer in time; try again in a moment.")

    def resize(self, size: int) -> None:
        self.size = max(1, size)
        with self._lock:
            if self._pool is not None:
                self._pool.resize(min_size=0, max_size=self.size)

    def clear(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close(timeout=CLOSE_WAIT_S)


def _configure(conn: psycopg.Connection[Any]) -> None:
    """A new pooled connection knows the vector type and is left idle."""
    register_vector(conn)
    conn.rollback()


def capacity(conn: psycopg.Connection[Any], reserve: int) -> int:
    """How many connections of the server one process may pool: ``max_connections`` less the slots kept for
    superusers and ``reserve`` for the other users (the window, commands), at least 2."""
    row = conn.execute(
        "SELECT current_setting('max_connections')::int"
        " - current_setting('superuser_reserved_connections')::int"
        " - coalesce(current_setting('reserved_connections', true), '0')::int"
    ).fetchone()
    assert row is not None
    return max(2, int(row[0]) - reserve)


# The SQL expression of a document's title as shown: one set by hand, else the one found (alias d).
SHOWN_TITLE = "coalesce(nullif(d.meta->'edited'->>'title', ''), d.title)"
