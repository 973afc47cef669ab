"""Numbered SQL migrations with an up and a down part, recorded in ``schema_migrations``.

A migration file is ``migrations/NNNN_name.sql``::

    -- migrate:up
    CREATE TABLE ...;
    -- migrate:down
    DROP TABLE ...;

Each migration runs in its own transaction. A released migration is never edited; add a new one.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

log = logging.getLogger("localrag.store.migrate")

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_UP = "-- migrate:up"
_DOWN = "-- migrate:down"


def migrations_dir() -> Path:
    """``migrations/`` at the top of the source tree, or the copy installed inside the package."""
    here = Path(__file__).resolve()
    for candidate in (here.parents[4] / "migrations", here.parents[2] / "migrations"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("migrations folder not found")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    up: str
    down: str


def load_migrations(folder: Path | None = None) -> list[Migration]:
    folder = folder or migrations_dir()
    found = []
    for path in sorted(folder.iterdir()):
        match = _NAME.match(path.name)
        if not match:
            continue
        text = path.read_text(encoding="utf-8")
        if _UP not in text or _DOWN not in text:
            raise ValueError(f"{path.name}: needs both '{_UP}' and '{_DOWN}' sections")
        up, down = text.split(_UP, 1)[1].split(_DOWN, 1)
        found.append(Migration(int(match.group(1)), match.group(2), up.strip(), down.strip()))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ValueError("two migrations share a number")
    return found


# The advisory lock that serialises clients migrating one database at the same time.
LOCK_KEY = 7263541


class Migrator:
    """Applies and reverts migrations on one connection."""

    def __init__(self, conn: psycopg.Connection[Any], folder: Path | None = None) -> None:
        self.conn = conn
        self.migrations = load_migrations(folder)
        with conn.transaction():
            # CREATE TABLE IF NOT EXISTS is not safe against a second client doing the same at that moment
            # (both pass the check, one fails on the catalog's unique index): the migration lock orders them.
            conn.execute(f"SELECT pg_advisory_xact_lock({LOCK_KEY})")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version integer PRIMARY KEY, name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )

    def applied(self) -> list[int]:
        return [r[0] for r in self.conn.execute("SELECT version FROM schema_migrations ORDER BY version")]

    def status(self) -> list[tuple[Migration, bool]]:
        done = set(self.applied())
        return [(m, m.version in done) for m in self.migrations]

    def pending(self) -> list[Migration]:
        done = set(self.applied())
        return [m for m in self.migrations if m.version not in done]

    def migrate(self) -> list[Migration]:
        """Apply every pending migration in order; return those applied."""
        ran = []
        for m in self.pending():
            with self.conn.transaction():
                # Serialise concurrent starters: the second one waits, then sees the version recorded.
                self.conn.execute(f"SELECT pg_advisory_xact_lock({LOCK_KEY})")
                if self.conn.execute(
                    "SELECT 1 FROM schema_migrations WHERE version = %s", (m.version,)
                ).fetchone():
                    continue
                self.conn.execute(m.up)
                self.conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (m.version, m.name)
                )
            log.info("applied migration %04d_%s", m.version, m.name)
            ran.append(m)
        return ran

    def rollback(self, steps: int = 1) -> list[Migration]:
        """Revert the last ``steps`` applied migrations, newest first; return those reverted."""
        by_version = {m.version: m for m in self.migrations}
        reverted = []
        for version in list(reversed(self.applied()))[:steps]:
            m = by_version.get(version)
            if m is None:
                raise ValueError(f"migration {version:04d} is recorded but its file is missing")
            with self.conn.transaction():
                self.conn.execute(m.down)
                self.conn.execute("DELETE FROM schema_migrations WHERE version = %s", (version,))
            log.info("reverted migration %04d_%s", m.version, m.name)
            reverted.append(m)
        return reverted
