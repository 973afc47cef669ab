"""``local-rag bench window DIR``: the real window indexing a dropped folder, and how responsive it stays.

A ``MainWindow`` on a throw-away data folder (its own embedded PostgreSQL; removed at the end) is shown,
offscreen unless ``QT_QPA_PLATFORM`` says otherwise, and left to warm up its models. Then DIR is dropped onto
it as a file manager drops it, and the Qt event loop runs until every file is ready, failed or skipped.
Meanwhile a timer ticks every 10 ms: a stall is the gap between two ticks minus the interval. Each gap over
100 ms is explained as far as it can be: where a watcher thread found the window thread's Python stack, and
the full garbage collections (which hold the interpreter lock, whichever thread runs them) that overlapped it.

``--make-corpus N`` first writes N small generated text and Markdown files into DIR (``eval/corpus.py``:
the same N always gives the same files), so anyone can reproduce a figure.

Qt is imported only when the bench runs: listing the benchmarks does not load the GUI.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from localrag.core.errors import KnownError
from localrag.core.library import Library
from localrag.eval.bench_ingest import peak_rss_mb
from localrag.eval.corpus import make_corpus
from localrag.eval.machine import machine

TICK_MS = 10
STALL_MS = 100
SETTLED = ("ready", "failed", "skipped", "cancelled")
STARTUP_TIMEOUT_S = 600.0


def main(argv: list[str]) -> int:
    """``local-rag bench window ARGS``."""
    p = argparse.ArgumentParser(
        prog="local-rag bench window",
        description="Drop a folder on the real window and measure its event loop while it indexes.",
    )
    p.add_argument("folder", type=Path, metavar="DIR")
    p.add_argument(
        "--make-corpus",
        type=int,
        metavar="N",
        help="first write N generated .txt and .md files into DIR (which must be empty or missing)",
    )
    p.add_argument(
        "--timeout", type=float, default=4 * 3600, metavar="S", help="stop waiting after S seconds"
    )
    p.add_argument("--json", action="store_true")
    return run(p.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    if args.make_corpus is not None:
        written = make_corpus(args.folder, args.make_corpus)
        print(f"wrote {written} files into {args.folder}", file=sys.stderr)
    if not args.folder.is_dir():
        raise KnownError(f"{args.folder} is not a folder.")
    report = bench_window(args.folder, timeout_s=args.timeout)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0 if report["complete"] else 1


def bench_window(folder: Path, *, timeout_s: float = 4 * 3600) -> dict[str, Any]:
    """Index ``folder`` through a window on a throw-away data folder. Ctrl+C (or TERM) stops the wait and
    reports what was done by then."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from localrag.core.config import Settings

    with throwaway_home() as home:
        bench = WindowBench(
            Library(Settings.load()), folder, layout_file=home / "window.ini", timeout_s=timeout_s
        )
        with _interrupt_on_signals(bench.interrupt):
            return bench.run()


@contextlib.contextmanager
def throwaway_home() -> Iterator[Path]:
    """``LOCALRAG_HOME`` pointed at a new temporary folder; put back and the folder deleted on exit."""
    home = Path(tempfile.mkdtemp(prefix="lrag-bench-window-"))
    before = os.environ.get("LOCALRAG_HOME")
    os.environ["LOCALRAG_HOME"] = str(home)
    try:
        yield home
    finally:
        if before is None:
            os.environ.pop("LOCALRAG_HOME", None)
        else:
            os.environ["LOCALRAG_HOME"] = before
        shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def _interrupt_on_signals(interrupt: Callable[[], None]) -> Iterator[None]:
    # Python runs these between bytecodes: the 10 ms ticks give it the chance while Qt waits for events.
    def handler(*_: object) -> None:
        interrupt()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


# -- the measurement -----------------------------------------------------------------------------------------


