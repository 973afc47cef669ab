"""The main window: chats and documents on the left, the chat in the middle, the developer pane docked right.

The window only shows: ``AppServices`` (gui/services.py) opens the store in the background, runs the workers
and stops them at the end; the window turns its signals into banners, the status bar and the views' contents.
It shows at once; then the store opens, the embedding worker loads its model and the ingest worker resumes
unfinished documents. Every banner appears and clears on a signal.
Files and folders dropped anywhere on the window are indexed; a dropped ``.gguf`` becomes the language model.
Its parts live beside it: the menus (``window_menus.py``), drops and keys (``window_drops.py``), the saved
layout (``window_layout.py``), the re-embed banner (``window_reembed.py``) and collections
(``window_collections.py``).
"""

from __future__ import annotations

import logging
from pathlib import Path

from localrag.core import paths
from localrag.core.ingest.documents import DocumentInfo
from localrag.core.ingest.pipeline import IngestEvent
from localrag.core.library import Library
from localrag.gui import theme
from localrag.gui.qt import QtCore, QtGui, QtWidgets, Signal
from localrag.gui.services import AppServices
from localrag.gui.tasks import Op
from localrag.gui.views.about import AboutDialog, collect_versions
from localrag.gui.views.banners import BannerArea
from localrag.gui.views.chat import ChatPanel
from localrag.gui.views.chats_list import ChatsList
from localrag.gui.views.checks import TestQuestionsWindow
from localrag.gui.views.checks_save import SaveCheckDialog, save_from_turn
from localrag.gui.views.details import DocumentDetailsDialog
from localrag.gui.views.devpane import DevPane
from localrag.gui.views.documents import DocumentsPanel
from localrag.gui.views.documents_model import DocumentRow
from localrag.gui.views.drop_overlay import DropOverlay
from localrag.gui.views.settings import SettingsDialog
from localrag.gui.views.watched import WatchedFoldersDialog
from localrag.gui.window_collections import install as install_collections
from localrag.gui.window_drops import WindowEvents
from localrag.gui.window_layout import restore_layout, save_layout
from localrag.gui.window_menus import build_menus
from localrag.gui.window_reembed import ReembedBanner
from localrag.gui.workers import EmbeddingWorker, IngestWorker, ReembedWorker

log = logging.getLogger("localrag.gui")


