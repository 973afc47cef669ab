"""How many of the machine's cores other work left free: the language model and the embedding model choose
their threads from it.

Both models run a pool of threads that meet after every operation. A waiting thread first spins for a while,
then sleeps. Spinning makes a model fast on an idle machine and slow when another program keeps a core busy,
because a spinning thread waits for one the OS has descheduled and burns the share of the core it would
have had (the language model on an idle machine: the first token of a 1,200-token prompt 2.2 → 1.9 s,
generation 19 → 67 tokens/s; with another program on a core, the first token 3.3 → 4.8 s; the embedding
model: docs/benchmarks.md, "Embedding work that pays"). So before it
runs, a model looks at how busy the machine was since it last looked (the whole system's CPU time, from
psutil, less its own): llama.cpp runs one thread fewer with a core's worth of other work
(``core/llm/llm.py``); the embedding session stops spinning or runs fewer threads (``core/embed/threads.py``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import psutil

# A shorter look back says little about the load (and follows the model's own previous answer).
MIN_WINDOW_S = 0.25


def busy_cpu_seconds() -> float:
    """CPU seconds the whole system has spent working (not idle or waiting for disk) since it started."""
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


class CoreWatch:
    """The cores other work kept busy since ``mark``, and the threads that leaves room for.

    Its own work in the meantime is not other work. ``own_seconds`` reads it: by default the calling
    thread's CPU seconds (the language model: building the prompt stops when the model starts), which count
    only when ``mark`` was called from the same thread (else that part cannot be told apart); with
    ``per_thread=False``, a reading valid from any thread (``time.process_time``: the whole process).

    ``busy_seconds``, ``clock`` and ``own_seconds`` read the machine's busy CPU seconds, the time and the
    own CPU seconds (psutil and the ``time`` module unless given).
    """

    def __init__(
        self,
        max_threads: int,
        cores: int | None = None,
        *,
        busy_seconds: Callable[[], float] = busy_cpu_seconds,
        clock: Callable[[], float] = time.monotonic,
        own_seconds: Callable[[], float] = time.thread_time,
        per_thread: bool = True,
    ) -> None:
        self.max_threads = max(1, int(max_threads))
        self.cores = cores or os.cpu_count() or 1
        self._busy_seconds, self._clock, self._own_seconds = busy_seconds, clock, own_seconds
        self._per_thread = per_thread
        self._mark: tuple[float, float, int, float] | None = None
        self.busy_cores: float | None = None  # measured at the last look

    def mark(self) -> None:
        self._mark = (self._clock(), self._busy_seconds(), threading.get_ident(), self._own_seconds())

    def since_mark(self) -> float | None:
        """Seconds since ``mark`` (None before the first)."""
        return None if self._mark is None else self._clock() - self._mark[0]

    def free_cores(self) -> float | None:
        """The cores other work left free since ``mark`` (at least 0); None when the look back is too short
        to say. Sets ``busy_cores``."""
        if self._mark is None:
            return None
        started, busy, thread, own = self._mark
        window = self._clock() - started
        if window < MIN_WINDOW_S:
            return None
        other = self._busy_seconds() - busy
        if not self._per_thread or thread == threading.get_ident():
            other -= self._own_seconds() - own
        self.busy_cores = max(0.0, other / window)
        return max(0.0, self.cores - self.busy_cores)

    def threads(self, current: int) -> int:
        """``current`` when the last look back is too short to say; otherwise what the free cores allow."""
        free = self.free_cores()
        if free is None:
            return current
        return max(1, min(self.max_threads, round(free)))
