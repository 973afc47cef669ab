"""Save as a test question: an answer's question kept with the document and page that answer it.

The dialog starts from what the answer quoted (its first quoted sentence's document and page), else its first
cited source. When the answer was wrong, the person picks another of its sources, or any document of the
library and its page. The same dialog edits a question of the Test questions view.
"""

from __future__ import annotations

from dataclasses import dataclass

from localrag.core.answer.citations import page_phrase
from localrag.core.checks.questions import Question, file_name
from localrag.core.library import Library
from localrag.gui.qt import QtCore, QtWidgets, Signal
from localrag.gui.tasks import Op
from localrag.gui.views.transcript import Turn


def from_turn(turn: Turn) -> tuple[Question | None, list[Pick]]:
    """The test question an answer suggests (``None`` when it has no source) and its sources to pick from."""
    picks: list[Pick] = []
    ev = turn.evidence
    quoted = list(ev.spans) if ev is not None and ev.answered else []
    for span in quoted:
        where = page_phrase(span.page_number, span.page_label)
        picks.append(
            Pick(f"Quoted: {span.title} {where}", file_name(span.path), span.page_number, span.shown)
        )
    for i, ref in enumerate(turn.sources, 1):
        heading = ref.heading_path.rsplit(" > ", 1)[-1] if ref.heading_path else ""
        label = f"[{i}] {ref.title} {ref.page_phrase()}" + (f" · {heading}" if heading else "")
        picks.append(Pick(label, file_name(ref.path), ref.page_number))
    if not picks:
        return None, []
    cited = [p for p, ref in zip(picks[len(quoted) :], turn.sources, strict=True) if ref.cited]
    first = picks[0] if quoted else (cited or picks)[0]
    on_page = [s for s in quoted if (file_name(s.path), s.page_number) == (first.file, first.page)]
    answer = " ".join(s.shown for s in on_page)
    evidence = " ".join(s.text for s in on_page)
    return Question(turn.question, first.file, [first.page], answer=answer, evidence=evidence), picks


@dataclass(frozen=True)
class Pick:
    """One source of the answer to pick: its label, file name, page, and what the answer quoted from it."""

    label: str
    file: str
    page: int
    quoted: str = ""


