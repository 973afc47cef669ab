"""The answering thread: jobs (answer a question, load the models, draft a prompt) run one at a time, in the
order they came, on the one thread the language model is used from. ``serve`` runs the line on a thread of its
``Host`` (``api/answers.py``), the window on its generation thread (``gui/chat_worker.py``)."""

from __future__ import annotations

import logging
import queue
from collections.abc import Callable

log = logging.getLogger("localrag.host")


class AnswerLine:
    """Jobs run in order by ``run`` (the loop, blocking) until ``stop``. A job handles its own errors: what
    escapes one is logged as a bug and the line goes on. Jobs still queued at ``stop`` are dropped."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], object] | None] = queue.SimpleQueue()
        self._stopping = False

    def submit(self, job: Callable[[], object]) -> None:
        """Queue ``job`` (thread-safe; returns at once)."""
        self._jobs.put(job)

    def stop(self) -> None:
        """Ask ``run`` to return after the job in hand (thread-safe; returns at once)."""
        self._stopping = True
        self._jobs.put(None)

    def run(self) -> None:
        """The loop: each job in turn, until ``stop``."""
        while not self._stopping:
            job = self._jobs.get()
            if job is None or self._stopping:
                return
            try:
                job()
            except Exception:
                log.error("an answering job failed (a bug)", exc_info=True)
