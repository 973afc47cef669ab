"""The window's long-lived workers. They get the core facade, never a widget, and report by signals.

- ``EmbeddingWorker`` hosts the process's one ``EmbeddingService`` on two ``WorkerThread``s (its batch loop
  and its query lane), with a watchdog.
- ``IngestWorker`` indexes dropped files on two ``WorkerThread``s of its own: an intake thread records files
  as queued (and removes or re-indexes documents), a runner thread extracts and embeds them (the ingest loop
  of ``host/ingest_rounds.py``, which ``serve`` runs too).
- ``ReembedWorker`` re-embeds the library with the active model as one cancellable ``Op``.

Each worker's ``stop()`` ends and waits for its threads; the application services call them in order before
the Library closes. Short one-off calls are ``tasks.Op``s.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localrag.core.embed.service import EmbeddingService
from localrag.core.errors import StoreUnavailable, as_known, describe
from localrag.core.ingest.pipeline import IngestEvent, Ingestor
from localrag.core.ingest.status import EMBEDDING, EXTRACTING, READY, REMOVED, UNFINISHED
from localrag.core.library import Library
from localrag.core.progress import CancelToken
from localrag.gui.qt import QObject, QTimer, Signal
from localrag.gui.tasks import Op, WorkerThread, task_manager
from localrag.host.ingest_rounds import IngestRounds

log = logging.getLogger("localrag.gui.workers")

# How long stopping waits for a thread that may be stuck in a model load before leaving it to the process's
# end.
STUCK_WAIT_MS = 10_000


# -- the embedding worker ------------------------------------------------------------------------------------


@dataclass
class _Hosted:
    """One embedding service and the two threads that run its loops."""

    service: EmbeddingService
    threads: tuple[WorkerThread, WorkerThread]

    def running(self) -> bool:
        return any(t.isRunning() for t in self.threads)


class EmbeddingWorker(QObject):
    """The process's one embedding model, served by an ``EmbeddingService`` on threads of its own.

    The worker is single and lazy: it loads the model when started and is recreated after an error, a
    timeout (a request busy longer than ``busy_timeout_s``) or a missed watchdog ping (the service loop
    silent for ``stale_after_s``). After a failure it is recreated once by itself; if that fails too,
    ``failed`` is emitted and ``restart()`` (the banner's button) tries again. The watchdog runs on the UI
    thread and never waits: a load that hangs is left behind (its thread is retired) and a new one begins.

    Args:
        library: the facade; its ``embedding_service`` is pointed at the live service.
        load: returns the model, called on the worker thread (default: ``library.embedder``).

    Signals:
        ready(str): the model is loaded and answering; the argument is the model's name.
        restarting(str): the worker failed and is being recreated; the message says why.
        failed(str): the worker failed and was not recreated; the message says why.
    """

    ready = Signal(str)
    restarting = Signal(str)
    failed = Signal(str)
    _loaded = Signal(object, str)  # (service, model name), from the worker thread
    _crashed = Signal(object, str)  # (service, message), from the worker thread

    def __init__(
        self,
        library: Library,
        *,
        load: Callable[[], Any] | None = None,
        stale_after_s: float = 15.0,
        busy_timeout_s: float = 180.0,
        load_timeout_s: float = 300.0,
        check_every_ms: int = 1000,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.library = library
        self._load = load or (lambda: library.embedder)
        self.stale_after_s = stale_after_s
        self.busy_timeout_s = busy_timeout_s
        self.load_timeout_s = load_timeout_s
        self.service: EmbeddingService | None = None
        self.model_name = ""
        self.is_ready = False
        self.last_error = ""
        self._live: _Hosted | None = None
        self._started_at = 0.0
        self._retired: list[_Hosted] = []  # replaced services whose threads may still finish a request
        self._retries_left = 1
        self._stopping = False
        self._loaded.connect(self._on_loaded)
        self._crashed.connect(self._on_crashed)
        self.watchdog = QTimer(self)
        self.watchdog.setInterval(check_every_ms)
        self.watchdog.timeout.connect(self.check)

    @property
    def running(self) -> bool:
        return self._live is not None and self._live.running()

    def start(self) -> None:
        """Create the service and its threads; the model loads there. The UI thread does not wait."""
        self._stopping = False
        service = EmbeddingService(lambda: self._load_announcing(service))
        self.service = service
        self.is_ready = False
        self.library.embedding_service = service
        threads = (
            WorkerThread("embedding", lambda: self._serve(service), service.stop, self),
            WorkerThread("embed-queries", service.serve_queries, service.stop, self),
        )
        self._live = _Hosted(service, threads)
        self._started_at = time.monotonic()
        for thread in threads:
            thread.start()
        self.watchdog.start()

    def restart(self) -> None:
        """Replace the service with a new one that loads the model again (the banner's Restart)."""
        self._retries_left = 1
        self._recreate()

    def _recreate(self) -> None:
        self._retire()
        self.library.drop_embedder()  # returns at once, even while a load hangs
        self.start()

    def _retire(self) -> None:
        if self._live is not None:
            self._live.service.stop()
            self._retired.append(self._live)
        self._retired = [h for h in self._retired if h.running()]
        self.service = None
        self._live = None

    def request_stop(self) -> None:
        """Ask the service to stop (returns at once): queued requests fail, the loops end within one slice."""
        self._stopping = True
        self.watchdog.stop()
        if self._live is not None:
            self._live.service.stop()

    def stop(self, stuck_wait_ms: int = STUCK_WAIT_MS) -> bool:
        """Stop the service and wait for its threads (they end within one slice of the request in hand).

        A thread still stuck after ``stuck_wait_ms`` in all (a model load that hangs) is handed to the task
        manager to keep until the process ends (destroying a running QThread would abort it). Returns whether
        every thread ended.
        """
        self._stopping = True
        self.watchdog.stop()
        self._retire()
        ok = True
        deadline = time.monotonic() + stuck_wait_ms / 1000  # one budget for all: stuck loads do not add up
        for hosted in self._retired:
            for thread in hosted.threads:
                if not thread.wait(max(0, int((deadline - time.monotonic()) * 1000))):
                    log.error(
                        "embedding thread %s is stuck; leaving it to the end of the process",
                        thread.objectName(),
                    )
                    task_manager().keep(thread)
                    ok = False
        self._retired = []
        return ok

    # -- worker thread --------------------------------------------------------------------------------------

    def _load_announcing(self, service: EmbeddingService) -> Any:
        model = self._load()
        self._loaded.emit(service, getattr(model, "name", ""))
        return model

    def _serve(self, service: EmbeddingService) -> None:
        try:
            service.run()
        except Exception as exc:
            message, _known = describe(exc, "the embedding worker", log)
            self._crashed.emit(service, message)

    # -- main thread ----------------------------------------------------------------------------------------

    def _on_loaded(self, service: EmbeddingService, name: str) -> None:
        if service is not self.service:
            return
        self.is_ready = True
        self.model_name = name
        self.last_error = ""
        self.ready.emit(name)

    def _on_crashed(self, service: EmbeddingService, message: str) -> None:
        if service is self.service and not self._stopping:
            self._fail(f"The embedding worker stopped: {message}")

    def check(self) -> None:
        """The watchdog: a silent loop, a request that never ends or a load that never ends is a failure."""
        service = self.service
        if service is None or self._stopping:
            return
        now = time.monotonic()
        if not self.is_ready:
            if now - self._started_at > self.load_timeout_s:
                self._fail("The embedding model did not finish loading.")
            return
        busy = service.busy_since
        if busy is not None:
            if now - busy > self.busy_timeout_s:
                self._fail(f"The embedding worker has been stuck on one request for {now - busy:.0f} s.")
        elif now - service.last_beat > self.stale_after_s:
            self._fail("The embedding worker stopped answering its watchdog.")

    def _fail(self, message: str) -> None:
        log.warning("%s", message)
        self.last_error = message
        self.is_ready = False
        if self._retries_left > 0:
            self._retries_left -= 1
            self.restarting.emit(message)
            self._recreate()
            return
        self._retire()
        # Queries now fail at once (the chat answers ungrounded) instead of waiting for a dead worker.
        dead = EmbeddingService(self._load)
        dead.stop()
        self.library.embedding_service = dead
        self.watchdog.stop()
        self.failed.emit(message)


# -- the ingest worker ---------------------------------------------------------------------------------------


@dataclass
class _Command:
    kind: str  # enqueue | remove | reindex | scan | stop
    paths: list[Path] | None = None
    doc_id: int | None = None


class IngestWorker(QObject):
    """Indexes files in the background: dropped paths go into a thread-safe queue and return at once.

    The intake thread records each file as ``queued`` (hashing it; folders are walked) and runs removals and
    re-indexing; the runner thread processes every unfinished document, including ones a killed earlier run
    left behind. Progress events of a document are coalesced to at most ``max_rate`` per second; status
    changes are always delivered, in order.

    Signals:
        ingest_event(IngestEvent): what happened to one file.
        enqueued(list): these dropped paths (strings) are walked and recorded; each file had its event.
        busy_changed(bool): the runner started or finished a round of work.
        store_failed(str): the database went away during ingestion; the work resumes with ``resume()``.
        watched_scanned(int, int): a scan of watched folders found this many files to add / documents gone.
    """

    ingest_event = Signal(IngestEvent)
    enqueued = Signal(list)
    busy_changed = Signal(bool)
    store_failed = Signal(str)
    watched_scanned = Signal(int, int)

    def __init__(self, library: Library, *, max_rate: float = 10.0, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.library = library
        self._min_gap = 1.0 / max_rate
        self._commands: queue.Queue[_Command] = queue.Queue()
        self._stop = threading.Event()
        self._cancel_lock = threading.Lock()
        self._intake_cancel = CancelToken()
        self._unfinished: set[int] = set()  # documents reported queued or in progress
        self._last_emit: dict[int, tuple[str, float]] = {}
        self._emit_lock = threading.Lock()
        self.intake = Ingestor(library, on_event=self._on_event)
        self.runner = Ingestor(library, on_event=self._on_event)
        # The ingest loop every front end runs (``host/ingest_rounds.py``), on a watched thread of the window.
        self.rounds = IngestRounds(self.runner, on_busy=self._set_busy, on_error=self._report_round)
        self._intake_thread = WorkerThread("ingest-intake", self._intake_loop, self.request_stop, self)
        self._runner_thread = WorkerThread("ingest-runner", self.rounds.run, self.request_stop, self)
        self.busy = False

    # -- any thread -----------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start both threads; the runner resumes unfinished documents at once."""
        self._intake_thread.start()
        self._runner_thread.start()
        self.rounds.wake()

    def add_paths(self, paths: Sequence[str | Path]) -> None:
        """Queue files and folders for indexing; returns at once."""
        if paths:
            self._commands.put(_Command("enqueue", paths=[Path(p) for p in paths]))

    def remove_document(self, doc_id: int) -> None:
        self.runner.cancel_document(doc_id)
        self._commands.put(_Command("remove", doc_id=doc_id))

    def reindex_document(self, doc_id: int) -> None:
        self.runner.cancel_document(doc_id)
        self._commands.put(_Command("reindex", doc_id=doc_id))

    def cancel_document(self, doc_id: int) -> None:
        self.runner.cancel_document(doc_id)

    def cancel_all(self) -> None:
        """Cancel the document in progress and every queued one (work already committed stays)."""
        self.rounds.cancel_round()
        with self._cancel_lock:
            unfinished = list(self._unfinished)
        for doc_id in unfinished:
            self.runner.cancel_document(doc_id)

    def scan_watched(self) -> None:
        """Look for new, changed and deleted files in the watched folders (on the intake thread)."""
        self._commands.put(_Command("scan"))

    def resume(self) -> None:
        """Process unfinished documents again (after the store came back)."""
        self.rounds.wake()

    def stop(self) -> bool:
        """End both threads and wait for them (the runner pauses after the step in hand).

        Nothing is cancelled: documents queued or in progress keep their committed work and status, and the
        next start carries on with them.
        """
        for thread in (self._intake_thread, self._runner_thread):
            thread.stop()
        self.intake.close()
        self.runner.close()
        return True

    def request_stop(self) -> None:
        """Ask both threads to end after the step in hand (returns at once; ``stop`` waits)."""
        if self._stop.is_set():
            return
        self._stop.set()
        self.rounds.stop()  # pauses the runner after the step in hand
        self._intake_cancel.cancel()
        self._commands.put(_Command("stop"))

    # -- worker threads -------------------------------------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        """Called on an ingest thread for every event; forwards it, thinning out progress-only updates.

        A progress update (same document, same status as the last one forwarded) is dropped when the last one
        went out less than ``1 / max_rate`` seconds ago; a change of status always goes out.
        """
        if event.doc_id is not None:
            with self._cancel_lock:
                if event.status in UNFINISHED:
                    self._unfinished.add(event.doc_id)
                else:
                    self._unfinished.discard(event.doc_id)
        if self._stop.is_set():
            return
        if event.doc_id is not None:
            now = time.monotonic()
            with self._emit_lock:
                last = self._last_emit.get(event.doc_id)
                if (
                    last is not None
                    and last[0] == event.status
                    and event.status in (EXTRACTING, EMBEDDING)
                    and now - last[1] < self._min_gap
                ):
                    return
                self._last_emit[event.doc_id] = (event.status, now)
        self.ingest_event.emit(event)

    def _intake_loop(self) -> None:
        while not self._stop.is_set():
            command = self._commands.get()
            if command.kind == "stop" or self._stop.is_set():
                break
            try:
                if command.kind == "enqueue":
                    try:
                        self.intake.enqueue(command.paths or [], cancel=self._intake_cancel)
                    finally:
                        self.enqueued.emit([str(p) for p in command.paths or []])
                elif command.kind == "remove" and command.doc_id is not None:
                    self.intake.remove_document(command.doc_id)
                elif command.kind == "reindex" and command.doc_id is not None:
                    self.intake.reindex_document(command.doc_id)
                elif command.kind == "scan":
                    self._scan_watched()
                # One command, one unit of work: nothing it read or wrote stays in an open transaction
                # (which would hide new rows from the runner and hold row locks).
                self.intake.conn.commit()
            except Exception as exc:
                self._report(exc, f"ingest {command.kind}")
                self.intake.close()  # a fresh connection next time
            self.rounds.wake()

    def _scan_watched(self) -> None:
        from localrag.core.ingest.watch import scan_watched

        with self.library.connect() as conn:
            paths, removed = scan_watched(conn)
        for doc_id in removed:
            self.ingest_event.emit(
                IngestEvent(doc_id, "", "", "", REMOVED, message="file deleted from a watched folder")
            )
        if paths:
            self.intake.enqueue(paths)
        self.watched_scanned.emit(len(paths), len(removed))

    def _set_busy(self, busy: bool) -> None:
        if busy != self.busy:
            self.busy = busy
            self.busy_changed.emit(busy)

    def _report(self, exc: Exception, what: str) -> None:
        """The store went away (the window offers Retry), or a bug (logged with its traceback)."""
        self._report_round(exc, *describe(exc, what, log))

    def _report_round(self, exc: Exception, message: str, known: bool) -> None:
        if known and isinstance(as_known(exc), StoreUnavailable):
            self.store_failed.emit(message)


# -- re-embedding --------------------------------------------------------------------------------------------


class ReembedWorker(QObject):
    """Embeds, with the active model, the chunks of every ready document that lacks its vectors.

    Runs ``Ingestor.reembed`` as one cancellable ``Op``. The documents stay searchable meanwhile: their old
    vectors and keywords keep answering until each document's new vectors are complete.

    Args:
        total: how many documents need it (for the progress), as counted before the start.

    Signals:
        ingest_event(IngestEvent): ``embedding`` progress, ``ready`` when a document is done.
        progress(int, int, str): documents done, documents in all, the title of the one in hand.
        finished_run(str): the run ended; the message is empty on success, else says what went wrong.
    """

    ingest_event = Signal(IngestEvent)
    progress = Signal(int, int, str)
    finished_run = Signal(str)

    def __init__(self, library: Library, *, total: int = 0, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.library = library
        self.total = total
        self.done = 0
        self._op: Op[str] = Op(self._run, owner=self).success(self.finished_run.emit)
        self._op.failure(lambda message, _known: self.finished_run.emit(f"Re-embedding stopped: {message}"))
        self._op.progress(self._on_event)

    @property
    def running(self) -> bool:
        return self._op._manager is not None and not self._op.finished

    def start(self) -> None:
        self._op.run_in_background()

    def cancel(self) -> None:
        self._op.cancel.cancel()

    def stop(self, timeout_s: float = 60.0) -> bool:
        """Cancel and wait for the run to end (after the embedding batch in hand)."""
        self.cancel()
        return self._op.wait(timeout_s)

    def _on_event(self, event: IngestEvent) -> None:  # UI thread
        if event.status == READY:
            self.done += 1
        self.ingest_event.emit(event)
        self.progress.emit(self.done, max(self.total, self.done), event.title)

    def _run(self) -> str:  # the op's thread
        with Ingestor(self.library, on_event=self._op.report) as ingestor:
            ingestor.reembed(cancel=self._op.cancel)
        if self._op.cancel.cancelled:
            return "Re-embedding cancelled; the documents done so far keep their new vectors."
        return ""
