"""Re-embedding: after switching embedding models, every ready document gets vectors from the active model.

Batches are committed as they go (a kill loses at most one), the documents stay ready and searchable
throughout, and the previous model's vectors are kept.
"""

from __future__ import annotations

import time

from localrag.core.ingest import status
from localrag.core.ingest.events import IngestEvent, IngestSummary
from localrag.core.ingest.queue import IngestQueue
from localrag.core.ingest.steps import DocCancel, DocumentSteps
from localrag.core.progress import Cancelled, CancelToken


def reembed(queue: IngestQueue, steps: DocumentSteps, cancel: CancelToken | None = None) -> IngestSummary:
    """Give every ready document a vector from the active model for each chunk that lacks one."""
    summary = IngestSummary()
    started = time.monotonic()
    conn = steps.conn
    model = steps.library.embedder.name
    rows = conn.execute(
        "SELECT DISTINCT d.id, d.path, d.title, d.doc_type FROM documents d JOIN document_chunks c "
        "ON c.doc_id = d.id WHERE d.status = %s AND NOT EXISTS (SELECT 1 FROM chunk_embeddings e "
        "WHERE e.chunk_id = c.id AND e.embedding_model = %s) ORDER BY d.id",
        (status.READY, model),
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
