"""Each banner appears on its signal, offers its action, and clears on the signal that resolves it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gui

TEXT = "Tides rise and fall twice a day because the Moon pulls on the oceans. " * 6


@pytest.fixture()
def saved_settings(home):
    path = home / "settings.json"
    before = path.read_bytes() if path.exists() else None
    yield path
    if before is None:
        path.unlink(missing_ok=True)
    else:
        path.write_bytes(before)


def make_window(qtbot, tmp_path: Path, **overrides):
    from localrag.core.config import Settings
    from localrag.core.library import Library
    from localrag.gui.mainwindow import MainWindow

    settings = Settings.load()
    for name, value in overrides.items():
        setattr(settings, name, value)
    # A guest: the session's library already owns the embedded server of this data folder.
    window = MainWindow(Library(settings, owner=False), layout_file=tmp_path / "window.ini")
    qtbot.addWidget(window)
    window.show()
    return window


def close(qtbot, window) -> None:
    # Closing waits for every thread, a model load under way included.
    if not window._closing:
        with qtbot.waitSignal(window.shut_down, timeout=60000):
            window.close()


def click_action(window, key: str) -> None:
    window.banners.banner(key).button.click()


def test_warming_up_shows_until_the_embedder_is_ready(qtbot, clean_db, tmp_path):
    window = make_window(qtbot, tmp_path)
    at_store_ready: list[str | None] = []  # read during the signal, before the embedding model can be ready
    window.store_ready.connect(lambda: at_store_ready.append(window.banners.text("startup")))
    with qtbot.waitSignal(window.store_ready, timeout=60000):
        window.start()
        assert "Starting" in window.banners.text("startup")
    assert "Warming up" in (at_store_ready[0] or "")
    qtbot.waitUntil(lambda: window.banners.text("startup") is None, timeout=60000)
    assert window.embedding_worker is not None and window.embedding_worker.is_ready
    close(qtbot, window)


def test_database_unavailable_offers_retry_and_clears_when_it_answers(qtbot, library, tmp_path):
    # Nothing listens on this port: the store is down.
    window = make_window(
        qtbot, tmp_path, database_url="postgresql://nobody@127.0.0.1:9/none?connect_timeout=2"
    )
    with qtbot.waitSignal(window.store_failed, timeout=30000):
        window.start()
    text = window.banners.text("store") or ""
    assert "unavailable" in text and "Chat still answers" in text
    assert window.banners.banner("store").button.text() == "Retry"
    assert not window.store_is_ready
    # The server is back (here: the session's running server, reached by URL); Retry reconnects.
    window.library.settings.database_url = library.conninfo
    with qtbot.waitSignal(window.store_ready, timeout=30000):
        click_action(window, "store")
    assert window.banners.text("store") is None
    assert window.store_is_ready
    with qtbot.waitSignal(window.embedder_ready, timeout=60000):
        pass
    close(qtbot, window)


def test_embedding_worker_failure_restarts_once_then_offers_restart(qtbot, clean_db, tmp_path):
    window = make_window(qtbot, tmp_path)
    with qtbot.waitSignal(window.embedder_ready, timeout=60000):
        window.start()
    worker = window.embedding_worker
    real_load = worker._load
    attempts = []

    def crashing_load():  # a fake only to simulate the model crashing on load
        attempts.append(1)
        raise RuntimeError("simulated crash of the embedding worker")

    worker._load = crashing_load
    # A missed watchdog ping: a deadline no loop can meet makes the next check see a silent worker.
    allowed, worker.stale_after_s = worker.stale_after_s, -1.0
    with qtbot.waitSignal(worker.restarting, timeout=10000):
        worker.check()
    worker.stale_after_s = allowed
    assert "watchdog" in (window.banners.text("embedder") or "")
    with qtbot.waitSignal(window.embedder_failed, timeout=30000) as failed:
        pass
    assert len(attempts) == 1  # recreated once by itself, and that failed too
    assert "simulated crash" in failed.args[0]
    assert window.banners.banner("embedder").button.text() == "Restart"
    # Queries fail at once instead of waiting on a dead worker.
    with pytest.raises(Exception, match="stopped"):
        window.library.embedding_service.embed_query("anything", timeout=5)

    worker._load = real_load
    with qtbot.waitSignal(window.embedder_ready, timeout=60000):
        click_action(window, "embedder")
    assert window.banners.text("embedder") is None
    assert window.library.embed_query("ocean tides").shape == (384,)
    close(qtbot, window)


def test_a_model_load_that_hangs_shows_the_banner_and_the_window_keeps_painting(
    qtbot, clean_db, tmp_path, monkeypatch
):
    """The watchdog's failure path runs on the UI thread; it must never wait for the load it gives up on."""
    import itertools
    import threading
    import time

    import localrag.core.library as library_module
    import localrag.gui.services as services
    from localrag.gui.qt import QtCore

    gate = threading.Event()
    real_load = library_module.load_embedder
    hung = []

    def hanging_load(
        *args, **kwargs
    ):  # the fault injected: a model load that hangs until the test lets it go
        hung.append(1)
        gate.wait(300)
        return real_load(*args, **kwargs)

    load_timeout_s = 3.0
    monkeypatch.setattr(library_module, "load_embedder", hanging_load)
    monkeypatch.setattr(services, "EMBED_LOAD_TIMEOUT_S", load_timeout_s)
    window = make_window(qtbot, tmp_path)

    paints: list[float] = []

    class Painted(QtCore.QObject):
        def eventFilter(self, obj, event):  # noqa: N802 (Qt override)
            if event.type() == QtCore.QEvent.Type.Paint:
                paints.append(time.monotonic())
            return False

    painted = Painted()
    window.banners.installEventFilter(painted)
    repaint = QtCore.QTimer()
    repaint.timeout.connect(window.banners.update)
    repaint.start(20)
    try:
        with qtbot.waitSignal(window.store_ready, timeout=60000):
            window.start()
        worker = window.embedding_worker
        with qtbot.waitSignal(worker.restarting, timeout=60000) as restarting:
            pass
        assert "did not finish loading" in restarting.args[0]
        assert "did not finish loading" in (window.banners.text("embedder") or "")
        # The replacement's load hangs too: after its own timeout the banner offers Restart.
        with qtbot.waitSignal(window.embedder_failed, timeout=60000):
            pass
        assert window.banners.banner("embedder").button.text() == "Restart"
        assert len(hung) >= 2
        stalls = [b - a for a, b in itertools.pairwise(paints)]
    finally:
        repaint.stop()
        gate.set()  # the hung loads finish; their models are not kept
    # Had the UI thread waited for a hung load even once, it would have stopped painting for a load timeout.
    assert len(paints) > 2 * load_timeout_s / 0.1 and max(stalls) < load_timeout_s, max(stalls)
    with qtbot.waitSignal(window.embedder_ready, timeout=60000):
        click_action(window, "embedder")
    assert window.banners.text("embedder") is None
    close(qtbot, window)


