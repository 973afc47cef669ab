"""An ingestor's one database connection: opened on first use, and again after the store came back."""

from __future__ import annotations

import contextlib
from typing import Any

import psycopg


class Connection:
    """One connection for one ingesting thread (psycopg connections are not shared between threads).

    Args:
        library: the facade (``connect``, and ``ensure_store`` to restart an embedded server that died).
    """

    def __init__(self, library: Any) -> None:
        self.library = library
        self._conn: psycopg.Connection[Any] | None = None

    def get(self) -> psycopg.Connection[Any]:
        """The open connection, connecting (and restarting a dead embedded server) first if needed."""
        if self._conn is None or self._conn.closed:
            self.library.ensure_store()
            self._conn = self.library.connect()
        return self._conn

    @property
    def current(self) -> psycopg.Connection[Any] | None:
        """The connection if it is open, without connecting."""
        return self._conn if self._conn is not None and not self._conn.closed else None

    def drop(self) -> None:
        """Forget a connection the server dropped (the next ``get`` connects again)."""
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None

    close = drop
