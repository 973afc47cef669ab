"""Help → About: what this is and the versions of every part, gathered off the UI thread."""

from __future__ import annotations

import platform
from typing import Any

from localrag import __version__
from localrag.core import paths
from localrag.core.library import Library
from localrag.gui.qt import QtCore, QtWidgets


def collect_versions(library: Library, embedding_model: str = "") -> list[tuple[str, str]]:
    """``(part, version)`` pairs. Blocking (asks the database): run it off the UI thread.

    ``embedding_model`` is the loaded model's name (the embedding worker knows it; nothing is loaded here).
    """
    import PySide6

    from localrag.core.store import db

    rows: list[tuple[str, str]] = [
        ("Local RAG", __version__),
        ("Python", platform.python_version()),
        ("Qt", f"{QtCore.qVersion()} (PySide6 {PySide6.__version__})"),
    ]
    try:
        with library.connect() as conn:
            versions = db.server_versions(conn)
        kind = "embedded" if library.embedded else "external"
        rows.append(("PostgreSQL", f"{versions.get('postgresql', '?')} ({kind})"))
        rows.append(("pgvector", versions.get("pgvector") or "not installed"))
    except Exception as exc:  # the store may be down; the box still opens
        rows.append(("PostgreSQL", f"unavailable ({exc})"))
    for name, module in (
        ("onnxruntime", "onnxruntime"),
        ("llama-cpp-python", "llama_cpp"),
        ("pypdfium2", "pypdfium2"),
        ("psycopg", "psycopg"),
    ):
        rows.append((name, _module_version(module)))
    rows.append(("llama.cpp CPU kernels", _cpu_kernels()))
    rows.append(("Language model tuning", _tuning(library)))
    rows.append(("Embedding model", embedding_model or "not loaded"))
    try:
        from localrag.core.llm.llm import gguf_path

        rows.append(("Language model", gguf_path(library.settings).name))
    except Exception as exc:
        rows.append(("Language model", f"unavailable ({exc})"))
    rows.append(("Data folder", str(paths.data_dir())))
    return rows


def _cpu_kernels() -> str:
    """Which variant of llama.cpp's CPU kernels runs (loading it if the model has not yet: a few ms)."""
    try:
        from localrag.core.llm.backends import cpu_backend

        return cpu_backend().describe()
    except Exception as exc:  # a missing or broken llama.cpp: the box still opens
        return f"unavailable ({exc})"


def _tuning(library: Library) -> str:
    """How the model runs on this machine, as measured at its first load (nothing is measured here)."""
    try:
        from localrag.core.llm.llm import tuning_for

        tuning = tuning_for(library.settings)
    except Exception as exc:
        return f"unavailable ({exc})"
    if tuning is None:
        return "not measured yet" if library.settings.llm_tuning else "off (the app's defaults)"
    return tuning.describe()


def _module_version(module: str) -> str:
    try:
        mod: Any = __import__(module)
    except Exception as exc:  # a broken native wheel raises OSError as well as ImportError
        return f"not available ({type(exc).__name__})"
    version = getattr(mod, "__version__", None)
    if version is None and module == "pypdfium2":
        version = getattr(getattr(mod, "version", None), "PYPDFIUM_INFO", None)
    return str(version or "installed")


class AboutDialog(QtWidgets.QDialog):
    """The About box. ``set_versions`` fills the table when the versions have been gathered."""

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("About Local RAG")
        self.setObjectName("about-dialog")
        self.setAccessibleName("About Local RAG")
        self.setMinimumWidth(520)
        layout = QtWidgets.QVBoxLayout(self)
        head = QtWidgets.QHBoxLayout()
        icon = QtWidgets.QLabel(self)
        icon.setPixmap(
            self.windowIcon().pixmap(56, 56) if parent is None else parent.windowIcon().pixmap(56, 56)
        )
        head.addWidget(icon, 0, QtCore.Qt.AlignmentFlag.AlignTop)
        text = QtWidgets.QLabel(
            f"<h2 style='margin:0'>Local RAG {__version__}</h2>"
            "<p>Chat with your own documents, offline. Documents are indexed on this computer; a local "
            "language model answers from them and cites the pages it used. Nothing leaves the machine.</p>",
            self,
        )
        text.setWordWrap(True)
        head.addWidget(text, 1)
        layout.addLayout(head)
        self.table = QtWidgets.QTableWidget(0, 2, self)
        self.table.setAccessibleName("Versions")
        self.table.setHorizontalHeaderLabels(["Part", "Version"])
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.NoSelection)
        self.table.setShowGrid(False)
        self.table.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.table.verticalHeader().setDefaultSectionSize(24)
        self.table.setVerticalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        layout.addWidget(self.table, 1)
        self.loading = QtWidgets.QLabel("Gathering versions…", self)
        self.loading.setProperty("role", "muted")
        layout.addWidget(self.loading)
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Close, self)
        copy = buttons.addButton("Copy", QtWidgets.QDialogButtonBox.ButtonRole.ActionRole)
        copy.setAccessibleName("Copy versions")
        copy.clicked.connect(self._copy)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(560, 470)

    def set_versions(self, rows: list[tuple[str, str]]) -> None:
        self.loading.hide()
        self.table.setRowCount(len(rows))
        for i, (part, version) in enumerate(rows):
            self.table.setItem(i, 0, QtWidgets.QTableWidgetItem(part))
            self.table.setItem(i, 1, QtWidgets.QTableWidgetItem(version))
        self.table.resizeColumnToContents(0)
        self.table.resizeRowsToContents()
        rows_height = sum(self.table.rowHeight(i) for i in range(len(rows)))
        self.table.setMinimumHeight(rows_height + self.table.horizontalHeader().height() + 6)
        self.adjustSize()

    def _cell(self, row: int, column: int) -> str:
        item = self.table.item(row, column)
        return item.text() if item is not None else ""

    def versions_text(self) -> str:
        return "\n".join(f"{self._cell(i, 0)}: {self._cell(i, 1)}" for i in range(self.table.rowCount()))

    def _copy(self) -> None:
        QtWidgets.QApplication.clipboard().setText(self.versions_text())
