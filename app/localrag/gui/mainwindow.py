"""The main window: documents on the left, the chat in the middle, the developer pane on the right."""

from __future__ import annotations

import logging

from localrag.core.library import Library
from localrag.gui.qt import QtCore, QtGui, QtWidgets, Signal
from localrag.gui.views.banners import BannerArea
from localrag.gui.workers import run_op, wait_for_ops

log = logging.getLogger("localrag.gui")


class MainWindow(QtWidgets.QMainWindow):
    """The Local RAG window. The store and models start in the background after the window shows.

    Signals:
        store_ready(): the database is open and migrated.
        store_failed(str): the database could not be opened (the message says why).
        embedder_ready(): the embedding model is loaded.
        shut_down(): workers and the database have stopped (after close).
    """

    store_ready = Signal()
    store_failed = Signal(str)
    embedder_ready = Signal()
    shut_down = Signal()

    def __init__(self, library: Library) -> None:
        super().__init__()
        self.library = library
        self.store_is_ready = False
        self.setWindowTitle("Local RAG")
        self.setAcceptDrops(True)
        self.resize(1200, 780)

        self.banners = BannerArea(self)
        self.documents_panel = QtWidgets.QWidget(self)
        self.documents_panel.setObjectName("documents-panel")
        self.documents_panel.setAccessibleName("Documents")
        doc_layout = QtWidgets.QVBoxLayout(self.documents_panel)
        doc_layout.addWidget(QtWidgets.QLabel("<b>Documents</b>"))
        self.documents_list = QtWidgets.QListWidget(self.documents_panel)
        doc_layout.addWidget(self.documents_list, 1)

        self.chat_panel = QtWidgets.QWidget(self)
        self.chat_panel.setObjectName("chat-panel")
        self.chat_panel.setAccessibleName("Chat")
        chat_layout = QtWidgets.QVBoxLayout(self.chat_panel)
        self.transcript = QtWidgets.QTextBrowser(self.chat_panel)
        self.transcript.setAccessibleName("Conversation")
        self.question = QtWidgets.QPlainTextEdit(self.chat_panel)
        self.question.setPlaceholderText("Ask about your documents…  (Ctrl+Enter to send)")
        self.question.setAccessibleName("Question")
        self.question.setMaximumHeight(110)
        self.use_documents = QtWidgets.QCheckBox("Use my documents", self.chat_panel)
        self.use_documents.setChecked(True)
        chat_layout.addWidget(self.transcript, 1)
        chat_layout.addWidget(self.question)
        chat_layout.addWidget(self.use_documents)

        splitter = QtWidgets.QSplitter(QtCore.Qt.Horizontal, self)
        splitter.addWidget(self.documents_panel)
        splitter.addWidget(self.chat_panel)
        splitter.setStretchFactor(1, 3)
        central = QtWidgets.QWidget(self)
        layout = QtWidgets.QVBoxLayout(central)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.banners)
        layout.addWidget(splitter, 1)
        self.setCentralWidget(central)

        self.dev_pane = QtWidgets.QDockWidget("Developer pane", self)
        self.dev_pane.setObjectName("developer-pane")
        self.dev_pane.setWidget(QtWidgets.QTextBrowser(self.dev_pane))
        self.addDockWidget(QtCore.Qt.RightDockWidgetArea, self.dev_pane)
        self.dev_pane.hide()
        self._build_menus()
        self.statusBar().showMessage("Starting…")

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        quit_action = QtGui.QAction("&Quit", self)
        quit_action.setShortcut(QtGui.QKeySequence.Quit)
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)
        view_menu = self.menuBar().addMenu("&View")
        dev = self.dev_pane.toggleViewAction()
        dev.setText("&Developer pane")
        dev.setShortcut(QtGui.QKeySequence("Ctrl+D"))
        view_menu.addAction(dev)

    # -- start-up ------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Open the store and warm the models in the background; the window is usable at once."""
        self.banners.show_banner("startup", "Starting… opening your document store.")
        run_op(self.library.open, lambda _: self._on_store_ready(), lambda msg, _known: self._on_store_failed(msg),
               parent=self)

    def _on_store_ready(self) -> None:
        self.store_is_ready = True
        self.banners.show_banner("startup", "Warming up… loading the embedding model.")
        self.statusBar().showMessage("Database ready")
        self.store_ready.emit()
        run_op(lambda: self.library.embedder, lambda _: self._on_embedder_ready(),
               lambda msg, _known: self.banners.show_banner("embedder", msg, level="error"), parent=self)

    def _on_store_failed(self, message: str) -> None:
        self.banners.clear("startup")
        self.banners.show_banner("store", f"The document store is unavailable: {message}", level="error",
                                 action="Retry", on_action=self.start)
        self.store_failed.emit(message)

    def _on_embedder_ready(self) -> None:
        self.banners.clear("startup")
        self.statusBar().showMessage("Ready")
        self.embedder_ready.emit()

    # -- shutdown ------------------------------------------------------------------------------------------

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:  # noqa: N802 (Qt override)
        self.hide()
        wait_for_ops()
        self.library.close()
        self.shut_down.emit()
        event.accept()
