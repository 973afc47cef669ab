"""Documents added through the API are indexed in the background, by the ingest loop on a thread of the
server's ``Host`` (``host/ingest_rounds.py``, the loop the window runs too).

``Indexing.add`` records the files ``folders.plan`` lists as queued (on the caller's thread, with a connection
of its own) and wakes the loop, which runs the ingest until nothing is left; work left unfinished by an
earlier run (a kill, the window closed mid-way) is resumed when the server starts. ``progress`` holds the
latest event of each document in hand (for its ETA). ``close`` pauses the ingest between steps: what was
committed stays, and the next run carries on from there.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from localrag.core.ingest import status
from localrag.core.ingest.events import IngestEvent
from localrag.core.ingest.pipeline import Ingestor
from localrag.host import Host
from localrag.host.ingest_rounds import IngestRounds


class Indexing:
    """The API's ingest: ``start`` runs its loop on a thread of ``host``; ``close`` stops it (the host joins
    the thread when it closes)."""

    def __init__(self, library: Any, host: Host) -> None:
        self.library = library
        self.host = host
        self.ingestor = Ingestor(library, on_event=self._on_event)
        self.rounds = IngestRounds(self.ingestor)
        self.progress: dict[int, IngestEvent] = {}
        self._lock = threading.Lock()

    @property
    def error(self) -> str:
        """Why the last run stopped, when it failed."""
        return self.rounds.error

    def start(self) -> None:
        self.rounds.wake()  # resume what an earlier run left
        self.host.start_task("api-ingest", self.rounds.run, self.rounds.stop)

    @property
    def busy(self) -> bool:
        return self.rounds.busy

    def add(self, files: Sequence[tuple[Path, bool]]) -> list[IngestEvent]:
        """Queue ``files``, listed as ``(path, explicit)`` (blocking: files are hashed), and return one event
        per file."""
        with Ingestor(self.library) as queuer:
            events = queuer.enqueue_files(files)
        self.rounds.wake()
        return events

    def close(self) -> None:
        """Pause the ingest after the step in hand and end the loop, which closes its connection (returns at
        once; ``Host.close`` waits for it)."""
        self.rounds.stop()

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
