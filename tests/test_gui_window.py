"""The main window: drops anywhere, the documents panel, settings and layout surviving a restart."""

from __future__ import annotations

import itertools
import sys
import threading
import time
from pathlib import Path

import pytest

import fixtures_docs as fx
from localrag.core.ingest.groups import SMALL_FILE_BYTES
from localrag.core.ingest.pipeline import EMBED_BATCH

pytestmark = pytest.mark.gui

TEXT = (
    "Glaciers store about two thirds of the fresh water on Earth. When they melt, sea level rises. "
    "Ice cores record the air of past climates in tiny bubbles. "
)
MARKDOWN = "# Owls\n\n## Hunting\n\nOwls hunt at night and locate prey by sound. " * 3


FILLER = " Meltwater feeds the rivers below the ice through the long summer months." * 3


def sections(n: int, more: str = "") -> str:
    """Markdown with ``n`` short headed sections: one small chunk each, so embedding batches are cheap
    (``more`` lengthens each section, to make a file larger than the small files indexed in groups)."""
    return "\n\n".join(f"# Chapter {i}\n\nGlaciers hold fresh water, part {i}.{more}" for i in range(n))


@pytest.fixture()
def saved_settings(home):
    """The session's settings.json as it was: tests that save settings put it back."""
    path = home / "settings.json"
    before = path.read_bytes() if path.exists() else None
    yield path
    if before is None:
        path.unlink(missing_ok=True)
    else:
        path.write_bytes(before)


@pytest.fixture()
def prefs(tmp_path):
    """The user's Qt settings (the data folder choice) in a temporary folder."""
    from localrag.gui.qt import QtCore

    QtCore.QSettings.setPath(
        QtCore.QSettings.Format.IniFormat, QtCore.QSettings.Scope.UserScope, str(tmp_path / "prefs")
    )
    return tmp_path / "prefs"


def open_window(qtbot, layout_file: Path, start: bool = True):
    from localrag.core.config import Settings
    from localrag.core.library import Library
    from localrag.gui.mainwindow import MainWindow

    # A guest: the session's library already owns the embedded server of this data folder.
    window = MainWindow(Library(Settings.load(), owner=False), layout_file=layout_file)
    qtbot.addWidget(window)
    window.show()
    if start:
        with qtbot.waitSignals([window.embedder_ready, window.documents_loaded], timeout=60000):
            window.start()
    return window


def close_window(qtbot, window) -> None:
    # Closing waits for every thread, a model load under way included.
    if not window._closing:
        with qtbot.waitSignal(window.shut_down, timeout=60000):
            window.close()


@pytest.fixture()
def window(qtbot, clean_db, saved_settings, prefs, tmp_path):
    w = open_window(qtbot, tmp_path / "window.ini")
    yield w
    close_window(qtbot, w)


def drop_on(widget, paths: list[Path]):
    """Drag ``paths`` over ``widget`` and drop them there, as a file manager would."""
    from localrag.gui.qt import QtCore, QtGui, QtWidgets

    mime = QtCore.QMimeData()
    mime.setUrls([QtCore.QUrl.fromLocalFile(str(p)) for p in paths])
    pos = QtCore.QPointF(10, 10)
    enter = QtGui.QDragEnterEvent(
        pos.toPoint(),  # the QPoint form exists in every Qt 6
        QtCore.Qt.DropAction.CopyAction,
        mime,
        QtCore.Qt.MouseButton.LeftButton,
        QtCore.Qt.KeyboardModifier.NoModifier,
    )
    QtWidgets.QApplication.sendEvent(widget, enter)
    drop = QtGui.QDropEvent(
        pos,
        QtCore.Qt.DropAction.CopyAction,
        mime,
        QtCore.Qt.MouseButton.LeftButton,
        QtCore.Qt.KeyboardModifier.NoModifier,
    )
    QtWidgets.QApplication.sendEvent(widget, drop)
    return enter, drop


class Statuses:
    """The last status of every document the ingest worker reported, by file name."""

    def __init__(self, worker) -> None:
        self.by_name: dict[str, object] = {}
        worker.ingest_event.connect(self._on)

    def _on(self, event) -> None:
        if event.path:
            self.by_name[Path(event.path).name] = event

    def status(self, name: str) -> str | None:
        event = self.by_name.get(name)
        return getattr(event, "status", None)

    def settled(self, names: list[str]) -> bool:
        return all(self.status(n) in ("ready", "failed", "cancelled", "skipped") for n in names)


def rows_by_title(window) -> dict[str, object]:
    return {r.title: r for r in window.documents_panel.model.rows}