class MainWindow(QtWidgets.QMainWindow):
    """The Local RAG window. The store and models start in the background after the window shows.

    Args:
        library: the facade; the window closes it (stopping an embedded server it owns) after its workers.
        layout_file: where the window layout is kept (default: ``window.ini`` in the data folder).

    Test questions: ``show_test_questions()`` (View → Test questions…, Ctrl+T) opens ``checks_window``;
    ``save_test_question(turn_index)`` opens "Save as a test question…" for an answer.

    Signals:
        store_ready(): the database is open and migrated.
        store_failed(str): the database could not be opened or went away (the message says why).
        embedder_ready(): the embedding model is loaded and its worker answers.
        embedder_failed(str): the embedding worker failed and was not recreated (the banner offers Restart).
        documents_loaded(int): the documents panel got a fresh listing of this many documents.
        reembed_checked(int): this many documents lack vectors from the active embedding model.
        reembed_finished(int): a re-embedding run ended; how many documents still lack vectors.
        llm_checked(str): the language model file was checked: "" when usable, else why not.
        paths_dropped(list): files and folders were dropped (or added) and handed to the ingest worker.
        settings_applied(list): the Settings dialog saved these changed settings.
        shut_down(): workers and the database have stopped (after close).
    """

    store_ready = Signal()
    store_failed = Signal(str)
    embedder_ready = Signal()
    embedder_failed = Signal(str)
    documents_loaded = Signal(int)
    reembed_checked = Signal(int)
    reembed_finished = Signal(int)
    llm_checked = Signal(str)
    paths_dropped = Signal(list)
    settings_applied = Signal(list)
    shut_down = Signal()
    checks_window: TestQuestionsWindow | None = None
    api_action: QtGui.QAction  # File → Local API server; it and the other actions: ``window_menus.py``

    def __init__(self, library: Library, *, layout_file: Path | None = None) -> None:
        super().__init__()
        self.library = library
        self.services = AppServices(library, self)
        self._layout_file = layout_file
        self._closing = False
        self.setWindowTitle("Local RAG")
        self.setWindowIcon(theme.app_icon())
        self.setAcceptDrops(True)
        self.resize(1280, 800)

        self.banners = BannerArea(self)
        self.documents_panel = DocumentsPanel(self)
        self.chat_panel = self._build_chat_panel()
        self.chats_list = self._build_chats_list()

        left = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical, self)
        left.setObjectName("left-splitter")
        left.setChildrenCollapsible(False)
        left.addWidget(self.chats_list)
        left.addWidget(self.documents_panel)
        left.setStretchFactor(0, 1)
        left.setStretchFactor(1, 4)
        left.setSizes([170, 630])
        self.left_splitter = left
        splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal, self)
        splitter.setObjectName("main-splitter")
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(left)
        splitter.addWidget(self.chat_panel)
        splitter.setStretchFactor(0, 0)  # the documents keep their width; the chat takes what is left
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([480, 800])
        self.splitter = splitter
        central = QtWidgets.QWidget(self)
        layout = QtWidgets.QVBoxLayout(central)
        layout.setContentsMargins(8, 6, 8, 4)
        layout.setSpacing(6)
        layout.addWidget(self.banners)
        layout.addWidget(splitter, 1)
        self.setCentralWidget(central)

        self.dev_dock = QtWidgets.QDockWidget("Developer pane", self)
        self.dev_dock.setObjectName("developer-pane")
        self.dev_dock.setAccessibleName("Developer pane")
        self.dev_pane = self._build_dev_pane()
        self.dev_dock.setWidget(self.dev_pane)
        self.addDockWidget(QtCore.Qt.DockWidgetArea.RightDockWidgetArea, self.dev_dock)
        self.dev_dock.hide()

        self.overlay = DropOverlay(self)
        self.model_label = QtWidgets.QLabel(self)
        self.model_label.setProperty("role", "muted")
        self.model_label.setAccessibleName("Models in use")
        self.statusBar().addPermanentWidget(self.model_label)
        self.api_label = QtWidgets.QLabel(self)
        self.api_label.setProperty("role", "muted")
        self.api_label.setAccessibleName("Local API server")
        self.api_label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.api_label.hide()
        self.statusBar().addPermanentWidget(self.api_label)
        self.statusBar().showMessage("Starting…")

        self.reembed = ReembedBanner(self)
        self._connect_services()
        self._connect_documents()
        build_menus(self)
        self.collections_panel = install_collections(self)  # between the chats and the documents
        restore_layout(self, self._layout_file)
        self.window_events = WindowEvents(self)  # drops anywhere, and the menu's keys
        app = QtWidgets.QApplication.instance()
        if app is not None:
            app.installEventFilter(self.window_events)
        if isinstance(app, QtGui.QGuiApplication):
            app.applicationStateChanged.connect(self._on_application_state)

    # -- parts built by the chat side -----------------------------------------------------------------------

    def _build_chat_panel(self) -> ChatPanel:
        return ChatPanel(self.library, self, worker=self.services.chat_worker)

    def _build_chats_list(self) -> ChatsList:
        chats = ChatsList(self.library, self)
        chats.setMinimumHeight(120)
        return chats

    def _build_dev_pane(self) -> DevPane:
        return DevPane(self.library, self.dev_dock)

    # -- what the services and workers say
    # --------------------------------------------------------------------

    @property
    def store_is_ready(self) -> bool:
        return self.services.store_is_ready

    @property
    def embedding_worker(self) -> EmbeddingWorker | None:
        return self.services.embedding_worker

    @property
    def ingest_worker(self) -> IngestWorker | None:
        return self.services.ingest_worker

    @property
    def reembed_worker(self) -> ReembedWorker | None:
        return self.services.reembed_worker

    def _connect_services(self) -> None:
        s = self.services
        s.store_ready.connect(self._on_store_ready)
        s.store_failed.connect(self._on_store_failed)
        s.embedder_ready.connect(self._on_embedder_ready)
        s.embedder_restarting.connect(self._on_embedder_restarting)
        s.embedder_failed.connect(self._on_embedder_failed)
        s.llm_checked.connect(self._on_llm_checked)
        s.model_state_changed.connect(self._on_model_state)
        s.ingest_event.connect(self._on_ingest_event)
        s.paths_enqueued.connect(self.documents_panel.clear_placeholders)
        s.documents_listed.connect(self._on_documents_listed)
        s.details_loaded.connect(self.show_details)
        s.details_saved.connect(self._on_details_saved)
        s.details_failed.connect(lambda message: self.statusBar().showMessage(message, 8000))
        s.watched_scanned.connect(self._on_watched_scanned)
        s.reembed_checked.connect(self.reembed.checked)
        s.reembed_progress.connect(self.reembed.progress)
        s.reembed_done.connect(self.reembed.done)
        s.api_started.connect(self._on_api_started)
        s.api_stopped.connect(self._on_api_stopped)
        s.settings_save_failed.connect(lambda msg: self.statusBar().showMessage(f"Settings not saved: {msg}"))

    # -- wiring ---------------------------------------------------------------------------------------------

    def _connect_documents(self) -> None:
        panel = self.documents_panel
        panel.add_files_requested.connect(self.add_documents_dialog)
        panel.add_folder_requested.connect(self.add_folder_dialog)
        panel.remove_requested.connect(self.remove_documents)
        panel.reindex_requested.connect(self.services.reindex_documents)
        panel.cancel_requested.connect(self.services.cancel_documents)
        panel.cancel_all_requested.connect(self._cancel_all)
        panel.open_requested.connect(self._open_file)
        panel.details_requested.connect(self.services.load_details)
        panel.scope_changed.connect(self._scope_changed)
        chat = self.chat_panel
        chat.use_documents.toggled.connect(panel.set_grounding)
        chat.generation_started.connect(self.dev_pane.start_question)
        chat.retrieval_done.connect(self.dev_pane.show_retrieval)
        chat.prompt_ready.connect(self.dev_pane.show_prompt)
        chat.answer_done.connect(self.dev_pane.show_done)
        chats = self.chats_list
        chats.chat_selected.connect(chat.open_chat)
        chats.new_chat_requested.connect(chat.new_chat)
        chats.chat_deleted.connect(chat.forget_chat)
        chat.chat_changed.connect(lambda chat_id: chats.refresh(select_id=chat_id))
        # Chats saved by `local-rag ask` or the API show up: re-read when the window comes back to the front
        # and now and then while it is shown, though not while an answer streams in.
        chats.paused = lambda: chat.generating or not self.store_is_ready

    def _scope_changed(self, doc_ids: list[int], doc_types: list[str]) -> None:
        self.chat_panel.set_scope(doc_ids, doc_types)
        self.dev_pane.set_scope(doc_ids, doc_types)

    # -- start-up -------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Open the store and warm the models in the background; the window is usable at once."""
        self.banners.clear("store")
        self.banners.show_banner("startup", "Starting… opening your document store.")
        self.services.start()

    def _on_store_ready(self) -> None:
        self.banners.clear("store")
        self.banners.show_banner(
            "startup", "Warming up… loading the embedding model. You can add documents already."
        )
        self.statusBar().showMessage("Database ready", 3000)
        self.chats_list.refresh()
        self.chats_list.watch()
        if not self.chat_panel.warmed:
            self.chat_panel.warm_up()
        self.store_ready.emit()

    def _on_store_failed(self, message: str) -> None:
        self.banners.clear("startup")
        self.banners.show_banner(
            "store",
            f"The document store is unavailable: {message} Chat still answers, without your documents.",
            level="error",
            action="Retry",
            on_action=self.retry_store,
        )
        self.statusBar().showMessage("Database unavailable")
        self.store_failed.emit(message)

    def retry_store(self) -> None:
        """The store banner's Retry: restart the embedded server if it died, reopen, and resume work."""
        self.banners.show_banner("store", "Reconnecting to the document store…", level="warning")
        self.services.retry_store()

    def _on_embedder_ready(self, _name: str) -> None:
        self.banners.clear("startup")
        self.banners.clear("embedder")
        self.statusBar().showMessage("Ready", 3000)
        self._update_model_label()
        self.embedder_ready.emit()

    def _on_embedder_restarting(self, message: str) -> None:
        self.banners.show_banner("embedder", f"{message} Restarting it…", level="warning")

    def _on_embedder_failed(self, message: str) -> None:
        self.banners.clear("startup")
        self.banners.show_banner(
            "embedder",
            f"{message} Searching your documents is paused; chat still answers without them.",
            level="error",
            action="Restart",
            on_action=self.restart_embedder,
        )
        self.embedder_failed.emit(message)

    def restart_embedder(self) -> None:
        """The embedding banner's Restart: a fresh worker loads the model again."""
        if self.embedding_worker is not None:
            self.banners.show_banner("embedder", "Restarting the embedding worker…", level="warning")
            self.services.restart_embedder()

    # -- language model --------------------------------------------------------------------------------------

    def _on_llm_checked(self, problem: str) -> None:
        if problem:
            self._on_llm_failed(problem)
        elif self.services.model_state == "failed":
            # The chat tried the old file and failed; it loads its model once per start.
            name = Path(self.library.settings.gguf_path).name or "The bundled model"
            self.banners.show_banner("llm", f"{name} will be used the next time Local RAG starts.")
        else:
            self.banners.clear("llm")
        self._update_model_label()
        self.llm_checked.emit(problem)

    def _on_model_state(self, state: str) -> None:
        if state == "failed":
            self._on_llm_failed(self.services.model_error)
        elif state == "ready":
            self.banners.clear("llm")

    def _on_llm_failed(self, message: str) -> None:
        self.banners.show_banner(
            "llm",
            f"No language model: {message} Answers show the passages found, without a written reply.",
            level="warning",
            action="Choose a model…",
            on_action=self._choose_gguf,
        )

    def _choose_gguf(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "Choose a language model", str(Path.home()), "GGUF models (*.gguf)"
        )
        if path:
            self.set_gguf(path)

    def set_gguf(self, path: str) -> None:
        """Use ``path`` as the language model from now on (saved in the settings)."""
        self.services.set_gguf(path)
        self.statusBar().showMessage(f"Language model: {Path(path).name} (used from the next start)", 8000)

    def toggle_api(self, on: bool) -> None:
        """File → Local API server: start or stop the local API."""
        if on and not self.services.api.running:
            self.api_label.setText("·  API: starting…")
            self.api_label.show()
            self.services.start_api()
        elif not on and self.services.api.running:
            self.services.stop_api()

    def _on_api_started(self, address: str) -> None:
        token = paths.api_token_file()
        self.api_label.setText(f"·  API: {address}")
        self.api_label.setToolTip(f"Send the token in {token} as 'Authorization: Bearer TOKEN'")
        self.statusBar().showMessage(f"Local API at {address}; its token is in {token}", 8000)

    def _on_api_stopped(self, reason: str) -> None:
        self.api_label.hide()
        with QtCore.QSignalBlocker(self.api_action):
            self.api_action.setChecked(False)
        if reason:
            self.statusBar().showMessage(f"Local API stopped: {reason}", 10000)

    def _update_model_label(self) -> None:
        parts = []
        if self.services.model_name:
            parts.append(f"Embeddings: {self.services.model_name}")
        gguf = self.library.settings.gguf_path
        parts.append(f"LLM: {Path(gguf).name if gguf else 'bundled SmolLM2'}")
        self.model_label.setText("  ·  ".join(parts))

    # -- re-embedding ----------------------------------------------------------------------------------------

    def check_reembed(self) -> None:
        """Count documents without vectors from the active model; the banner offers to re-embed them."""
        self.services.check_reembed()

    def start_reembed(self) -> None:
        """Embed the chunks of every document that lacks vectors from the active model, in the background."""
        self.reembed.start()

    # -- documents -------------------------------------------------------------------------------------------

    def refresh_documents(self) -> None:
        """Reload the documents panel from the store (off the UI thread)."""
        self.services.refresh_documents()

    def _on_documents_listed(self, rows: list[DocumentRow]) -> None:
        self.documents_panel.set_documents(rows)
        self.documents_loaded.emit(len(rows))

    def show_details(self, info: DocumentInfo) -> DocumentDetailsDialog:
        """The details dialog of one document (loaded by ``services.load_details``)."""
        dialog = DocumentDetailsDialog(info.id, Path(info.path).name, info.title, info.meta, self)
        dialog.save_requested.connect(self.services.save_details)
        dialog.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def _on_details_saved(self, _doc_id: int, stale: bool) -> None:
        self.statusBar().showMessage("Details saved.", 4000)
        if not stale:
            return
        self.reembed.document_changed()

    def add_paths(self, paths: list[str]) -> None:
        """Index these files and folders (a ``.gguf`` becomes the language model). Returns at once."""
        models = [p for p in paths if p.lower().endswith(".gguf")]
        docs = [p for p in paths if p not in models]
        if models:
            self.set_gguf(models[-1])
        if not docs:
            return
        self.documents_panel.add_placeholders(docs)
        self.services.add_paths(docs)
        n = len(docs)
        self.statusBar().showMessage(f"Adding {n} item{'s' if n != 1 else ''}…", 3000)
        self.paths_dropped.emit(docs)

    def add_documents_dialog(self) -> None:
        files, _ = QtWidgets.QFileDialog.getOpenFileNames(
            self,
            "Add documents",
            str(Path.home()),
            "Documents (*.pdf *.docx *.md *.markdown *.txt *.html *.htm *.rst *.csv *.png *.jpg *.jpeg *.tif "
            "*.tiff);;Language models (*.gguf);;All files (*)",
        )
        if files:
            self.add_paths(files)

    def add_folder_dialog(self) -> None:
        folder = QtWidgets.QFileDialog.getExistingDirectory(self, "Add a folder", str(Path.home()))
        if folder:
            self.add_paths([folder])

    def remove_documents(self, doc_ids: list[int]) -> None:
        if len(doc_ids) > 1:
            answer = QtWidgets.QMessageBox.question(
                self,
                "Remove documents",
                f"Remove {len(doc_ids)} documents from the library? The files on disk are not touched.",
            )
            if answer != QtWidgets.QMessageBox.StandardButton.Yes:
                return
        self.services.remove_documents(doc_ids)

    def _cancel_all(self) -> None:
        self.services.cancel_all()
        self.statusBar().showMessage("Cancelling indexing…", 3000)

    def _open_file(self, path: str) -> None:
        QtGui.QDesktopServices.openUrl(QtCore.QUrl.fromLocalFile(path))

    def _on_ingest_event(self, event: IngestEvent) -> None:
        self.documents_panel.apply_event(event)
        if event.status == "skipped" and event.message:
            self.statusBar().showMessage(f"{event.title or Path(event.path).name}: {event.message}", 5000)

    # -- watched folders -------------------------------------------------------------------------------------

    def _on_watched_scanned(self, added: int, removed: int) -> None:
        if added or removed:
            self.statusBar().showMessage(f"Watched folders: {added} new or changed, {removed} removed", 5000)

    def watched_folders_dialog(self) -> None:
        dialog = WatchedFoldersDialog(self.library, self)
        dialog.changed.connect(self.services.scan_watched)
        dialog.open()

    # -- dialogs ---------------------------------------------------------------------------------------------

    def open_settings(self) -> SettingsDialog:
        dialog = SettingsDialog(self.library.settings, self)
        dialog.applied.connect(self._on_settings_applied)
        dialog.save_failed.connect(lambda msg: self.statusBar().showMessage(f"Settings not saved: {msg}"))
        dialog.open()
        return dialog

    def _on_settings_applied(self, changed: list[str]) -> None:
        if not changed:
            return
        if "embedding_model_dir" in changed and self.embedding_worker is not None:
            self.banners.show_banner("startup", "Loading the new embedding model…")
        self.services.settings_changed(changed)
        later = [n for n in changed if n in ("database_url", "data_folder")]
        if later:
            self.statusBar().showMessage(
                "Saved. The data folder and database take effect at the next start.", 8000
            )
        else:
            self.statusBar().showMessage("Settings saved.", 3000)
        self._update_model_label()
        self.settings_applied.emit(changed)

    def show_about(self) -> AboutDialog:
        dialog = AboutDialog(self)
        model = self.services.model_name
        Op(lambda: collect_versions(self.library, model), owner=dialog).success(
            dialog.set_versions
        ).run_in_background()
        dialog.open()
        return dialog

    def show_test_questions(self) -> TestQuestionsWindow:
        """The Test questions window (one; raised when already open)."""
        window = self.checks_window
        if window is None:
            window = self.checks_window = TestQuestionsWindow(self.library, self)
        else:
            window.reload()
        window.show()
        window.raise_()
        window.activateWindow()
        return window

    def save_test_question(self, turn_index: int) -> SaveCheckDialog | None:
        """Open "Save as a test question…" for the answer of turn ``turn_index``."""
        turns = self.chat_panel.turns
        if not 0 <= turn_index < len(turns):
            return None
        dialog = save_from_turn(self.library, turns[turn_index], self)
        if dialog is not None:
            dialog.saved.connect(lambda _id: self.statusBar().showMessage("Saved as a test question.", 4000))
            window = self.checks_window
            if window is not None:
                dialog.saved.connect(lambda _id: window.reload())
        return dialog

    # -- coming back to the window -------------------------------------------------------------------------

    def event(self, event: QtCore.QEvent) -> bool:
        if event.type() == QtCore.QEvent.Type.WindowActivate:
            self._came_back()
        return super().event(event)

    def _on_application_state(self, state: QtCore.Qt.ApplicationState) -> None:
        if state == QtCore.Qt.ApplicationState.ApplicationActive and self.isVisible():
            self._came_back()

    def _came_back(self) -> None:
        """The window is in front again: show chats saved meanwhile by other processes (cheap, off-thread)."""
        if not getattr(self, "_closing", True):
            self.chats_list.reload()

    # -- layout ----------------------------------------------------------------------------------------------

    def save_layout(self) -> None:
        save_layout(self, self._layout_file)

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        if self.overlay.isVisible():
            self.overlay.setGeometry(self.rect())

    # -- shutdown --------------------------------------------------------------------------------------------

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:  # noqa: N802 (Qt override)
        if self._closing:
            event.accept()
            return
        self._closing = True
        self.save_layout()
        self.hide()
        app = QtWidgets.QApplication.instance()
        if app is not None:
            app.removeEventFilter(self.window_events)
        self.chat_panel.shutdown()  # its source viewers close
        self.services.shutdown(root=self)
        self.shut_down.emit()
        event.accept()
