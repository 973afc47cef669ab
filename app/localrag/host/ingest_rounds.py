"""The ingest loop: asleep until woken, then the ingest runs until no document is left unfinished. One loop
for every front end: ``serve`` runs it on a thread of its ``Host`` (``api/indexing.py``), the window on a
watched thread of its ``IngestWorker`` (``gui/workers.py``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from localrag.core.errors import describe
from localrag.core.ingest.pipeline import Ingestor
from localrag.core.progress import CancelToken

log = logging.getLogger("localrag.ingest")


class IngestRounds:
    """Rounds of ``ingestor.run``: each ``wake`` asks for one more, a round runs until nothing is left.

    Args:
        ingestor: the ``Ingestor`` the rounds run (its connection is only used from the loop's thread).
        on_busy: called on the loop's thread with True when a round starts, False when it ends.
        on_error: called on the loop's thread when a round failed, with the exception, its message and whether
            it is an environment problem (``errors.describe``: a bug is logged with its traceback).

    ``error`` is why the last round failed ("" once one finished). ``run`` is the loop; it returns after
    ``stop``, which pauses the round in hand between steps (what was committed stays, the next start carries
    on). ``cancel_round`` cancels the round in hand: its document and every queued one are marked cancelled.
    """

    def __init__(
        self,
        ingestor: Ingestor,
        *,
        on_busy: Callable[[bool], None] | None = None,
        on_error: Callable[[Exception, str, bool], None] | None = None,
    ) -> None:
        self.ingestor = ingestor
        self.on_busy = on_busy
        self.on_error = on_error
        self.error = ""
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._cancel = CancelToken()
        self._busy = False

    @property
    def busy(self) -> bool:
        """A round runs or is asked for."""
        return self._busy or self._wake.is_set()

    def wake(self) -> None:
        """Ask for a round (thread-safe; one round serves every wake that came before it started)."""
        self._wake.set()

    def cancel_round(self) -> None:
        """Cancel the round in hand (thread-safe); the next round starts with a fresh token."""
        with self._lock:
            self._cancel.cancel()

    def stop(self) -> None:
        """Ask ``run`` to return after the step in hand (thread-safe; returns at once)."""
        self._stopping.set()
        self.ingestor.pause()
        self._wake.set()

    def run(self) -> None:
        """The loop (blocking): a round each time it is woken, until ``stop``; the ingestor's connection is
        closed on the way out."""
        try:
            self._rounds()
        finally:
            self.ingestor.close()

    def _rounds(self) -> None:
        while True:
            self._wake.wait()
            if self._stopping.is_set():
                return
            self._busy = True
            self._wake.clear()
            with self._lock:
                if self._cancel.cancelled:
                    self._cancel = CancelToken()
                cancel = self._cancel
            self._set_busy(True)
            try:
                self._round(cancel)
            finally:
                self._busy = False
                self._set_busy(False)

    def _round(self, cancel: CancelToken) -> None:
        try:
            summary = self.ingestor.run(cancel)
            if cancel.cancelled and not self._stopping.is_set():
                self.ingestor.run(cancel)  # mark what was queued meanwhile as cancelled too
            self.error = ""
            log.info("indexed %d document(s), %d failed", summary.ready, summary.failed)
        except Exception as exc:  # the store went away, or a bug: said, and the loop goes on
            self.error, known = describe(exc, "indexing", log)
            self.ingestor.close()  # a fresh connection next round
            if cancel.cancelled and not self._stopping.is_set():
                self._wake.set()  # a fresh round settles the documents cancelled one by one
            if self.on_error is not None:
                self.on_error(exc, self.error, known)

    def _set_busy(self, busy: bool) -> None:
        if self.on_busy is not None:
            self.on_busy(busy)
