"""The chat panel: ask, see the quoted evidence at once, watch the answer come in, check its citations.

The transcript is a ``QTextBrowser`` showing HTML built by ``views.transcript`` from each ``Turn``: the
question, the answer "evidence first" (the sentences quoted from the documents, each linked to exactly that
sentence, and the model's sentences checked against them), a notice when the answer is not grounded, and the
sources list. The quoted sentences show as soon as retrieval has found them, before the model's first token.
When the model leads, its tokens are inserted where the answer goes as they arrive (no re-render per token);
when it is done the turn is rendered again from its checked sentences. Clicking a link opens the
``SourceViewer``.
"""

from __future__ import annotations

import logging
from typing import Any

from localrag.core.answer.events import Checked, Done, EvidenceReady, Retrieved
from localrag.core.library import Library
from localrag.gui.chat_worker import FAILED, LOADING, AskRequest, ChatWorker, PromptView
from localrag.gui.qt import QtCore, QtGui, QtWidgets, Signal
from localrag.gui.tasks import STOP_WAIT_MS
from localrag.gui.views import turns
from localrag.gui.views.chat_links import ChatLinks
from localrag.gui.views.chat_loading import ChatLoading
from localrag.gui.views.chat_render import TranscriptView
from localrag.gui.views.chat_scope import ChatScope, save_scope
from localrag.gui.views.elided_label import ElidedLabel
from localrag.gui.views.sources import SourceViewer
from localrag.gui.views.transcript import Turn, link_citations, turns_from_messages

__all__ = ["WAITING", "ChatPanel", "Turn", "link_citations", "turns_from_messages"]

WAITING = turns.WAITING

log = logging.getLogger("localrag.gui.chat")

# A pause in typing this long (ms) prepares the question typed so far (``ChatWorker.prepare``).
DRAFT_PAUSE_MS = 700
DRAFT_MIN_WORDS = 3


