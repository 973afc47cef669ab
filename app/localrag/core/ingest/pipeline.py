"""Ingestion: files become page-aware chunks and vectors, in steps that survive a crash at any point.

A document moves ``queued → extracting → embedding → ready`` (or ``failed``/``cancelled``; the names are in
``status``). The work is split along its seams:

- ``queue``: ``enqueue`` hashes each file and records a ``queued`` row at once, so the panel shows it
  immediately. The same content again is a no-op ("already indexed"); a changed file gets a new row that
  replaces the old one when ready, so the old version keeps answering until then. Each ingestor claims the
  next unfinished document under a per-document advisory lock, so the window and a terminal can share one
  database.
- ``steps``: extraction and chunking (a new document's chunks committed with their BM25 postings as it is
  read, so that it is searchable by keywords at once; the last ones with the switch to ``embedding``), vectors
  in committed batches (COPY; identical text reuses a stored vector; after a kill only missing vectors are
  embedded; searchable by meaning as they arrive), then one transaction that adds the sections (and the
  postings of the next version of a ready document, which is searched only from then on), marks the document
  ``ready`` and drops older versions. A version overtaken by a newer one is dropped instead of finishing.
- ``reembed``: vectors from a newly chosen embedding model for every ready document.

``Ingestor`` (here) holds them together for one thread: its connection, cancellation and pausing, and the loop
that processes the queue. One bad file fails alone with its reason; the others still go in.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import psycopg

from localrag.core.errors import StoreUnavailable
from localrag.core.ingest import groups, loaders, metadata, status
from localrag.core.ingest.connection import Connection
from localrag.core.ingest.documents import remove_document
from localrag.core.ingest.events import IngestEvent, IngestSummary
from localrag.core.ingest.queue import IngestQueue, expand_paths, file_sha256, path_from_db, path_to_db
from localrag.core.ingest.reembed import reembed
from localrag.core.ingest.steps import EMBED_BATCH, SUPERSEDED, Cancellation, DocumentSteps
from localrag.core.progress import CancelToken

__all__ = [
    "EMBED_BATCH",
    "SUPERSEDED",
    "IngestEvent",
    "IngestSummary",
    "Ingestor",
    "expand_paths",
    "file_sha256",
    "path_from_db",
    "path_to_db",
]

log = logging.getLogger("localrag.ingest")

STORE_RETRIES = 5  # consecutive lost connections before ingestion gives up


class Ingestor:
    """Indexes files into the library. Blocking; the GUI runs it on its ingest worker thread.

    Args:
        library: the open Library.
        on_event: called (on the ingesting thread) with every ``IngestEvent``.
    """

    def __init__(self, library: Any, *, on_event: Callable[[IngestEvent], None] | None = None) -> None:
        self.library = library
        self.settings = library.settings
        self.on_event = on_event
        self.db = Connection(library)
        self.cancellation = Cancellation()
        self.queue = IngestQueue(self.db, self._emit, self.max_bytes, library.file_copy_limit())
        self.steps = DocumentSteps(library, self.db, self._emit, self.cancellation, self.max_bytes)

    @property
    def conn(self) -> psycopg.Connection[Any]:
        return self.db.get()

    @property
    def max_bytes(self) -> int:
        return loaders.DEFAULT_MAX_BYTES

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Ingestor:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- queueing ------------------------------------------------------------------------------------------

    def enqueue(self, paths: Iterable[Path], cancel: CancelToken | None = None) -> list[IngestEvent]:
        """Record every file under ``paths`` as queued (or say why not) and return one event per file."""
        return self.queue.enqueue(paths, cancel)

    def enqueue_files(
        self, files: Iterable[tuple[Path, bool]], cancel: CancelToken | None = None
    ) -> list[IngestEvent]:
        """Record files listed as ``expand_paths`` lists them, ``(path, explicit)``, as queued."""
        return self.queue.enqueue_files(files, cancel)

    # -- control -------------------------------------------------------------------------------------------

    def cancel_document(self, doc_id: int) -> None:
        """Stop work on one document (thread-safe); a queued one is marked cancelled when its turn comes."""
        self.cancellation.cancel(doc_id)

    def pause(self) -> None:
        """Stop ``run`` between steps without cancelling anything (thread-safe): the document in hand keeps
        its committed work and its status, and the next ``run`` (or the next start of the app) carries on with
        it."""
        self.cancellation.pause()

    def unpause(self) -> None:
        self.cancellation.unpause()

    @property
    def paused(self) -> bool:
        return self.cancellation.paused

    def remove_document(self, doc_id: int) -> bool:
        self.cancel_document(doc_id)
        removed = remove_document(self.conn, doc_id)
        if removed:
            self._emit(IngestEvent(doc_id, "", "", "", status.REMOVED))
        return removed

    def reindex_document(self, doc_id: int) -> IngestEvent | None:
        """Index a document's file again from scratch (for example after a loader improved)."""
        row = self.conn.execute("SELECT path, path_bytes FROM documents WHERE id = %s", (doc_id,)).fetchone()
        self.conn.commit()
        if row is None:
            return None
        self.remove_document(doc_id)
        events = self.enqueue([path_from_db(*row)])
        return events[0] if events else None

    def reembed(self, cancel: CancelToken | None = None) -> IngestSummary:
        """Index again the documents whose text an older loader extracted and would now read differently
        (those whose file is still there: the others keep their text and are not asked for again), then give
        every ready document a vector from the active model for each chunk that lacks one (``reembed``)."""
        again = 0
        for doc_id in metadata.outdated_extractions(self.conn):
            row = self.conn.execute(
                "SELECT path, path_bytes, doc_type, coalesce((meta->>'extraction')::int, 1) FROM documents "
                "WHERE id = %s",
                (doc_id,),
            ).fetchone()
            self.conn.commit()
            if row is None:
                continue
            path, doc_type, version = Path(path_from_db(row[0], row[1])), str(row[2]), int(row[3])
            if not path.is_file():  # nothing to read again: it keeps its text, and is not asked for again
                log.info("document %d keeps its text: %s is not there to read again", doc_id, path)
                metadata.set_extraction(self.conn, doc_id, loaders.extraction_version(doc_type))
            elif not loaders.reads_differently(doc_type, path, version):
                metadata.set_extraction(self.conn, doc_id, loaders.extraction_version(doc_type))
            elif self.reindex_document(doc_id):
                again += 1
        read = IngestSummary()
        if again and not (cancel is not None and cancel.cancelled):
            read = self.run(cancel)
        summary = reembed(self.queue, self.steps, cancel)
        summary.read_again, summary.seconds = read.ready, summary.seconds + read.seconds
        return summary

    # -- the work ------------------------------------------------------------------------------------------

    def run(self, cancel: CancelToken | None = None) -> IngestSummary:
        """Process every unfinished document, oldest first, until none is left (or ``cancel``)."""
        summary = IngestSummary()
        started = time.monotonic()
        done_any = False
        store_failures = 0
        try:
            while True:
                group: list[int] = []
                try:
                    if self.cancellation.paused:
                        break
                    if cancel is not None and cancel.cancelled:
                        self.queue.cancel_queued(summary)
                        break
                    doc_id = self.queue.claim_next()
                    if doc_id is None:
                        break
                    group.append(doc_id)
                    # Small files: read several, embed their chunks together, then each one's steps.
                    groups.small_group(self.steps, group, self.queue.claim_next, summary, cancel)
                    events: list[IngestEvent | None] = []
                    for member in group:
                        event = self.steps.process(member, summary, cancel)
                        events.append(event)
                        if event is None and self.cancellation.paused:
                            break
                except (psycopg.OperationalError, StoreUnavailable) as exc:
                    # The server went away. Committed work is safe; restart it (when embedded) and resume.
                    store_failures += 1
                    self.db.drop()
                    if store_failures > STORE_RETRIES:
                        raise StoreUnavailable(f"The database stopped answering: {exc}".strip()) from exc
                    log.warning("database connection lost during ingestion (%s); resuming", exc)
                    time.sleep(min(2.0, 0.2 * store_failures))
                    continue
                finally:
                    for member in group:
                        self.queue.unlock(member)
                store_failures = 0
                if self._count(events, summary):
                    done_any = True
                if any(e is None for e in events) and self.cancellation.paused:  # paused mid-document
                    break
        finally:
            summary.seconds = time.monotonic() - started
        if done_any and summary.chunks >= 500:
            with self.conn.transaction():
                self.conn.execute("ANALYZE document_chunks")
                self.conn.execute("ANALYZE chunk_embeddings")
                self.conn.execute("ANALYZE bm25_postings")
        return summary

    @staticmethod
    def _count(events: list[IngestEvent | None], summary: IngestSummary) -> bool:
        """Add the documents' last events to ``summary``; whether any document was dealt with."""
        any_done = False
        for event in events:
            if event is None:  # paused mid-document, or removed since it was claimed
                continue
            summary.events.append(event)
            any_done = True
            if event.status == status.READY:  # counted whole, also when resumed from an earlier run
                summary.ready += 1
                summary.pages += event.pages
                summary.chunks += event.chunks_total
            elif event.status == status.FAILED:
                summary.failed += 1
            elif event.status == status.CANCELLED:
                summary.cancelled += 1
        return any_done

    def _emit(self, event: IngestEvent) -> IngestEvent:
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:  # a broken listener must not stop indexing
                log.exception("ingest event listener failed")
        return event


def index_paths(library: Any, paths: Iterable[Path]) -> IngestSummary:
    """Queue ``paths`` and index everything queued, start to end, on this thread (evaluations, tests)."""
    with Ingestor(library) as ingestor:
        ingestor.enqueue(paths)
        return ingestor.run()