class WindowBench:
    """One run: a window is started, ``folder`` is dropped on it, and the event loop is watched until every
    file is settled.

    Args:
        library: the window's library, not yet open (the window opens it, and closes it at the end).
        folder: what is dropped.
        layout_file: where the window keeps its layout.
        timeout_s: how long to wait for the files to settle before reporting what was done.
    """

    def __init__(self, library: Library, folder: Path, *, layout_file: Path, timeout_s: float) -> None:
        self.library = library
        self.folder = folder.absolute()
        self.layout_file = layout_file
        self.timeout_s = timeout_s
        self.status: dict[str, str] = {}  # the last status of every file reported, by path
        self.chunks: dict[str, int] = {}
        self.open_paths: set[str] = set()  # files reported and not yet settled
        self.walked = False  # the worker has walked the dropped folder and reported every file in it
        self.settled_at: float | None = None
        self.interrupted = False

    def interrupt(self) -> None:
        self.interrupted = True

    def run(self) -> dict[str, Any]:
        from localrag.gui.app import create_app
        from localrag.gui.mainwindow import MainWindow
        from localrag.gui.qt import QtWidgets

        _app = QtWidgets.QApplication.instance() or create_app([])  # kept for the run
        before = machine()
        window = MainWindow(self.library, layout_file=self.layout_file)
        try:
            window.show()
            started = time.monotonic()
            self._start(window)
            startup_s = time.monotonic() - started
            report = self._ingest(window)
            report["startup_s"] = round(startup_s, 2)
            report["language_model"] = window.chat_panel.worker.model_state  # loaded ("ready") or not
        finally:
            self._close(window)
        report["rss_end_mb"] = round(psutil.Process().memory_info().rss / 2**20, 1)
        report["machine"] = before
        report["load_average_after"] = machine()["load_average"]
        return report

    def _start(self, window: Any) -> None:
        """Start the window and wait until its store, embedding model and language model are warm."""
        failures: list[str] = []
        window.store_failed.connect(failures.append)
        window.embedder_failed.connect(failures.append)
        ready = {"embedder": False, "listing": False}
        window.embedder_ready.connect(lambda: ready.update(embedder=True))
        window.documents_loaded.connect(lambda _n: ready.update(listing=True))
        window.start()

        def warm() -> bool:
            return all(ready.values()) and window.chat_panel.worker.model_state != "loading"

        _wait_until(lambda: warm() or bool(failures) or self.interrupted, STARTUP_TIMEOUT_S)
        if failures:
            raise KnownError(f"The window did not start: {failures[0]}")
        if not warm() and not self.interrupted:
            raise KnownError(f"The window was not warm after {STARTUP_TIMEOUT_S:.0f} s.")

    def _ingest(self, window: Any) -> dict[str, Any]:
        worker = window.ingest_worker
        worker.ingest_event.connect(self._on_event)
        worker.enqueued.connect(self._on_enqueued)
        watch = EventLoopWatch(TICK_MS, STALL_MS)
        watch.start()
        started = time.monotonic()
        drop_ms = drop_paths(window.documents_panel, [self.folder]) * 1000
        _wait_until(self._done, self.timeout_s)
        ended = self.settled_at or time.monotonic()
        window.documents_panel.flush()  # the last coalesced repaint, inside the watch
        watch.stop()
        worker.ingest_event.disconnect(self._on_event)
        worker.enqueued.disconnect(self._on_enqueued)

        seconds = ended - started
        counts = Counter(self.status.values())
        files = len(self.status)
        settled = files - len(self.open_paths)
        report: dict[str, Any] = {
            "folder": str(self.folder),
            "complete": self.walked and not self.open_paths,
            "files": files,
            "ready": counts["ready"],
            "failed": counts["failed"],
            "skipped": counts["skipped"],
            "cancelled": counts["cancelled"],
            "unfinished": len(self.open_paths),
            "chunks": sum(self.chunks.values()),
            "rows_shown": len(window.documents_panel.model.rows),
            "seconds": round(seconds, 1),
            "files_per_s": round(settled / seconds, 2) if seconds else 0.0,
            "drop_ms": round(drop_ms, 1),
        }
        report.update(watch.report())
        report["peak_rss_mb"] = round(peak_rss_mb(), 1)
        return report

    def _on_event(self, event: Any) -> None:
        if not event.path:  # a document removed from a watched folder: not one of ours
            return
        self.status[event.path] = event.status
        if event.status == "ready":
            self.chunks[event.path] = event.chunks_total
        if event.status in SETTLED:
            self.open_paths.discard(event.path)
        else:
            self.open_paths.add(event.path)
        self._check_settled()

    def _on_enqueued(self, paths: list[str]) -> None:
        if str(self.folder) in paths:
            self.walked = True
            self._check_settled()

    def _check_settled(self) -> None:
        if self.walked and not self.open_paths and self.settled_at is None:
            self.settled_at = time.monotonic()

    def _done(self) -> bool:
        return self.settled_at is not None or self.interrupted

    def _close(self, window: Any) -> None:
        # The language model loads on a thread that closing does not wait for: let a load under way finish.
        _wait_until(lambda: window.chat_panel.worker.model_state != "loading", STARTUP_TIMEOUT_S)
        window.close()  # stops the workers, then the library (and the embedded server it owns)
        self.library.close()


