"""Re-embedding: every ready document gets vectors from the active model for its chunks' current contexts.

It runs after switching embedding models, after metadata was edited (the chunks whose context changed), and
once on a library indexed before document identity existed, and on one indexed before chunks had pieces
(``pieces.py``: only the pieces are embedded then): its documents' metadata is found first (from the
file name, the PDF's metadata and the stored first pages; each document in one transaction that also
rebuilds its BM25 postings), then the vectors are embedded again with their context. Batches are committed as
they go (a kill loses at most one and a rerun carries on), the documents stay ready and searchable throughout
(a stale vector answers until its replacement is written in the same transaction that removes it), and the
previous model's vectors are kept: after a switch of models they answer for the chunks that have no new vector
yet (``Library.stand_in``).
"""

from __future__ import annotations

import time

from localrag.core.ingest import metadata, pieces, status
from localrag.core.ingest.events import IngestEvent, IngestSummary
from localrag.core.ingest.queue import IngestQueue
from localrag.core.ingest.steps import DocCancel, DocumentSteps
from localrag.core.progress import Cancelled, CancelToken
from localrag.core.store import db


def reembed(queue: IngestQueue, steps: DocumentSteps, cancel: CancelToken | None = None) -> IngestSummary:
    """Give every ready document a vector from the active model for each chunk that lacks one."""
    summary = IngestSummary()
    started = time.monotonic()
    conn = steps.conn
    model = steps.library.embedder.name
    for doc_id in metadata.outdated_documents(conn):
        if cancel is not None and cancel.cancelled:
            break
        if not queue.try_lock(doc_id):
            continue
        try:
            with conn.transaction():
                metadata.refresh(conn, doc_id)
        finally:
            queue.unlock(doc_id)
    conn.commit()
    rows = conn.execute(
        f"SELECT DISTINCT d.id, d.path, {db.SHOWN_TITLE}, d.doc_type FROM documents d "
        "JOIN document_chunks c ON c.doc_id = d.id WHERE d.status = %s "
        "AND (NOT EXISTS (SELECT 1 FROM chunk_embeddings e "
        f"WHERE e.chunk_id = c.id AND e.embedding_model = %s AND {metadata.CURRENT_VECTOR}) "
        f"OR {pieces.LACKING}) ORDER BY d.id",
        (status.READY, model, model),
    ).fetchall()
    conn.commit()
    for doc_id, path, title, doc_type in rows:
        if not queue.try_lock(doc_id):  # another ingestor has it in hand
            continue
        try:
            steps.embed(doc_id, path, title, doc_type, summary, DocCancel(steps.cancellation, doc_id, cancel))
            steps.store_sections(doc_id)  # the central chunks follow the new vectors
            summary.ready += 1
            event = IngestEvent(doc_id, path, title, doc_type, status.READY, message="re-embedded")
            summary.events.append(steps._emit(event))
        except Cancelled:
            summary.cancelled += 1
            break
        finally:
            queue.unlock(doc_id)
    summary.seconds = time.monotonic() - started
    return summary
