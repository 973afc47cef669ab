"""Closing the window at any moment ends the process at once: every thread and child process the app started
is stopped and waited for, and Qt prints no warning. The window runs in a process of its own
(``window_process.py``) on the session's database, with the real models; SIGTERM closes it the way the
window's own Quit does."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from localrag.core.ingest.groups import SMALL_FILE_BYTES

pytestmark = pytest.mark.gui

DRIVER = Path(__file__).with_name("window_process.py")
FILLER = " Meltwater feeds the rivers below the ice through the long summer months."
# The bound: from the close request to the end of the process.
EXIT_WITHIN_S = 3.0


def close_during(phase: str, tmp_path: Path, conninfo: str, folder: Path | None = None) -> tuple[float, dict]:
    """Run the window until it reports ``phase``, close it, and return (seconds to exit, its final report)."""
    # During the load, the machine checks run afresh (a child process is under way when the window closes);
    # the other phases share the session's cache, where they ran once.
    cache = tmp_path / "cache" if phase == "load" else Path(os.environ["LOCALRAG_CACHE"])
    env = dict(
        os.environ,
        LOCALRAG_HOME=str(tmp_path / "home"),
        LOCALRAG_CACHE=str(cache),
        LOCALRAG_DATABASE_URL=conninfo,
        QT_QPA_PLATFORM="offscreen",
    )
    stderr = open(tmp_path / "stderr.txt", "w+")  # noqa: SIM115 (read after the process ends)
    proc = subprocess.Popen(
        [sys.executable, str(DRIVER), phase, str(folder or "")],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env=env,
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + float(os.environ.get("LOCALRAG_TEST_PHASE_S", 240))
        other: list[str] = []  # what else the window wrote on its standard output
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                proc.send_signal(signal.SIGUSR1)  # the driver writes every thread's stack to stderr
                time.sleep(2)
                log = tmp_path / "home" / "logs" / "localrag.log"
                stderr.seek(0)
                raise AssertionError(
                    f"the window never reached {phase} (its other output: {other[-20:]!r}):\n"
                    f"{stderr.read()[-12000:]}\n"
                    f"{log.read_text()[-4000:] if log.exists() else ''}"
                ) from None
            # The marker is a line's last word: a library's output without a line end may come before it.
            if line.split()[-1:] == [phase]:
                break
            other.append(line)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        elapsed = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=10)
    rest = []
    while not lines.empty():
        rest.append(lines.get())
    stderr.seek(0)
    errors = stderr.read()
    stderr.close()
    assert proc.returncode == 0, errors[-3000:]
    report = json.loads(rest[-1])
    report["stderr"] = errors
    return elapsed, report


def assert_clean(elapsed: float, report: dict) -> None:
    assert report["threads"] == [] and report["tasks"] == [] and report["children"] == [], report
    # The offscreen platform (no window system) says which window-system calls it lacks; anything else counts.
    warnings = [w for w in report["warnings"] if not w.startswith("This plugin does not support")]
    assert warnings == [], warnings
    assert "QThread" not in report["stderr"], report["stderr"][-3000:]
    assert elapsed < EXIT_WITHIN_S, f"the process took {elapsed:.2f} s to exit"


def test_closing_during_the_model_load_ends_the_process_at_once(tmp_path, library):
    assert_clean(*close_during("load", tmp_path, library.conninfo))


def test_closing_during_an_answer_ends_the_process_at_once(tmp_path, library, clean_db):
    assert_clean(*close_during("answer", tmp_path, library.conninfo))


def test_closing_during_an_ingest_ends_the_process_at_once(tmp_path, library, clean_db):
    folder = tmp_path / "docs"
    folder.mkdir()
    # Many short sections: several embedding batches, so the close lands in the middle of the work.
    text = "\n\n".join(
        f"# Chapter {i}\n\nGlaciers hold fresh water, part {i}, in the cold.{FILLER}" for i in range(400)
    )
    assert len(text) > SMALL_FILE_BYTES  # each file through its own steps, not in a group of small files
    (folder / "long.md").write_text(text)
    (folder / "other.md").write_text(text.replace("Glaciers", "Rivers"))
    elapsed, report = close_during("ingest", tmp_path, library.conninfo, folder)
    assert_clean(elapsed, report)
    with library.connect() as conn:  # closing paused the documents: nothing was cancelled or failed
        statuses = {row[0] for row in conn.execute("SELECT status FROM documents").fetchall()}
    assert statuses <= {"queued", "extracting", "embedding", "ready"}, statuses


def test_stopping_a_worker_that_will_not_stop_returns_and_keeps_it(qtbot):
    """A loop stuck where no stop request reaches it (a fake: a wait on an event nobody sets, standing for
    native code) does not hold up the window's close: stop gives up after its bound and keeps the thread."""
    from localrag.gui.tasks import WorkerThread, task_manager

    release = threading.Event()
    thread = WorkerThread("stuck-loop", target=lambda: release.wait(60), request_stop=lambda: None)
    thread.start()
    started = time.monotonic()
    assert not thread.stop(timeout_ms=300)
    assert time.monotonic() - started < 5
    assert "stuck-loop" in task_manager().stuck()
    release.set()
    assert thread.wait(10000)
    assert "stuck-loop" not in task_manager().stuck()
