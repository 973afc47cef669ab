"""Small files indexed in groups: a folder of one-line notes costs a share of a batch of the model per file,
not a request of its own.

When the document claimed next is a small file (at most ``SMALL_FILE_BYTES``, not read yet), the ingestor
reads the following small files too (each claimed under its own lock and written as ``extract`` writes any
document), until their chunks fill a batch (``EMBED_BATCH``) or ``GROUP_DOCS`` files are read; then the chunks
of the whole group and their pieces are embedded together and stored (``vectors.embed_documents``), and each
document goes through its own steps, which find its vectors in place and mark it ready. Anything that goes
wrong on the way is left to those steps: a file that cannot be read is read again there and fails with its
reason, a vector that is missing is embedded there.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import psycopg

from localrag.core.errors import StoreUnavailable
from localrag.core.ingest import status
from localrag.core.ingest import vectors as chunk_vectors
from localrag.core.ingest.events import IngestSummary
from localrag.core.ingest.queue import path_from_db
from localrag.core.ingest.steps import EMBED_BATCH, DocCancel, DocumentSteps
from localrag.core.progress import CancelToken

log = logging.getLogger("localrag.ingest")

SMALL_FILE_BYTES = 32 * 1024  # about 30 chunks of text at most
GROUP_DOCS = 64


def read_small(steps: DocumentSteps, doc_id: int, summary: IngestSummary, cancel: CancelToken | None) -> int:
    """Read and chunk the claimed document now when it is a small file not read yet; the chunks written
    (0 when it is not such a file, or reading it failed: its own steps then try again and say why)."""
    conn = steps.conn
    row = conn.execute(
        "SELECT path, path_bytes FROM documents WHERE id = %s AND status = %s AND bytes <= %s",
        (doc_id, status.QUEUED, SMALL_FILE_BYTES),
    ).fetchone()
    conn.commit()
    if row is None:
        return 0
    try:
        steps.extract(doc_id, path_from_db(*row), summary, DocCancel(steps.cancellation, doc_id, cancel))
    except (psycopg.OperationalError, StoreUnavailable):
        raise
    except Exception as exc:  # the document's own steps read it again and report it
        log.debug("reading document %s in a group failed: %s", doc_id, exc)
        if not conn.closed:
            conn.rollback()
        return 0
    finally:
        steps.chunks_cut = 0
    found = conn.execute("SELECT chunks_total FROM documents WHERE id = %s", (doc_id,)).fetchone()
    conn.commit()
    return int(found[0] or 0) if found else 0


def embed_group(
    steps: DocumentSteps, doc_ids: list[int], summary: IngestSummary, cancel: CancelToken | None
) -> None:
    """Embed and store the chunks of the group's documents together (a failure is left to their own
    steps)."""
    conn = steps.conn
    doc_cancel = DocCancel(steps.cancellation, doc_ids[0], cancel)
    started = time.monotonic()
    try:
        chunks, pieces, tokens = chunk_vectors.embed_documents(
            conn,
            doc_ids,
            steps.library.embedder.name,
            steps.library.embedder,
            lambda texts: steps.vectors(steps.submit(texts), doc_cancel),
            EMBED_BATCH,
        )
    except (psycopg.OperationalError, StoreUnavailable):
        raise
    except Exception as exc:  # paused, cancelled, a model failure: each document's steps deal with it
        log.debug("embedding a group of %d documents stopped: %s", len(doc_ids), exc)
        if not conn.closed:
            conn.rollback()
        return
    finally:
        summary.stage_seconds["embed"] += time.monotonic() - started
    summary.embedded_chunks += chunks
    summary.embedded_pieces += pieces
    summary.embedded_tokens += tokens


def small_group(
    steps: DocumentSteps,
    group: list[int],
    claim_next: Callable[[list[int]], int | None],
    summary: IngestSummary,
    cancel: CancelToken | None,
) -> None:
    """When the claimed document (``group``'s one) is a small file, claim the small files after it
    (``claim_next``, given the documents held; each is added to ``group`` as it is claimed, so that the
    caller releases it whatever happens), read them, and embed the chunks of all of them together. The
    documents are then taken through their steps in ``group``'s order; the last one claimed may be a
    document that is not small, left untouched."""
    chunks = read_small(steps, group[0], summary, cancel)
    if not chunks:
        return
    while chunks < EMBED_BATCH and len(group) < GROUP_DOCS:
        if steps.cancellation.paused or (cancel is not None and cancel.cancelled):
            break
        doc_id = claim_next(group)
        if doc_id is None:
            break
        group.append(doc_id)
        more = read_small(steps, doc_id, summary, cancel)
        if not more:
            break
        chunks += more
    embed_group(steps, group, summary, cancel)