def drop_paths(target: Any, paths: list[Path]) -> float:
    """Drag ``paths`` over ``target`` and drop them, as a file manager does; return the seconds the drop
    took."""
    from localrag.gui.qt import QtCore, QtGui, QtWidgets

    mime = QtCore.QMimeData()
    mime.setUrls([QtCore.QUrl.fromLocalFile(str(p)) for p in paths])
    pos = QtCore.QPointF(10, 10)
    buttons, keys = QtCore.Qt.MouseButton.LeftButton, QtCore.Qt.KeyboardModifier.NoModifier
    copy = QtCore.Qt.DropAction.CopyAction
    QtWidgets.QApplication.sendEvent(target, QtGui.QDragEnterEvent(pos.toPoint(), copy, mime, buttons, keys))
    drop = QtGui.QDropEvent(pos, copy, mime, buttons, keys)
    started = time.monotonic()
    QtWidgets.QApplication.sendEvent(target, drop)
    took = time.monotonic() - started
    if not drop.isAccepted():
        raise KnownError("The window did not accept the dropped folder.")
    return took


def _wait_until(done: Callable[[], bool], timeout_s: float) -> None:
    """Run the Qt event loop until ``done()`` (checked every 100 ms) or ``timeout_s`` has passed."""
    from localrag.gui.qt import QtCore

    if done():
        return
    loop = QtCore.QEventLoop()
    deadline = time.monotonic() + timeout_s

    def check() -> None:
        if done() or time.monotonic() > deadline:
            loop.quit()

    poll = QtCore.QTimer()
    poll.setInterval(100)
    poll.timeout.connect(check)
    poll.start()
    loop.exec()
    poll.stop()


