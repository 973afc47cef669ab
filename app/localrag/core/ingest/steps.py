"""The steps of indexing one document, each ending in a committed state a crash can resume from.

``extract`` reads and chunks the file and writes its chunks, ending with the switch to ``embedding``; a new
document's chunks and BM25 postings are committed as they are read, so it is searchable by keywords at once
(``chunk_writer``), and an interrupted extraction starts again from an empty document. ``embed`` writes
vectors in committed batches (reusing stored vectors of identical text; a kill loses at most one batch); the
document is searchable by meaning as they arrive. ``finish`` adds the BM25 postings (when extraction did not)
and sections, marks the document ``ready`` and drops its older versions, unless a newer version overtook it.
``process`` runs them from wherever a document stands.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from localrag.core.embed.service import BATCH
from localrag.core.embed.sizing import fit_to_input
from localrag.core.errors import BadDocument, KnownError, StoreUnavailable, internal_error
from localrag.core.ingest import loaders, metadata, pieces, sections, status
from localrag.core.ingest import vectors as chunk_vectors
from localrag.core.ingest.chunk_writer import ChunkWriter
from localrag.core.ingest.chunking import iter_chunks
from localrag.core.ingest.connection import Connection
from localrag.core.ingest.events import IngestEvent, IngestSummary
from localrag.core.ingest.loaders._common import display_name
from localrag.core.ingest.memory import release_memory
from localrag.core.ingest.queue import path_from_db, path_to_db
from localrag.core.progress import Cancelled, CancelToken
from localrag.core.retrieve import bm25
from localrag.core.store.db import one
from localrag.core.text import identity

log = logging.getLogger("localrag.ingest")

EMBED_BATCH = 64  # chunks per committed batch: a kill loses at most this much embedding work
SUPERSEDED = "superseded by a newer version of the file"
LARGE_DOCUMENT_CHUNKS = 2_000  # after a document this large, freed memory is handed back to the system


class DocumentSteps:
    """Indexes claimed documents step by step. Blocking; used by one ingesting thread.

    Args:
        library: the facade (settings, the embedding model or service).
        db: the ingestor's connection.
        emit: reports an event (and returns it).
        cancellation: which documents were cancelled, and whether the ingestor is paused.
    """

    def __init__(
        self,
        library: Any,
        db: Connection,
        emit: Callable[[IngestEvent], IngestEvent],
        cancellation: Cancellation,
        max_bytes: int = loaders.DEFAULT_MAX_BYTES,
    ) -> None:
        self.library = library
        self.settings = library.settings
        self.db = db
        self._emit = emit
        self.cancellation = cancellation
        self.max_bytes = max_bytes
        self.chunks_cut = 0  # chunks the document in hand has made so far

    @property
    def conn(self) -> psycopg.Connection[Any]:
        return self.db.get()

    def process(self, doc_id: int, summary: IngestSummary, cancel: CancelToken | None) -> IngestEvent | None:
        """Index one claimed document from where it stands; its last event, or ``None`` when paused."""
        row = self.conn.execute(
            "SELECT path, path_bytes, title, doc_type, status FROM documents WHERE id = %s", (doc_id,)
        ).fetchone()
        self.conn.commit()
        if row is None:  # removed since it was claimed
            return None
        path, raw, title, doc_type, state = row
        fs_path = path_from_db(path, raw)
        doc_cancel = DocCancel(self.cancellation, doc_id, cancel)
        with self.conn.transaction():  # edited again before its turn: only the newest version is indexed
            superseded = self.delete_if_superseded(doc_id)
        if superseded:
            return self._emit(IngestEvent(doc_id, path, title, doc_type, status.REMOVED, message=SUPERSEDED))
        try:
            if state in (status.QUEUED, status.EXTRACTING):
                title, doc_type = self.extract(doc_id, fs_path, summary, doc_cancel)
            self.embed(doc_id, path, title, doc_type, summary, doc_cancel)
            return self.finish(doc_id, path, title, doc_type)
        except Paused:
            self.conn.rollback()
            return None
        except Cancelled:
            self.conn.rollback()
            with self.conn.transaction():
                self.drop_chunks(doc_id)
                self.conn.execute(
                    "UPDATE documents SET status = %s, error = 'cancelled', updated_at = now() WHERE id = %s",
                    (status.CANCELLED, doc_id),
                )
            return self._emit(
                IngestEvent(doc_id, path, title, doc_type, status.CANCELLED, message="cancelled")
            )
        except BadDocument as exc:
            return self.fail(doc_id, path, title, doc_type, exc.code, exc.message)
        except (psycopg.OperationalError, StoreUnavailable):
            raise  # the store is gone: the caller decides (the GUI shows the banner and retries)
        except KnownError as exc:
            return self.fail(doc_id, path, title, doc_type, exc.code, exc.message)
        except Exception as exc:  # a bug: this file fails with a trace in the log, the others go on
            log.exception("indexing %s failed", path)
            return self.fail(doc_id, path, title, doc_type, "error", internal_error(exc))
        finally:
            self.cancellation.forget(doc_id)
            if self.chunks_cut >= LARGE_DOCUMENT_CHUNKS:  # ready, refused or cancelled: give memory back
                release_memory()
            self.chunks_cut = 0

    def fail(self, doc_id: int, path: str, title: str, doc_type: str, code: str, message: str) -> IngestEvent:
        if not self.conn.closed:
            self.conn.rollback()
            with self.conn.transaction():
                self.drop_chunks(doc_id)
                self.conn.execute(
                    "UPDATE documents SET status = %s, error_code = %s, error = %s, updated_at = now() "
                    "WHERE id = %s",
                    (status.FAILED, code, message, doc_id),
                )
        return self._emit(
            IngestEvent(doc_id, path, title, doc_type, status.FAILED, error_code=code, message=message)
        )

    def drop_chunks(self, doc_id: int) -> None:
        """Delete a document's chunks, their postings first (call inside a transaction)."""
        bm25.unindex_document(self.conn, doc_id)
        self.conn.execute("DELETE FROM document_chunks WHERE doc_id = %s", (doc_id,))

    def extract(self, doc_id: int, path: Path, summary: IngestSummary, cancel: DocCancel) -> tuple[str, str]:
        conn = self.conn
        with conn.transaction():
            self.drop_chunks(doc_id)  # what an interrupted attempt committed
            searchable = one(
                conn.execute(
                    "UPDATE documents SET status = %s, updated_at = now() WHERE id = %s "
                    "RETURNING replaces_id IS NULL",
                    (status.EXTRACTING, doc_id),
                )
            )[0]
        last_emit = [0.0]
        title, doc_type = display_name(path), loaders.SUPPORTED_SUFFIXES.get(path.suffix.lower(), "")
        writers: list[ChunkWriter] = []  # the writer, once made (pages are reported from the start)

        def on_page(done: int, total: int) -> None:
            cancel.raise_if_cancelled()
            now = time.monotonic()
            if now - last_emit[0] > 0.2 or done == total:
                last_emit[0] = now
                self._emit(
                    IngestEvent(
                        doc_id,
                        path_to_db(path)[0],
                        title,
                        doc_type,
                        status.EXTRACTING,
                        pages_done=done,
                        pages=total,
                        searchable=bool(writers and writers[0].committed),
                    )
                )

        t0 = time.monotonic()
        stream = loaders.open_document(path, max_bytes=self.max_bytes, cancel=cancel.token, on_page=on_page)
        title, doc_type = stream.title, stream.doc_type
        embedder = self.library.embedder
        pages = 0
        t_extract = time.monotonic() - t0
        edited = self.edited_metadata(doc_id)
        conn.commit()
        writer = ChunkWriter(
            conn, doc_id, path, edited, self.settings.max_document_chunks, searchable=bool(searchable)
        )
        writers.append(writer)

        def timed_pages() -> Iterator[Any]:
            """The stream's pages (or windows of a long page), with the time spent reading them counted as
            extraction."""
            nonlocal pages, t_extract
            it = iter(stream.pages)
            while True:
                tp = time.monotonic()
                page = next(it, None)
                t_extract += time.monotonic() - tp
                if page is None:
                    return
                writer.title = stream.title
                if page.offset == 0:
                    pages += 1
                    writer.add_page(page.number, page.text)
                yield page

        def read_share() -> float | None:
            if stream.read_share is not None:
                return stream.read_share()
            return pages / stream.page_count if stream.page_count > 1 else None

        tw = 0.0
        # The chunks are copied as they come; the last of them with the switch to embedding. A searchable
        # document's are committed on the way (``ChunkWriter``); a kill or a refusal leaves none of the
        # others.
        try:
            for chunk in iter_chunks(
                timed_pages(),
                embedder,
                max_tokens=self.settings.chunk_tokens,
                overlap_tokens=self.settings.chunk_overlap,
                hard_limit=embedder.max_tokens,
            ):
                tc = time.monotonic()
                self.chunks_cut += 1
                writer.add(chunk, read_share())
                tw += time.monotonic() - tc
            t_total = time.monotonic() - t0 - tw
            if not writer.count:
                raise BadDocument(f"{display_name(path)} has no text to index.", code="empty")
            tc = time.monotonic()
            title = stream.title
            meta = writer.finish(title)
            meta["extraction"] = loaders.extraction_version(doc_type)
            chunks = writer.count
            conn.execute(
                "UPDATE documents SET status = %s, title = %s, doc_type = %s, mime = %s, pages = %s, "
                "pages_done = %s, chunks_total = %s, warnings = %s, meta = %s, updated_at = now() "
                "WHERE id = %s",
                (
                    status.EMBEDDING,
                    title,
                    doc_type,
                    stream.mime,
                    pages,
                    pages,
                    chunks,
                    Jsonb(stream.warnings),
                    Jsonb(meta),
                    doc_id,
                ),
            )
            conn.commit()
            tw += time.monotonic() - tc
        except BaseException:
            if not conn.closed:
                conn.rollback()
            raise
        summary.stage_seconds["extract"] += t_extract
        summary.stage_seconds["chunk"] += t_total - t_extract
        summary.stage_seconds["write"] += tw
        self._emit(
            IngestEvent(
                doc_id,
                path_to_db(path)[0],
                title,
                doc_type,
                status.EMBEDDING,
                pages_done=pages,
                pages=pages,
                chunks_total=chunks,
                message="; ".join(stream.warnings),
                searchable=writer.searchable,
            )
        )
        return title, doc_type

    def edited_metadata(self, doc_id: int) -> dict[str, Any]:
        """What a person set by hand on this document, or on the version of its file it replaces."""
        row = self.conn.execute(
            "SELECT coalesce(d.meta->'edited', o.meta->'edited') FROM documents d "
            "LEFT JOIN documents o ON o.id = d.replaces_id WHERE d.id = %s",
            (doc_id,),
        ).fetchone()
        return dict(row[0]) if row and row[0] else {}

    def embed(
        self, doc_id: int, path: str, title: str, doc_type: str, summary: IngestSummary, cancel: DocCancel
    ) -> None:
        conn = self.conn
        model = self.library.embedder.name
        tw = time.monotonic()
        chunk_vectors.reuse_stored(conn, [doc_id], model)
        # Chunks without a vector, or whose vector was embedded with another context (stale): their ids now,
        # their texts a batch at a time (a large document's texts never sit in memory at once).
        todo_ids = [
            int(r[0])
            for r in conn.execute(
                "SELECT c.id FROM document_chunks c WHERE c.doc_id = %s "
                "AND NOT EXISTS (SELECT 1 FROM chunk_embeddings e WHERE e.chunk_id = c.id "
                f"AND e.embedding_model = %s AND {metadata.CURRENT_VECTOR}) ORDER BY c.chunk_index",
                (doc_id, model),
            )
        ]
        total = one(conn.execute("SELECT count(*) FROM document_chunks WHERE doc_id = %s", (doc_id,)))[0]
        conn.commit()
        summary.stage_seconds["write"] += time.monotonic() - tw
        done = total - len(todo_ids)
        pages, searchable = one(
            conn.execute(
                "SELECT pages, status <> %s AND replaces_id IS NULL FROM documents WHERE id = %s",
                (status.READY, doc_id),
            )
        )
        conn.commit()
        started, first_done = time.monotonic(), done
        embedder = self.library.embedder
        fit, count = identity.ContextFitter(embedder), pieces.token_counter(embedder)
        id_batches = [todo_ids[i : i + EMBED_BATCH] for i in range(0, len(todo_ids), EMBED_BATCH)]
        # Each batch: its chunks and their pieces in one request to the model, one transaction to the store.
        batches = (chunk_vectors.read_batch(conn, ids, model, fit, count) for ids in id_batches)
        cancel.raise_if_cancelled()
        batch = next(batches, None)
        pending: Future | None = self.submit(batch.texts) if batch else None
        try:
            while batch:
                cancel.raise_if_cancelled()
                te = time.monotonic()
                assert pending is not None
                found = self.vectors(pending, cancel)
                summary.stage_seconds["embed"] += time.monotonic() - te
                # Ask for the next batch before writing this one, so the model never waits on the database.
                following = next(batches, None)
                pending = self.submit(following.texts) if following else None
                tw = time.monotonic()
                chunk_vectors.write(conn, model, batch, found)
                summary.stage_seconds["write"] += time.monotonic() - tw
                done += len(batch.rows)
                summary.embedded_chunks += len(batch.rows)
                summary.embedded_pieces += len(batch.piece_rows)
                summary.embedded_tokens += batch.tokens
                rate = (done - first_done) / max(1e-6, time.monotonic() - started)
                self._emit(
                    IngestEvent(
                        doc_id,
                        path,
                        title,
                        doc_type,
                        status.EMBEDDING,
                        pages_done=pages,
                        pages=pages,
                        chunks_embedded=done,
                        chunks_total=total,
                        eta_s=(total - done) / rate if rate > 0 else None,
                        searchable=bool(searchable),
                    )
                )
                batch = following
        finally:
            if pending is not None:
                pending.cancel()  # still queued (paused, cancelled, failed): the worker skips it
        te = time.monotonic()
        # The pieces of chunks whose own vector was already current (reused, or a library from before pieces).
        summary.embedded_pieces += pieces.embed_document(
            conn, doc_id, model, count, lambda texts: self.vectors(self.submit(texts), cancel)
        )
        summary.stage_seconds["embed"] += time.monotonic() - te

    def finish(self, doc_id: int, path: str, title: str, doc_type: str) -> IngestEvent:
        with self.conn.transaction():
            superseded = self.delete_if_superseded(doc_id)
            if not superseded:
                pages, chunks = self.mark_ready(doc_id)
        if superseded:
            return self._emit(IngestEvent(doc_id, path, title, doc_type, status.REMOVED, message=SUPERSEDED))
        return self._emit(
            IngestEvent(
                doc_id,
                path,
                title,
                doc_type,
                status.READY,
                pages_done=pages,
                pages=pages,
                chunks_embedded=chunks,
                chunks_total=chunks,
                message="ready",
            )
        )

    def mark_ready(self, doc_id: int) -> tuple[int, int]:
        """Add the BM25 postings and the sections, mark the document ready and drop the older versions of its
        file (the one this row was queued to replace among them; unfinished ones drop themselves when their
        turn comes). Call inside a transaction. Returns (pages, chunks)."""
        conn = self.conn
        if not bm25.is_indexed(conn, doc_id):  # else indexed as it was read
            bm25.index_document(conn, doc_id)
        pages, chunks = one(
            conn.execute(
                "UPDATE documents SET status = %s, chunks_embedded = chunks_total, indexed_at = now(), "
                "updated_at = now() WHERE id = %s RETURNING pages, chunks_total",
                (status.READY, doc_id),
            )
        )
        self.store_sections(doc_id)
        older = conn.execute(
            "SELECT o.id, o.status FROM documents o JOIN documents d ON d.id = %s "
            "WHERE o.id < d.id AND o.path = d.path AND o.path_bytes IS NOT DISTINCT FROM d.path_bytes "
            "AND o.status = ANY(%s)",
            (doc_id, [status.READY, *status.GAVE_UP]),
        ).fetchall()
        for old_id, _status in older:
            bm25.unindex_document(conn, old_id)
            conn.execute("DELETE FROM documents WHERE id = %s", (old_id,))
        return pages, chunks

    def store_sections(self, doc_id: int) -> None:
        """Store the document's top-level sections and their central chunks (``sections``). A failure is
        logged and undone (a savepoint) and the document still becomes ready: the chat computes them later."""
        try:
            sections.compute_sections(self.conn, doc_id, self.library.embedder.name)
        except Exception:
            log.warning("could not compute the sections of document %s", doc_id, exc_info=True)

    def delete_if_superseded(self, doc_id: int) -> bool:
        """Delete this version when a newer version of its file is queued, in progress or ready (call inside a
        transaction). Returns whether it did."""
        newer = self.conn.execute(
            "SELECT 1 FROM documents d WHERE d.id = %s AND EXISTS (SELECT 1 FROM documents n "
            "WHERE n.id > d.id AND n.path = d.path AND n.path_bytes IS NOT DISTINCT FROM d.path_bytes "
            "AND n.status = ANY(%s))",
            (doc_id, list(status.LIVE)),
        ).fetchone()
        if newer is None:
            return False
        bm25.unindex_document(self.conn, doc_id)  # a new document searched while it was indexed
        self.conn.execute("DELETE FROM documents WHERE id = %s", (doc_id,))
        return True

    # -- embedding -------------------------------------------------------------------------------------------

    def submit(self, texts: list[str]) -> Future:
        """Embed a batch: through the process's embedding service when a host runs one (the window, the
        command line), else here and now."""
        service = self.library.embedding_service
        if service is not None:
            return service.submit(texts, BATCH)
        future: Future = Future()
        try:
            embedder = self.library.embedder
            future.set_result(embedder.embed(fit_to_input(embedder, texts, expect_fit=True), batch_size=32))
        except Exception as exc:
            future.set_exception(exc)
        return future

    @staticmethod
    def vectors(pending: Future, cancel: DocCancel) -> np.ndarray:
        """The batch's vectors. Pausing or cancelling interrupts the wait; a batch failed because the
        embedding worker stopped while pausing (the app is closing) is a pause, not the document's failure."""
        while True:
            try:
                return pending.result(timeout=0.1)
            except FutureTimeout:
                cancel.raise_if_cancelled()
            except KnownError:
                cancel.raise_if_cancelled()
                raise


