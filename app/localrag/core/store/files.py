"""The original files' bytes in the database (migration 0010), so that a library shared on a server can show
a cited page on every computer: one copy per content hash, streamed in and out in parts of ``PART`` bytes.

A copy is written in one transaction and marked complete at its end, so a reader never sees half a file; the
bytes are hashed while they stream in, and a file that changed since it was hashed is not kept.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import psycopg

log = logging.getLogger("localrag.store.files")

PART = 1 << 20


def has_copy(conn: psycopg.Connection[Any], sha256: str) -> bool:
    row = conn.execute("SELECT complete FROM document_files WHERE sha256 = %s", (sha256,)).fetchone()
    return bool(row and row[0])


def store_copy(conn: psycopg.Connection[Any], path: Path, sha256: str, max_bytes: int) -> bool:
    """Keep ``path``'s bytes under ``sha256`` unless a copy is there already; False when the file is larger
    than ``max_bytes``, or changed since it was hashed (nothing is kept then)."""
    size = path.stat().st_size
    if size > max_bytes:
        return False
    with conn.transaction():
        # Two clients adding the same file: the second waits for the first's copy and finds it complete.
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("document_files:" + sha256,))
        if has_copy(conn, sha256):
            return True
        conn.execute("DELETE FROM document_files WHERE sha256 = %s", (sha256,))
        conn.execute("INSERT INTO document_files (sha256, bytes) VALUES (%s, %s)", (sha256, size))
        digest = hashlib.sha256()
        with path.open("rb") as f:
            part = 0
            while block := f.read(PART):
                digest.update(block)
                conn.execute(
                    "INSERT INTO document_file_parts (sha256, part, data) VALUES (%s, %s, %s)",
                    (sha256, part, block),
                )
                part += 1
        if digest.hexdigest() != sha256:
            log.info("%s changed while it was copied; no copy kept", path)
            conn.execute("DELETE FROM document_files WHERE sha256 = %s", (sha256,))
            return False
        conn.execute("UPDATE document_files SET complete = true WHERE sha256 = %s", (sha256,))
    return True


def fetch_copy(conn: psycopg.Connection[Any], sha256: str, dest: Path) -> Path | None:
    """Write the stored copy of ``sha256`` to ``dest`` (whole or not at all); None when there is none."""
    if not has_copy(conn, sha256):
        return None
    dest.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as out:
            part = 0
            while True:  # one part at a time: a large file never sits in memory whole
                row = conn.execute(
                    "SELECT data FROM document_file_parts WHERE sha256 = %s AND part = %s", (sha256, part)
                ).fetchone()
                if row is None:
                    break
                digest.update(row[0])
                out.write(row[0])
                part += 1
        if digest.hexdigest() != sha256:
            raise ValueError(f"the stored copy of {sha256[:12]} is damaged")
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return dest


def drop_unused_copies(conn: psycopg.Connection[Any]) -> int:
    """Delete the copies no document refers to any more; returns how many."""
    cur = conn.execute(
        "DELETE FROM document_files f WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.sha256 = f.sha256)"
    )
    return cur.rowcount or 0


def readable_file(library: Any, doc_id: int, path: str) -> tuple[Path | None, bool]:
    """A file to show for document ``doc_id``: the one at ``path`` when this computer has it, else the copy
    kept in the database (written once to the cache folder). Returns (the file or None, whether it is the
    copy). Blocking."""
    from localrag.core import paths

    local = Path(path)
    if path and local.is_file():
        return local, False
    with library.pool.connection() as conn:
        row = conn.execute("SELECT sha256 FROM documents WHERE id = %s", (doc_id,)).fetchone()
        if not row or not row[0]:
            return None, False
        cached = paths.cache_dir() / "files" / f"{row[0]}{local.suffix.lower()}"
        if cached.is_file():
            return cached, True
        return fetch_copy(conn, row[0], cached), True
