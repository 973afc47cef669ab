"""The queue of documents to index, kept in the documents table: files recorded as queued, the next one
claimed by one ingestor at a time (a per-document advisory lock, so the window and a terminal can share one
database), and what was queued cancelled."""

from __future__ import annotations

import errno
import hashlib
import logging
import os
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

import psycopg

from localrag.core.errors import BadDocument
from localrag.core.ingest import loaders, status
from localrag.core.ingest.connection import Connection
from localrag.core.ingest.events import IngestEvent, IngestSummary
from localrag.core.ingest.loaders._common import display_name
from localrag.core.progress import CancelToken
from localrag.core.retrieve import bm25
from localrag.core.store import files
from localrag.core.store.db import one

log = logging.getLogger("localrag.ingest.queue")

ADVISORY_NS = 0x1A6  # advisory-lock namespace for "a process is ingesting this document"
CLAIM_PAGE = 32  # unfinished documents looked at per query when claiming the next


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
    explicitly named files are reported when their type is unsupported. Links to folders met on the way are
    not followed but listed, so that ``link_problem`` can say why they were left out."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                links = sorted(
                    d for d in dirs if not d.startswith(".") and os.path.islink(os.path.join(root, d))
                )
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in links)
                for name in sorted([*files, *links]):
                    if not name.startswith("."):
                        yield Path(root) / name, False
        else:
            yield path, True


def link_problem(path: Path) -> str | None:
    """Why a symbolic link is not followed (a loop, or a link to a folder inside a walked one), or ``None``
    for anything else (a link to a file is read like the file)."""
    if not path.is_symlink():
        return None
    try:
        target = path.resolve(strict=True)
    except (RuntimeError, OSError) as exc:  # RuntimeError: Python before 3.13 on a loop
        if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP:
            return "symlink loop: not followed"
        return None  # a dangling link: the file "no longer exists"
    if not target.is_dir():
        return None
    where = path.absolute().parent.resolve()
    if where == target or target in where.parents:
        return "symlink loop: not followed"
    return "link to a folder: not followed"


