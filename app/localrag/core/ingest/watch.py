"""Watched folders (opt-in per folder): files added, changed or deleted there are picked up by a scan.

Scanning compares the folder with the documents table (path and modification time), so it needs no
platform file-watching API and catches changes made while the app was closed. The window scans on a timer.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psycopg

from localrag.core.ingest.documents import remove_document
from localrag.core.ingest.loaders import SUPPORTED_SUFFIXES
from localrag.core.ingest.pipeline import expand_paths
from localrag.core.ingest.status import FAILED, READY


def add_watched_folder(conn: psycopg.Connection[Any], folder: Path) -> None:
    with conn.transaction():
        conn.execute(
            "INSERT INTO watched_folders (path) VALUES (%s) ON CONFLICT DO NOTHING",
            (str(Path(folder).absolute()),),
        )


def remove_watched_folder(conn: psycopg.Connection[Any], folder: Path) -> None:
    with conn.transaction():
        conn.execute("DELETE FROM watched_folders WHERE path = %s", (str(Path(folder).absolute()),))


def list_watched_folders(conn: psycopg.Connection[Any]) -> list[Path]:
    rows = conn.execute("SELECT path FROM watched_folders ORDER BY path").fetchall()
    conn.commit()
    return [Path(r[0]) for r in rows]


def scan_watched(conn: psycopg.Connection[Any]) -> tuple[list[Path], list[int]]:
    """Files to (re-)enqueue, and the ids of documents removed because their file is gone from a watched
    folder.

    A file is returned when no live document has its path or its modification time differs from the one
    recorded; ``Ingestor.enqueue`` then decides by content hash whether anything really changed.
    """
    to_enqueue: list[Path] = []
    removed: list[int] = []
    for folder in list_watched_folders(conn):
        prefix = str(folder).rstrip(os.sep) + os.sep
        known = {
            path: (doc_id, mtime, status)
            for doc_id, path, mtime, status in conn.execute(
                "SELECT id, path, source_mtime, status FROM documents WHERE starts_with(path, %s) "
                "AND status <> 'cancelled'",
                (prefix,),
            ).fetchall()
        }
        conn.commit()
        seen = set()
        if folder.is_dir():
            for path, _explicit in expand_paths([folder]):
                if path.suffix.lower() not in SUPPORTED_SUFFIXES:
                    continue
                key = str(path.absolute())
                seen.add(key)
                entry = known.get(key)
                try:
                    mtime = path.stat().st_mtime
                except OSError:
                    continue
                if entry is None or (entry[2] in (READY, FAILED) and entry[1] != mtime):
                    to_enqueue.append(path)
        for key, (doc_id, _mtime, status) in known.items():
            gone = key not in seen and status != FAILED and not Path(key).exists()
            if gone and remove_document(conn, doc_id):
                removed.append(doc_id)
    return to_enqueue, removed
