"""The window opens at once, starts the store in the background, and closes cleanly."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gui


def test_window_opens_starts_and_closes(qtbot, home):
    from localrag.core.config import Settings
    from localrag.core.library import Library
    from localrag.gui.mainwindow import MainWindow

    # A guest: the session's library already owns the embedded server of this data folder.
    window = MainWindow(Library(Settings.load(), owner=False))
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(window.embedder_ready, timeout=60000):
        window.start()
        assert "Starting" in (window.banners.text("startup") or "")  # shown while the store opens
    assert window.store_is_ready
    assert window.banners.text("startup") is None
    assert window.documents_panel.isVisible() and window.chat_panel.isVisible()
    with qtbot.waitSignal(window.shut_down, timeout=30000):
        window.close()