class IngestQueue:
    """Recording, claiming and cancelling queued documents. Blocking; used by one ingesting thread.

    Args:
        db: the ingestor's connection.
        emit: reports an event (and returns it).
        max_bytes: the largest file indexed.
        copy_max_bytes: keep a copy of each queued file up to this size in the database (None: no copies).
    """

    def __init__(
        self,
        db: Connection,
        emit: Callable[[IngestEvent], IngestEvent],
        max_bytes: int = loaders.DEFAULT_MAX_BYTES,
        copy_max_bytes: int | None = None,
    ) -> None:
        self.db = db
        self._emit = emit
        self.max_bytes = max_bytes
        self.copy_max_bytes = copy_max_bytes

    @property
    def conn(self) -> psycopg.Connection:
        return self.db.get()

    def enqueue(self, paths: Iterable[Path], cancel: CancelToken | None = None) -> list[IngestEvent]:
        """Record every file under ``paths`` as queued (or say why not) and return one event per file."""
        return self.enqueue_files(expand_paths(paths), cancel)

    def enqueue_files(
        self, files: Iterable[tuple[Path, bool]], cancel: CancelToken | None = None
    ) -> list[IngestEvent]:
        """Like ``enqueue`` for files already listed as ``expand_paths`` lists them: ``(path, explicit)``."""
        events = []
        for path, explicit in files:
            if cancel is not None and cancel.cancelled:
                break
            event = self._enqueue_one(path, explicit)
            if event is not None:
                events.append(self._emit(event))
        if self.copy_max_bytes is not None and any(e.status == status.QUEUED for e in events):
            self._drop_unused_copies()  # once for the lot: it looks at every copy
        return events

    def _enqueue_one(self, path: Path, explicit: bool) -> IngestEvent | None:
        path = path.absolute()
        name = display_name(path)
        db_path = path_to_db(path)[0]
        link = link_problem(path)
        if link is not None:
            return IngestEvent(
                None, db_path, name, "", status.SKIPPED, error_code="unsupported", message=link
            )
        doc_type = loaders.SUPPORTED_SUFFIXES.get(path.suffix.lower())
        if doc_type is None and not explicit:
            return IngestEvent(
                None, path_to_db(path)[0], name, "", status.SKIPPED, message="unsupported type"
            )
        if path.suffix.lower() == ".gguf":
            return IngestEvent(
                None,
                path_to_db(path)[0],
                name,
                "",
                status.SKIPPED,
                message="a language model, not a document",
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
        try:
            row = self._queue_row(path, sha, mtime, name, doc_type)
        except psycopg.errors.UniqueViolation:
            # Another client queued the same content between the check and the insert: it is found now.
            row = self._queue_row(path, sha, mtime, name, doc_type)
        if isinstance(row, IngestEvent):
            return row
        doc_id, old = row
        message = "changed: re-indexing" if old else "queued"
        if self.copy_max_bytes is not None:
            self._keep_copy(path, sha)
        return IngestEvent(doc_id, db_path, name, doc_type or "", status.QUEUED, message=message)

    def _queue_row(
        self, path: Path, sha: str, mtime: float, name: str, doc_type: str | None
    ) -> IngestEvent | tuple[int, Any]:
        """Record ``path`` as queued, in one transaction: its new row's id and the ready row it replaces (or
        None); or, when the same content is already in the library, the event that says so."""
        db_path, db_raw = path_to_db(path)
        conn = self.conn
        with conn.transaction():
            same = conn.execute(
                "SELECT id, title, status, path FROM documents WHERE sha256 = %s AND status = ANY(%s)",
                (sha, list(status.LIVE)),
            ).fetchone()
            if same:
                doc_id, title, state, where = same
                if state == status.READY:
                    msg = "already indexed" if where == db_path else f"already indexed as {title}"
                else:
                    msg = "already queued"
                return IngestEvent(doc_id, db_path, title, doc_type or "", status.SKIPPED, message=msg)
            # Earlier failed or cancelled attempts at this path make way for the new one.
            conn.execute(
                "DELETE FROM documents WHERE path = %s AND path_bytes IS NOT DISTINCT FROM %s "
                "AND status = ANY(%s)",
                (db_path, db_raw, list(status.GAVE_UP)),
            )
            old = conn.execute(
                "SELECT id FROM documents WHERE path = %s AND path_bytes IS NOT DISTINCT FROM %s "
                "AND status = %s ORDER BY id DESC LIMIT 1",
                (db_path, db_raw, status.READY),
            ).fetchone()
            doc_id = one(
                conn.execute(
                    "INSERT INTO documents (path, path_bytes, title, doc_type, sha256, bytes, status, "
                    "replaces_id, source_mtime) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                    (
                        db_path,
                        db_raw,
                        name,
                        doc_type,
                        sha,
                        path.stat().st_size,
                        status.QUEUED,
                        old[0] if old else None,
                        mtime,
                    ),
                )
            )[0]
        return doc_id, old

    def _keep_copy(self, path: Path, sha: str) -> None:
        """The file's bytes in the database for the other computers sharing it (a failure costs only that)."""
        assert self.copy_max_bytes is not None
        try:
            if not files.store_copy(self.conn, path, sha, self.copy_max_bytes):
                log.info("no copy of %s kept in the database (larger than the limit, or changed)", path)
        except (OSError, psycopg.Error) as exc:
            log.warning("could not keep a copy of %s in the database: %s", path, exc)

    def _drop_unused_copies(self) -> None:
        """Delete the copies of versions that newer ones have replaced since."""
        try:
            with self.conn.transaction():
                files.drop_unused_copies(self.conn)
        except psycopg.Error as exc:
            log.warning("could not drop the unused copies of files: %s", exc)

    def _record_failure(self, path: Path, doc_type: str, exc: BadDocument) -> IngestEvent:
        """A file that cannot be indexed still gets a row, so the panel can say why."""
        conn = self.conn
        db_path, db_raw = path_to_db(path)
        with conn.transaction():
            conn.execute(
                "DELETE FROM documents WHERE path = %s AND path_bytes IS NOT DISTINCT FROM %s "
                "AND status = ANY(%s)",
                (db_path, db_raw, list(status.GAVE_UP)),
            )
            try:
                size, mtime = path.stat().st_size, path.stat().st_mtime
            except OSError:
                size, mtime = 0, None
            doc_id = one(
                conn.execute(
                    "INSERT INTO documents (path, path_bytes, title, doc_type, sha256, bytes, status, "
                    "error_code, error, source_mtime) "
                    "VALUES (%s, %s, %s, %s, '', %s, %s, %s, %s, %s) RETURNING id",
                    (
                        db_path,
                        db_raw,
                        display_name(path),
                        doc_type or "unknown",
                        size,
                        status.FAILED,
                        exc.code,
                        exc.message,
                        mtime,
                    ),
                )
            )[0]
        return IngestEvent(
            doc_id,
            db_path,
            display_name(path),
            doc_type,
            status.FAILED,
            error_code=exc.code,
            message=exc.message,
        )

    # -- claiming --------------------------------------------------------------------------------------------

    def claim_next(self, held: Collection[int] = ()) -> int | None:
        """The oldest unfinished document no ingestor holds, locked for this one (``held``: the documents this
        one holds already; an advisory lock can be taken again by the session that holds it)."""
        conn = self.conn
        after = 0
        while True:  # a page of candidates at a time: a queue of 10,000 files is not read per claim
            rows = conn.execute(
                "SELECT id FROM documents WHERE status = ANY(%s) AND id > %s AND NOT id = ANY(%s::bigint[]) "
                "ORDER BY id LIMIT %s",
                (list(status.UNFINISHED), after, list(held), CLAIM_PAGE),
            ).fetchall()
            conn.commit()
            for (doc_id,) in rows:
                if self.try_lock(doc_id):
                    row = conn.execute("SELECT status FROM documents WHERE id = %s", (doc_id,)).fetchone()
                    conn.commit()
                    if row and row[0] in status.UNFINISHED:
                        return doc_id
                    self.unlock(doc_id)
            if len(rows) < CLAIM_PAGE:
                return None
            after = rows[-1][0]

    def try_lock(self, doc_id: int) -> bool:
        """Take the document's advisory lock for this ingestor, if no other one holds it."""
        got = self.conn.execute(
            "SELECT pg_try_advisory_lock(%s::int, %s::int)", (ADVISORY_NS, doc_id)
        ).fetchone()
        self.conn.commit()
        return bool(got and got[0])

    def unlock(self, doc_id: int) -> None:
        conn = self.db.current
        if conn is not None:
            try:
                conn.execute("SELECT pg_advisory_unlock(%s::int, %s::int)", (ADVISORY_NS, doc_id))
                conn.commit()
            except psycopg.Error:
                if not conn.closed:
                    conn.rollback()

    def cancel_queued(self, summary: IngestSummary) -> None:
        with self.conn.transaction():
            rows = self.conn.execute(
                "UPDATE documents SET status = %s, error = 'cancelled', updated_at = now() "
                "WHERE status = ANY(%s) AND pg_try_advisory_lock(%s::int, id::int) "
                "RETURNING id, path, title, doc_type",
                (status.CANCELLED, list(status.UNFINISHED), ADVISORY_NS),
            ).fetchall()
            for doc_id, *_ in rows:
                bm25.unindex_document(self.conn, doc_id)  # one being read was searchable
                self.conn.execute("DELETE FROM document_chunks WHERE doc_id = %s", (doc_id,))
        for doc_id, path, title, doc_type in rows:
            self.unlock(doc_id)
            summary.cancelled += 1
            summary.events.append(
                self._emit(IngestEvent(doc_id, path, title, doc_type, status.CANCELLED, message="cancelled"))
            )
