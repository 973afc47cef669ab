"""The one way the window runs background work (in the manner of Anki's ``QueryOp`` over its task manager).

- ``Op``: one blocking call (open the store, list documents, load a chat, re-embed) run off the UI thread on
  the task manager's pool. Its success, failure and progress are delivered on the UI thread; they are dropped
  once the op's owner (a widget) has been destroyed. Failures are sorted by ``core.errors.describe``: an
  environment problem is the person's message, anything else a bug, logged with its traceback.
- ``WorkerThread``: a named QThread running one long-lived loop (embedding, ingestion, generation). The object
  that starts it stops it and waits for it; the task manager knows every one.
- ``TaskManager``: the pool and the worker threads of the process; ``shutdown`` cancels the ops in hand, waits
  for them and for every worker thread, and says what (if anything) is still running.

Core objects never start threads: they offer blocking calls that take a ``CancelToken``; this module decides
where they run.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from localrag.core.errors import describe
from localrag.core.progress import CancelToken
from localrag.gui.qt import QObject, QRunnable, QThread, QThreadPool, QtWidgets, Signal

log = logging.getLogger("localrag.gui.tasks")

T = TypeVar("T")

# How long stopping waits for a worker thread before leaving it running to the end of the process.
STOP_WAIT_MS = 30_000


class _OpSignals(QObject):
    """Signals: ``done(object)`` the result, ``failed(str, bool)`` a message and whether the problem is known
    (an environment problem rather than a bug), ``progress(object)`` whatever the op reported."""

    done = Signal(object)
    failed = Signal(str, bool)
    progress = Signal(object)


class _Runnable(QRunnable):
    def __init__(self, op: Op[Any]) -> None:
        super().__init__()
        self.op = op

    def run(self) -> None:
        self.op._execute()


class Op(Generic[T]):
    """One blocking call run off the UI thread; its outcome comes back on the UI thread.

    Args:
        fn: the work; it takes no arguments (a long op reads ``op.cancel`` and calls ``op.report``).
        owner: a QObject whose callbacks these are; once it is destroyed they are dropped.

    Example::

        Op(listing, owner=panel).success(panel.set_documents).failure(show).run_in_background()
    """

    def __init__(self, fn: Callable[[], T], owner: QObject | None = None) -> None:
        self.fn = fn
        self.owner = owner
        self.cancel = CancelToken()
        self.name = getattr(fn, "__name__", "op")
        self._on_success: Callable[[T], None] | None = None
        self._on_failure: Callable[[str, bool], None] | None = None
        self._on_progress: Callable[[Any], None] | None = None
        self._signals: _OpSignals | None = None
        self._started = threading.Event()
        self._finished = threading.Event()
        self._alive = True
        self._manager: TaskManager | None = None

    def success(self, callback: Callable[[T], None] | None) -> Op[T]:
        self._on_success = callback
        return self

    def failure(self, callback: Callable[[str, bool], None] | None) -> Op[T]:
        """``callback(message, known)``: ``known`` is False for a bug (the message then names the log
        file)."""
        self._on_failure = callback
        return self

    def progress(self, callback: Callable[[Any], None] | None) -> Op[T]:
        self._on_progress = callback
        return self

    def report(self, value: Any) -> None:
        """Called by the op's function (on its thread): ``value`` reaches the progress callback on the UI
        thread."""
        if self._signals is not None:
            self._signals.progress.emit(value)

    @property
    def finished(self) -> bool:
        return self._finished.is_set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the op's function has returned (shutdown only); True if it has. An op never started
        counts as finished."""
        return self._manager is None or self._finished.wait(timeout_s)

    def run_in_background(self, manager: TaskManager | None = None) -> Op[T]:
        """Queue the op on ``manager`` (default: the application's); returns at once."""
        (manager or task_manager()).start(self)
        return self

    # -- the task manager's side
    # ------------------------------------------------------------------------------

    def _prepare(self, manager: TaskManager) -> None:
        self._manager = manager
        signals = _OpSignals()
        self._signals = signals
        if self.owner is not None:
            self.owner.destroyed.connect(self._owner_gone)
        signals.done.connect(self._deliver_success)
        signals.failed.connect(self._deliver_failure)
        signals.progress.connect(self._deliver_progress)

    def _owner_gone(self, *_: object) -> None:
        self._alive = False
        self.cancel.cancel()

    def _execute(self) -> None:
        signals = self._signals
        assert signals is not None
        self._started.set()
        try:
            if self.cancel.cancelled:
                return
            try:
                result = self.fn()
            except Exception as exc:
                message, known = describe(exc, f"background operation {self.name}")
                signals.failed.emit(message, known)
            else:
                signals.done.emit(result)
        finally:
            self._finished.set()

    def _deliver_success(self, result: Any) -> None:
        if self._alive and self._on_success is not None:
            self._on_success(result)
        self._release()

    def _deliver_failure(self, message: str, known: bool) -> None:
        if self._alive and self._on_failure is not None:
            self._on_failure(message, known)
        self._release()

    def _deliver_progress(self, value: Any) -> None:
        if self._alive and self._on_progress is not None:
            self._on_progress(value)

    def _release(self) -> None:
        if self._manager is not None:
            self._manager._ops.discard(self)