class ChatPanel(ChatLoading, ChatLinks, TranscriptView, QtWidgets.QWidget):
    """Questions and streamed, cited answers; hosts the generation worker.

    Args:
        library: the facade.
        worker: a ``ChatWorker`` to use instead of the panel's own (the panel then does not own it).

    Start-up and shutdown (the main window calls these):
        warm_up(): load the language model in the background, once the store is open; a question asked
            before that waits and shows "Waiting for the model…".
        shutdown(): stop generating and wait for the worker thread (before ``Library.close``).

    Public:
        set_scope(doc_ids, doc_types): limit retrieval to these documents / types (``None``: all).
        set_collection(collection_id, name, note, save): scope the chat to a collection (``None``: all
            documents); a saved chat keeps it (``chat_scope.save_scope``) unless ``save`` is False; ``note``
            says why it changed by itself.
        ask(question) -> bool: send a question as if typed (False when empty or while answering).
        ask_model_alone(turn_index) -> bool: ask turn ``turn_index``'s question of the model without the
            documents (the not-found answer's button); its answer is headed as the model's alone.
        stop(): stop the answer in hand (Esc).
        new_chat(): an empty chat (created in the store by its first question); Ctrl+N.
        open_chat(chat_id): show a kept chat with its messages and sources (loaded in the background).
        forget_chat(chat_id): the chat was deleted elsewhere; clear the view if it was shown.
        open_source(turn_index, number): open the viewer on source ``number`` of a turn.
        open_evidence(turn_index, index): open the viewer on quoted sentence ``index`` of a turn, highlighted.
        open_checked(turn_index, index): open the viewer on the source sentence that generated sentence
            ``index`` of a turn matched when it was checked.
        chat_id: the chat shown (None for a new one); turns: the ``Turn`` list; generating: an answer runs.
        new_chat_action (Ctrl+N) and stop_action (Esc): QActions the window may also put in its menus.
        question, transcript, use_documents, strict, send_button, stop_button: the widgets.

    Signals:
        generation_started(): a question was sent.
        generation_finished(): its answer ended (done, failed or stopped).
        retrieval_done(Retrieved): the engine's event of the last question (for the dev pane).
        evidence_shown(EvidenceReady): the engine's event, once the quoted sentences are shown.
        sentence_checked(Checked): the engine's event (a generated sentence and its verdict).
        prompt_ready(PromptView): the exact prompt of the last question, when the engine reports it.
        answer_done(Done): the engine's event (timings for the dev pane).
        token_received(str): one piece of what the model writes (streamed into the answer unless it only
            rewords the quoted sources).
        sources_changed(object): the list of ``SourceRef`` of the last answer.
        chat_changed(int): a chat was created or changed by a question (the chats list refreshes).
        chat_opened(object): the chat shown changed (its id, or None for a new chat).
        model_state_changed(str): ``"loading" | "ready" | "failed"``, with ``model_error`` when failed.
        source_opened(object): a ``SourceViewer`` was opened.
        history_loaded(int): a kept chat's messages are shown.
        collection_loaded(object): a kept chat was opened: the collection it is scoped to (id or None).
        test_question_requested(int): "Save as a test question…" was clicked under turn ``index``'s answer.
    """

    generation_started = Signal()
    generation_finished = Signal()
    retrieval_done = Signal(Retrieved)
    evidence_shown = Signal(EvidenceReady)
    sentence_checked = Signal(Checked)
    prompt_ready = Signal(PromptView)
    answer_done = Signal(Done)
    token_received = Signal(str)
    sources_changed = Signal(object)
    chat_changed = Signal(int)
    chat_opened = Signal(object)
    model_state_changed = Signal(str)
    source_opened = Signal(object)
    history_loaded = Signal(int)
    collection_loaded = Signal(object)
    test_question_requested = Signal(int)

    def __init__(
        self, library: Library, parent: QtWidgets.QWidget | None = None, *, worker: ChatWorker | None = None
    ) -> None:
        super().__init__(parent)
        self.library = library
        self.setObjectName("chat-panel")
        self.setAccessibleName("Chat")
        self.chat_id: int | None = None
        self.turns: list[Turn] = []
        self.doc_ids: list[int] | None = None
        self.doc_types: list[str] | None = None
        self.scope = ChatScope()
        self.generating = False
        self.warmed = False
        self._held: AskRequest | None = None  # asked before warm_up
        self._request: AskRequest | None = None
        self._after_request: list[Any] = []
        self._load_seq = 0
        self.viewers: list[SourceViewer] = []
        self._stream_cursor: QtGui.QTextCursor | None = None  # where a pending answer's tokens go

        self.owns_worker = worker is None
        self.worker = worker or ChatWorker(library, parent=self)
        w = self.worker
        w.waiting.connect(self._on_waiting)
        w.searching.connect(self._on_searching)
        w.retrieved.connect(self._on_retrieved)
        w.evidence.connect(self._on_evidence)
        w.prompt.connect(self._on_prompt)
        w.token.connect(self._on_token)
        w.checked.connect(self._on_checked)
        w.done.connect(self._on_done)
        w.failed.connect(self._on_failed)
        w.request_finished.connect(self._on_request_finished)
        w.model_loading.connect(lambda: self.model_state_changed.emit(LOADING))
        w.model_ready.connect(self._on_model_ready)
        w.model_failed.connect(self._on_model_failed)

        self._build()
        self._render()

    # -- layout --------------------------------------------------------------------------------------------

    def _build(self) -> None:
        self.title_label = ElidedLabel("New chat", self)
        self.title_label.setProperty("role", "heading")
        self.title_label.setAccessibleName("Chat title")
        self.scope_label = QtWidgets.QLabel("", self)
        self.scope_label.setProperty("role", "muted")
        head = QtWidgets.QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.addWidget(self.title_label, 1)
        head.addWidget(self.scope_label)

        self.transcript = QtWidgets.QTextBrowser(self)
        self.transcript.setAccessibleName("Conversation")
        self.transcript.setOpenLinks(False)
        self.transcript.setOpenExternalLinks(False)
        self.transcript.anchorClicked.connect(self._on_anchor)
        self.transcript.document().setDocumentMargin(10)

        self.question = QtWidgets.QPlainTextEdit(self)
        self.question.setPlaceholderText("Ask about your documents…  (Ctrl+Enter to send)")
        self.question.setAccessibleName("Question")
        self.question.setTabChangesFocus(True)
        self.question.setFixedHeight(78)
        self.question.installEventFilter(self)
        # While the question is typed, a pause lets the model read its sources already (see
        # ``_prepare_draft``).
        self._draft_timer = QtCore.QTimer(self)
        self._draft_timer.setSingleShot(True)
        self._draft_timer.setInterval(DRAFT_PAUSE_MS)
        self._draft_timer.timeout.connect(self._prepare_draft)
        self.question.textChanged.connect(self._on_typing)

        self.use_documents = QtWidgets.QCheckBox("Use my documents", self)
        self.use_documents.setChecked(True)
        self.use_documents.setAccessibleName("Use my documents")
        self.use_documents.setToolTip("Answer from your documents, with citations. Off: plain local chat.")
        self.strict = QtWidgets.QCheckBox("Strict", self)
        self.strict.setAccessibleName("Strict: answer only from my documents")
        self.strict.setToolTip("Answer only from your documents, and say so when nothing relevant is found.")
        self.use_documents.toggled.connect(self.strict.setEnabled)
        self.use_documents.toggled.connect(lambda _on: self._update_scope_label())
        self.status_label = QtWidgets.QLabel("", self)
        self.status_label.setProperty("role", "muted")
        self.status_label.setAccessibleName("Chat status")
        self.stop_button = QtWidgets.QPushButton("Stop", self)
        self.stop_button.setAccessibleName("Stop generating")
        self.stop_button.setToolTip("Stop generating (Esc)")
        self.stop_button.clicked.connect(self.stop)
        self.stop_button.setEnabled(False)
        self.send_button = QtWidgets.QPushButton("Send", self)
        self.send_button.setAccessibleName("Send question")
        self.send_button.setToolTip("Send (Ctrl+Enter)")
        self.send_button.setDefault(True)
        self.send_button.clicked.connect(self.send)
        row = QtWidgets.QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.use_documents)
        row.addWidget(self.strict)
        row.addSpacing(8)
        row.addWidget(self.status_label, 1)
        row.addWidget(self.stop_button)
        row.addWidget(self.send_button)

        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(head)
        layout.addWidget(self.transcript, 1)
        layout.addWidget(self.question)
        layout.addLayout(row)

        self.new_chat_action = QtGui.QAction("&New chat", self)
        self.new_chat_action.setShortcut(QtGui.QKeySequence("Ctrl+N"))
        self.new_chat_action.setShortcutContext(QtCore.Qt.ShortcutContext.WindowShortcut)
        self.new_chat_action.triggered.connect(self.new_chat)
        self.stop_action = QtGui.QAction("&Stop generating", self)
        self.stop_action.setShortcut(QtGui.QKeySequence(QtCore.Qt.Key.Key_Escape))
        self.stop_action.setShortcutContext(QtCore.Qt.ShortcutContext.WindowShortcut)
        self.stop_action.triggered.connect(self.stop)
        self.stop_action.setEnabled(False)
        self.addAction(self.new_chat_action)
        self.addAction(self.stop_action)
        self._update_scope_label()

    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802 (Qt override)
        if obj is self.question and event.type() == QtCore.QEvent.Type.KeyPress:
            key = event.key()  # type: ignore[attr-defined]
            mods = event.modifiers()  # type: ignore[attr-defined]
            if (
                key in (QtCore.Qt.Key.Key_Return, QtCore.Qt.Key.Key_Enter)
                and mods & QtCore.Qt.KeyboardModifier.ControlModifier
            ):
                self.send()
                return True
        return super().eventFilter(obj, event)

    def changeEvent(self, event: QtCore.QEvent) -> None:  # noqa: N802 (Qt override)
        super().changeEvent(event)
        if event.type() == QtCore.QEvent.Type.PaletteChange and hasattr(self, "transcript"):
            self._render()  # the transcript's colours follow the light/dark scheme

    # -- start-up and shutdown -----------------------------------------------------------------------------

    def warm_up(self) -> None:
        """Load the language model in the background; a question held until now is sent."""
        self.warmed = True
        self.worker.warm_up()
        held, self._held = self._held, None
        if held is not None:
            self._submit(held)

    def shutdown(self, timeout_ms: int = STOP_WAIT_MS) -> bool:
        """Stop generating and wait for the worker thread; True if it ended in time."""
        for viewer in list(self.viewers):
            viewer.close()
        if self.owns_worker:
            return self.worker.shutdown(timeout_ms)
        self.worker.cancel()
        return True

    @property
    def model_error(self) -> str:
        return self.worker.model_error

    def _on_model_ready(self) -> None:
        self.model_state_changed.emit("ready")

    def _on_model_failed(self, message: str) -> None:
        self.model_state_changed.emit(FAILED)
        if not self.generating:
            self.status_label.setText("No language model: answers show sources only.")
            self.status_label.setToolTip(message)

    # -- scope ---------------------------------------------------------------------------------------------

    def set_scope(self, doc_ids: list[int] | None, doc_types: list[str] | None) -> None:
        """Limit retrieval to these documents and/or types; ``None`` or empty means all documents."""
        self.doc_ids = [int(d) for d in doc_ids] if doc_ids else None
        self.doc_types = [str(t) for t in doc_types] if doc_types else None
        self._update_scope_label()

    def set_collection(
        self, collection_id: int | None, name: str = "", note: str = "", *, save: bool = True
    ) -> None:
        if self.scope.set(collection_id, name, note) and save and self.chat_id is not None:
            save_scope(self, self.library, self.chat_id, collection_id)
        self._update_scope_label()

    def _update_scope_label(self) -> None:
        if not self.use_documents.isChecked():
            self.scope_label.setText("Scope: no documents")
            self.scope_label.setToolTip("“Use my documents” is off: questions go to the model alone")
            return
        bits = [self.scope.label] if self.scope.label else []
        if self.doc_ids:
            n = len(self.doc_ids)
            bits.append(f"{n} selected document{'s' if n != 1 else ''}")
        if self.doc_types:
            bits.append(", ".join(t.upper() if t == "pdf" else t for t in self.doc_types))
        self.scope_label.setText("Scope: " + " · ".join(bits) if bits else "Scope: all documents")
        self.scope_label.setToolTip(
            self.scope.note or "Questions search these documents (pick a collection, or select documents)"
        )

    # -- asking --------------------------------------------------------------------------------------------

    def send(self) -> bool:
        """Send what is typed in the question box."""
        if self.ask(self.question.toPlainText()):
            self.question.clear()
            return True
        return False

    def ask(self, question: str, *, grounded: bool | None = None) -> bool:
        """Ask ``question`` in the chat shown; False when it is empty or an answer is still running.
        ``grounded`` False asks the model alone whatever "Use my documents" says."""
        question = question.strip()
        if not question or self.generating:
            return False
        self._draft_timer.stop()
        request = self._request_for(question, grounded)
        turn = turns.asked(question, grounded=request.grounded, strict=request.strict)
        self.turns.append(turn)
        self._set_generating(True)
        self._request = request
        if not self.warmed:
            self._held = request
            turns.waiting(turn)
            self._render(scroll_to_end=True)
            self.generation_started.emit()
            return True
        self._render(scroll_to_end=True)
        self.generation_started.emit()
        self._submit(request)
        return True

    def ask_model_alone(self, turn_index: int) -> bool:
        """Ask the question of turn ``turn_index`` again, of the model without the documents."""
        if not 0 <= turn_index < len(self.turns):
            return False
        return self.ask(self.turns[turn_index].question, grounded=False)

    def _request_for(self, question: str, grounded: bool | None = None) -> AskRequest:
        grounded = self.use_documents.isChecked() if grounded is None else grounded
        return AskRequest(
            question=question,
            chat_id=self.chat_id,
            grounded=grounded,
            strict=grounded and self.strict.isChecked(),
            doc_ids=self.doc_ids if grounded else None,
            doc_types=self.doc_types if grounded else None,
            collection_id=self.scope.collection_id if grounded else None,
        )

    def _on_typing(self) -> None:
        self.worker.cancel_draft()  # the text changed: what was being prepared is stale
        if not self.generating:
            self._draft_timer.start()

    def _prepare_draft(self) -> None:
        """The typing paused: have the model read the prompt of the question as typed so far, so that the
        answer starts at once if it is sent as it is (retrieval runs again then; whatever it finds the same is
        reused)."""
        text = self.question.toPlainText().strip()
        if not self.library.settings.prepare_while_typing:
            return
        if len(text.split()) >= DRAFT_MIN_WORDS and not self.generating and self.warmed:
            self.worker.prepare(self._request_for(text))

    def _submit(self, request: AskRequest) -> None:
        if not self.worker.ask(request):  # cannot happen while the panel tracks ``generating``
            self._finish_turn(error="Another answer is still running.")

    def stop(self) -> None:
        """Stop the answer in hand (Esc); what was generated so far stays."""
        if not self.generating:
            return
        turn = self._pending_turn()
        if self._held is not None:  # never reached the worker
            self._held = None
            if turn is not None:
                turn.stopped = True
            self._finish_request()
            return
        if self._request is not None:
            self._request.cancel.cancel()
        self.worker.cancel()
        if turn is not None:
            turns.stopping(turn)
            self.status_label.setText(turn.status)

    def _set_generating(self, on: bool) -> None:
        self.generating = on
        self.send_button.setEnabled(not on)
        self.stop_button.setEnabled(on)
        self.stop_action.setEnabled(on)
        if on:
            self.status_label.setText("")

    def _pending_turn(self) -> Turn | None:
        return self.turns[-1] if self.turns and self.turns[-1].pending else None

    # -- worker events (main thread) -----------------------------------------------------------------------

    def _on_waiting(self) -> None:
        turn = self._pending_turn()
        if turn is not None and turns.waiting(turn):
            self._render_pending()

    def _on_searching(self) -> None:
        turn = self._pending_turn()
        if turn is not None and turns.searching(turn):
            self._render_pending()

    def _on_retrieved(self, event: Retrieved) -> None:
        turn = self._pending_turn()
        if turn is None:
            return
        if turns.retrieved(turn, event):
            self._render_pending()
        self.retrieval_done.emit(event)
        self.sources_changed.emit(list(turn.sources))

    def _on_evidence(self, event: EvidenceReady) -> None:
        turn = self._pending_turn()
        if turn is None:
            return
        if turns.evidence_ready(turn, event):
            self._render_pending()
        self.evidence_shown.emit(event)

    def _on_prompt(self, view: PromptView) -> None:
        turn = self._pending_turn()
        if turn is not None and turns.prompt_ready(turn):
            self._render_pending()
        self.prompt_ready.emit(view)

    def _on_token(self, text: str) -> None:
        turn = self._pending_turn()
        if turn is None:
            return
        shown = turns.token(turn, text, streaming=self._stream_cursor is not None)
        if shown is turns.TokenShown.RENDER:
            self._render_pending()
        elif shown is turns.TokenShown.APPEND:
            self._append_stream(text)
        self.token_received.emit(text)

    def _on_checked(self, event: Checked) -> None:
        turn = self._pending_turn()
        if turn is None:
            return
        if turns.checked(turn, event):
            self._render_pending()
        self.sentence_checked.emit(event)

    def _on_done(self, event: Done) -> None:
        turn = self._pending_turn()
        if turn is None:
            return
        turns.done(turn, event)
        self.sources_changed.emit(list(turn.sources))
        chat_id = event.chat_id
        if chat_id is not None and chat_id != self.chat_id:
            self.chat_id = int(chat_id)
            self.chat_opened.emit(self.chat_id)
        self.answer_done.emit(event)
        if self.chat_id is not None:
            self.chat_changed.emit(self.chat_id)
            self._refresh_title()

    def _on_failed(self, message: str, _known: bool) -> None:
        turn = self._pending_turn()
        if turn is not None:
            turns.failed(turn, message)

    def _on_request_finished(self) -> None:
        if self._request is not None:  # not a question of another panel sharing the worker
            self._finish_request()

    def _finish_turn(self, error: str = "") -> None:
        turn = self._pending_turn()
        if turn is not None and error:
            turns.failed(turn, error)
        self._finish_request()

    def _finish_request(self) -> None:
        turn = self._pending_turn()
        if turn is not None:
            turns.finished(turn)
        self._request = None
        self._set_generating(False)
        if self.worker.model_state == FAILED:
            self.status_label.setText("No language model: answers show sources only.")
            self.status_label.setToolTip(self.worker.model_error)
        self._render(scroll_to_end=True)
        if self.question.toPlainText().strip():  # the next question was typed during the answer
            self._draft_timer.start()
        self.generation_finished.emit()
        callbacks, self._after_request = self._after_request, []
        for callback in callbacks:
            callback()
