"""Documents added through the API are indexed in the background, on one thread of the server's own.

``Indexing.add`` records the files ``folders.plan`` lists as queued (on the caller's thread, with a connection
of its own) and wakes the thread, which runs the ingest until nothing is left; work left unfinished by an
earlier run (a kill, the window closed mid-way) is resumed when the server starts. ``progress`` holds the
latest event of each document in hand (for its ETA). ``close`` pauses the ingest between steps: what was
committed stays, and the next run carries on from there.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from localrag.core.errors import describe
from localrag.core.ingest import status
from localrag.core.ingest.events import IngestEvent
from localrag.core.ingest.pipeline import Ingestor

log = logging.getLogger("localrag.api")


class Indexing:
    def __init__(self, library: Any) -> None:
        self.library = library
        self.ingestor = Ingestor(library, on_event=self._on_event)
        self.progress: dict[int, IngestEvent] = {}
        self.error = ""  # why the last run stopped, when it failed
        self._wake = threading.Event()
        self._stopping = False
        self._busy = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="api-ingest", daemon=True)

    def start(self) -> None:
        self._wake.set()  # resume what an earlier run left
        self._thread.start()

    @property
    def busy(self) -> bool:
        return self._busy or self._wake.is_set()

    def add(self, files: Sequence[tuple[Path, bool]]) -> list[IngestEvent]:
        """Queue ``files``, listed as ``(path, explicit)`` (blocking: files are hashed), and return one event
        per file."""
        with Ingestor(self.library) as queuer:
            events = queuer.enqueue_files(files)
        self._wake.set()
        return events

    def close(self) -> None:
        self._stopping = True
        self.ingestor.pause()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        self.ingestor.close()

    def _loop(self) -> None:
        while True:
            self._wake.wait()
            if self._stopping:
                return
            self._busy = True
            self._wake.clear()
            try:
                summary = self.ingestor.run()
                self.error = ""
                log.info("indexed %d document(s), %d failed", summary.ready, summary.failed)
            except Exception as exc:  # the store went away for good, or a bug: said, and the server goes on
                self.error, _known = describe(exc, "indexing", log)
            finally:
                self._busy = False

    def _on_event(self, event: IngestEvent) -> None:
        if event.doc_id is None:
            return
        with self._lock:
            if event.status in status.SETTLED:
                self.progress.pop(event.doc_id, None)
            else:
                self.progress[event.doc_id] = event

    def eta_s(self, doc_id: int) -> float | None:
        with self._lock:
            event = self.progress.get(doc_id)
        return event.eta_s if event is not None else None