class WorkerThread(QThread):
    """A named QThread that runs one loop for its owner; ``stop`` asks the loop to end and waits for it.

    Args:
        name: shown in thread listings and in the log.
        target: the loop; it returns when asked to stop.
        request_stop: asks ``target`` to return (set a flag, put a marker in its queue); called by ``stop``.
        manager: the task manager that knows this thread (default: the application's).
    """

    def __init__(
        self,
        name: str,
        target: Callable[[], None],
        request_stop: Callable[[], None] | None = None,
        parent: QObject | None = None,
        manager: TaskManager | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self._target = target
        self._request_stop = request_stop
        self._manager = manager or task_manager()
        self._manager._add_thread(self)

    def run(self) -> None:
        try:
            self._target()
        except Exception:  # a loop that dies of a bug: its traceback, and the owner's watchdog notices
            log.exception("worker thread %s crashed", self.objectName())

    def request_stop(self) -> None:
        if self._request_stop is not None:
            self._request_stop()

    def stop(self, timeout_ms: int = STOP_WAIT_MS) -> bool:
        """Ask the loop to end and wait for it up to ``timeout_ms``; True if it ended. A loop that does not
        end in time (stuck in native code) is kept referenced to the end of the process, where destroying it
        cannot abort the process, and the caller goes on."""
        self.request_stop()
        if self.wait(timeout_ms):
            return True
        log.error("worker thread %s did not stop; keeping it to the end of the process", self.objectName())
        self._manager.keep(self)
        return False


class TaskManager(QObject):
    """The pool that runs ops and the list of worker threads: one per application (``task_manager()``).

    Public:
        start(op): queue an op.
        running(): names of the ops and worker threads still running.
        shutdown(timeout_ms) -> bool: cancel queued and running ops, stop every worker thread still running,
        and
            wait for all of them; True if everything ended.
    """

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(4)
        self._ops: set[Op[Any]] = set()
        self._threads: list[WorkerThread] = []
        self._kept: list[WorkerThread] = []  # stuck threads: a running QThread must never be destroyed
        self._closed: list[QObject] = []  # windows that have shut down: their widgets start no more ops

    def start(self, op: Op[Any]) -> None:
        if op.owner is not None and self._closed_under(op.owner):
            log.debug("not starting %s: its window has shut down", op.name)
            op._finished.set()
            return
        op._prepare(self)
        self._ops.add(op)
        self.pool.start(_Runnable(op))

    def _add_thread(self, thread: WorkerThread) -> None:
        self._threads = [t for t in self._threads if _exists(t) and (t.isRunning() or t is thread)]
        self._threads.append(thread)

    def running(self) -> list[str]:
        names = [op.name for op in self._ops if not op.finished]
        return names + [t.objectName() for t in self._threads if _exists(t) and t.isRunning()]

    def stuck(self) -> list[str]:
        """Names of the threads kept because they would not stop, and still running."""
        return [t.objectName() for t in self._kept if _exists(t) and t.isRunning()]

    def keep(self, thread: WorkerThread) -> None:
        """Keep a thread that would not stop referenced until the process ends (destroying it would abort)."""
        thread.setParent(None)
        if not any(kept is thread for kept in self._kept):
            self._kept.append(thread)

    def _closed_under(self, obj: QObject) -> bool:
        node: QObject | None = obj
        while node is not None:
            if any(node is root for root in self._closed):
                return True
            node = node.parent()
        return False

    def shutdown(self, timeout_ms: int = 30000, root: QObject | None = None) -> bool:
        """Cancel and wait for every op, then stop and wait for every worker thread still running. With
        ``root`` (a window that is closing), objects under it start no more ops afterwards."""
        if root is not None:
            self._closed = [r for r in self._closed if _exists(r)] + [root]
        self.pool.clear()  # ops not started yet never start
        for op in list(self._ops):
            op.cancel.cancel()
            if not op._started.is_set():
                op._finished.set()
        ok = self.pool.waitForDone(timeout_ms)
        if not ok:
            log.error("background operations still running at shutdown: %s", self.running())
        for thread in list(self._threads):
            if _exists(thread) and thread.isRunning() and not thread.stop(timeout_ms):
                ok = False
        self._ops = {op for op in self._ops if not op.finished}
        return ok


def _exists(obj: QObject) -> bool:
    """Whether the C++ side of ``obj`` still exists (a parent may have deleted it)."""
    from shiboken6 import isValid

    return bool(isValid(obj))


_manager: TaskManager | None = None


def task_manager() -> TaskManager:
    """The application's task manager (created with the first use, parented to the QApplication)."""
    global _manager
    if _manager is None or not _exists(_manager):
        _manager = TaskManager(QtWidgets.QApplication.instance())
    return _manager