def test_drop_anywhere_queues_files_without_blocking_the_event_loop(qtbot, window, tmp_path):
    from localrag.gui.qt import QtCore

    docs = tmp_path / "docs"
    (docs / "more").mkdir(parents=True)
    (docs / "glaciers.txt").write_text(TEXT * 8)
    (docs / "owls.md").write_text(MARKDOWN)
    (docs / "more" / "rivers.txt").write_text("Rivers carry sediment to the sea and build deltas. " * 20)
    fx.write_pdf(docs / "secret.pdf", [["Top secret text"]], password="pw")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7\n this is not really a pdf")
    (docs / "empty.txt").write_text("")
    statuses = Statuses(window.ingest_worker)
    ticks: list[float] = []
    timer = QtCore.QTimer()
    timer.setInterval(20)
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start()
    # A thread that only sleeps sees how long this process was kept off the CPU (a loaded machine): the event
    # loop may lag behind by that much, but not by a second more.
    sleeper_ticks: list[float] = []
    sleeping = threading.Event()

    def sleep_in_steps() -> None:
        while not sleeping.wait(0.02):
            sleeper_ticks.append(time.monotonic())

    sleeper = threading.Thread(target=sleep_in_steps)
    sleeper.start()

    # Onto the question box, which would otherwise paste the paths as text.
    target = window.chat_panel.question
    dropped = [
        docs / "glaciers.txt",
        docs / "owls.md",
        docs / "more",
        docs / "secret.pdf",
        docs / "broken.pdf",
        docs / "empty.txt",
    ]
    with qtbot.waitSignal(window.paths_dropped, timeout=5000):
        enter, drop = drop_on(target, dropped)
    assert enter.isAccepted() and drop.isAccepted()
    assert target.toPlainText() == ""
    assert not window.overlay.isVisible()
    # Every dropped item shows at once, before the worker has even hashed it.
    assert {"glaciers.txt", "owls.md", "more", "secret.pdf", "broken.pdf", "empty.txt"} <= set(
        rows_by_title(window)
    )

    names = ["glaciers.txt", "owls.md", "rivers.txt", "secret.pdf", "broken.pdf", "empty.txt"]
    qtbot.waitUntil(lambda: statuses.settled(names), timeout=60000)
    timer.stop()
    sleeping.set()
    sleeper.join()
    window.documents_panel.flush()
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    off_cpu = max(b - a for a, b in itertools.pairwise(sleeper_ticks))
    assert len(ticks) > 10 and max(gaps) < 1.0 + off_cpu, f"longest event-loop gap {max(gaps):.2f} s"

    assert [statuses.status(n) for n in ("glaciers.txt", "owls.md", "rivers.txt")] == ["ready"] * 3
    codes = {n: statuses.by_name[n].error_code for n in ("secret.pdf", "broken.pdf", "empty.txt")}
    assert codes == {"secret.pdf": "encrypted", "broken.pdf": "corrupt", "empty.txt": "empty"}
    rows = {Path(r.path).name: r for r in window.documents_panel.model.rows}
    assert "more" not in rows  # the folder's placeholder gave way to its files
    assert rows["secret.pdf"].status_text == "Encrypted" and rows["secret.pdf"].error
    assert rows["empty.txt"].status_text == "Empty"
    assert rows["glaciers.txt"].status == "ready" and rows["glaciers.txt"].chunks_total >= 1


def test_documents_can_be_scoped_searched_removed_and_reindexed(qtbot, window, tmp_path):
    (tmp_path / "glaciers.txt").write_text(TEXT * 4)
    (tmp_path / "owls.md").write_text(MARKDOWN)
    statuses = Statuses(window.ingest_worker)
    window.add_paths([str(tmp_path / "glaciers.txt"), str(tmp_path / "owls.md")])
    qtbot.waitUntil(lambda: statuses.settled(["glaciers.txt", "owls.md"]), timeout=60000)
    panel = window.documents_panel
    panel.flush()
    glaciers = statuses.by_name["glaciers.txt"].doc_id

    # Selecting a document scopes the chat (and the dev pane's retrieval box) to it.
    with qtbot.waitSignal(panel.scope_changed, timeout=5000) as scope:
        panel.select_documents([glaciers])
    assert scope.args == [[glaciers], []]
    assert window.chat_panel.doc_ids == [glaciers] and window.dev_pane.doc_ids == [glaciers]
    panel.table.clearSelection()
    # A type scopes it to that type.
    with qtbot.waitSignal(panel.scope_changed, timeout=5000) as scope:
        panel.set_type_scope("markdown")
    assert scope.args == [[], ["markdown"]] and window.chat_panel.doc_types == ["markdown"]
    assert panel.proxy.rowCount() == 1
    panel.set_type_scope("")
    assert window.chat_panel.doc_ids is None and window.chat_panel.doc_types is None

    panel.search.setText("owl")
    assert panel.proxy.rowCount() == 1
    assert panel.proxy.data(panel.proxy.index(0, 0)) == "Owls"  # a Markdown file is titled by its heading
    panel.search.clear()

    # Re-index: a fresh row for the same file becomes ready again.
    panel.select_documents([glaciers])
    with qtbot.waitSignal(
        window.ingest_worker.ingest_event,
        timeout=60000,
        check_params_cb=lambda e: e.status == "ready" and e.path.endswith("glaciers.txt"),
    ):
        panel.reindex_button.click()
    # Remove: the row goes, the file stays.
    panel.flush()
    new_id = statuses.by_name["glaciers.txt"].doc_id
    panel.select_documents([new_id])
    with qtbot.waitSignal(
        window.ingest_worker.ingest_event,
        timeout=30000,
        check_params_cb=lambda e: e.status == "removed" and e.doc_id == new_id,
    ):
        panel.remove_button.click()
    panel.flush()
    assert set(rows_by_title(window)) == {"Owls"}
    assert (tmp_path / "glaciers.txt").exists()


