"""The facade the GUI, the CLI and the tests call: one object per data folder (like Anki's Collection).

``Library`` opens the store (the embedded server, or any PostgreSQL by URL), applies migrations, and hands out
connections and the single embedding model. Everything it does is blocking: the GUI calls it from workers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg

from localrag.core import paths
from localrag.core.config import Settings
from localrag.core.embed.onnx_embedder import OnnxEmbedder, load_embedder
from localrag.core.embed.sizing import fit_to_input
from localrag.core.errors import KnownError, StoreUnavailable, as_known
from localrag.core.progress import Cancelled, CancelToken
from localrag.core.store import collections as coll
from localrag.core.store import db, models
from localrag.core.store.migrate import Migrator
from localrag.core.store.server import EmbeddedServer

if TYPE_CHECKING:
    from localrag.core.embed.service import EmbeddingService

log = logging.getLogger("localrag.library")

QUERY_CACHE_SIZE = 4096
# How long a question waits for the embedding service before giving up with a clear message.
EMBED_WAIT_S = 60.0
# Pooled connections of a process (a window, a command): a hybrid search borrows two.
POOL_SIZE = 6
# Connections of the server a process leaves to the others (the window, commands) when it sizes its pool.
RESERVED_CONNECTIONS = 16
# How often retrieval asks whether another model's vectors must stand in for missing ones (``stand_in``).
STAND_IN_CHECK_S = 30.0


class Library:
    """The documents, vectors and chats of one data folder.

    Args:
        settings: defaults to ``Settings.load()``.
        owner: whether this process owns the data folder (the window does: one window per folder); a guest (a
            command, ``serve``) shares the embedded server with the owner and with other guests.
        connections: how many pooled connections this process may hold at once (``serve`` asks for many);
            never more than the server's ``max_connections`` less ``RESERVED_CONNECTIONS`` for other users.
    """

    def __init__(
        self, settings: Settings | None = None, *, owner: bool = True, connections: int = POOL_SIZE
    ) -> None:
        self.settings = settings or Settings.load()
        self.owner = owner
        self.connections = connections
        self.server: EmbeddedServer | None = None
        self.conninfo = ""
        self._open_error = ""  # why the last open failed, for what later uses of the store say
        self._embedder: OnnxEmbedder | None = None
        # ``_state_lock`` guards the model reference and the query cache and is never held across slow work;
        # ``_load_lock`` makes concurrent first uses share one load. ``drop_embedder`` replaces the load lock,
        # so a load that hangs keeps only the old lock, and never blocks whoever drops it (the UI's watchdog).
        self._state_lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._generation = 0
        self._restart_lock = threading.Lock()
        self._query_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        # (checked at, active model, the stand-in's name or "", its loaded model or None): see ``stand_in``.
        self._stand_in: tuple[float, str, str, OnnxEmbedder | None] = (-1e9, "", "", None)
        # Set by a front end that runs an EmbeddingService (the GUI): embeddings then go through its queue.
        self.embedding_service: EmbeddingService | None = None
        # Set by the process's host (``localrag.host``): the threads a hybrid search runs its second leg on.
        # None: the legs run one after the other on the searching thread (the core starts no thread).
        self.executor: Executor | None = None
        # Connections that retrievals and the API borrow (two at a time for a hybrid query: one per leg).
        self.pool = db.ConnectionPool(self._pool_conninfo, size=connections)

    # -- store ---------------------------------------------------------------------------------------------

    @property
    def embedded(self) -> bool:
        return not self.settings.database_url

    def file_copy_limit(self) -> int | None:
        """The largest file whose bytes are kept in the database, or None when no copies are kept."""
        mode = str(self.settings.file_copies or "auto").lower()
        keep = mode == "always" or (mode == "auto" and not self.embedded)
        return max(0, int(self.settings.file_copy_max_mb)) * 1024 * 1024 if keep else None

    def open(self, migrate: bool = True) -> None:
        """Start or reach the database and bring its schema up to date.

        Raises:
            StoreUnavailable: with a one-line reason (server down, no pgvector, bad URL).
            AlreadyRunning: another Local RAG owns this data folder.
        """
        try:
            if self.embedded:
                self.server = EmbeddedServer(paths.pg_data_dir(), owner=self.owner)
                self.conninfo = self.server.start()
            else:
                self.conninfo = self.settings.database_url
            with self.connect() as conn:
                if migrate:
                    Migrator(conn).migrate()
                self.pool.resize(min(self.connections, db.capacity(conn, RESERVED_CONNECTIONS)))
        except Exception as exc:  # what a later use of the store says, instead of "not open yet"
            known = as_known(exc)
            if known is None:
                raise
            self._open_error = known.message
            if known is exc:
                raise
            raise known from exc
        self._open_error = ""
        log.info("store open at %s", db.mask_password(self.conninfo))

    def _pool_conninfo(self) -> str:
        if not self.conninfo:
            raise StoreUnavailable(self._open_error or "The database is not open yet.")
        return self.conninfo

    def connect(self, *, autocommit: bool = False) -> psycopg.Connection[Any]:
        """A new connection (one per thread; psycopg connections are not shared between threads)."""
        if not self.conninfo:
            raise StoreUnavailable(self._open_error or "The database is not open yet.")
        return db.connect(self.conninfo, autocommit=autocommit)

    def ensure_store(self) -> bool:
        """Restart the embedded server if it died under us; return whether it was restarted."""
        if self.server is None or self.server.is_running():
            return False
        with self._restart_lock:
            if self.server.is_running():
                return False
            log.warning("the embedded PostgreSQL server is gone; restarting it")
            self.pool.clear()
            self.conninfo = self.server.restart()
            return True

    def close(self) -> None:
        """Stop the embedded server if this process owns it. Workers must be stopped first."""
        self.pool.clear()
        if self.server is not None:
            self.server.stop()
            self.server = None

    def __enter__(self) -> Library:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- collections ---------------------------------------------------------------------------------------
    # Named sets of documents (``core/store/collections.py``); each call opens its own connection and blocks.
    # A bad name, a name already taken or a collection gone raise ``CollectionError`` (a ``KnownError``).

    def collections(self) -> list[coll.Collection]:
        with self.connect() as conn:
            return coll.list_collections(conn)

    def collection(self, name_or_id: str | int) -> coll.Collection:
        """A collection by its id, or by its name (any case) or ``#id`` as a person types it."""
        with self.connect() as conn:
            if isinstance(name_or_id, int):
                return coll.get_collection(conn, name_or_id)
            return coll.find_collection(conn, name_or_id)

    def create_collection(self, name: str) -> coll.Collection:
        with self.connect() as conn:
            return coll.create_collection(conn, name)

    def rename_collection(self, collection_id: int, name: str) -> coll.Collection:
        with self.connect() as conn:
            return coll.rename_collection(conn, collection_id, name)

    def delete_collection(self, collection_id: int) -> list[int]:
        """Delete it (not its documents); returns the chats that were scoped to it (now to every document)."""
        with self.connect() as conn:
            return coll.delete_collection(conn, collection_id)

    def add_to_collection(
        self, collection_id: int, doc_ids: list[int] | None = None, *, paths: list[str] | None = None
    ) -> int:
        """Put documents in a collection: these ids, and the library's documents at ``paths`` (files, or
        folders and what is below them). Returns how many joined it."""
        with self.connect() as conn:
            ids = list(doc_ids or []) + (coll.documents_at(conn, paths) if paths else [])
            return coll.add_documents(conn, collection_id, ids)

    def remove_from_collection(self, collection_id: int, doc_ids: list[int]) -> int:
        with self.connect() as conn:
            return coll.remove_documents(conn, collection_id, doc_ids)

    def collection_documents(self, collection_id: int) -> list[int]:
        with self.connect() as conn:
            return coll.document_ids(conn, collection_id)

    # -- models --------------------------------------------------------------------------------------------

    @property
    def embedder(self) -> OnnxEmbedder:
        """The one embedding model of this process, loaded on first use and registered with the store.

        Blocking (a load takes seconds); callers on several threads share one load.
        """
        with self._state_lock:
            if self._embedder is not None:
                return self._embedder
            load_lock, generation = self._load_lock, self._generation
        with load_lock:
            with self._state_lock:
                if self._embedder is not None and self._generation == generation:
                    return self._embedder
            embedder = load_embedder(self.settings.embedding_model_dir or None, self.settings.embed_threads)
            if self.conninfo:
                with self.connect() as conn:
                    models.register_model(
                        conn,
                        embedder.name,
                        embedder.dimension,
                        model_dir=str(self.settings.embedding_model_dir or ""),
                    )
            with self._state_lock:
                if self._generation == generation:
                    self._embedder = embedder
            return embedder

    def stand_in(self, conn: psycopg.Connection[Any]) -> OnnxEmbedder | None:
        """The previous model, while a re-embedding after a switch of models is under way: its vectors answer
        for the chunks that have none from the active model yet, so nothing drops out of search by meaning
        meanwhile. None when the active model's vectors are complete, or the previous model's files are gone.

        Checked at most every ``STAND_IN_CHECK_S`` seconds; the model is loaded once (blocking, seconds).
        """
        active = self.embedder.name
        now = time.monotonic()
        with self._state_lock:
            checked, for_model, name, loaded = self._stand_in
        if for_model == active and now - checked < STAND_IN_CHECK_S:
            return loaded
        found = models.stand_in_model(conn, active)
        if found is None:
            loaded = None
        elif found[0] != name or for_model != active:  # a model that cannot be loaded is tried once
            loaded = _load_stand_in(*found)
        with self._state_lock:
            self._stand_in = (now, active, found[0] if found else "", loaded)
        return loaded

    def embed_query(self, text: str) -> np.ndarray:
        """The vector of one query, from an LRU cache, else from the embedding service (ahead of queued
        ingestion batches) when one runs, else from the model directly."""
        return self.embed_texts([text])[0]

    def embed_texts(self, texts: list[str], cancel: CancelToken | None = None) -> np.ndarray:
        """The vectors of a few short texts asked for now (a question's candidate sentences), in one batch
        ahead of queued ingestion batches; cached like queries, so the same sentence is embedded once.

        Raises:
            Cancelled: ``cancel`` was set while the embedding service was busy with them.
            KnownError: the embedding service did not answer within ``EMBED_WAIT_S``.
        """
        embedder = self.embedder
        name = embedder.name
        texts = fit_to_input(embedder, texts)  # a text longer than the model's input is cut, never refused
        vectors: dict[str, np.ndarray] = {}
        with self._state_lock:
            for t in texts:
                hit = self._query_cache.get((name, t))
                if hit is not None:
                    self._query_cache.move_to_end((name, t))
                    vectors[t] = hit
        missing = list(dict.fromkeys(t for t in texts if t not in vectors))
        if missing:
            service = self.embedding_service
            if service is not None:
                from localrag.core.embed.service import QUERY

                fresh = _wait(service.submit(missing, QUERY), cancel)
            else:
                fresh = embedder.embed(missing, batch_size=32)
            with self._state_lock:
                for t, v in zip(missing, fresh, strict=True):
                    vectors[t] = v
                    self._query_cache[(name, t)] = v
                while len(self._query_cache) > QUERY_CACHE_SIZE:
                    self._query_cache.popitem(last=False)
        if not texts:
            return np.zeros((0, embedder.dimension), dtype=np.float32)
        return np.stack([vectors[t] for t in texts])

    def drop_embedder(self) -> None:
        """Forget the loaded model (after a crash or a hang of its worker); the next use loads it again.

        Returns at once, even while a load is under way (its result is then not kept).
        """
        with self._state_lock:
            self._embedder = None
            self._generation += 1
            self._load_lock = threading.Lock()


