"""Progress and cancellation as plain data; the GUI throttles and renders them, the CLI prints them."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field


class Cancelled(Exception):
    """Raised inside long work when its ``CancelToken`` was cancelled."""


class CancelToken:
    """A thread-safe flag that long-running work checks between steps."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled()


@dataclass
class Progress:
    """How far one piece of work has come. ``total`` of 0 means unknown."""

    label: str
    done: int = 0
    total: int = 0
    unit: str = ""
    started: float = field(default_factory=time.monotonic)

    @property
    def fraction(self) -> float | None:
        return min(1.0, self.done / self.total) if self.total else None

    @property
    def eta_s(self) -> float | None:
        """Seconds left, extrapolated from the rate so far; ``None`` until there is a rate."""
        if not self.total or self.done <= 0:
            return None
        elapsed = time.monotonic() - self.started
        return max(0.0, elapsed * (self.total - self.done) / self.done)


def print_progress(p: Progress) -> None:
    """How the commands show progress: one line on stderr, rewritten in place while it counts."""
    if p.total:
        print(
            f"\r{p.label}: {p.done}/{p.total} {p.unit}",
            end="\n" if p.done >= p.total else "",
            file=sys.stderr,
            flush=True,
        )
    else:
        print(p.label, file=sys.stderr, flush=True)