def test_a_document_can_be_cancelled_and_the_rest_still_goes_in(qtbot, window, tmp_path):
    first, big, last = tmp_path / "first.txt", tmp_path / "big.txt", tmp_path / "last.txt"
    first.write_text(TEXT)
    big.write_text("\n\n".join(f"Section {i}. " + TEXT * 3 for i in range(20)))
    last.write_text(MARKDOWN)
    statuses = Statuses(window.ingest_worker)
    panel = window.documents_panel
    # The worker takes the files in order; cancel the second while it waits its turn.
    with qtbot.waitSignal(
        window.ingest_worker.ingest_event,
        timeout=30000,
        check_params_cb=lambda e: e.status == "queued" and e.path.endswith("big.txt"),
    ) as queued:
        window.add_paths([str(first), str(big), str(last)])
    big_id = queued.args[0].doc_id
    panel.flush()
    panel.select_documents([big_id])
    assert panel.cancel_button.isEnabled()
    with qtbot.waitSignal(panel.cancel_requested, timeout=5000) as asked:
        panel.cancel_button.click()
    assert asked.args == [[big_id]]
    qtbot.waitUntil(lambda: statuses.settled(["first.txt", "big.txt", "last.txt"]), timeout=60000)
    assert [statuses.status(n) for n in ("first.txt", "big.txt", "last.txt")] == [
        "ready",
        "cancelled",
        "ready",
    ]
    panel.flush()
    assert panel.model.row_for(f"doc:{big_id}").status_text == "Cancelled"
    assert not panel.progress_row.isVisible()
    with window.library.connect() as conn:
        assert (
            conn.execute("SELECT count(*) FROM document_chunks WHERE doc_id = %s", (big_id,)).fetchone()[0]
            == 0
        )


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_a_symlink_loop_in_a_dropped_folder_is_shown_as_not_followed(qtbot, window, tmp_path):
    """The window reports a symlink loop as the command line does (tests/test_ingest_pipeline.py): a row that
    says it was not followed, while the folder's real file goes in."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "river.txt").write_text(TEXT)
    (folder / "self.txt").symlink_to("self.txt")
    statuses = Statuses(window.ingest_worker)
    window.add_paths([str(folder)])
    qtbot.waitUntil(lambda: statuses.settled(["river.txt", "self.txt"]), timeout=60000)
    assert statuses.by_name["self.txt"].message == "symlink loop: not followed"
    window.documents_panel.flush()
    rows = {Path(r.path).name: r for r in window.documents_panel.model.rows}
    assert rows["river.txt"].status == "ready"
    assert rows["self.txt"].status == "skipped"
    assert rows["self.txt"].detail_text == "Not indexed: symlink loop: not followed"


def test_cancel_all_stops_the_document_in_hand_and_the_queue(qtbot, window, tmp_path):
    first, big, last = tmp_path / "first.txt", tmp_path / "big.md", tmp_path / "last.txt"
    first.write_text(TEXT)
    # Three embedding batches, in a file too large to be indexed in a group with the small ones.
    big.write_text(sections(2 * EMBED_BATCH + 6, FILLER))
    assert big.stat().st_size > SMALL_FILE_BYTES
    last.write_text(MARKDOWN)
    statuses = Statuses(window.ingest_worker)
    panel = window.documents_panel
    # While the first embedding batch of the second file is in hand.
    with qtbot.waitSignal(
        window.ingest_worker.ingest_event,
        timeout=60000,
        check_params_cb=lambda e: e.path.endswith("big.md") and e.status == "embedding",
    ):
        window.add_paths([str(first), str(big), str(last)])
    panel.flush()
    assert panel.progress_row.isVisible() and panel.cancel_all_button.isVisible()
    panel.cancel_all_button.click()
    qtbot.waitUntil(lambda: statuses.settled(["first.txt", "big.md", "last.txt"]), timeout=60000)
    assert [statuses.status(n) for n in ("first.txt", "big.md", "last.txt")] == [
        "ready",
        "cancelled",
        "cancelled",
    ]
    panel.flush()
    assert not panel.progress_row.isVisible()


def test_progress_is_shown_and_repaints_are_coalesced(qtbot):
    from localrag.core.ingest.pipeline import IngestEvent
    from localrag.gui.views.documents import DocumentsPanel

    panel = DocumentsPanel(repaints_per_s=10)
    qtbot.addWidget(panel)
    panel.show()
    panel.apply_event(IngestEvent(7, "/tmp/book.pdf", "Book", "pdf", "queued"))
    panel.flush()
    assert panel.model.row_for("doc:7").status_text == "Queued" and panel.progress_row.isVisible()
    started = panel.flush_count
    # A burst of 500 progress events in one go is applied in one repaint, with the latest values.
    for page in range(1, 301):
        panel.apply_event(
            IngestEvent(7, "/tmp/book.pdf", "Book", "pdf", "extracting", pages_done=page, pages=300)
        )
    for done in range(0, 200):
        panel.apply_event(
            IngestEvent(
                7,
                "/tmp/book.pdf",
                "Book",
                "pdf",
                "embedding",
                pages_done=300,
                pages=300,
                chunks_embedded=done,
                chunks_total=400,
                eta_s=95.0,
            )
        )
    assert panel.flush_count == started  # nothing repainted synchronously
    # (The busy animation of the queued row also emits dataChanged, so wait for the flush itself.)
    qtbot.waitUntil(lambda: panel.flush_count > started, timeout=2000)
    assert panel.flush_count == started + 1 and not panel._flush_timer.isActive()  # no second repaint due
    row = panel.model.row_for("doc:7")
    assert row.status_text == "Embedding 50%"
    assert row.detail_text == "Embedding chunk 199 of 400, 2 min left"
    assert 0.25 < row.fraction < 0.75
    assert panel.progress_label.text() == "Indexing 1 document · 199 of 400 chunks · 2 min left"
    assert panel.progress_bar.maximum() == 400 and panel.progress_bar.value() == 199
    panel.apply_event(
        IngestEvent(
            7,
            "/tmp/book.pdf",
            "Book",
            "pdf",
            "ready",
            pages_done=300,
            pages=300,
            chunks_embedded=400,
            chunks_total=400,
        )
    )
    panel.apply_event(
        IngestEvent(
            8,
            "/tmp/scan.pdf",
            "scan.pdf",
            "pdf",
            "failed",
            error_code="needs_ocr",
            message="scan.pdf has no text layer; OCR is not installed.",
        )
    )
    panel.flush()
    assert panel.model.row_for("doc:7").status_text == "Ready" and not panel.progress_row.isVisible()
    assert panel.model.row_for("doc:8").status_text == "Needs OCR"
    panel.select_documents([8])
    assert panel.error_label.isVisible() and "no text layer" in panel.error_label.text()
    assert "1 failed" in panel.summary_label.text()


def test_the_documents_list_filters_and_sorts_many_rows_and_the_selection_follows(qtbot):
    """The list's filter and sort work on the model's rows (no call per row from Qt): the rows shown match the
    search and the type, in the order chosen, and the selected documents stay selected while rows come, go
    and move."""
    from localrag.gui.qt import QtCore
    from localrag.gui.views.documents import DocumentsPanel
    from localrag.gui.views.documents_model import DocumentRow

    panel = DocumentsPanel()
    qtbot.addWidget(panel)
    kinds = ["pdf", "markdown", "text"]
    rows = [
        DocumentRow(
            i,
            f"/lib/doc-{i}.{kinds[i % 3]}",
            f"Handbook {i}",
            doc_type=kinds[i % 3],
            status="ready",
            pages=i % 40,
        )
        for i in range(3000, 0, -1)
    ]
    panel.set_documents(rows)
    assert panel.proxy.rowCount() == 3000
    panel.select_documents([1234, 2001])

    def matching(search: str, doc_type: str = "") -> list[str]:
        return [
            r.title
            for r in rows
            if all(w in f"{r.title}\n{r.path}".lower() for w in search.split())
            and (not doc_type or r.doc_type == doc_type)
        ]

    panel.search.setText("handbook 12")  # 1234 matches, 2001 does not
    shown = [panel.proxy.index(i, 0).data() for i in range(panel.proxy.rowCount())]
    assert shown == matching("handbook 12") and 0 < len(shown) < 3000
    assert [r.doc_id for r in panel.selected_rows()] == [1234]
    panel.type_filter.setCurrentIndex(panel.type_filter.findData("pdf"))  # 1234 is markdown (1234 % 3 == 1)
    assert panel.selected_rows() == [] and panel.proxy.rowCount() == len(matching("handbook 12", "pdf"))
    panel.type_filter.setCurrentIndex(0)
    panel.search.clear()
    panel.select_documents([1234])
    head = panel.table.horizontalHeader()
    head.setSortIndicator(panel.model.PAGES, QtCore.Qt.SortOrder.DescendingOrder)
    pages = [panel.proxy.index(i, panel.model.PAGES).data() for i in range(3)]
    assert pages == ["39", "39", "39"]
    assert [r.doc_id for r in panel.selected_rows()] == [1234]
    # Rows added and removed while a filter is on: the filter holds, the selection stays on its row.
    panel.search.setText("handbook 123")
    panel.model.upsert_many([DocumentRow(5000, "/lib/new.pdf", "Handbook 1235 new", doc_type="pdf")])
    panel.model.remove_keys(["doc:123"])
    titles = {panel.proxy.index(i, 0).data() for i in range(panel.proxy.rowCount())}
    assert "Handbook 1235 new" in titles and "Handbook 123" not in titles and "Handbook 1230" in titles
    assert [r.doc_id for r in panel.selected_rows()] == [1234]
    # A recorded document can be dragged onto a collection; a dropped file not yet recorded cannot.
    panel.search.clear()
    panel.add_placeholders(["/lib/coming.pdf"])
    drag = QtCore.Qt.ItemFlag.ItemIsDragEnabled
    flags = {
        panel.proxy.index(i, 0).data(): panel.proxy.flags(panel.proxy.index(i, 1))
        for i in range(panel.proxy.rowCount())
    }
    assert not flags["coming.pdf"] & drag and flags["Handbook 1234"] & drag
    assert flags["Handbook 1234"] & QtCore.Qt.ItemFlag.ItemIsSelectable


def test_dropping_a_gguf_makes_it_the_language_model(qtbot, window, saved_settings):
    from localrag.core.config import Settings
    from localrag.core.embed.model_files import default_gguf

    gguf = default_gguf()
    with qtbot.waitSignal(window.llm_checked, timeout=10000) as checked:
        drop_on(window.documents_panel, [gguf])
    assert checked.args == [""]
    assert window.library.settings.gguf_path == str(gguf)
    qtbot.waitUntil(lambda: Settings.load().gguf_path == str(gguf), timeout=5000)
    assert window.documents_panel.model.rows == []  # not a document
    assert gguf.name in window.model_label.text()


def test_settings_survive_a_restart(qtbot, clean_db, saved_settings, prefs, tmp_path):
    from localrag.core.config import Settings
    from localrag.gui.qt import QtCore

    window = open_window(qtbot, tmp_path / "window.ini", start=False)
    dialog = window.open_settings()
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    models = tmp_path / "embedder"
    models.mkdir()
    dialog.embedding_model_dir.set_text(str(models))
    dialog.gguf_path.set_text(str(gguf))
    dialog.k.setValue(5)
    dialog.floor.setValue(0.3)
    dialog.mode.setCurrentIndex(dialog.mode.findData("vector"))
    dialog.context_tokens.setValue(2000)
    dialog.ef_search.setValue(250)
    dialog.temperature.setValue(0.7)
    dialog.max_tokens.setValue(256)
    dialog.threads.setValue(2)
    assert dialog.prepare_while_typing.isChecked()
    dialog.prepare_while_typing.setChecked(False)
    dialog.data_folder.set_text(str(tmp_path / "data"))
    dialog.database_url.setText("postgresql://me@db.example:5432/rag")
    with qtbot.waitSignal(window.settings_applied, timeout=5000) as applied:
        dialog.buttons.button(dialog.buttons.StandardButton.Save).click()
    assert set(applied.args[0]) == {
        "embedding_model_dir",
        "gguf_path",
        "k",
        "floor",
        "mode",
        "context_tokens",
        "ef_search",
        "temperature",
        "max_tokens",
        "threads",
        "prepare_while_typing",
        "database_url",
        "data_folder",
    }
    # Do not let this window's embedder pick up the empty model folder: it never started.
    close_window(qtbot, window)

    saved = Settings.load()
    assert saved.prepare_while_typing is False
    assert (
        saved.embedding_model_dir,
        saved.gguf_path,
        saved.k,
        saved.floor,
        saved.mode,
        saved.context_tokens,
        saved.ef_search,
        saved.temperature,
        saved.max_tokens,
        saved.threads,
        saved.database_url,
    ) == (
        str(models),
        str(gguf),
        5,
        0.3,
        "vector",
        2000,
        250,
        0.7,
        256,
        2,
        "postgresql://me@db.example:5432/rag",
    )
    prefs_file = QtCore.QSettings(
        QtCore.QSettings.Format.IniFormat, QtCore.QSettings.Scope.UserScope, "LocalRAG", "Local RAG"
    )
    assert prefs_file.value("data_folder") == str(tmp_path / "data")

    again = open_window(qtbot, tmp_path / "window.ini", start=False)
    shown = again.open_settings()
    assert shown.k.value() == 5 and shown.mode.currentData() == "vector"
    assert shown.gguf_path.text() == str(gguf) and shown.data_folder.text() == str(tmp_path / "data")
    assert abs(shown.temperature.value() - 0.7) < 1e-9 and shown.threads.value() == 2
    shown.reject()
    close_window(qtbot, again)


def test_what_leads_the_answer_is_saved_and_shown_again(qtbot, saved_settings, prefs):
    """Settings → Answers: "What leads the answer" and "Let the model reword" go through settings.json."""
    from localrag.core.config import Settings
    from localrag.gui.views.settings import LEAD_HINTS, LEAD_LABELS, SettingsDialog

    settings = Settings.load()
    settings.answer_lead, settings.reword = "auto", False
    dialog = SettingsDialog(settings, settings_path=saved_settings)
    qtbot.addWidget(dialog)
    assert [dialog.answer_lead.itemData(i) for i in range(dialog.answer_lead.count())] == list(LEAD_LABELS)
    assert dialog.answer_lead.currentData() == "auto" and not dialog.reword.isChecked()
    dialog.reword.setChecked(True)
    dialog.answer_lead.setCurrentIndex(dialog.answer_lead.findData("model"))
    assert not dialog.reword.isEnabled()  # rewording is for when the quoted sources lead
    assert dialog.lead_hint.text() == LEAD_HINTS["model"]
    dialog.answer_lead.setCurrentIndex(dialog.answer_lead.findData("sources"))
    assert dialog.reword.isEnabled()
    with qtbot.waitSignal(dialog.applied, timeout=5000) as applied:
        dialog.buttons.button(dialog.buttons.StandardButton.Save).click()
    assert set(applied.args[0]) == {"answer_lead", "reword"}
    assert (settings.answer_lead, settings.reword) == ("sources", True)  # in force at once
    saved = Settings.load(saved_settings)
    assert (saved.answer_lead, saved.reword) == ("sources", True)
    again = SettingsDialog(saved, settings_path=saved_settings)
    qtbot.addWidget(again)
    assert again.answer_lead.currentData() == "sources" and again.reword.isChecked()
    again.reject()


def test_folders_the_api_may_read_are_edited_in_settings(qtbot, saved_settings, prefs, tmp_path):
    """Settings → Storage → "Local API may read": the folders are listed, added (once each), removed and
    saved to settings.json (``api_folders``), which the running API reads for every request
    (tests/test_api_folders.py)."""
    from localrag.core.config import Settings
    from localrag.gui.views.settings import SettingsDialog

    settings = Settings.load()
    settings.api_folders = [str(tmp_path / "papers")]
    dialog = SettingsDialog(settings, settings_path=saved_settings)
    qtbot.addWidget(dialog)
    folders = dialog.api_folders
    assert folders.folders() == [str(tmp_path / "papers")] and folders.list.accessibleName()
    folders.add_folder(str(tmp_path / "notes"))
    folders.add_folder(str(tmp_path / "notes"))  # once only
    folders.add_folder(str(tmp_path / "scratch"))
    assert folders.remove_button.isEnabled()
    folders.remove_selected()  # the one just added is selected
    folders.list.setCurrentRow(0)
    folders.remove_selected()
    assert folders.folders() == [str(tmp_path / "notes")]
    with qtbot.waitSignal(dialog.applied, timeout=5000) as applied:
        dialog.buttons.button(dialog.buttons.StandardButton.Save).click()
    assert applied.args[0] == ["api_folders"]
    assert settings.api_folders == [str(tmp_path / "notes")]  # in force at once
    assert Settings.load(saved_settings).api_folders == [str(tmp_path / "notes")]
    again = SettingsDialog(Settings.load(saved_settings), settings_path=saved_settings)
    qtbot.addWidget(again)
    assert again.api_folders.folders() == [str(tmp_path / "notes")]
    again.buttons.button(again.buttons.StandardButton.RestoreDefaults).click()
    assert again.api_folders.folders() == []
    again.reject()


def test_window_layout_is_restored(qtbot, clean_db, prefs, tmp_path):
    layout = tmp_path / "window.ini"
    window = open_window(qtbot, layout, start=False)
    window.resize(780, 560)  # the offscreen screen is 800 pixels wide; a restored window must fit on it
    window.splitter.setSizes([300, 480])
    qtbot.waitUntil(lambda: window.width() == 780, timeout=5000)
    sizes = window.splitter.sizes()
    close_window(qtbot, window)

    again = open_window(qtbot, layout, start=False)
    assert (again.width(), again.height()) == (780, 560)
    assert abs(again.splitter.sizes()[0] - sizes[0]) <= 2
    assert not again.dev_dock.isVisible()
    again.dev_action.trigger()  # View → Developer pane
    assert again.dev_dock.isVisible()
    close_window(qtbot, again)

    third = open_window(qtbot, layout, start=False)
    qtbot.waitUntil(lambda: third.dev_dock.isVisible(), timeout=5000)
    assert third.dev_action.isChecked()
    close_window(qtbot, third)


def test_shortcuts_about_box_and_accessible_names(qtbot, window):
    from localrag.gui.qt import QtGui, QtWidgets

    def keys(action) -> set[str]:
        return {s.toString() for s in action.shortcuts()}

    assert "Ctrl+O" in keys(window.add_action)
    assert "Ctrl+N" in keys(window.new_chat_action)
    assert {"Ctrl+Return", "Ctrl+Enter"} <= keys(window.send_action)
    assert "Esc" in keys(window.stop_action)
    assert "Ctrl+D" in keys(window.dev_action)
    assert QtGui.QKeySequence("Ctrl+,").toString() in keys(window.settings_action)

    qtbot.keyClick(window, "d", QtGui.Qt.KeyboardModifier.ControlModifier)
    assert window.dev_dock.isVisible()

    about = window.show_about()
    qtbot.waitUntil(lambda: about.table.rowCount() > 5, timeout=10000)
    text = about.versions_text()
    assert "PostgreSQL: 18" in text and "pgvector: 0.8" in text and "Local RAG: " in text
    assert "all-MiniLM-L6-v2" in text or "MiniLM" in text
    from localrag.core.llm.backends import cpu_backend

    assert f"llama.cpp CPU kernels: {cpu_backend().describe()}" in text
    assert "Language model tuning: " in text
    about.close()

    unnamed = []
    controls = (
        QtWidgets.QAbstractButton,
        QtWidgets.QLineEdit,
        QtWidgets.QComboBox,
        QtWidgets.QAbstractSpinBox,
        QtWidgets.QAbstractItemView,
        QtWidgets.QPlainTextEdit,
        QtWidgets.QTextEdit,
    )
    for widget in window.findChildren(QtWidgets.QWidget):
        if (
            isinstance(widget, controls)
            and not isinstance(widget, QtWidgets.QHeaderView)
            and widget.isVisibleTo(window)
            and widget.parent() is not None
            and not isinstance(
                widget.parent(), (QtWidgets.QAbstractSpinBox, QtWidgets.QComboBox, QtWidgets.QTabBar)
            )
        ):
            name = widget.accessibleName() or (
                widget.text() if isinstance(widget, QtWidgets.QAbstractButton) else ""
            )
            if not name.strip():
                unnamed.append(
                    f"{type(widget).__name__} {widget.objectName()!r} in {type(widget.parent()).__name__}"
                )
    assert not unnamed, unnamed


def test_closing_mid_document_pauses_it_and_the_next_start_finishes_it(
    qtbot, clean_db, saved_settings, prefs, tmp_path
):
    big = tmp_path / "long.md"  # three embedding batches
    big.write_text(sections(2 * EMBED_BATCH + 12))
    window = open_window(qtbot, tmp_path / "window.ini")
    qtbot.waitUntil(lambda: window.chat_panel.worker.model_state != "loading", timeout=120000)
    with qtbot.waitSignal(
        window.ingest_worker.ingest_event,
        timeout=60000,
        check_params_cb=lambda e: e.status == "embedding" and e.path.endswith("long.md"),
    ) as got:
        window.add_paths([str(big)])
    doc_id, total = got.args[0].doc_id, got.args[0].chunks_total
    assert total > EMBED_BATCH
    # Closed while the first batch is embedded: every worker thread stops and is waited for, and nothing is
    # cancelled: the document pauses with its committed work.
    close_window(qtbot, window)
    with clean_db.connect() as conn:
        status, embedded = conn.execute(
            "SELECT status, chunks_embedded FROM documents WHERE id = %s", (doc_id,)
        ).fetchone()
    assert status == "embedding" and embedded < total, (status, embedded, total)

    def state() -> tuple[str, int, int]:
        with clean_db.connect() as conn:
            return conn.execute(
                "SELECT d.status, d.chunks_embedded, (SELECT count(*) FROM chunk_embeddings e JOIN "
                "document_chunks c ON c.id = e.chunk_id WHERE c.doc_id = d.id) FROM documents d "
                "WHERE d.id = %s",
                (doc_id,),
            ).fetchone()

    # The next start carries on with it, from the committed batches.
    again = open_window(qtbot, tmp_path / "window.ini", start=False)
    again.start()
    qtbot.waitUntil(lambda: state()[0] == "ready", timeout=90000)
    assert state() == ("ready", total, total)
    close_window(qtbot, again)


def test_developer_pane_shows_the_scores_retrieve_gives_for_the_chat_scope(qtbot, window, tmp_path):
    from localrag.core.retrieve import retrieve
    from localrag.gui.qt import QtGui
    from localrag.gui.views.devpane import result_row

    (tmp_path / "glaciers.txt").write_text(TEXT * 4)
    (tmp_path / "owls.md").write_text(MARKDOWN)
    (tmp_path / "tides.txt").write_text("Tides rise twice a day because the Moon pulls on the oceans. " * 6)
    statuses = Statuses(window.ingest_worker)
    names = ["glaciers.txt", "owls.md", "tides.txt"]
    window.add_paths([str(tmp_path / n) for n in names])
    qtbot.waitUntil(lambda: statuses.settled(names), timeout=60000)
    window.documents_panel.flush()
    scope = sorted(statuses.by_name[n].doc_id for n in ("glaciers.txt", "tides.txt"))
    window.documents_panel.select_documents(scope)
    qtbot.keyClick(window, "d", QtGui.Qt.KeyboardModifier.ControlModifier)
    assert window.dev_dock.isVisible()

    question = "Why does the sea level rise when ice melts?"
    with qtbot.waitSignal(window.chat_panel.retrieval_done, timeout=60000):
        assert window.chat_panel.ask(question)
    with qtbot.waitSignal(window.chat_panel.generation_finished, timeout=60000):
        window.stop_action.trigger()  # Esc: the scores are what this test is about

    expected = retrieve(window.library, question, doc_ids=scope)
    table = window.dev_pane.table
    assert table.rowCount() == len(expected.results) > 0
    assert {r.doc_id for r in expected.results} <= set(scope)
    for row, result in enumerate(expected.results):
        cells = [table.item(row, col).text() for col in range(1, len(result_row(result)) + 1)]
        assert cells == result_row(result)


def test_a_watched_folder_is_picked_up_and_follows_deletions(qtbot, window, tmp_path):
    from localrag.gui.views.watched import WatchedFoldersDialog

    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "tides.txt").write_text("Tides rise twice a day because the Moon pulls on the oceans. " * 4)
    dialog = WatchedFoldersDialog(window.library, window)
    dialog.changed.connect(window.services.scan_watched)  # as File → Watched folders… wires it
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(
        window.ingest_worker.ingest_event,
        timeout=60000,
        check_params_cb=lambda e: e.status == "ready" and e.path.endswith("tides.txt"),
    ) as got:
        dialog.add_folder(str(folder))
    qtbot.waitUntil(lambda: dialog.list.count() == 1, timeout=10000)
    assert dialog.list.item(0).text() == str(folder)
    doc_id = got.args[0].doc_id

    (folder / "tides.txt").unlink()
    with qtbot.waitSignal(
        window.ingest_worker.ingest_event,
        timeout=30000,
        check_params_cb=lambda e: e.status == "removed" and e.doc_id == doc_id,
    ):
        window.services.scan_watched()
    window.documents_panel.flush()
    assert window.documents_panel.model.row_for(f"doc:{doc_id}") is None


def test_light_and_dark_follow_the_system(qtbot, qapp):
    from localrag.gui import theme
    from localrag.gui.qt import Qt, QtGui

    style, palette, sheet = qapp.style().name(), QtGui.QPalette(qapp.palette()), qapp.styleSheet()
    hints = qapp.styleHints()
    follower = theme.Theme(qapp, forced="")
    try:
        with qtbot.waitSignal(follower.changed, timeout=2000) as changed:
            hints.colorSchemeChanged.emit(Qt.ColorScheme.Dark)
        assert changed.args == [True] and theme.colors().dark
        assert qapp.palette().color(QtGui.QPalette.ColorRole.Window).lightness() < 60
        with qtbot.waitSignal(follower.changed, timeout=2000) as changed:
            hints.colorSchemeChanged.emit(Qt.ColorScheme.Light)
        assert changed.args == [False] and not theme.colors().dark
        assert qapp.palette().color(QtGui.QPalette.ColorRole.Window).lightness() > 200
    finally:
        hints.colorSchemeChanged.disconnect(follower._on_system_changed)
    forced = theme.Theme(qapp, forced="dark")  # LOCALRAG_THEME=dark
    try:
        assert theme.colors().dark
        with qtbot.assertNotEmitted(forced.changed):
            hints.colorSchemeChanged.emit(Qt.ColorScheme.Light)
        assert theme.colors().dark
    finally:
        hints.colorSchemeChanged.disconnect(forced._on_system_changed)
        forced.apply(False)
        qapp.setStyle(style)
        qapp.setPalette(palette)
        qapp.setStyleSheet(sheet)


def test_a_documents_details_are_edited_and_a_question_naming_them_finds_it(qtbot, window, tmp_path):
    from localrag.core.ingest.documents import reembed_needed
    from localrag.core.retrieve import retrieve
    from localrag.gui.qt import QtCore, QtWidgets
    from localrag.gui.views.details import DocumentDetailsDialog

    (tmp_path / "glaciers.txt").write_text(TEXT * 4)
    statuses = Statuses(window.ingest_worker)
    window.add_paths([str(tmp_path / "glaciers.txt")])
    qtbot.waitUntil(lambda: statuses.settled(["glaciers.txt"]), timeout=60000)
    doc_id = statuses.by_name["glaciers.txt"].doc_id
    panel = window.documents_panel
    with qtbot.waitSignal(window.documents_loaded, timeout=30000):
        window.refresh_documents()
    panel.select_documents([doc_id])
    panel.table.setFocus()

    # Alt+Return on the list opens the details, read off the UI thread.
    with qtbot.waitSignal(window.services.details_loaded, timeout=30000):
        qtbot.keyClick(panel.table, QtCore.Qt.Key.Key_Return, QtCore.Qt.KeyboardModifier.AltModifier)
    dialog = window.findChild(DocumentDetailsDialog)
    assert dialog is not None and dialog.isVisible()
    assert dialog.origins["organization"].text() == "nothing found"  # never from the file name
    assert not dialog.reset_buttons["organization"].isEnabled()
    assert dialog.domain_origin.text() == "No domain pack acts on it."

    # Saving re-embeds the document's chunks with their new context, in the background.
    dialog.fields["organization"].setText("Nordhavn Polar Institute")
    dialog.fields["title"].setText("Ice and sea level")
    assert dialog.edits() == {"organization": "Nordhavn Polar Institute", "title": "Ice and sea level"}
    with qtbot.waitSignal(window.reembed_finished, timeout=60000) as finished:
        dialog.findChild(QtWidgets.QDialogButtonBox).button(
            QtWidgets.QDialogButtonBox.StandardButton.Save
        ).click()
    assert finished.args == [0]
    with window.library.connect() as conn:
        meta = conn.execute("SELECT meta FROM documents WHERE id = %s", (doc_id,)).fetchone()[0]
        contexts = {
            r[0] for r in conn.execute("SELECT context FROM document_chunks WHERE doc_id = %s", (doc_id,))
        }
        assert reembed_needed(conn, window.services.model_name) == 0
    assert meta["organization"] == "Nordhavn Polar Institute" and meta["sources"]["organization"] == "edited"
    assert all("Nordhavn Polar Institute" in c and "Ice and sea level" in c for c in contexts)
    # The list shows the title set by hand; a question naming the organisation finds the document.
    qtbot.waitUntil(lambda: "Ice and sea level" in rows_by_title(window), timeout=30000)
    hits = retrieve(window.library, "What does the Nordhavn report say about bubbles?", k=3).results
    assert hits and hits[0].doc_id == doc_id and hits[0].title == "Ice and sea level"

    # Opened again, the field says it was set by hand, and Reset gives back what was found.
    with qtbot.waitSignal(window.services.details_loaded, timeout=30000):
        panel.request_details()
    qtbot.waitUntil(lambda: len(window.findChildren(DocumentDetailsDialog)) == 1, timeout=5000)
    dialog = window.findChild(DocumentDetailsDialog)
    assert dialog.fields["organization"].text() == "Nordhavn Polar Institute"
    assert dialog.origins["organization"].text() == "set by hand"
    dialog.reset_buttons["organization"].click()
    # A person turns a domain pack on for the document (nothing in it is evidence of one).
    dialog.domain.setCurrentIndex(dialog.domain.findData("finance"))
    assert dialog.edits() == {"organization": "", "domain": "finance"}
    with qtbot.waitSignal(window.reembed_finished, timeout=60000):
        dialog.findChild(QtWidgets.QDialogButtonBox).button(
            QtWidgets.QDialogButtonBox.StandardButton.Save
        ).click()
    with window.library.connect() as conn:
        meta = conn.execute("SELECT meta FROM documents WHERE id = %s", (doc_id,)).fetchone()[0]
    assert meta.get("organization") != "Nordhavn Polar Institute" and "organization" not in meta["edited"]
    assert meta["domain"] == "finance" and meta["sources"]["domain"] == "edited"


def test_chats_saved_by_another_process_show_up_and_the_selection_stays(qtbot, window, clean_db):
    """A chat written by another connection (as `local-rag ask` or the API does) appears in an open window's
    list when the window comes to the front again, and on the list's timer; the chat shown stays selected."""
    from localrag.core.answer import history
    from localrag.gui.qt import QtCore, QtWidgets

    def save_elsewhere(title: str) -> int:
        with clean_db.connect() as conn:
            chat = history.create_chat(conn, title)
            history.add_message(conn, chat.id, "user", title)
            conn.commit()
            return chat.id

    chats, panel = window.chats_list, window.chat_panel
    first = save_elsewhere("Where do owls hunt?")
    with qtbot.waitSignal(chats.refreshed, timeout=10000):
        chats.refresh()
    with qtbot.waitSignal(panel.history_loaded, timeout=10000):
        chats.list.setCurrentItem(chats.item_for(first))  # the user opens it
    assert chats.current_id() == first and panel.chat_id == first

    second = save_elsewhere("How do glaciers melt?")
    QtWidgets.QApplication.sendEvent(window, QtCore.QEvent(QtCore.QEvent.Type.WindowActivate))
    qtbot.waitUntil(lambda: chats.item_for(second) is not None, timeout=5000)
    assert chats.list.item(0).data(QtCore.Qt.ItemDataRole.UserRole) == second  # newest first
    assert chats.current_id() == first and panel.chat_id == first

    chats.watch(200)  # the window re-reads every 10 s; sooner here
    third = save_elsewhere("What do ice cores record?")
    qtbot.waitUntil(lambda: chats.item_for(third) is not None, timeout=5000)
    assert chats.list.count() == 3
    assert chats.current_id() == first and panel.chat_id == first
    assert chats.list.currentItem().text() == "Where do owls hunt?"

    # Nothing new: a re-read leaves the list as it is (no refill).
    with qtbot.assertNotEmitted(chats.refreshed, wait=600):
        pass
