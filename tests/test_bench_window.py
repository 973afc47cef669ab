"""``local-rag bench window``: the real window indexes a dropped folder and reports its event loop."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.gui


def test_a_generated_corpus_is_the_same_every_time(tmp_path):
    from localrag.eval.corpus import make_corpus

    make_corpus(tmp_path / "a", 30)
    make_corpus(tmp_path / "b", 30)
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 30
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    assert {f.suffix for f in files} == {".txt", ".md"}
    assert any(len(f.parts) == 3 for f in files)  # topic/year/file
    assert len({(tmp_path / "a" / f).read_text() for f in files}) == 30  # none is skipped as a duplicate


def test_a_dropped_folder_is_indexed_by_the_window_and_the_event_loop_is_measured(qtbot, clean_db, tmp_path):
    from localrag.core.config import Settings
    from localrag.core.library import Library
    from localrag.devtools.bench_window import TICK_MS, WindowBench
    from localrag.eval.corpus import make_corpus

    make_corpus(tmp_path / "docs", 20)
    # A guest: the session's library already owns the embedded server of this data folder.
    library = Library(Settings.load(), owner=False)
    bench = WindowBench(library, tmp_path / "docs", layout_file=tmp_path / "window.ini", timeout_s=120)
    report = bench.run()

    assert report["complete"] and report["unfinished"] == 0
    assert report["files"] == report["ready"] == report["rows_shown"] == 20
    assert report["failed"] == report["skipped"] == report["cancelled"] == 0
    assert report["chunks"] >= 20
    assert report["seconds"] > 0 and report["files_per_s"] > 0 and report["drop_ms"] > 0
    assert report["ticks"] > 10
    # The longest stall is the longest gap between two ticks less the tick; every gap over 100 ms is a stall.
    assert report["gap_p50_ms"] <= report["gap_p99_ms"] <= report["gap_p999_ms"]
    assert report["gap_p999_ms"] <= report["longest_stall_ms"] + TICK_MS + 0.1
    assert len(report["stalls"]) == min(20, report["gaps_over_100ms"])
    assert isinstance(report["full_gcs"], int)
    assert report["peak_rss_mb"] > 0 and report["rss_end_mb"] > 0
    assert report["machine"]["cores"] >= 1 and report["load_average_after"]
    with clean_db.connect() as conn:
        stored = conn.execute(
            "SELECT count(*), sum(chunks_total) FROM documents WHERE status = 'ready'"
        ).fetchone()
    assert stored == (20, report["chunks"])


def test_a_stall_says_where_the_window_thread_was_and_what_collected(qtbot):
    import gc

    from localrag.devtools.bench_window import EventLoopWatch
    from localrag.gui.qt import QTimer

    held: list[int] = []
    origin: list[float] = []

    def busy() -> None:
        # The window thread is held up, here: for 0.2 s, and until the watcher has seen where it is (a watcher
        # thread starved of CPU on a busy machine may take longer to look than the stall lasts).
        started = time.monotonic()
        deadline = started + 60
        while time.monotonic() < deadline and (
            time.monotonic() - started < 0.2 or watch.ticks[-1] not in watch.samples
        ):
            time.sleep(0.01)
        gc.collect()
        held.append(len(watch.ticks))

    watch = EventLoopWatch()
    watch.start()
    origin.append(watch.ticks[0])
    qtbot.waitUntil(lambda: len(watch.ticks) >= 3)
    QTimer.singleShot(0, busy)
    qtbot.waitUntil(lambda: bool(held) and len(watch.ticks) >= held[0] + 3)  # ticking again after the stall
    watch.stop()
    report = watch.report()

    assert report["gaps_over_100ms"] >= 1 and report["longest_stall_ms"] >= 190
    assert report["full_gcs"] >= 1 and report["full_gc_longest_ms"] > 0
    # The stall is the gap after the last tick before busy() (on a busy machine other gaps may be longer);
    # the stalls are listed longest first, each with where the watcher found the window thread.
    before = watch.ticks[held[0] - 1]  # the last tick before busy() ran
    stall = next(s for s in report["stalls"] if abs(origin[0] + s["at_s"] - before) < 0.06)
    assert report["stalls"][0]["gap_ms"] >= stall["gap_ms"] >= 200
    assert "window thread" in stall["full_gc_on"]
    assert any("busy" in where for where in stall["window_thread_at"]), stall


def test_thousands_of_queued_documents_reach_the_table_in_one_pass(qtbot):
    """A dropped folder of thousands of files: a repaint inserts its new rows in one go (one insertion per row
    re-indexed the whole table each time: seconds for 5,000 rows) and the busy animation of queued rows
    repaints the rows in view instead of signalling every queued row."""
    from localrag.core.ingest.pipeline import IngestEvent
    from localrag.gui.views.documents import DocumentsPanel

    panel = DocumentsPanel()
    qtbot.addWidget(panel)
    panel.resize(480, 700)
    panel.show()
    panel.add_placeholders(["/tmp/big-folder"])
    for i in range(5000):
        panel.apply_event(
            IngestEvent(i + 1, f"/tmp/big-folder/{i:05d}.txt", f"{i:05d}.txt", "text", "queued")
        )
    inserted: list[tuple[int, int]] = []
    panel.model.rowsInserted.connect(lambda _parent, first, last: inserted.append((first, last)))
    panel.flush()
    panel.clear_placeholders(["/tmp/big-folder"])
    signals: list[object] = []
    panel.model.dataChanged.connect(lambda *args: signals.append(args))
    panel._animate()  # the busy segment of queued rows moves: only the rows in view are repainted

    rows = panel.model.rows
    assert [r.title for r in rows[:2]] == ["04999.txt", "04998.txt"] and len(rows) == 5000  # newest on top
    assert panel.model.row_for("doc:1") is rows[-1] and panel.model.row_for("path:/tmp/big-folder") is None
    assert inserted == [(0, 4999)], inserted[:5]  # one insertion of every new row
    assert len(signals) < 100, f"the busy animation sent {len(signals)} signals"
    panel.apply_event(
        IngestEvent(1, "/tmp/big-folder/00000.txt", "00000.txt", "text", "ready", chunks_total=2)
    )
    panel.flush()
    assert panel.model.rows[-1].status_text == "Ready" and len(panel.model.rows) == 5000  # updated in place


def test_the_command_line_loads_the_window_bench_only_when_it_runs():
    """``local-rag bench window`` lives with the developer tools: building the command line imports neither
    them nor Qt, and the bench's own options reach it."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from localrag.cli import build_parser\n"
        "build_parser()\n"
        "print(sorted(m for m in sys.modules if m.startswith(('localrag.devtools', 'PySide6'))))\n"
    )
    listed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert listed.stdout.strip() == "[]", listed.stdout
    helped = subprocess.run(
        [sys.executable, "-m", "localrag", "bench", "window", "--help"], capture_output=True, text=True
    )
    assert helped.returncode == 0 and "--make-corpus N" in helped.stdout, helped.stderr