def test_reembed_banner_runs_in_the_background_and_clears(qtbot, clean_db, tmp_path):
    from localrag.core.ingest.pipeline import Ingestor
    from localrag.core.store import models

    doc = tmp_path / "tides.txt"
    doc.write_text(TEXT)
    with Ingestor(clean_db) as ingestor:
        ingestor.enqueue([doc])
        assert ingestor.run().ready == 1
    active = clean_db.embedder.name
    # The document's vectors now come from another model only (as after switching models).
    with clean_db.connect() as conn:
        models.register_model(conn, "older-test-model", 384, activate=False)
        conn.execute(
            "UPDATE chunk_embeddings SET embedding_model = 'older-test-model' WHERE embedding_model = %s",
            (active,),
        )
        conn.commit()

    window = make_window(qtbot, tmp_path)
    with qtbot.waitSignal(window.reembed_checked, timeout=60000) as checked:
        window.start()
    assert checked.args == [1]
    banner = window.banners.banner("reembed")
    assert banner.button.text() == "Re-embed 1 document"
    assert "different embedding model" in banner.label.text()
    with qtbot.waitSignal(window.reembed_finished, timeout=60000) as finished:
        click_action(window, "reembed")
        assert "Re-embedding" in window.banners.text("reembed")
        assert window.banners.banner("reembed").progress.isVisible()
    assert finished.args == [0]
    assert window.banners.text("reembed") is None
    with clean_db.connect() as conn:
        counts = dict(
            conn.execute("SELECT embedding_model, count(*) FROM chunk_embeddings GROUP BY 1").fetchall()
        )
        conn.execute("DELETE FROM chunk_embeddings WHERE embedding_model = 'older-test-model'")
        conn.execute("DELETE FROM embedding_models WHERE name = 'older-test-model'")
        conn.commit()
    assert counts[active] == counts["older-test-model"] >= 1  # the old vectors were kept alongside
    close(qtbot, window)


def test_no_language_model_banner(qtbot, clean_db, saved_settings, tmp_path):
    from localrag.core.embed.model_files import default_gguf

    window = make_window(qtbot, tmp_path, gguf_path=str(tmp_path / "missing.gguf"))
    with qtbot.waitSignal(window.llm_checked, timeout=30000) as checked:
        window.start()
    assert "does not exist" in checked.args[0]
    banner = window.banners.banner("llm")
    assert banner.button.text() == "Choose a model…"
    assert "No language model" in banner.label.text()
    with qtbot.waitSignal(
        window.chat_panel.model_state_changed, timeout=60000, check_params_cb=lambda state: state == "failed"
    ):
        pass
    assert "No language model" in window.banners.text("llm")
    # Choosing a good file settles the check; the chat loads it at its next start.
    with qtbot.waitSignal(window.llm_checked, timeout=30000) as checked:
        window.set_gguf(str(default_gguf()))
    assert checked.args == [""]
    assert "next time" in window.banners.text("llm")
    close(qtbot, window)

    again = make_window(qtbot, tmp_path)
    assert again.library.settings.gguf_path == str(default_gguf())
    with qtbot.waitSignal(
        again.chat_panel.model_state_changed,
        timeout=60000,
        check_params_cb=lambda state: state in ("ready", "failed"),
    ) as state:
        again.start()
    assert state.args == ["ready"]
    assert again.banners.text("llm") is None
    close(qtbot, again)
