"""What the window runs, without a widget: the store, the workers, the models' state, re-embedding and
shutdown.

``AppServices`` is to the window what Anki's main window's collection and task manager are to its views: it
opens the store in the background, starts the embedding, ingest and generation workers once the store is open,
forwards their news as typed signals (payloads are the core's dataclasses), and stops everything in order when
the window closes. The window and its views only show what these signals say and call its methods.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from localrag.core.config import API_PORT
from localrag.core.ingest.documents import DocumentInfo
from localrag.core.ingest.pipeline import IngestEvent
from localrag.core.library import Library
from localrag.gui.api_process import ApiProcess
from localrag.gui.chat_worker import FAILED, ChatWorker
from localrag.gui.qt import QObject, QTimer, Signal
from localrag.gui.tasks import Op, task_manager
from localrag.gui.workers import EmbeddingWorker, IngestWorker, ReembedWorker
from localrag.host import Host

log = logging.getLogger("localrag.gui.services")

T = TypeVar("T")

WATCH_SCAN_MS = 60_000
# How long the embedding model may take to load before the watchdog replaces its worker (and says so).
EMBED_LOAD_TIMEOUT_S = 300.0


class AppServices(QObject):
    """The application's background side for one window. Not a widget: it never touches one.

    Args:
        library: the facade; ``shutdown`` closes it (stopping an embedded server it owns) after the workers.

    Public:
        start(), retry_store(): open (or reopen) the store in the background.
        add_paths(paths), remove_documents(ids), reindex_documents(ids), cancel_documents(ids), cancel_all():
            the documents (a file dropped before the store opened is queued until it does).
        refresh_documents(), scan_watched(): a fresh listing; a look at the watched folders.
        load_details(id), save_details(id, edits): what a document is (organisation, kind, period…).
        check_reembed(), start_reembed(), cancel_reembed(): documents without vectors from the active model.
        restart_embedder(), set_gguf(path), check_llm(), settings_changed(names): the models.
        start_api(), stop_api(): the local HTTP API in a child process (``api``: its port and address).
        shutdown(root): stop every worker in order, wait for them, close the library.
        chat_worker, embedding_worker, ingest_worker, reembed_worker: the workers (the latter three exist once
        the
            store has opened, or a re-embedding started); store_is_ready; model_name; reembed_count.

    Signals:
        store_ready(): the database is open and migrated, and the workers run.
        store_failed(str): the database could not be opened or went away (the message says why).
        embedder_ready(str): the embedding model (its name) is loaded and answering.
        embedder_restarting(str): the embedding worker failed and is being recreated.
        embedder_failed(str): the embedding worker failed and was not recreated (``restart_embedder``
        retries).
        llm_checked(str): the language model file was checked: "" when usable, else why not.
        model_state_changed(str): the language model is ``loading``, ``ready`` or ``failed``
        (``model_error``).
        ingest_event(IngestEvent): what happened to one file (ingestion or re-embedding).
        paths_enqueued(list): these dropped paths (strings) are walked and recorded.
        documents_listed(list): a fresh listing: a list of ``DocumentRow`` (the panel's rows, made off the UI
            thread).
        details_loaded(object): ``load_details``' document (a ``DocumentInfo``).
        details_saved(int, bool): a document's edited metadata was saved; whether its chunks must be embedded
            again (their context changed).
        details_failed(str): loading or saving a document's metadata failed (the message says why).
        watched_scanned(int, int): the watched folders had this many files to add, documents gone.
        reembed_checked(int): this many documents lack vectors from the active embedding model.
        reembed_progress(int, int, str): re-embedding: documents done, in all, the title in hand.
        reembed_done(str): a re-embedding run ended; empty on success, else what went wrong.
        settings_save_failed(str): the settings could not be saved.
        api_started(str): the local HTTP API (``start_api``) listens at this address.
        api_stopped(str): it ended: empty when asked to, else why.
    """

    store_ready = Signal()
    store_failed = Signal(str)
    embedder_ready = Signal(str)
    embedder_restarting = Signal(str)
    embedder_failed = Signal(str)
    llm_checked = Signal(str)
    model_state_changed = Signal(str)
    ingest_event = Signal(IngestEvent)
    paths_enqueued = Signal(list)
    documents_listed = Signal(list)
    details_loaded = Signal(object)
    details_saved = Signal(int, bool)
    details_failed = Signal(str)
    watched_scanned = Signal(int, int)
    reembed_checked = Signal(int)
    reembed_progress = Signal(int, int, str)
    reembed_done = Signal(str)
    settings_save_failed = Signal(str)
    api_started = Signal(str)
    api_stopped = Signal(str)

    def __init__(self, library: Library, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.library = library
        # The threads of the library's searches (their second leg); the workers below run the other loops.
        self.host = Host(library).start()
        self.store_is_ready = False
        self.closing = False
        self.reembed_count = 0
        self._pending_paths: list[str] = []
        self.chat_worker = ChatWorker(library, parent=self)
        self.embedding_worker: EmbeddingWorker | None = None
        self.ingest_worker: IngestWorker | None = None
        self.reembed_worker: ReembedWorker | None = None
        w = self.chat_worker
        w.model_loading.connect(lambda: self.model_state_changed.emit("loading"))
        w.model_ready.connect(lambda: self.model_state_changed.emit("ready"))
        w.model_failed.connect(lambda _message: self.model_state_changed.emit(FAILED))
        self.api = ApiProcess(API_PORT, parent=self)
        self.api.started.connect(self.api_started)
        self.api.stopped.connect(self.api_stopped)
        self.watch_timer = QTimer(self)
        self.watch_timer.setInterval(WATCH_SCAN_MS)
        self.watch_timer.timeout.connect(self.scan_watched)

    def _op(self, fn: Callable[[], T]) -> Op[T]:
        return Op(fn, owner=self)

    # -- the store -------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Open the store in the background (then start the workers), and check the language model file."""
        self._op(self.library.open).success(lambda _: self._on_store_ready()).failure(
            lambda message, _known: self._on_store_failed(message)
        ).run_in_background()
        self.check_llm()

    def retry_store(self) -> None:
        """Restart the embedded server if it died, reopen, and resume the work."""
        self._op(self._reopen_store).success(lambda _: self._on_store_ready()).failure(
            lambda message, _known: self._on_store_failed(message)
        ).run_in_background()

    def _reopen_store(self) -> None:
        library = self.library
        if library.server is not None and library.conninfo:
            library.ensure_store()  # restarts an embedded server that died
            with library.connect() as conn:
                conn.execute("SELECT 1")
        else:
            library.open()

    def _on_store_ready(self) -> None:
        if self.closing:
            return
        self.store_is_ready = True
        if self.embedding_worker is None:
            worker = EmbeddingWorker(self.library, load_timeout_s=EMBED_LOAD_TIMEOUT_S, parent=self)
            worker.ready.connect(self._on_embedder_ready)
            worker.restarting.connect(self.embedder_restarting)
            worker.failed.connect(self.embedder_failed)
            self.embedding_worker = worker
            worker.start()
        if self.ingest_worker is None:
            ingest = IngestWorker(self.library, parent=self)
            ingest.ingest_event.connect(self.ingest_event)
            ingest.enqueued.connect(self.paths_enqueued)
            ingest.store_failed.connect(self._on_store_lost)
            ingest.watched_scanned.connect(self.watched_scanned)
            self.ingest_worker = ingest
            ingest.start()
            if self._pending_paths:
                ingest.add_paths(self._pending_paths)
                self._pending_paths = []
        else:
            self.ingest_worker.resume()
        self.store_ready.emit()
        self.refresh_documents()
        self.scan_watched()
        self.watch_timer.start()
        self.chat_worker.warm_up()

    def _on_store_failed(self, message: str) -> None:
        if self.closing:
            return
        self.store_is_ready = False
        self.store_failed.emit(message)

    def _on_store_lost(self, message: str) -> None:
        """The database went away after start-up (an ingest or a listing failed on it)."""
        if self.store_is_ready:
            self._on_store_failed(message)

    # -- documents -------------------------------------------------------------------------------------------

    def refresh_documents(self) -> None:
        """List the documents (off the UI thread); ``documents_listed`` brings them."""
        from localrag.core.ingest.documents import list_documents
        from localrag.gui.views.documents_model import DocumentRow

        def listing() -> list[DocumentRow]:
            with self.library.connect() as conn:
                infos = list_documents(conn)
            return [DocumentRow.from_info(i) for i in infos]  # made here: 20,000 take the UI thread long

        self._op(listing).success(self.documents_listed.emit).failure(
            lambda message, known: self._on_store_lost(message) if known else None
        ).run_in_background()

    def load_details(self, doc_id: int) -> None:
        """Read one document's metadata (off the UI thread); ``details_loaded`` brings it."""
        from localrag.core.ingest.documents import get_document

        def read() -> DocumentInfo | None:
            with self.library.connect() as conn:
                return get_document(conn, doc_id)

        self._op(read).success(
            lambda info: (
                self.details_loaded.emit(info)
                if info is not None
                else self.details_failed.emit("That document is no longer in the library.")
            )
        ).failure(lambda message, _known: self.details_failed.emit(message)).run_in_background()

    def save_details(self, doc_id: int, edits: dict[str, str]) -> None:
        """Set a document's metadata by hand (off the UI thread): its chunk contexts and keywords follow at
        once; ``details_saved`` says whether its vectors must be embedded again."""
        from localrag.core.ingest import metadata

        def save() -> bool:
            with self.library.connect() as conn:
                stale = metadata.edit(conn, doc_id, edits)
                conn.commit()
                return stale

        def saved(stale: bool) -> None:
            self.refresh_documents()
            self.details_saved.emit(doc_id, stale)

        self._op(save).success(saved).failure(
            lambda message, _known: self.details_failed.emit(f"Details not saved: {message}")
        ).run_in_background()

    def add_paths(self, paths: list[str]) -> None:
        """Index these files and folders; returns at once (before the store opens, they wait for it)."""
        if self.ingest_worker is not None:
            self.ingest_worker.add_paths(paths)
        else:
            self._pending_paths.extend(paths)

    def remove_documents(self, doc_ids: list[int]) -> None:
        for doc_id in doc_ids if self.ingest_worker is not None else []:
            self.ingest_worker.remove_document(doc_id)  # type: ignore[union-attr]

    def reindex_documents(self, doc_ids: list[int]) -> None:
        for doc_id in doc_ids if self.ingest_worker is not None else []:
            self.ingest_worker.reindex_document(doc_id)  # type: ignore[union-attr]

    def cancel_documents(self, doc_ids: list[int]) -> None:
        for doc_id in doc_ids if self.ingest_worker is not None else []:
            self.ingest_worker.cancel_document(doc_id)  # type: ignore[union-attr]

    def cancel_all(self) -> None:
        if self.ingest_worker is not None:
            self.ingest_worker.cancel_all()

    def scan_watched(self) -> None:
        if self.ingest_worker is not None and self.store_is_ready:
            self.ingest_worker.scan_watched()

    # -- the embedding model and re-embedding ----------------------------------------------------------------

    @property
    def model_name(self) -> str:
        """The embedding model's name once loaded, else ""."""
        return self.embedding_worker.model_name if self.embedding_worker is not None else ""

    def _on_embedder_ready(self, name: str) -> None:
        self.embedder_ready.emit(name)
        self.check_reembed()

    def restart_embedder(self) -> None:
        """A fresh embedding worker loads the model again (the banner's Restart)."""
        if self.embedding_worker is not None:
            self.embedding_worker.restart()

    def check_reembed(self) -> None:
        """Count documents without vectors from the active model (``reembed_checked``)."""
        from localrag.core.ingest.documents import reembed_needed

        model = self.model_name
        if not model or not self.store_is_ready:
            return

        def count() -> int:
            with self.library.connect() as conn:
                return reembed_needed(conn, model)

        self._op(count).success(self._on_reembed_count).failure(
            lambda message, _known: log.warning("re-embed check failed: %s", message)
        ).run_in_background()

    def _on_reembed_count(self, n: int) -> None:
        self.reembed_count = n
        self.reembed_checked.emit(n)

    @property
    def reembedding(self) -> bool:
        return self.reembed_worker is not None and self.reembed_worker.running

    def start_reembed(self) -> None:
        """Embed the chunks of every document that lacks vectors from the active model, in the background."""
        if self.reembedding:
            return
        # At least one: a run started after an edit of metadata, before any count, has one document to do.
        worker = ReembedWorker(self.library, total=max(1, self.reembed_count), parent=self)
        self.reembed_worker = worker
        worker.progress.connect(self.reembed_progress)
        worker.finished_run.connect(self._on_reembed_done)
        worker.ingest_event.connect(self.ingest_event)
        worker.start()

    def cancel_reembed(self) -> None:
        if self.reembed_worker is not None:
            self.reembed_worker.cancel()

    def _on_reembed_done(self, message: str) -> None:
        self.reembed_done.emit(message)
        self.check_reembed()

    # -- the language model ----------------------------------------------------------------------------------

    @property
    def model_state(self) -> str:
        return self.chat_worker.model_state

    @property
    def model_error(self) -> str:
        return self.chat_worker.model_error

    def check_llm(self) -> None:
        """Check that the language model file exists (``llm_checked``)."""
        from localrag.core.llm.llm import gguf_path

        settings = self.library.settings
        self._op(lambda: str(gguf_path(settings))).success(lambda _path: self.llm_checked.emit("")).failure(
            lambda message, _known: self.llm_checked.emit(message)
        ).run_in_background()

    def set_gguf(self, path: str) -> None:
        """Use ``path`` as the language model from the next start (saved in the settings)."""
        settings = self.library.settings
        settings.gguf_path = str(Path(path).absolute())
        self._op(settings.save).failure(
            lambda message, _known: self.settings_save_failed.emit(message)
        ).run_in_background()
        self.check_llm()

    def settings_changed(self, names: list[str]) -> None:
        """The Settings dialog saved these settings: reload what uses them now."""
        if "gguf_path" in names:
            self.check_llm()
        if "embedding_model_dir" in names:
            self.restart_embedder()

    # -- shutdown --------------------------------------------------------------------------------------------

    # -- the local HTTP API ----------------------------------------------------------------------------------

    def start_api(self) -> None:
        """Start ``local-rag serve`` beside the window (it attaches to this window's database)."""
        if not self.closing:
            self.api.start()

    def stop_api(self) -> None:
        self.api.stop()

    def shutdown(self, root: QObject | None = None) -> None:
        """Stop every worker and wait for it (a QThread destroyed while running aborts the process), then
        close the library. ``root`` (the window) starts no more background work afterwards."""
        self.closing = True
        self.watch_timer.stop()
        self.api.stop()  # a guest of this window's database: it ends before the database does
        # Every worker is asked to stop first, so that none waits on another one that is still running; then
        # each is waited for: ingestion (it pauses after the step in hand), re-embedding, generation, the
        # embedding model, and last the one-off operations.
        if self.ingest_worker is not None:
            self.ingest_worker.request_stop()
        self.cancel_reembed()
        self.chat_worker.request_stop()
        if self.embedding_worker is not None:
            self.embedding_worker.request_stop()
        steps: list[tuple[str, Callable[[], object]]] = []
        if self.ingest_worker is not None:
            steps.append(("ingest", self.ingest_worker.stop))
        if self.reembed_worker is not None:
            steps.append(("re-embedding", self.reembed_worker.stop))
        steps.append(("generation", self.chat_worker.shutdown))
        if self.embedding_worker is not None:
            steps.append(("embedding", self.embedding_worker.stop))
        steps.append(("background operations", lambda: task_manager().shutdown(root=root or self)))
        for name, stop in steps:
            started = time.monotonic()
            stop()
            log.info("%s stopped in %.2f s", name, time.monotonic() - started)
        self.host.close()  # no search runs any more: every thread that could start one has stopped
        self.library.close()
