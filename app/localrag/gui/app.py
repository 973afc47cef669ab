"""Start-up and shutdown of the window: QApplication, then the main window; on exit workers, then PostgreSQL."""

from __future__ import annotations

import logging
import sys

from localrag.core import paths
from localrag.core.library import Library


def _setup_logging() -> None:
    handler = logging.FileHandler(paths.logs_dir() / "localrag.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def run_gui(argv: list[str]) -> int:
    from localrag.gui.mainwindow import MainWindow
    from localrag.gui.qt import QtWidgets

    _setup_logging()
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([sys.argv[0], *argv])
    app.setApplicationName("Local RAG")
    app.setOrganizationName("LocalRAG")
    window = MainWindow(Library())
    window.show()
    window.start()
    return app.exec()
