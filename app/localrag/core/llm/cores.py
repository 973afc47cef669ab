"""How many CPU threads the language model should use for its next answer, from what else kept the cores busy.

llama.cpp's threads meet at a barrier after every operation of the model. A waiting thread first spins for a
while (``GOMP_SPINCOUNT``), then sleeps. Spinning makes the model fast on an idle machine (measured here: the
first token of a 1,200-token prompt 2.2 → 1.9 s, generation 19 → 67 tokens/s) and slow when another program
keeps a core busy, because a spinning thread waits for one the OS has descheduled (first token 3.3 → 4.8 s).
So before each answer ``CoreWatch`` looks at how busy the machine was since the model last ran (the whole
system's CPU time, from psutil): with a core's worth of other work, the model runs one thread fewer, and a
single thread never waits at a barrier.
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
    """The threads to use, from the cores other work kept busy since ``mark`` (call it when the model stops).

    What the calling thread itself did in the meantime (building the prompt, say) is not other work: it stops
    when the model starts. When ``mark`` was called from another thread, that part cannot be told apart.

    ``busy_seconds``, ``clock`` and ``own_seconds`` read the machine's busy CPU seconds, the time and the
    calling thread's CPU seconds (psutil and the ``time`` module unless given).
    """

    def __init__(
        self,
        max_threads: int,
        cores: int | None = None,
        *,
        busy_seconds: Callable[[], float] = busy_cpu_seconds,
        clock: Callable[[], float] = time.monotonic,
        own_seconds: Callable[[], float] = time.thread_time,
    ) -> None:
        self.max_threads = max(1, int(max_threads))
        self.cores = cores or os.cpu_count() or 1
        self._busy_seconds, self._clock, self._own_seconds = busy_seconds, clock, own_seconds
        self._mark: tuple[float, float, int, float] | None = None
        self.busy_cores: float | None = None  # measured before the last answer

    def mark(self) -> None:
        self._mark = (self._clock(), self._busy_seconds(), threading.get_ident(), self._own_seconds())

    def threads(self, current: int) -> int:
        """``current`` when the last look back is too short to say; otherwise what the free cores allow."""
        if self._mark is None:
            return current
        started, busy, thread, own = self._mark
        window = self._clock() - started
        if window < MIN_WINDOW_S:
            return current
        other = self._busy_seconds() - busy
        if thread == threading.get_ident():
            other -= self._own_seconds() - own
        self.busy_cores = max(0.0, other / window)
        return max(1, min(self.max_threads, round(self.cores - self.busy_cores)))