class Cancellation:
    """Which documents were asked to stop, and whether the ingestor is paused (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._docs: set[int] = set()
        self._paused = threading.Event()

    def cancel(self, doc_id: int) -> None:
        with self._lock:
            self._docs.add(doc_id)

    def forget(self, doc_id: int) -> None:
        with self._lock:
            self._docs.discard(doc_id)

    def is_cancelled(self, doc_id: int) -> bool:
        with self._lock:
            return doc_id in self._docs

    def pause(self) -> None:
        self._paused.set()

    def unpause(self) -> None:
        self._paused.clear()

    @property
    def paused(self) -> bool:
        return self._paused.is_set()


class DocCancel:
    """Cancellation of one document: the run's token, or a per-document request; pausing stops it too."""

    def __init__(self, cancellation: Cancellation, doc_id: int, token: CancelToken | None) -> None:
        self.cancellation, self.doc_id = cancellation, doc_id
        self.token = _Bridge(self)
        self._run_token = token

    @property
    def cancelled(self) -> bool:
        if self._run_token is not None and self._run_token.cancelled:
            return True
        return self.cancellation.is_cancelled(self.doc_id)

    def raise_if_cancelled(self) -> None:
        if self.cancellation.paused:
            raise Paused()
        if self.cancelled:
            raise Cancelled()


class Paused(Exception):
    """Raised inside a document's steps when the ingestor is paused; nothing is undone."""


class _Bridge(CancelToken):
    """A CancelToken view of ``_DocCancel`` for the loaders."""

    def __init__(self, owner: DocCancel) -> None:
        super().__init__()
        self._owner = owner

    @property
    def cancelled(self) -> bool:
        return self._owner.cancelled

    def raise_if_cancelled(self) -> None:
        self._owner.raise_if_cancelled()