class EventLoopWatch:
    """Ticks on the window thread every ``tick_ms`` and explains the gaps longer than ``stall_ms``.

    For each such gap it gives the full garbage collections that overlapped it (a collection on any thread
    holds the interpreter lock, so the window thread waits for it) and where a watcher thread found the window
    thread's Python stack. The watcher needs the interpreter lock too: a gap with no sample is one where
    another thread held it, or where the window thread was inside a Qt call that keeps it. Create and start
    the watch on the window thread.
    """

    def __init__(self, tick_ms: int = TICK_MS, stall_ms: int = STALL_MS) -> None:
        from localrag.gui.qt import QtCore

        self.tick_ms = tick_ms
        self.stall_s = stall_ms / 1000
        self.ticks: list[float] = []
        self.samples: dict[float, Counter[str]] = {}  # by the tick the stall followed
        # Full collections: start, end, whether on the window thread.
        self.collections: list[tuple[float, float, bool]] = []
        self._gc_started: dict[int, float] = {}
        self._gui_thread = threading.get_ident()
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="stall-watcher", daemon=True)
        self._timer = QtCore.QTimer()
        self._timer.setTimerType(QtCore.Qt.TimerType.PreciseTimer)
        self._timer.setInterval(tick_ms)
        self._timer.timeout.connect(self._tick)

    def start(self) -> None:
        self.ticks.append(time.monotonic())
        gc.callbacks.append(self._on_gc)
        self._timer.start()
        self._watcher.start()

    def stop(self) -> None:
        self._tick()
        self._timer.stop()
        self._stop.set()
        self._watcher.join()
        gc.callbacks.remove(self._on_gc)

    def _tick(self) -> None:
        self.ticks.append(time.monotonic())

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        thread = threading.get_ident()
        if phase == "start":
            self._gc_started[thread] = time.monotonic()
        elif (started := self._gc_started.pop(thread, None)) is not None:
            self.collections.append((started, time.monotonic(), thread == self._gui_thread))

    def _watch(self) -> None:
        sampled = 0.0
        while not self._stop.wait(0.02):
            now = time.monotonic()
            last = self.ticks[-1]
            if now - last > self.stall_s and now - sampled >= 0.05:
                frame = sys._current_frames().get(self._gui_thread)
                if frame is not None:
                    self.samples.setdefault(last, Counter())[_site(frame)] += 1
                sampled = now

    def report(self) -> dict[str, Any]:
        ticks = self.ticks
        gaps = np.diff(np.array(ticks)) * 1000 if len(ticks) > 1 else np.zeros(1)
        stalls = sorted(
            ((a, b) for a, b in itertools.pairwise(ticks) if b - a > self.stall_s),
            key=lambda gap: gap[0] - gap[1],
        )
        return {
            "ticks": len(ticks),
            "tick_ms": self.tick_ms,
            "longest_stall_ms": round(max(0.0, float(gaps.max()) - self.tick_ms), 1),
            "gap_p50_ms": round(float(np.percentile(gaps, 50)), 1),
            "gap_p99_ms": round(float(np.percentile(gaps, 99)), 1),
            "gap_p999_ms": round(float(np.percentile(gaps, 99.9)), 1),
            "gaps_over_100ms": int((gaps > 100).sum()),
            "full_gcs": len(self.collections),
            "full_gc_longest_ms": round(
                max(((e - s) * 1000 for s, e, _ in self.collections), default=0.0), 1
            ),
            "stalls": [self._explain(a, b, ticks[0]) for a, b in stalls[:20]],  # the longest first
        }

    def _explain(self, a: float, b: float, origin: float) -> dict[str, Any]:
        overlapping = [(max(a, s), min(b, e), mine) for s, e, mine in self.collections if s < b and e > a]
        return {
            "at_s": round(a - origin, 1),
            "gap_ms": round((b - a) * 1000, 1),
            "full_gc_ms": round(sum(e - s for s, e, _ in overlapping) * 1000, 1),
            "full_gc_on": sorted(
                {"window thread" if mine else "a worker thread" for _, _, mine in overlapping}
            ),
            "window_thread_at": [where for where, _n in self.samples.get(a, Counter()).most_common(3)],
        }


def _site(frame: Any) -> str:
    """Where a stalled thread is: its innermost frame and the innermost three of Local RAG's own."""
    stack = traceback.extract_stack(frame)[::-1]
    ours = [f for f in stack if "localrag" in f.filename]
    chosen = [stack[0]] + [f for f in ours[:3] if f is not stack[0]]
    return " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in chosen)


def print_report(report: dict[str, Any]) -> None:
    m = report["machine"]
    print(
        f"{m['cpu']} × {m['cores']}, {m['memory_gb']} GB; load average {m['load_average']} → "
        f"{report['load_average_after']}"
    )
    for key, value in report.items():
        if key not in ("machine", "load_average_after", "stalls"):
            print(f"{key:20} {value}")
    for stall in report["stalls"]:
        gc_note = (
            f"; full GC {stall['full_gc_ms']} ms on {', '.join(stall['full_gc_on'])}"
            if stall["full_gc_on"]
            else ""
        )
        print(f"stall at {stall['at_s']} s: {stall['gap_ms']} ms{gc_note}")
        for where in stall["window_thread_at"]:
            print(f"    window thread at {where}")
