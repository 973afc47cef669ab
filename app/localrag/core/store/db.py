"""Connections to PostgreSQL: the embedded server or any server given by URL."""

from __future__ import annotations

import logging
import re
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


def ensure_pgvector(conn: psycopg.Connection[Any]) -> None:
    """Create the extensions the schema needs, with a one-line error if the server lacks pgvector."""
    try:
        with conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        available = conn.execute(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
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
