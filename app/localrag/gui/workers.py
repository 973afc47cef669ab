"""Background work for the window. Workers get the core facade, never a widget, and report by signals.

``run_op`` runs one short blocking call (open the store, list documents) on the shared thread pool and delivers
its result or its error back on the main thread.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from typing import Any

from localrag.core.errors import KnownError
from localrag.gui.qt import QObject, QRunnable, QThreadPool, Signal

log = logging.getLogger("localrag.gui.workers")


class _OpSignals(QObject):
    """Signals: ``done(object)`` with the result, ``failed(str, bool)`` with a message and whether it is known."""

    done = Signal(object)
    failed = Signal(str, bool)


class _Op(QRunnable):
    def __init__(self, fn: Callable[[], Any], signals: _OpSignals) -> None:
        super().__init__()
        self.fn = fn
        self.signals = signals

    def run(self) -> None:
        try:
            result = self.fn()
        except KnownError as exc:
            self.signals.failed.emit(exc.message, True)
        except Exception as exc:  # a bug: keep the traceback in the log, tell the user briefly
            log.error("background operation failed:\n%s", traceback.format_exc())
            self.signals.failed.emit(f"{type(exc).__name__}: {exc}", False)
        else:
            self.signals.done.emit(result)


_live: set[_OpSignals] = set()


def run_op(fn: Callable[[], Any], on_done: Callable[[Any], None] | None = None,
           on_failed: Callable[[str, bool], None] | None = None, parent: QObject | None = None) -> None:
    """Run ``fn`` off the UI thread; call ``on_done(result)`` or ``on_failed(message, known)`` on the UI thread."""
    signals = _OpSignals(parent)
    _live.add(signals)

    def finished(*_: object) -> None:
        _live.discard(signals)

    if on_done:
        signals.done.connect(on_done)
    if on_failed:
        signals.failed.connect(on_failed)
    signals.done.connect(finished)
    signals.failed.connect(finished)
    QThreadPool.globalInstance().start(_Op(fn, signals))


def wait_for_ops(timeout_ms: int = 30000) -> bool:
    """Block until every queued operation has finished (shutdown only)."""
    return QThreadPool.globalInstance().waitForDone(timeout_ms)