class SaveCheckDialog(QtWidgets.QDialog):
    """Edits a test question before it is saved (in the background); stays open with the reason when saving
    fails, so nothing typed is lost.

    Signals:
        saved(int): the question's id, once it is in the library.
    """

    saved = Signal(int)

    def __init__(
        self,
        library: Library,
        question: Question,
        picks: list[Pick] | None = None,
        parent: QtWidgets.QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.library = library
        self.original = question
        self._picked_answer = question.answer
        self.setObjectName("save-test-question")
        self.setWindowTitle("Save as a test question" if question.id is None else "Edit the test question")
        self.setMinimumWidth(560)
        form = QtWidgets.QFormLayout()
        self.question_edit = QtWidgets.QLineEdit(question.question, self)
        self.question_edit.setAccessibleName("Question")
        form.addRow("&Question:", self.question_edit)
        self.picks = QtWidgets.QComboBox(self)
        self.picks.setAccessibleName("The answer's sources")
        self.picks.addItem("—", None)
        for pick in picks or []:
            self.picks.addItem(pick.label, pick)
            if (pick.file, [pick.page]) == (question.file, question.pages) and self.picks.currentIndex() == 0:
                self.picks.setCurrentIndex(self.picks.count() - 1)
        self.picks.activated.connect(self._pick)
        self.picks.setVisible(bool(picks))
        if picks:
            form.addRow("&From the answer:", self.picks)
        self.document = QtWidgets.QComboBox(self)
        self.document.setEditable(True)  # a file name not (yet) in this library may be typed
        self.document.setAccessibleName("Document that answers it")
        self.document.addItem(question.file, question.file)
        form.addRow("&Document:", self.document)
        self.pages_edit = QtWidgets.QLineEdit(", ".join(map(str, question.pages)), self)
        self.pages_edit.setAccessibleName("Pages that answer it")
        self.pages_edit.setPlaceholderText("e.g. 12, or 12, 13")
        self.pages_edit.setToolTip(
            "The page's place in the file (for a PDF that prints “p. 10” on its 14th page: 14)"
        )
        form.addRow("&Page in the file:", self.pages_edit)
        self.answer_edit = QtWidgets.QPlainTextEdit(question.answer, self)
        self.answer_edit.setAccessibleName("Expected answer")
        self.answer_edit.setTabChangesFocus(True)
        self.answer_edit.setFixedHeight(70)
        form.addRow("&Answer:", self.answer_edit)
        hint = QtWidgets.QLabel(
            "If the answer was wrong, pick the source or the document and page that do answer it. "
            "Test questions → Run shows whether the page is still found after a change.",
            self,
        )
        hint.setWordWrap(True)
        hint.setProperty("role", "muted")
        self.error_label = QtWidgets.QLabel(self)
        self.error_label.setWordWrap(True)
        self.error_label.setProperty("role", "error")
        self.error_label.hide()
        buttons = QtWidgets.QDialogButtonBox(
            QtWidgets.QDialogButtonBox.StandardButton.Save | QtWidgets.QDialogButtonBox.StandardButton.Cancel,
            self,
        )
        self.save_button = buttons.button(QtWidgets.QDialogButtonBox.StandardButton.Save)
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(hint)
        layout.addWidget(self.error_label)
        layout.addWidget(buttons)
        Op(self._documents, owner=self).success(self._set_documents).failure(
            lambda *_: None
        ).run_in_background()

    def _documents(self) -> list[tuple[str, str]]:
        from localrag.core.ingest.documents import list_documents

        with self.library.connect() as conn:
            infos = list_documents(conn)
        named = {file_name(d.path): d.title for d in infos if d.status == "ready"}
        return sorted(named.items(), key=lambda item: item[0].lower())

    def _set_documents(self, docs: list[tuple[str, str]]) -> None:
        current = self.document.currentText()
        self.document.clear()
        for name, title in docs:
            self.document.addItem(f"{name} — {title}" if title and title != name else name, name)
        found = self.document.findData(current)
        if found >= 0:
            self.document.setCurrentIndex(found)
        else:
            self.document.setEditText(current)

    def _pick(self, index: int) -> None:
        pick = self.picks.itemData(index)
        if not isinstance(pick, Pick):
            return
        file, page = pick.file, pick.page
        if self.answer_edit.toPlainText().strip() in ("", self.original.answer, self._picked_answer):
            self._picked_answer = pick.quoted  # what the answer quoted from that page, unless one was typed
            self.answer_edit.setPlainText(pick.quoted)
        found = self.document.findData(file)
        if found >= 0:
            self.document.setCurrentIndex(found)
        else:
            self.document.setEditText(file)
        self.pages_edit.setText(str(page))

    def edited(self) -> Question:
        """The question as edited. Raises ``ValueError`` naming what is wrong."""
        index = self.document.currentIndex()
        text = self.document.currentText()
        data = self.document.itemData(index) if index >= 0 and self.document.itemText(index) == text else None
        file = str(data) if data else text.split(" — ", 1)[0]
        try:
            pages = [int(p) for p in self.pages_edit.text().replace(",", " ").split()]
        except ValueError:
            raise ValueError("Pages are numbers, such as 12 or 12, 13.") from None
        if not pages:
            raise ValueError("Give the page that answers the question.")
        q = self.original
        answer = self.answer_edit.toPlainText().strip()
        return Question(
            self.question_edit.text(),
            file,
            pages,
            answer=answer,
            evidence=q.evidence if answer == q.answer else "",
            kind=q.kind,
            label=q.label,
            extra=dict(q.extra),
            id=q.id,
        )

    def save(self) -> None:
        try:
            question = self.edited()
        except ValueError as exc:
            self._show_error(str(exc))
            return
        self.save_button.setEnabled(False)

        def work() -> int:
            from localrag.core.checks import store

            with self.library.connect() as conn:
                return store.save(conn, question)[0]

        Op(work, owner=self).success(self._saved).failure(
            lambda message, _known: self._show_error(f"Not saved: {message}")
        ).run_in_background()

    def _saved(self, question_id: int) -> None:
        self.saved.emit(question_id)
        self.accept()

    def _show_error(self, message: str) -> None:
        self.save_button.setEnabled(True)
        self.error_label.setText(message)
        self.error_label.show()


def save_from_turn(library: Library, turn: Turn, parent: QtWidgets.QWidget) -> SaveCheckDialog | None:
    """Open the dialog for an answer (``None`` when it has no source to point at)."""
    try:
        question, picks = from_turn(turn)
    except ValueError:  # a turn with no question to keep
        return None
    if question is None:
        return None
    dialog = SaveCheckDialog(library, question, picks, parent)
    dialog.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()
    return dialog
