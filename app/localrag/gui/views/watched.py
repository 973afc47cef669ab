"""File → Watched folders…: the folders whose new, changed and deleted files are picked up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from localrag.gui.qt import QtWidgets, Signal
from localrag.gui.tasks import Op


class WatchedFoldersDialog(QtWidgets.QDialog):
    """Folders whose new, changed and deleted files are picked up (opt-in, one by one).

    Signals:
        changed(): a folder was added or removed (the window scans at once).
    """

    changed = Signal()

    def __init__(self, library: Any, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.library = library
        self.setWindowTitle("Watched folders")
        self.setAccessibleName("Watched folders")
        self.setMinimumSize(520, 320)
        layout = QtWidgets.QVBoxLayout(self)
        intro = QtWidgets.QLabel(
            "Files added to, changed in or deleted from these folders are indexed or removed "
            "automatically (checked every minute and at start).",
            self,
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.list = QtWidgets.QListWidget(self)
        self.list.setAccessibleName("Watched folder list")
        layout.addWidget(self.list, 1)
        row = QtWidgets.QHBoxLayout()
        self.add_button = QtWidgets.QPushButton("Watch a folder…", self)
        self.add_button.setAccessibleName("Watch a folder")
        self.add_button.clicked.connect(self._add)
        self.remove_button = QtWidgets.QPushButton("Stop watching", self)
        self.remove_button.setAccessibleName("Stop watching the selected folder")
        self.remove_button.clicked.connect(self._remove)
        close = QtWidgets.QPushButton("Close", self)
        close.clicked.connect(self.accept)
        row.addWidget(self.add_button)
        row.addWidget(self.remove_button)
        row.addStretch(1)
        row.addWidget(close)
        layout.addLayout(row)
        self.refresh()

    def _conn_op(self, fn: Any, done: Any) -> None:
        def work() -> Any:
            with self.library.connect() as conn:
                return fn(conn)

        Op(work, owner=self).success(done).failure(
            lambda msg, _k: self.list.addItem(f"(unavailable: {msg})")
        ).run_in_background()

    def refresh(self) -> None:
        from localrag.core.ingest.watch import list_watched_folders

        def fill(folders: list[Path]) -> None:
            self.list.clear()
            for f in folders:
                self.list.addItem(str(f))
            self.remove_button.setEnabled(bool(folders))

        self._conn_op(list_watched_folders, fill)

    def add_folder(self, folder: str) -> None:
        from localrag.core.ingest.watch import add_watched_folder

        self._conn_op(lambda conn: add_watched_folder(conn, Path(folder)), lambda _r: self._changed())

    def _add(self) -> None:
        folder = QtWidgets.QFileDialog.getExistingDirectory(self, "Watch a folder", str(Path.home()))
        if folder:
            self.add_folder(folder)

    def _remove(self) -> None:
        from localrag.core.ingest.watch import remove_watched_folder

        item = self.list.currentItem()
        if item is not None:
            folder = Path(item.text())
            self._conn_op(lambda conn: remove_watched_folder(conn, folder), lambda _r: self._changed())

    def _changed(self) -> None:
        self.refresh()
        self.changed.emit()