def _wait(future: Future, cancel: CancelToken | None) -> np.ndarray:
    """The service's answer, waited for in short slices so that ``cancel`` is seen at once."""
    deadline = time.monotonic() + EMBED_WAIT_S
    while True:
        try:
            return future.result(timeout=0.05)
        except FutureTimeout:
            if cancel is not None and cancel.cancelled:
                future.cancel()
                raise Cancelled() from None
            if time.monotonic() > deadline:
                future.cancel()
                raise KnownError(
                    f"The embedding model did not answer within {EMBED_WAIT_S:.0f} s; it may be overloaded."
                ) from None


def _load_stand_in(name: str, dimension: int, model_dir: str | None) -> OnnxEmbedder | None:
    """The model ``name`` from the folder it was registered with ("" or unknown: the bundled one), or None
    when that folder no longer holds it."""
    try:
        embedder = load_embedder(model_dir or None, threads=1)
    except Exception as exc:  # its files are gone: keyword search answers for those chunks
        log.info("the previous embedding model %s cannot be loaded (%s)", name, exc)
        return None
    if embedder.name != name or embedder.dimension != dimension:
        log.info("the previous embedding model %s is no longer at %r", name, model_dir or "(bundled)")
        return None
    log.info("until the library is re-embedded, %s answers for the chunks it has vectors of", name)
    return embedder
