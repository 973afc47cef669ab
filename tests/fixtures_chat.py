"""Helpers the chat tests share: index files into an emptied store, run with some settings changed, and one
warmed generation worker and chat panel (real model, real store)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from fixtures_docs import empty_store


def index(library: Any, paths: Sequence[Path], *, ready: int | None = None, empty: bool = True) -> Any:
    """Index ``paths`` (files or folders) with the real pipeline, into an emptied store by default; ``ready``
    documents (default: one per path) must come out ready."""
    from localrag.core.ingest.pipeline import index_paths

    if empty:
        empty_store(library)
    summary = index_paths(library, paths)
    assert summary.ready == (len(paths) if ready is None else ready), summary
    return summary


@contextlib.contextmanager
def changed_settings(library: Any, **values: Any) -> Iterator[Any]:
    """The library with these settings changed, and back as they were afterwards."""
    settings = library.settings
    saved = {name: getattr(settings, name) for name in values}
    for name, value in values.items():
        setattr(settings, name, value)
    try:
        yield library
    finally:
        for name, value in saved.items():
            setattr(settings, name, value)


# Short answers and a small context: the real model, fast. One thread: llama.cpp's threads spin at their
# barriers, and on a busy machine (other test processes) two of them slow generation down many times over.
FAST = {"context_tokens": 300, "fast_llm_copy": False, "threads": 1, "answer_lead": "auto"}


def warmed_worker(library: Any) -> Iterator[Any]:
    """One generation worker with its model loaded (as the window shares one), shut down afterwards."""
    from localrag.gui.chat_worker import READY, ChatWorker
    from localrag.gui.qt import QtCore

    worker = ChatWorker(library)
    loop = QtCore.QEventLoop()
    worker.model_ready.connect(loop.quit)
    worker.model_failed.connect(loop.quit)
    QtCore.QTimer.singleShot(60000, loop.quit)
    worker.warm_up()
    loop.exec()
    assert worker.model_state == READY, worker.model_error
    yield worker
    assert worker.shutdown(60000)


def chat_panel(qtbot: Any, library: Any, worker: Any) -> Iterator[Any]:
    """A shown chat panel on the shared worker; a test that ended mid-answer lets the worker finish."""
    from localrag.gui.views.chat import ChatPanel

    panel = ChatPanel(library, worker=worker)
    qtbot.addWidget(panel)
    panel.resize(820, 700)
    panel.show()
    panel.warm_up()
    yield panel
    panel.shutdown()
    if worker.busy:
        with qtbot.waitSignal(worker.request_finished, timeout=60000):
            worker.cancel()


def passage_of(page: str, start: int, end: int, *, page_number: int = 2, doc_id: int = 7) -> Any:
    """A passage of a PDF manual's page as search hands it over: ``page[start:end]`` with its offsets."""
    from localrag.core.retrieve.results import Result

    return Result(
        chunk_ids=[1],
        doc_id=doc_id,
        doc_type="pdf",
        title="Widget manual",
        path="/docs/widget.pdf",
        page_number=page_number,
        heading_path="",
        text=page[start:end],
        similarity=0.5,
        char_start=start,
        char_end=end,
    )
