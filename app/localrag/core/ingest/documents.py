"""The documents table as the panels and commands see it: listing, lookup, removal, re-embed status."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import psycopg

from localrag.core.ingest import status

LIVE_STATUSES = status.LIVE
UNFINISHED_STATUSES = status.UNFINISHED


@dataclass
class DocumentInfo:
    id: int
    path: str
    title: str
    doc_type: str
    pages: int
    chunks_total: int
    chunks_embedded: int
    status: str
    error_code: str | None
    error: str | None
    bytes: int
    created_at: dt.datetime
    indexed_at: dt.datetime | None
    warnings: list[str]
    meta: dict[str, Any] = field(default_factory=dict)  # what the document is: organisation, kind, period …
    searchable: bool = False  # still being indexed, and found by searches already (by keywords first)


_COLUMNS = (
    "id, path, title, doc_type, pages, chunks_total, chunks_embedded, status, error_code, error, bytes, "
    "created_at, indexed_at, warnings, meta, status IN ('extracting', 'embedding') AND replaces_id IS NULL "
    "AND EXISTS (SELECT 1 FROM bm25_postings p WHERE p.doc_id = id)"
)


def list_documents(
    conn: psycopg.Connection[Any], search: str = "", doc_types: list[str] | None = None
) -> list[DocumentInfo]:
    """Every document (newest first) whose title or path contains ``search``, optionally of ``doc_types``.

    A changed file being re-indexed shows once: the new version while it is in progress, the old one is
    hidden.
    """
    clauses = ["NOT EXISTS (SELECT 1 FROM documents n WHERE n.replaces_id = d.id AND n.status = ANY(%s))"]
    params: list[Any] = [list(status.UNFINISHED)]
    if search:
        clauses.append("(d.title ILIKE %s OR d.path ILIKE %s)")
        like = "%" + search.replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_") + "%"
        params += [like, like]
    if doc_types:
        clauses.append("d.doc_type = ANY(%s)")
        params.append(list(doc_types))
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM documents d WHERE {' AND '.join(clauses)} ORDER BY d.id DESC",
        params,
    ).fetchall()
    return [DocumentInfo(*row) for row in rows]


def get_document(conn: psycopg.Connection[Any], doc_id: int) -> DocumentInfo | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM documents WHERE id = %s", (doc_id,)).fetchone()
    return DocumentInfo(*row) if row else None


def remove_document(conn: psycopg.Connection[Any], doc_id: int) -> bool:
    """Delete a document with its chunks, vectors and BM25 postings, in one transaction. Returns whether it
    existed."""
    from localrag.core.ingest.queue import ADVISORY_NS
    from localrag.core.retrieve import bm25

    with conn.transaction():
        # An ingestor writing this document holds its lock (the caller cancels it first): deleting under it
        # would deadlock with its writes; waiting lets it stop at its next batch.
        conn.execute("SET LOCAL lock_timeout = '120s'")
        conn.execute("SELECT pg_advisory_xact_lock(%s::int, %s::int)", (ADVISORY_NS, doc_id))
        row = conn.execute("SELECT status FROM documents WHERE id = %s FOR UPDATE", (doc_id,)).fetchone()
        if row is None:
            return False
        bm25.unindex_document(conn, doc_id)  # ready, or searchable while it is indexed
        sha = conn.execute("DELETE FROM documents WHERE id = %s RETURNING sha256", (doc_id,)).fetchone()
        # Its file's copy goes too, unless another document has the same content.
        conn.execute(
            "DELETE FROM document_files f WHERE f.sha256 = %s "
            "AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.sha256 = f.sha256)",
            (sha[0] if sha else "",),
        )
    return True


def reembed_needed(conn: psycopg.Connection[Any], active_model: str) -> int:
    """How many ready documents have chunks without a vector from ``active_model`` for their current context
    or without pieces (a library indexed before them), or metadata from an older extraction (a library
    indexed before document identity), or text from an older loader (indexed again first)."""
    from localrag.core.ingest import metadata, pieces

    row = conn.execute(
        "SELECT count(DISTINCT c.doc_id) FROM document_chunks c JOIN documents d ON d.id = c.doc_id "
        "WHERE d.status = 'ready' AND (NOT EXISTS (SELECT 1 FROM chunk_embeddings e "
        f"WHERE e.chunk_id = c.id AND e.embedding_model = %s AND {metadata.CURRENT_VECTOR}) "
        f"OR {pieces.LACKING})",
        (active_model, active_model),
    ).fetchone()
    return (
        (int(row[0]) if row else 0)
        or len(metadata.outdated_documents(conn))
        or len(metadata.outdated_extractions(conn))
    )
