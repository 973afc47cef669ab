"""Ingestion: files become page-aware chunks and vectors, in steps that survive a crash at any point.

A document moves ``queued → extracting → embedding → ready`` (or ``failed``/``cancelled``):

1. ``enqueue`` hashes each file and records a ``queued`` row at once, so the panel shows it immediately. The
   same content again is a no-op ("already indexed"); a changed file gets a new row that replaces the old one
   when ready, so the old version keeps answering until then.
2. Extraction and chunking write all chunks in one transaction (COPY) together with the switch to
   ``embedding``.
3. Vectors are written in committed batches (COPY). Chunks whose text an indexed chunk already has reuse its
   vector. After a kill, the next run embeds only the chunks that still lack a vector.
4. One transaction adds the BM25 postings and the document's sections (``chat/overview.py``), marks the
   document ``ready`` and drops the older versions of its file.
   Retrieval only sees ``ready`` documents, so nothing is ever half-visible. A version overtaken by a newer
   one (the file was edited again before it finished) is dropped instead of finishing: the newest version
   wins.

A per-document advisory lock lets several ingestors (the window and a terminal) share one database safely.
One bad file fails alone with its reason; the others still go in.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from localrag.core.chat import overview
from localrag.core.embed.service import BATCH
from localrag.core.errors import BadDocument, KnownError, StoreUnavailable, internal_error
from localrag.core.ingest import loaders
from localrag.core.ingest.chunking import iter_chunks
from localrag.core.ingest.documents import UNFINISHED_STATUSES, remove_document
from localrag.core.ingest.loaders._common import display_name
from localrag.core.progress import Cancelled, CancelToken
from localrag.core.retrieve import bm25
from localrag.core.store.db import one

log = logging.getLogger("localrag.ingest")

STORE_RETRIES = 5  # consecutive lost connections before ingestion gives up
EMBED_BATCH = 64  # chunks per committed batch: a kill loses at most this much embedding work
SUPERSEDED = "superseded by a newer version of the file"
_ADVISORY_NS = 0x1A6  # advisory-lock namespace for "a process is ingesting this document"


@dataclass
class IngestEvent:
    """What happened to one file; the GUI renders these, the CLI prints them."""

    doc_id: int | None
    path: str
    title: str
    doc_type: str
    status: str  # queued | extracting | embedding | ready | failed | cancelled | skipped | removed
    pages_done: int = 0
    pages: int = 0
    chunks_embedded: int = 0
    chunks_total: int = 0
    eta_s: float | None = None
    error_code: str | None = None
    message: str = ""


@dataclass
class IngestSummary:
    ready: int = 0
    failed: int = 0
    cancelled: int = 0
    skipped: int = 0
    pages: int = 0
    chunks: int = 0
    embedded_chunks: int = 0  # chunks that needed the model (others reused a stored vector)
    embedded_tokens: int = 0
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(("extract", "chunk", "embed", "write"), 0.0)
    )
    events: list[IngestEvent] = field(default_factory=list)  # the last event of every file


def path_to_db(path: Path) -> tuple[str, bytes | None]:
    """A path as stored: readable text, plus its raw bytes when they are not valid UTF-8."""
    raw = os.fsencode(path)
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace"), raw


def path_from_db(text: str, raw: bytes | None) -> Path:
    return Path(os.fsdecode(bytes(raw))) if raw is not None else Path(text)


def file_sha256(path: Path, cancel: CancelToken | None = None) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
            if cancel is not None:
                cancel.raise_if_cancelled()
    return digest.hexdigest()


def expand_paths(paths: Iterable[Path]) -> Iterator[tuple[Path, bool]]:
    """Files under ``paths`` as ``(path, explicit)``: folders are walked (hidden entries skipped), and only
    explicitly named files are reported when their type is unsupported."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if not name.startswith("."):
                        yield Path(root) / name, False
        else:
            yield path, True


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
        self._conn: psycopg.Connection[Any] | None = None
        self._cancel_docs: set[int] = set()
        self._cancel_lock = threading.Lock()
        self._paused = threading.Event()

    # -- connection ----------------------------------------------------------------------------------------

    @property
    def conn(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self.library.ensure_store()
            self._conn = self.library.connect()
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- queueing ------------------------------------------------------------------------------------------

    def enqueue(self, paths: Iterable[Path], cancel: CancelToken | None = None) -> list[IngestEvent]:
        """Record every file under ``paths`` as queued (or say why not) and return one event per file."""
        events = []
        for path, explicit in expand_paths(paths):
            if cancel is not None and cancel.cancelled:
                break
            event = self._enqueue_one(path, explicit)
            if event is not None:
                events.append(self._emit(event))
        return events

    def _enqueue_one(self, path: Path, explicit: bool) -> IngestEvent | None:
        path = path.absolute()
        name = display_name(path)
        db_path, db_raw = path_to_db(path)
        doc_type = loaders.SUPPORTED_SUFFIXES.get(path.suffix.lower())
        if doc_type is None and not explicit:
            return IngestEvent(None, path_to_db(path)[0], name, "", "skipped", message="unsupported type")
        if path.suffix.lower() == ".gguf":
            return IngestEvent(
                None, path_to_db(path)[0], name, "", "skipped", message="a language model, not a document"
            )
        try:
            # The checks that need no parsing (missing, empty, too large, wrong type) fail fast, before
            # hashing.
            loaders.check_file(path, self.max_bytes)
            sha = file_sha256(path)
            mtime = path.stat().st_mtime
        except BadDocument as exc:
            return self._record_failure(path, doc_type or "", exc)
        except OSError as exc:
            return self._record_failure(
                path, doc_type or "", BadDocument(f"{name} cannot be read: {exc}", code="unreadable")
            )
        conn = self.conn
        with conn.transaction():
            same = conn.execute(
                "SELECT id, title, status, path FROM documents WHERE sha256 = %s AND status IN "
                "('queued', 'extracting', 'embedding', 'ready')",
                (sha,),
            ).fetchone()
            if same:
                doc_id, title, status, where = same
                if status == "ready":
                    msg = "already indexed" if where == db_path else f"already indexed as {title}"
                else:
                    msg = "already queued"
                return IngestEvent(doc_id, db_path, title, doc_type or "", "skipped", message=msg)
            # Earlier failed or cancelled attempts at this path make way for the new one.
            conn.execute(
                "DELETE FROM documents WHERE path = %s AND path_bytes IS NOT DISTINCT FROM %s "
                "AND status IN ('failed', 'cancelled')",
                (db_path, db_raw),
            )
            old = conn.execute(
                "SELECT id FROM documents WHERE path = %s AND path_bytes IS NOT DISTINCT FROM %s "
                "AND status = 'ready' ORDER BY id DESC LIMIT 1",
                (db_path, db_raw),
            ).fetchone()
            doc_id = one(
                conn.execute(
                    "INSERT INTO documents (path, path_bytes, title, doc_type, sha256, bytes, status, "
                    "replaces_id, source_mtime) VALUES (%s, %s, %s, %s, %s, %s, 'queued', %s, %s) RETURNING "
                    "id",
                    (
                        db_path,
                        db_raw,
                        name,
                        doc_type,
                        sha,
                        path.stat().st_size,
                        old[0] if old else None,
                        mtime,
                    ),
                )
            )[0]
        message = "changed: re-indexing" if old else "queued"
        return IngestEvent(doc_id, db_path, name, doc_type or "", "queued", message=message)

    @property
    def max_bytes(self) -> int:
        return loaders.DEFAULT_MAX_BYTES

    def _record_failure(self, path: Path, doc_type: str, exc: BadDocument) -> IngestEvent:
        """A file that cannot be indexed still gets a row, so the panel can say why."""
        conn = self.conn
        db_path, db_raw = path_to_db(path)
        with conn.transaction():
            conn.execute(
                "DELETE FROM documents WHERE path = %s AND path_bytes IS NOT DISTINCT FROM %s "
                "AND status IN ('failed', 'cancelled')",
                (db_path, db_raw),
            )
            try:
                size, mtime = path.stat().st_size, path.stat().st_mtime
            except OSError:
                size, mtime = 0, None
            doc_id = one(
                conn.execute(
                    "INSERT INTO documents (path, path_bytes, title, doc_type, sha256, bytes, status, "
                    "error_code, error, source_mtime) VALUES (%s, %s, %s, %s, '', %s, 'failed', %s, %s, %s) "
                    "RETURNING id",
                    (
                        db_path,
                        db_raw,
                        display_name(path),
                        doc_type or "unknown",
                        size,
                        exc.code,
                        exc.message,
                        mtime,
                    ),
                )
            )[0]
        return IngestEvent(
            doc_id, db_path, display_name(path), doc_type, "failed", error_code=exc.code, message=exc.message
        )

    # -- control -------------------------------------------------------------------------------------------

    def cancel_document(self, doc_id: int) -> None:
        """Stop work on one document (thread-safe); a queued one is marked cancelled when its turn comes."""
        with self._cancel_lock:
            self._cancel_docs.add(doc_id)

    def pause(self) -> None:
        """Stop ``run`` between steps without cancelling anything (thread-safe): the document in hand keeps
        its committed work and its status, and the next ``run`` (or the next start of the app) carries on with
        it."""
        self._paused.set()

    def unpause(self) -> None:
        self._paused.clear()

    @property
    def paused(self) -> bool:
        return self._paused.is_set()

    def remove_document(self, doc_id: int) -> bool:
        self.cancel_document(doc_id)
        removed = remove_document(self.conn, doc_id)
        if removed:
            self._emit(IngestEvent(doc_id, "", "", "", "removed"))
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
        """Give every ready document a vector from the active model for each chunk that lacks one.

        Used after switching embedding models. Batches are committed as they go (a kill loses at most one),
        the documents stay ready throughout, and vectors of the previous model are kept.
        """
        summary = IngestSummary()
        started = time.monotonic()
        model = self.library.embedder.name
        rows = self.conn.execute(
            "SELECT DISTINCT d.id, d.path, d.title, d.doc_type FROM documents d JOIN document_chunks c "
            "ON c.doc_id = d.id WHERE d.status = 'ready' AND NOT EXISTS (SELECT 1 FROM chunk_embeddings e "
            "WHERE e.chunk_id = c.id AND e.embedding_model = %s) ORDER BY d.id",
            (model,),
        ).fetchall()
        self.conn.commit()
        for doc_id, path, title, doc_type in rows:
            got = one(
                self.conn.execute("SELECT pg_try_advisory_lock(%s::int, %s::int)", (_ADVISORY_NS, doc_id))
            )[0]
            self.conn.commit()
            if not got:
                continue
            try:
                self._embed(doc_id, path, title, doc_type, summary, _DocCancel(self, doc_id, cancel))
                self._store_sections(doc_id)  # the central chunks follow the new vectors
                summary.ready += 1
                summary.events.append(
                    self._emit(IngestEvent(doc_id, path, title, doc_type, "ready", message="re-embedded"))
                )
            except Cancelled:
                summary.cancelled += 1
                break
            finally:
                self._unlock(doc_id)
        summary.seconds = time.monotonic() - started
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
                try:
                    if self._paused.is_set():
                        break
                    if cancel is not None and cancel.cancelled:
                        self._cancel_queued(summary)
                        break
                    doc_id = self._claim_next()
                    if doc_id is None:
                        break
                    try:
                        event = self._process(doc_id, summary, cancel)
                    finally:
                        self._unlock(doc_id)
                except (psycopg.OperationalError, StoreUnavailable) as exc:
                    # The server went away. Committed work is safe; restart it (when embedded) and resume.
                    store_failures += 1
                    self._drop_connection()
                    if store_failures > STORE_RETRIES:
                        raise StoreUnavailable(f"The database stopped answering: {exc}".strip()) from exc
                    log.warning("database connection lost during ingestion (%s); resuming", exc)
                    time.sleep(min(2.0, 0.2 * store_failures))
                    continue
                store_failures = 0
                if event is None:  # paused mid-document
                    break
                summary.events.append(event)
                done_any = True
                if event.status == "ready":
                    summary.ready += 1
                elif event.status == "failed":
                    summary.failed += 1
                elif event.status == "cancelled":
                    summary.cancelled += 1
        finally:
            summary.seconds = time.monotonic() - started
        if done_any and summary.chunks >= 500:
            with self.conn.transaction():
                self.conn.execute("ANALYZE document_chunks")
                self.conn.execute("ANALYZE chunk_embeddings")
                self.conn.execute("ANALYZE bm25_postings")
        return summary

    def _drop_connection(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None

    def _claim_next(self) -> int | None:
        """The oldest unfinished document no other ingestor holds, locked for this one."""
        conn = self.conn
        rows = conn.execute(
            "SELECT id FROM documents WHERE status IN ('queued', 'extracting', 'embedding') ORDER BY id"
        ).fetchall()
        conn.commit()
        for (doc_id,) in rows:
            got = one(conn.execute("SELECT pg_try_advisory_lock(%s::int, %s::int)", (_ADVISORY_NS, doc_id)))[
                0
            ]
            conn.commit()
            if got:
                status = conn.execute("SELECT status FROM documents WHERE id = %s", (doc_id,)).fetchone()
                conn.commit()
                if status and status[0] in UNFINISHED_STATUSES:
                    return doc_id
                self._unlock(doc_id)
        return None

    def _unlock(self, doc_id: int) -> None:
        if self._conn is not None and not self._conn.closed:
            try:
                self._conn.execute("SELECT pg_advisory_unlock(%s::int, %s::int)", (_ADVISORY_NS, doc_id))
                self._conn.commit()
            except psycopg.Error:
                if not self._conn.closed:
                    self._conn.rollback()

    def _cancel_queued(self, summary: IngestSummary) -> None:
        with self.conn.transaction():
            rows = self.conn.execute(
                "UPDATE documents SET status = 'cancelled', error = 'cancelled', updated_at = now() "
                "WHERE status IN ('queued', 'extracting', 'embedding') "
                "AND pg_try_advisory_lock(%s::int, id::int) RETURNING id, path, title, doc_type",
                (_ADVISORY_NS,),
            ).fetchall()
            for doc_id, *_ in rows:
                self.conn.execute("DELETE FROM document_chunks WHERE doc_id = %s", (doc_id,))
        for doc_id, path, title, doc_type in rows:
            self._unlock(doc_id)
            summary.cancelled += 1
            summary.events.append(
                self._emit(IngestEvent(doc_id, path, title, doc_type, "cancelled", message="cancelled"))
            )

    def _process(self, doc_id: int, summary: IngestSummary, cancel: CancelToken | None) -> IngestEvent | None:
        row = self.conn.execute(
            "SELECT path, path_bytes, title, doc_type, status FROM documents WHERE id = %s", (doc_id,)
        ).fetchone()
        self.conn.commit()
        if row is None:  # removed since it was claimed
            return None
        path, raw, title, doc_type, status = row
        fs_path = path_from_db(path, raw)
        doc_cancel = _DocCancel(self, doc_id, cancel)
        with self.conn.transaction():  # edited again before its turn: only the newest version is indexed
            superseded = self._delete_if_superseded(doc_id)
        if superseded:
            return self._emit(IngestEvent(doc_id, path, title, doc_type, "removed", message=SUPERSEDED))
        try:
            if status in ("queued", "extracting"):
                title, doc_type = self._extract(doc_id, fs_path, summary, doc_cancel)
            self._embed(doc_id, path, title, doc_type, summary, doc_cancel)
            return self._finish(doc_id, path, title, doc_type)
        except _Paused:
            self.conn.rollback()
            return None
        except Cancelled:
            self.conn.rollback()
            with self.conn.transaction():
                self.conn.execute("DELETE FROM document_chunks WHERE doc_id = %s", (doc_id,))
                self.conn.execute(
                    "UPDATE documents SET status = 'cancelled', error = 'cancelled', updated_at = now() "
                    "WHERE id = %s",
                    (doc_id,),
                )
            return self._emit(IngestEvent(doc_id, path, title, doc_type, "cancelled", message="cancelled"))
        except BadDocument as exc:
            return self._fail(doc_id, path, title, doc_type, exc.code, exc.message)
        except (psycopg.OperationalError, StoreUnavailable):
            raise  # the store is gone: the caller decides (the GUI shows the banner and retries)
        except KnownError as exc:
            return self._fail(doc_id, path, title, doc_type, exc.code, exc.message)
        except Exception as exc:  # a bug: this file fails with a trace in the log, the others go on
            log.exception("indexing %s failed", path)
            return self._fail(doc_id, path, title, doc_type, "error", internal_error(exc))
        finally:
            with self._cancel_lock:
                self._cancel_docs.discard(doc_id)

    def _fail(
        self, doc_id: int, path: str, title: str, doc_type: str, code: str, message: str
    ) -> IngestEvent:
        if not self.conn.closed:
            self.conn.rollback()
            with self.conn.transaction():
                self.conn.execute("DELETE FROM document_chunks WHERE doc_id = %s", (doc_id,))
                self.conn.execute(
                    "UPDATE documents SET status = 'failed', error_code = %s, error = %s, updated_at = now() "
                    "WHERE id = %s",
                    (code, message, doc_id),
                )
        return self._emit(
            IngestEvent(doc_id, path, title, doc_type, "failed", error_code=code, message=message)
        )

    def _extract(
        self, doc_id: int, path: Path, summary: IngestSummary, cancel: _DocCancel
    ) -> tuple[str, str]:
        conn = self.conn
        with conn.transaction():
            conn.execute("DELETE FROM document_chunks WHERE doc_id = %s", (doc_id,))
            conn.execute(
                "UPDATE documents SET status = 'extracting', updated_at = now() WHERE id = %s", (doc_id,)
            )
        last_emit = [0.0]
        title, doc_type = display_name(path), loaders.SUPPORTED_SUFFIXES.get(path.suffix.lower(), "")

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
                        "extracting",
                        pages_done=done,
                        pages=total,
                    )
                )

        t0 = time.monotonic()
        stream = loaders.open_document(path, max_bytes=self.max_bytes, cancel=cancel.token, on_page=on_page)
        title, doc_type = stream.title, stream.doc_type
        embedder = self.library.embedder
        rows = []
        pages = 0
        t_extract = time.monotonic() - t0

        def timed_pages() -> Iterator[Any]:
            """The stream's pages, with the time spent reading them counted as extraction."""
            nonlocal pages, t_extract
            it = iter(stream.pages)
            while True:
                tp = time.monotonic()
                page = next(it, None)
                t_extract += time.monotonic() - tp
                if page is None:
                    return
                pages += 1
                yield page

        for chunk in iter_chunks(
            timed_pages(),
            embedder,
            max_tokens=self.settings.chunk_tokens,
            overlap_tokens=self.settings.chunk_overlap,
            hard_limit=embedder.max_tokens,
        ):
            rows.append(
                (
                    doc_id,
                    chunk.chunk_index,
                    chunk.page_number,
                    chunk.heading_path,
                    chunk.text,
                    chunk.token_count,
                    chunk.char_start,
                    chunk.char_end,
                    chunk.text_hash,
                )
            )
        t_total = time.monotonic() - t0
        if not rows:
            raise BadDocument(f"{display_name(path)} has no text to index.", code="empty")
        summary.stage_seconds["extract"] += t_extract
        summary.stage_seconds["chunk"] += t_total - t_extract
        tw = time.monotonic()
        with conn.transaction():
            with conn.cursor().copy(
                "COPY document_chunks (doc_id, chunk_index, page_number, heading_path, text, token_count, "
                "char_start, char_end, text_hash) FROM STDIN"
            ) as copy:
                for r in rows:
                    copy.write_row(r)
            conn.execute(
                "UPDATE documents SET status = 'embedding', title = %s, doc_type = %s, mime = %s, pages = "
                "%s, pages_done = %s, chunks_total = %s, warnings = %s, updated_at = now() WHERE id = %s",
                (title, doc_type, stream.mime, pages, pages, len(rows), Jsonb(stream.warnings), doc_id),
            )
        summary.stage_seconds["write"] += time.monotonic() - tw
        summary.pages += pages
        summary.chunks += len(rows)
        self._emit(
            IngestEvent(
                doc_id,
                path_to_db(path)[0],
                title,
                doc_type,
                "embedding",
                pages_done=pages,
                pages=pages,
                chunks_total=len(rows),
                message="; ".join(stream.warnings),
            )
        )
        return title, doc_type

    def _embed(
        self, doc_id: int, path: str, title: str, doc_type: str, summary: IngestSummary, cancel: _DocCancel
    ) -> None:
        conn = self.conn
        model = self.library.embedder.name
        tw = time.monotonic()
        with conn.transaction():
            # Chunks whose exact text already has a vector from this model (an unchanged part of a changed
            # file, a duplicate passage) reuse it.
            conn.execute(
                "INSERT INTO chunk_embeddings (chunk_id, embedding_model, embedding) "
                "SELECT DISTINCT ON (c.id) c.id, e.embedding_model, e.embedding FROM document_chunks c "
                "JOIN document_chunks o ON o.text_hash = c.text_hash AND o.doc_id <> c.doc_id "
                "JOIN chunk_embeddings e ON e.chunk_id = o.id AND e.embedding_model = %s "
                "WHERE c.doc_id = %s ON CONFLICT DO NOTHING",
                (model, doc_id),
            )
        todo = conn.execute(
            "SELECT c.id, c.text, c.token_count FROM document_chunks c WHERE c.doc_id = %s AND NOT EXISTS "
            "(SELECT 1 FROM chunk_embeddings e WHERE e.chunk_id = c.id AND e.embedding_model = %s) "
            "ORDER BY c.chunk_index",
            (doc_id, model),
        ).fetchall()
        total = one(conn.execute("SELECT count(*) FROM document_chunks WHERE doc_id = %s", (doc_id,)))[0]
        conn.commit()
        summary.stage_seconds["write"] += time.monotonic() - tw
        done = total - len(todo)
        pages = one(conn.execute("SELECT pages FROM documents WHERE id = %s", (doc_id,)))[0]
        conn.commit()
        started, first_done = time.monotonic(), done
        batches = [todo[i : i + EMBED_BATCH] for i in range(0, len(todo), EMBED_BATCH)]
        cancel.raise_if_cancelled()
        pending: Future | None = self._submit([r[1] for r in batches[0]]) if batches else None
        try:
            for i, batch in enumerate(batches):
                cancel.raise_if_cancelled()
                te = time.monotonic()
                assert pending is not None
                vectors = self._vectors(pending, cancel)
                summary.stage_seconds["embed"] += time.monotonic() - te
                # Ask for the next batch before writing this one, so the model never waits on the database.
                pending = self._submit([r[1] for r in batches[i + 1]]) if i + 1 < len(batches) else None
                tw = time.monotonic()
                self._write_vectors(doc_id, model, batch, vectors)
                summary.stage_seconds["write"] += time.monotonic() - tw
                done += len(batch)
                summary.embedded_chunks += len(batch)
                summary.embedded_tokens += sum(r[2] for r in batch)
                rate = (done - first_done) / max(1e-6, time.monotonic() - started)
                self._emit(
                    IngestEvent(
                        doc_id,
                        path,
                        title,
                        doc_type,
                        "embedding",
                        pages_done=pages,
                        pages=pages,
                        chunks_embedded=done,
                        chunks_total=total,
                        eta_s=(total - done) / rate if rate > 0 else None,
                    )
                )
        finally:
            if pending is not None:
                pending.cancel()  # still queued (paused, cancelled, failed): the worker skips it

    def _write_vectors(self, doc_id: int, model: str, batch: list[tuple], vectors: np.ndarray) -> None:
        conn = self.conn
        with conn.transaction():
            with conn.cursor().copy(
                "COPY chunk_embeddings (chunk_id, embedding_model, embedding) FROM STDIN"
            ) as copy:
                for (chunk_id, _text, _n), vec in zip(batch, vectors, strict=True):
                    copy.write_row((chunk_id, model, "[" + ",".join(f"{x:.7g}" for x in vec) + "]"))
            conn.execute(
                "UPDATE documents SET chunks_embedded = (SELECT count(*) FROM chunk_embeddings e JOIN "
                "document_chunks c ON c.id = e.chunk_id WHERE c.doc_id = %s AND e.embedding_model = %s), "
                "updated_at = now() WHERE id = %s",
                (doc_id, model, doc_id),
            )

    def _finish(self, doc_id: int, path: str, title: str, doc_type: str) -> IngestEvent:
        with self.conn.transaction():
            superseded = self._delete_if_superseded(doc_id)
            if not superseded:
                pages, chunks = self._mark_ready(doc_id)
        if superseded:
            return self._emit(IngestEvent(doc_id, path, title, doc_type, "removed", message=SUPERSEDED))
        return self._emit(
            IngestEvent(
                doc_id,
                path,
                title,
                doc_type,
                "ready",
                pages_done=pages,
                pages=pages,
                chunks_embedded=chunks,
                chunks_total=chunks,
                message="ready",
            )
        )

    def _mark_ready(self, doc_id: int) -> tuple[int, int]:
        """Add the BM25 postings and the sections, mark the document ready and drop the older versions of its
        file (the one this row was queued to replace among them; unfinished ones drop themselves when their
        turn comes). Call inside a transaction. Returns (pages, chunks)."""
        conn = self.conn
        bm25.index_document(conn, doc_id)
        pages, chunks = one(
            conn.execute(
                "UPDATE documents SET status = 'ready', chunks_embedded = chunks_total, indexed_at = now(), "
                "updated_at = now() WHERE id = %s RETURNING pages, chunks_total",
                (doc_id,),
            )
        )
        self._store_sections(doc_id)
        older = conn.execute(
            "SELECT o.id, o.status FROM documents o JOIN documents d ON d.id = %s "
            "WHERE o.id < d.id AND o.path = d.path AND o.path_bytes IS NOT DISTINCT FROM d.path_bytes "
            "AND o.status IN ('ready', 'failed', 'cancelled')",
            (doc_id,),
        ).fetchall()
        for old_id, old_status in older:
            if old_status == "ready":
                bm25.unindex_document(conn, old_id)
            conn.execute("DELETE FROM documents WHERE id = %s", (old_id,))
        return pages, chunks

    def _store_sections(self, doc_id: int) -> None:
        """Store the document's top-level sections and their central chunks (core/chat/overview.py). A failure
        is logged and undone (a savepoint) and the document still becomes ready: the chat computes them
        later."""
        try:
            overview.compute_sections(self.conn, doc_id, self.library.embedder.name)
        except Exception:
            log.warning("could not compute the sections of document %s", doc_id, exc_info=True)

    def _delete_if_superseded(self, doc_id: int) -> bool:
        """Delete this version when a newer version of its file is queued, in progress or ready (call inside a
        transaction). Returns whether it did."""
        return (
            self.conn.execute(
                "DELETE FROM documents d WHERE d.id = %s AND EXISTS (SELECT 1 FROM documents n WHERE n.id > "
                "d.id AND n.path = d.path AND n.path_bytes IS NOT DISTINCT FROM d.path_bytes "
                "AND n.status IN ('queued', 'extracting', 'embedding', 'ready')) RETURNING d.id",
                (doc_id,),
            ).fetchone()
            is not None
        )

    # -- embedding -------------------------------------------------------------------------------------------

    def _submit(self, texts: list[str]) -> Future:
        """Embed a batch: through the process's embedding service when a host runs one (the window, the command
        line), else here and now."""
        service = self.library.embedding_service
        if service is not None:
            return service.submit(texts, BATCH)
        future: Future = Future()
        try:
            future.set_result(self.library.embedder.embed(texts, batch_size=32))
        except Exception as exc:
            future.set_exception(exc)
        return future

    @staticmethod
    def _vectors(pending: Future, cancel: _DocCancel) -> np.ndarray:
        """The batch's vectors. Pausing or cancelling interrupts the wait; a batch failed because the embedding
        worker stopped while pausing (the app is closing) is a pause, not the document's failure."""
        while True:
            try:
                return pending.result(timeout=0.1)
            except FutureTimeout:
                cancel.raise_if_cancelled()
            except KnownError:
                cancel.raise_if_cancelled()
                raise

    def _emit(self, event: IngestEvent) -> IngestEvent:
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:  # a broken listener must not stop indexing
                log.exception("ingest event listener failed")
        return event


class _DocCancel:
    """Cancellation of one document: the run's token, or a per-document request."""

    def __init__(self, ingestor: Ingestor, doc_id: int, token: CancelToken | None) -> None:
        self.ingestor, self.doc_id = ingestor, doc_id
        self.token = _Bridge(self)
        self._run_token = token

    @property
    def cancelled(self) -> bool:
        if self._run_token is not None and self._run_token.cancelled:
            return True
        with self.ingestor._cancel_lock:
            return self.doc_id in self.ingestor._cancel_docs

    def raise_if_cancelled(self) -> None:
        if self.ingestor._paused.is_set():
            raise _Paused()
        if self.cancelled:
            raise Cancelled()


class _Paused(Exception):
    """Raised inside a document's steps when the ingestor is paused; nothing is undone."""


class _Bridge(CancelToken):
    """A CancelToken view of ``_DocCancel`` for the loaders."""

    def __init__(self, owner: _DocCancel) -> None:
        super().__init__()
        self._owner = owner

    @property
    def cancelled(self) -> bool:
        return self._owner.cancelled

    def raise_if_cancelled(self) -> None:
        self._owner.raise_if_cancelled()
