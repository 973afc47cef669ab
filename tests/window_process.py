"""The window in a process of its own, for the shutdown tests (``test_shutdown.py``); not a test module.

``python window_process.py PHASE [FOLDER]`` opens the window the way ``local-rag`` does, drives it into PHASE
and prints PHASE when it is there: ``load`` (the language model is loading, a child process under way),
``answer`` (an answer is streaming) or ``ingest`` (FOLDER's documents are being embedded). The test then sends
SIGTERM, which closes the window the normal way. After the event loop ends, one JSON line reports what is
still running: Python threads, the task manager's operations and worker threads, child processes, and every
warning Qt printed.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import threading
from pathlib import Path


def children() -> list[str]:
    """This process's child processes (from /proc), as "pid name"."""
    found = []
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        if rest[1] == me:
            found.append(f"{entry.name} {name}")
    return found


def main(phase: str, folder: str = "") -> int:
    # If the window never reaches PHASE, the test sends SIGUSR1 before giving up: every thread's stack goes to
    # stderr, and the log says how far the window got.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    # What the test reads goes through a copy of standard output made now: while llama.cpp loads a model it
    # points the process's standard output (sys.stdout and descriptor 1) at /dev/null, and a phase reached in
    # those moments would never be told.
    told = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    from localrag.core.config import Settings
    from localrag.core.library import Library
    from localrag.core.logs import set_up_logging

    set_up_logging(terminal_level=None)
    from localrag.gui.app import _close_on_signals, create_app
    from localrag.gui.qt import QtCore
    from localrag.gui.tasks import task_manager

    warnings: list[str] = []

    def on_message(kind: QtCore.QtMsgType, _context: object, message: str) -> None:
        if kind != QtCore.QtMsgType.QtDebugMsg and kind != QtCore.QtMsgType.QtInfoMsg:
            warnings.append(message)

    QtCore.qInstallMessageHandler(on_message)
    app = create_app([])
    from localrag.gui.mainwindow import MainWindow

    settings = Settings.load()
    settings.max_tokens = 4000  # an answer that is still streaming when the window closes
    window = MainWindow(
        Library(settings, owner=False), layout_file=Path(os.environ["LOCALRAG_HOME"]) / "w.ini"
    )
    said: list[str] = []

    def say() -> None:
        if not said:
            said.append(phase)
            print(f"\n{phase}", file=told, flush=True)  # a line of its own, whatever came before it

    def model_loading() -> bool:
        engine = window.chat_panel.worker.engine
        return engine is not None and engine.provider.state.status == "loading"

    if phase == "load":  # once the load has a child process under way (the check of llama.cpp's kernels)
        poll = QtCore.QTimer(window)
        poll.timeout.connect(lambda: say() if model_loading() and children() else None)
        poll.start(5)
    elif phase == "answer":
        panel = window.chat_panel
        panel.use_documents.setChecked(False)

        def ask(state: str) -> None:
            if state == "ready":
                panel.ask(
                    "Tell me a very long story about a lighthouse keeper and the sea, chapter by chapter."
                )

        panel.model_state_changed.connect(ask)
        panel.token_received.connect(lambda _t: say())
    elif phase == "ingest":

        def on_event(event: object) -> None:
            print(
                f"event {getattr(event, 'status', '')} {getattr(event, 'chunks_embedded', '')}",
                file=sys.stderr,
            )
            if getattr(event, "status", "") == "embedding" and getattr(event, "chunks_embedded", 0) > 0:
                say()

        def add() -> None:  # once the store is open and the workers run
            print("store ready: adding the folder", file=sys.stderr, flush=True)
            window.ingest_worker.ingest_event.connect(on_event)
            window.add_paths([folder])

        window.store_ready.connect(lambda: QtCore.QTimer.singleShot(0, add))
    window.show()
    window.start()
    _close_on_signals(window)
    app.exec()
    report = {
        "threads": [
            t.name
            for t in threading.enumerate()
            if t is not threading.main_thread() and not isinstance(t, threading._DummyThread)
        ],
        "tasks": task_manager().running(),
        "children": children(),
        "warnings": warnings,
    }
    print(json.dumps(report), file=told, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
