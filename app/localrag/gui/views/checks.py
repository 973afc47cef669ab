"""The Test questions view (View → Test questions…): the questions kept with the page that answers them, run
all together in the background (``core.checks.run.run_checks`` on an ``Op``, with its progress and Cancel),
each with its outcome in the last run — the rank of its page among the passages found, whether the answer
quotes that page — the totals, and the history of runs as a chart and a table (what changed, the models, the
library's size). Import and export read and write the JSONL of ``local-rag eval`` datasets.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localrag.core.checks import store
from localrag.core.checks.questions import Question, read_jsonl, write_jsonl
from localrag.core.checks.results import CheckRun, QuestionResult, what_changed
from localrag.core.errors import KnownError
from localrag.core.library import Library
from localrag.core.progress import Progress
from localrag.gui.qt import QtCore, QtGui, QtWidgets, Signal
from localrag.gui.tasks import Op
from localrag.gui.views.checks_chart import RunsChart
from localrag.gui.views.checks_save import SaveCheckDialog

log = logging.getLogger("localrag.gui.checks")

COLUMNS = ("Question", "Document", "Page", "Rank", "Quoted from the page", "The answer quotes")
JSONL_FILTER = "Test questions (*.jsonl);;All files (*)"


@dataclass
class Listing:
    """What the view shows, read in the background."""

    questions: list[Question] = field(default_factory=list)
    last: dict[int, QuestionResult] = field(default_factory=dict)
    runs: list[CheckRun] = field(default_factory=list)


def read_listing(library: Library) -> Listing:
    with library.connect() as conn:
        return Listing(store.questions(conn), store.last_results(conn), store.runs(conn))


class TestQuestionsWindow(QtWidgets.QWidget):
    """The test questions, their last outcomes and the history of runs; a window of its own.

    Public:
        reload(): read the questions and runs again (in the background).
        run(): run every question (Ctrl+R); cancel(): stop the run between two questions (Esc).
        import_file(path), export_file(path): JSONL in and out (in the background).
        edit_selected(), remove_selected(): the selected questions.
        questions, last, runs: what is shown; running: a run is under way.

    Signals:
        loaded(int): the questions were read (their number).
        run_finished(object): a run ended: its ``CheckRun`` (``cancelled`` when stopped).
        failed(str): an operation failed; the message is also shown in the window.
    """

    __test__ = False  # not a pytest class, whatever its name
    loaded = Signal(int)
    run_finished = Signal(object)
    failed = Signal(str)

    def __init__(self, library: Library, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowFlag(QtCore.Qt.WindowType.Window, True)
        self.setObjectName("test-questions")
        self.setAccessibleName("Test questions")
        self.setWindowTitle("Test questions — Local RAG")
        self.resize(1000, 680)
        self.library = library
        self.questions: list[Question] = []
        self.last: dict[int, QuestionResult] = {}
        self.runs: list[CheckRun] = []
        self.running = False
        self._op: Op[Any] | None = None
        self._build()
        self.reload()

    # -- layout --------------------------------------------------------------------------------------------

    def _button(self, text: str, slot: Any, shortcut: str = "", tip: str = "") -> QtWidgets.QPushButton:
        button = QtWidgets.QPushButton(text, self)
        button.clicked.connect(lambda _checked=False: slot())
        if shortcut:
            button.setShortcut(QtGui.QKeySequence(shortcut))
        if tip:
            button.setToolTip(f"{tip} ({shortcut})" if shortcut else tip)
        return button

    def _build(self) -> None:
        self.run_button = self._button("&Run", self.run, "Ctrl+R", "Search and answer every question now")
        self.cancel_button = self._button("Cancel", self.cancel, "Esc", "Stop the run after this question")
        self.cancel_button.hide()
        self.edit_button = self._button("&Edit…", self.edit_selected, "", "Change the question or its page")
        self.remove_button = self._button("Remove", self.remove_selected, "", "Delete the selected questions")
        self.import_button = self._button("&Import…", self.import_dialog, "", "Add questions from JSONL")
        self.export_button = self._button("E&xport…", self.export_dialog, "", "Write the questions as JSONL")
        top = QtWidgets.QHBoxLayout()
        for b in (self.run_button, self.cancel_button):
            top.addWidget(b)
        self.progress = QtWidgets.QProgressBar(self)
        self.progress.setAccessibleName("Run progress")
        self.progress.setFormat("%v of %m questions")
        self.progress.hide()
        top.addWidget(self.progress, 1)
        self.totals = QtWidgets.QLabel(self)
        self.totals.setAccessibleName("Totals of the last run")
        self.totals.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        top.addWidget(self.totals, 1)
        for b in (self.edit_button, self.remove_button, self.import_button, self.export_button):
            top.addWidget(b)

        self.table = QtWidgets.QTreeWidget(self)
        self.table.setObjectName("test-questions-table")
        self.table.setAccessibleName("Test questions and their last outcome")
        self.table.setRootIsDecorated(False)
        self.table.setAlternatingRowColors(True)
        self.table.setColumnCount(len(COLUMNS))
        self.table.setHeaderLabels(list(COLUMNS))
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.itemDoubleClicked.connect(lambda *_: self.edit_selected())
        self.table.itemSelectionChanged.connect(self._update_buttons)
        header = self.table.header()
        for column, width in enumerate((380, 150, 50, 70, 140)):
            header.resizeSection(column, width)
        self.empty = QtWidgets.QLabel(
            "No test questions yet. Under an answer, click “Save as a test question…”, "
            "or import a JSONL file.",
            self,
        )
        self.empty.setProperty("role", "muted")
        self.empty.setWordWrap(True)
        self.message = QtWidgets.QLabel(self)
        self.message.setWordWrap(True)
        self.message.setAccessibleName("Message")
        self.message.hide()

        self.chart = RunsChart(self)
        self.runs_table = QtWidgets.QTreeWidget(self)
        self.runs_table.setObjectName("test-runs-table")
        self.runs_table.setAccessibleName("History of runs")
        self.runs_table.setRootIsDecorated(False)
        self.runs_table.setHeaderLabels(
            ["Run", "Date", "Found at 1 / 5 / 10", "Quoted", "What changed", "Models", "Library"]
        )
        for column, width in enumerate((50, 130, 130, 70, 300, 220)):
            self.runs_table.header().resizeSection(column, width)
        history = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal, self)
        history.addWidget(self.chart)
        history.addWidget(self.runs_table)
        history.setSizes([460, 540])
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical, self)
        questions = QtWidgets.QWidget(self)
        qlayout = QtWidgets.QVBoxLayout(questions)
        qlayout.setContentsMargins(0, 0, 0, 0)
        qlayout.addWidget(self.empty)
        qlayout.addWidget(self.table, 1)
        split.addWidget(questions)
        split.addWidget(history)
        split.setSizes([420, 220])
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.message)
        layout.addWidget(split, 1)
        self._update_buttons()

    # -- showing ---------------------------------------------------------------------------------------------

    def reload(self) -> None:
        Op(lambda: read_listing(self.library), owner=self).success(self._show).failure(
            self._fail
        ).run_in_background()

    def _show(self, listing: Listing) -> None:
        self.questions, self.last, self.runs = listing.questions, listing.last, listing.runs
        selected = {q.id for q in self.selected()}
        self.table.clear()
        for q in self.questions:
            r = self.last.get(q.id or 0)
            item = QtWidgets.QTreeWidgetItem(self._row(q, r))
            item.setData(0, QtCore.Qt.ItemDataRole.UserRole, q.id)
            item.setToolTip(0, q.question + (f"\n\nExpected: {q.answer}" if q.answer else ""))
            if r is not None:
                item.setToolTip(5, "\n".join([r.quoted, "", "Found first: " + ", ".join(r.found[:5])]))
            self.table.addTopLevelItem(item)
            item.setSelected(q.id in selected)
        self.empty.setVisible(not self.questions)
        self.chart.set_runs(self.runs)
        self._show_runs()
        self._update_buttons()
        self.loaded.emit(len(self.questions))

    @staticmethod
    def _row(q: Question, r: QuestionResult | None) -> list[str]:
        pages = ", ".join(map(str, q.pages))
        if r is None:
            return [q.question, q.file, pages, "—", "not run", ""]
        if r.error:
            return [q.question, q.file, pages, "—", "error", r.error]
        rank = str(r.rank) if r.rank is not None else "not found"
        return [q.question, q.file, pages, rank, "yes" if r.quoted_on_page else "no", r.quoted]

    def _show_runs(self) -> None:
        self.runs_table.clear()
        before: CheckRun | None = None
        for run in self.runs:
            changed = what_changed(before, run)
            n = run.questions
            item = QtWidgets.QTreeWidgetItem(
                [
                    f"#{run.id}",
                    run.started_at.astimezone().strftime("%Y-%m-%d %H:%M"),
                    f"{run.hits[1]} / {run.hits[5]} / {run.hits[10]} of {n}",
                    f"{run.quoted} of {n}",
                    "; ".join(changed) or ("first run" if before is None else "—"),
                    f"{run.embedding_model} · {run.llm_model}",
                    run.library(),
                ]
            )
            item.setToolTip(4, "\n".join(changed))
            self.runs_table.insertTopLevelItem(0, item)  # the latest first
            before = run
        if self.runs:
            last = self.runs[-1]
            self.totals.setText(f"Last run: {last.totals()}")
        else:
            self.totals.setText("")

    def selected(self) -> list[Question]:
        ids = {item.data(0, QtCore.Qt.ItemDataRole.UserRole) for item in self.table.selectedItems()}
        return [q for q in self.questions if q.id in ids]

    def _update_buttons(self) -> None:
        n = len(self.selected())
        idle = not self.running
        self.run_button.setEnabled(idle and bool(self.questions))
        self.edit_button.setEnabled(idle and n == 1)
        self.remove_button.setEnabled(idle and n > 0)
        self.import_button.setEnabled(idle)
        self.export_button.setEnabled(bool(self.questions))

    def _fail(self, message: str, _known: bool = True) -> None:
        self._say(message, error=True)
        self.failed.emit(message)

    def _say(self, message: str, *, error: bool = False) -> None:
        self.message.setProperty("role", "error" if error else "muted")
        self.message.style().unpolish(self.message)
        self.message.style().polish(self.message)
        self.message.setText(message)
        self.message.setVisible(bool(message))

    # -- running ---------------------------------------------------------------------------------------------

    def run(self) -> None:
        """Run every question in the background; the progress bar counts them, Cancel stops after the one in
        hand."""
        if self.running or not self.questions:
            return
        from localrag.core.checks.run import run_checks

        self.running = True
        self._say("")
        self.progress.setRange(0, len(self.questions))
        self.progress.setValue(0)
        self.progress.show()
        self.totals.hide()
        self.run_button.hide()
        self.cancel_button.show()
        self._update_buttons()
        op: Op[Any] = Op(lambda: run_checks(self.library, cancel=op.cancel, progress=op.report), owner=self)
        self._op = op
        op.progress(self._on_progress).success(self._on_run_done).failure(self._on_run_failed)
        op.run_in_background()

    def cancel(self) -> None:
        if self._op is not None:
            self._op.cancel.cancel()
            self.cancel_button.setEnabled(False)
            self._say("Stopping after the question in hand…")

    def _on_progress(self, p: Progress) -> None:
        self.progress.setRange(0, max(1, p.total))
        self.progress.setValue(p.done)

    def _end_run(self) -> None:
        self.running = False
        self._op = None
        self.progress.hide()
        self.totals.show()
        self.cancel_button.hide()
        self.cancel_button.setEnabled(True)
        self.run_button.show()
        self._update_buttons()

    def _on_run_done(self, outcome: tuple[CheckRun, list[QuestionResult]]) -> None:
        run, _results = outcome
        self._end_run()
        if run.cancelled:
            n = len(self.questions)
            self._say(f"Stopped after {run.questions} of {n} questions; the run is not kept.")
        else:
            self._say(f"Ran {run.questions} questions in {run.seconds:.1f} s.")
        self.reload()
        self.run_finished.emit(run)

    def _on_run_failed(self, message: str, known: bool) -> None:
        self._end_run()
        self._fail(f"The run failed: {message}", known)

    # -- editing ---------------------------------------------------------------------------------------------

    def edit_selected(self) -> SaveCheckDialog | None:
        chosen = self.selected()
        if len(chosen) != 1 or self.running:
            return None
        dialog = SaveCheckDialog(self.library, chosen[0], None, self)
        dialog.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.saved.connect(lambda _id: self.reload())
        dialog.open()
        return dialog

    def remove_selected(self) -> None:
        ids = [q.id for q in self.selected() if q.id is not None]
        if not ids or self.running:
            return

        def work() -> int:
            with self.library.connect() as conn:
                return store.delete(conn, ids)

        Op(work, owner=self).success(lambda _n: self.reload()).failure(self._fail).run_in_background()

    def import_dialog(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Import test questions", "", JSONL_FILTER)
        if path:
            self.import_file(Path(path))

    def export_dialog(self) -> None:
        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self, "Export test questions", "test-questions.jsonl", JSONL_FILTER
        )
        if path:
            self.export_file(Path(path))

    def import_file(self, path: Path) -> None:
        """Add the questions of a JSONL file (a bad line adds nothing and is named)."""

        def work() -> tuple[int, int, int]:
            try:
                found = read_jsonl(path)
            except (OSError, ValueError) as exc:  # the person's file: its problem, named
                raise KnownError(f"{path.name} was not imported: {exc}") from exc
            with self.library.connect() as conn:
                added, updated = store.save_all(conn, [q for q in found if q.answerable])
            return added, updated, sum(1 for q in found if not q.answerable)

        def done(counts: tuple[int, int, int]) -> None:
            added, updated, skipped = counts
            note = f"; {skipped} lines name no page and were skipped" if skipped else ""
            self._say(f"Imported {path.name}: {added} added, {updated} updated{note}.")
            self.reload()

        Op(work, owner=self).success(done).failure(self._fail).run_in_background()

    def export_file(self, path: Path) -> None:
        questions = list(self.questions)

        def done(n: int) -> None:
            self._say(f"{n} test questions written to {path}.")

        def work() -> int:
            try:
                return write_jsonl(questions, path)
            except OSError as exc:
                raise KnownError(f"{path} was not written: {exc.strerror or exc}") from exc

        Op(work, owner=self).success(done).failure(self._fail).run_in_background()

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:  # noqa: N802 (Qt override)
        self.cancel()  # a run in hand stops after its question; nothing half-done is kept
        super().closeEvent(event)
