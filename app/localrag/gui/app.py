"""Start-up and shutdown: QApplication, then the main window; on exit the workers, then PostgreSQL."""

from __future__ import annotations

import logging
import sys

from localrag.core import paths
from localrag.core.logs import set_up_logging


def create_app(argv: list[str]) -> object:
    """The QApplication with its names, theme (light or dark, following the system) and icon."""
    from localrag.gui import theme
    from localrag.gui.qt import QtWidgets

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([sys.argv[0], *argv])
    assert isinstance(app, QtWidgets.QApplication)  # the window needs widgets, not a core application
    app.setApplicationName("Local RAG")
    app.setApplicationDisplayName("Local RAG")
    app.setOrganizationName("LocalRAG")
    app.setDesktopFileName(paths.APP_ID)  # resources/linux/org.localrag.LocalRAG.desktop
    app.setWindowIcon(theme.app_icon())
    app.theme = theme.Theme(app)  # type: ignore[attr-defined]  # kept alive with the app
    return app


def run_gui(argv: list[str]) -> int:
    from localrag import system_libs

    if system_libs.uses_x11():
        missing = system_libs.missing_for_window()
        if missing is not None:  # Qt would abort with no names
            print(missing.message(), file=sys.stderr)
            return 1

    from localrag.gui.views.settings import apply_data_folder_choice

    app = create_app(argv)
    # The data folder chosen in Settings applies before anything reads it (logs, settings, the database).
    apply_data_folder_choice()
    set_up_logging(terminal_level=None)
    from localrag import __version__

    logging.getLogger("localrag.gui").info("local-rag %s: the window opens", __version__)

    from localrag.core.config import Settings
    from localrag.core.library import Library
    from localrag.gui.mainwindow import MainWindow

    window = MainWindow(Library(Settings.load()))
    window.show()
    window.start()
    _close_on_signals(window)
    code = int(app.exec())  # type: ignore[attr-defined]
    _end_despite_stuck_threads(code)
    return code


def _end_despite_stuck_threads(code: int) -> None:
    """Every worker was stopped and waited for; a thread still stuck in native code (a model load that hangs)
    cannot be stopped, and destroying its QThread at exit would abort the process: end it here instead."""
    import os

    from localrag.gui.tasks import task_manager

    stuck = task_manager().stuck()
    if stuck:
        logging.getLogger("localrag.gui").error("ending with threads stuck in native code: %s", stuck)
        logging.shutdown()
        os._exit(code)


def _close_on_signals(window: object) -> None:
    """Ctrl+C or a TERM signal closes the window the normal way (workers, then PostgreSQL)."""
    import signal

    from localrag.gui.qt import QTimer

    def close(*_: object) -> None:
        QTimer.singleShot(0, window.close)  # type: ignore[attr-defined]

    signal.signal(signal.SIGINT, close)
    signal.signal(signal.SIGTERM, close)
    # Python runs signal handlers only between bytecodes; a timer lets it in while Qt waits for events.
    tick = QTimer(window)  # type: ignore[arg-type]
    tick.timeout.connect(lambda: None)
    tick.start(300)
