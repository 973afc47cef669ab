"""The local HTTP API started from the window: File → Local API server runs ``local-rag serve`` beside it (a
guest of the window's database), the status bar shows its address, and unticking or closing the window stops
it. A real server process answered through a real HTTP client."""

from __future__ import annotations

import httpx
import pytest

from team_server import free_port
from test_gui_banners import close, make_window

pytestmark = pytest.mark.gui


def test_the_window_starts_and_stops_the_local_api(qtbot, clean_db, tmp_path):
    from localrag.core import paths

    window = make_window(qtbot, tmp_path)
    with qtbot.waitSignal(window.store_ready, timeout=60000):
        window.start()
    window.services.api.port = free_port()
    with qtbot.waitSignal(window.services.api_started, timeout=120000) as started:
        window.api_action.setChecked(True)
    address = started.args[0]
    assert address == f"http://127.0.0.1:{window.services.api.port}/v1"
    assert window.api_label.isVisible() and address in window.api_label.text()
    token = paths.api_token_file().read_text(encoding="utf-8").strip()
    reply = httpx.get(f"{address}/status", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert reply.status_code == 200, reply.text

    with qtbot.waitSignal(window.services.api_stopped, timeout=30000) as stopped:
        window.api_action.setChecked(False)
    assert stopped.args[0] == ""  # asked to stop: no error
    assert not window.api_label.isVisible()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{address}/status", timeout=5)

    # Started again, it ends with the window.
    with qtbot.waitSignal(window.services.api_started, timeout=120000):
        window.api_action.setChecked(True)
    close(qtbot, window)
    assert not window.services.api.running
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{address}/status", timeout=5)


def test_a_port_in_use_unticks_the_item_and_says_why(qtbot, clean_db, tmp_path):
    import socket

    window = make_window(qtbot, tmp_path)
    with qtbot.waitSignal(window.store_ready, timeout=60000):
        window.start()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        window.services.api.port = busy.getsockname()[1]
        with qtbot.waitSignal(window.services.api_stopped, timeout=120000) as stopped:
            window.api_action.setChecked(True)
    assert "Cannot listen" in stopped.args[0]
    assert not window.api_action.isChecked() and not window.api_label.isVisible()
    close(qtbot, window)
