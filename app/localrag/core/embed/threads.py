"""The embedding session's threads, fitted to what else keeps the machine's cores busy.

onnxruntime splits each run of the model over a pool of intra-op threads which, by default, spin while they
wait for each other. Measured on two cores (docs/benchmarks.md, "Embedding work that pays"): on a quiet
machine two spinning threads are the fastest (1.5-1.8x one thread; two that do not spin lose up to 9 %); with
another program holding a core, the spinning threads burn the share of the core they would have had, and
one thread, or two that do not spin, did 1.2-1.8x the work per second.

So the session is chosen from the cores other work left free, read as the language model reads them
(``core.cores.CoreWatch``: the whole system's busy CPU time less this process's own): as many threads as
free cores (rounded; at least one, at most ``max_threads``, onnxruntime's own default of one per physical
core), spinning only when each of them has a core to itself (``decide``). A quiet machine keeps exactly the
session it had: onnxruntime's default threads, spinning.

When: a session's threads are fixed when it opens. Opening one takes 0.2-0.3 s here, and a second session
kept open beside it costs about 90 MB, so there is one session, reopened only when the choice changes. The
choice is made when the model loads (from what other work did during the load, about a second), and again
before a request once ``DECIDE_EVERY_S`` have passed since the last look: a long ingest follows a change of
load within about ten seconds, and a load that comes and goes costs at most one reopening per look (≤ 3 %).

Not seen: the work of this process itself (reading files, the language model answering in the window) —
the session's own threads cannot be told apart from it cheaply, so the whole process is left out of "other
work". The language model, for its part, counts the embedding threads as other work and runs one fewer.

``Settings.embed_threads`` (``LOCALRAG_EMBED_THREADS``) fixes the count instead, spinning (onnxruntime's
default), for whoever knows the machine better.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

import psutil

from localrag.core.cores import CoreWatch

log = logging.getLogger("localrag.embed")

# How often the load is looked at again while the model works (a look is one read of the CPU times).
DECIDE_EVERY_S = 10.0
# Threads spin when the free cores are at least their number less this (another program's occasional work).
SPIN_SLACK = 0.25


@dataclass(frozen=True)
class SessionThreads:
    """An embedding session's intra-op threads and whether they spin while they wait."""

    threads: int
    spinning: bool


def default_threads() -> int:
    """onnxruntime's own default: one thread per physical core."""
    return max(1, psutil.cpu_count(logical=False) or os.cpu_count() or 1)


def decide(free_cores: float, max_threads: int) -> SessionThreads:
    """The session for ``free_cores`` left free by other work: that many threads (rounded, 1 to
    ``max_threads``), spinning only when each has a core to itself."""
    threads = max(1, min(max_threads, round(free_cores)))
    return SessionThreads(threads, threads > 1 and free_cores >= threads - SPIN_SLACK)


class ThreadFit:
    """The session the machine's load calls for, looked at again every ``DECIDE_EVERY_S``.

    Starts at ``max_threads`` spinning (a quiet machine's best) and starts watching at once: the first look
    can follow the model's load.
    """

    def __init__(self, max_threads: int = 0, watch: CoreWatch | None = None) -> None:
        self.max_threads = max_threads or default_threads()
        self.watch = watch or CoreWatch(self.max_threads, own_seconds=time.process_time, per_thread=False)
        self.current = SessionThreads(self.max_threads, self.max_threads > 1)
        self.watch.mark()

    def due(self) -> bool:
        since = self.watch.since_mark()
        return since is None or since >= DECIDE_EVERY_S

    def look(self) -> SessionThreads:
        """The session for the load since the last look (the current one when that was too short ago to
        say); the next look measures from now."""
        free = self.watch.free_cores()
        if free is not None:
            self.current = decide(free, self.max_threads)
            self.watch.mark()
        return self.current
