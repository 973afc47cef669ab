"""``Host``: the threads of one library in one process, started and stopped in one place."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from localrag.host.embedding import embedding_service

log = logging.getLogger("localrag.host")

# Threads for the second leg of hybrid searches running at once (the API serves several searches at a time;
# a leg waits at most for a connection, ``retriever.LEG_WAIT_S``, then runs on the first leg's instead).
SEARCH_LEGS = 4


class Host:
    """Runs one library's background work: the search legs, and (``embedding=True``) the embedding loop and
    its query lane. A context manager: the threads start on entry and are stopped and joined on exit.

    Args:
        library: a ``Library`` (or anything with its ``executor`` and ``embedding_service`` attributes, such
            as the evaluation's ``StoreHandle``).
        embedding: run the embedding loop for this process (the command line and ``serve``; the window runs
            its own, watched).
    """

    def __init__(self, library: Any, *, embedding: bool = False) -> None:
        self.library = library
        self.embedding = embedding
        self._executor: ThreadPoolExecutor | None = None
        self._stack = contextlib.ExitStack()
        self._tasks: list[threading.Thread] = []
        self._stops: list[Callable[[], object]] = []

    def start(self) -> Host:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=SEARCH_LEGS, thread_name_prefix="search-leg")
            self.library.executor = self._executor
            if self.embedding:
                self._stack.enter_context(embedding_service(self.library))
        return self

    def start_task(
        self, name: str, fn: Callable[[], object], stop: Callable[[], object] | None = None
    ) -> None:
        """Run ``fn`` on a thread of its own (a model loading while the store opens, a loop such as
        ``IngestRounds.run``); ``close`` calls ``stop`` (which asks a loop to return) and waits for it.
        ``fn`` handles its own errors: what escapes it is logged as a bug."""

        def task() -> None:
            try:
                fn()
            except Exception:
                log.error("background task %s failed (a bug)", name, exc_info=True)

        thread = threading.Thread(target=task, name=name, daemon=True)
        self._tasks.append(thread)
        if stop is not None:
            self._stops.append(stop)
        thread.start()

    def close(self) -> None:
        """Ask the loops to stop, stop the embedding loop and wait for every task and search leg in hand (each
        leg is bounded by the statement timeout); returns once no thread of this host runs."""
        for stop in self._stops:
            stop()
        self._stops.clear()
        for thread in self._tasks:
            thread.join()
        self._tasks.clear()
        executor, self._executor = self._executor, None
        if executor is None:
            return
        self.library.executor = None
        try:
            self._stack.close()
        finally:
            executor.shutdown(wait=True)

    def __enter__(self) -> Host:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
