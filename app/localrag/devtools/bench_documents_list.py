"""``local-rag bench documents-list --docs N``: the documents panel over a library of N documents.

A throw-away embedded database is filled with N document rows (titles, paths, types, page and chunk counts of
a real library's spread; no chunks: the panel reads only the documents table). The listing is read as the
window reads it, on a worker that also makes the panel's rows (its time is reported apart: the window thread
does not wait for it), then the
real ``DocumentsPanel`` is shown offscreen (unless ``QT_QPA_PLATFORM`` says otherwise) and each operation a
person does on the window thread is timed, painting included: showing the listing, typing a search, choosing
a type, sorting by every column both ways, and scrolling from top to bottom a page at a time. The longest of
them is the longest stall a person would feel (the target: under 100 ms).

Qt is imported only when the bench runs.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from localrag.core.config import Settings
from localrag.core.ingest.documents import list_documents
from localrag.core.library import Library
from localrag.eval.beir import throwaway_store
from localrag.eval.machine import machine

STALL_MS = 100.0
SCROLL_PAGES = 40  # pages scrolled, spread from top to bottom


def main(argv: list[str]) -> int:
    """``local-rag bench documents-list ARGS``."""
    p = argparse.ArgumentParser(
        prog="local-rag bench documents-list",
        description="Time the documents panel's operations over a library of many documents.",
    )
    p.add_argument("--docs", type=int, default=20_000, help="documents in the library (default 20000)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    report = bench_documents_list(args.docs)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            print(f"{key:24} {value}")
    return 0


def fill(conn: Any, n: int) -> None:
    """``n`` documents: most ready, some failed or still in progress, of every type."""
    conn.execute(
        "INSERT INTO documents (path, title, doc_type, sha256, bytes, pages, chunks_total, chunks_embedded, "
        "status, error_code, error, indexed_at) "
        "SELECT '/library/' || (ARRAY['reports','manuals','notes','papers'])[1 + i %% 4] || '/doc-' || i || "
        "(ARRAY['.pdf','.md','.txt','.docx','.html'])[1 + i %% 5], "
        "(ARRAY['Annual report','Service manual','Meeting notes','Field study','Handbook'])[1 + i %% 5] "
        "|| ' ' || i, (ARRAY['pdf','markdown','text','docx','html'])[1 + i %% 5], md5(i::text), 1000 + i, "
        "1 + (i * 37) %% 400, 5 + (i * 53) %% 2000, CASE WHEN i %% 50 = 7 THEN (i * 17) %% 300 ELSE "
        "5 + (i * 53) %% 2000 END, CASE WHEN i %% 97 = 3 THEN 'failed' WHEN i %% 50 = 7 THEN 'embedding' "
        "ELSE 'ready' END, CASE WHEN i %% 97 = 3 THEN 'corrupt' END, CASE WHEN i %% 97 = 3 THEN "
        "'The file is damaged.' END, now() FROM generate_series(1, %s) i",
        (n,),
    )
    conn.commit()


def bench_documents_list(n_docs: int) -> dict[str, Any]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from localrag.gui.qt import QtCore, QtWidgets
    from localrag.gui.views.documents import DocumentsPanel
    from localrag.gui.views.documents_model import DocumentRow

    report: dict[str, Any] = {"documents": n_docs, "machine": machine()}
    with throwaway_store() as conninfo:
        library = Library(replace(Settings.load(), database_url=conninfo))
        library.open()
        try:
            with library.connect() as conn:
                fill(conn, n_docs)
                t = time.perf_counter()
                # As the window lists them: on a worker, which also makes the panel's rows.
                rows = [DocumentRow.from_info(i) for i in list_documents(conn)]
                report["listing_ms (worker)"] = round((time.perf_counter() - t) * 1000, 1)
        finally:
            library.close()

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    panel = DocumentsPanel()
    panel.resize(480, 760)
    panel.show()
    app.processEvents()
    timings: dict[str, float] = {}

    def timed(name: str, action: Callable[[], None]) -> None:
        t = time.perf_counter()
        action()
        panel.table.viewport().repaint()  # the paint a person waits for, now
        app.processEvents()
        timings[name] = max(timings.get(name, 0.0), round((time.perf_counter() - t) * 1000, 1))

    timed("show listing", lambda: panel.set_documents(rows))
    report["rows"] = panel.model.rowCount()
    timed("type a search", lambda: panel.search.setText("manual 12"))
    report["rows matching the search"] = panel.proxy.rowCount()
    timed("clear the search", lambda: panel.search.setText(""))
    pdf = panel.type_filter.findData("pdf")
    timed("choose a type", lambda: panel.type_filter.setCurrentIndex(pdf))
    timed("all types again", lambda: panel.type_filter.setCurrentIndex(0))
    head = panel.table.horizontalHeader()
    for col, name in enumerate(panel.model.COLUMNS):
        for order in (QtCore.Qt.SortOrder.AscendingOrder, QtCore.Qt.SortOrder.DescendingOrder):
            timed("sort by a column", functools.partial(head.setSortIndicator, col, order))
        report.setdefault("first row sorted by", {})[name] = panel.proxy.index(0, 0).data()
    timed("newest first again", lambda: head.setSortIndicator(-1, QtCore.Qt.SortOrder.AscendingOrder))
    bar = panel.table.verticalScrollBar()
    for i in range(SCROLL_PAGES + 1):
        timed("scroll a page", functools.partial(bar.setValue, bar.maximum() * i // SCROLL_PAGES))
    panel.close()
    report["ms (window thread, longest of each)"] = timings
    worst = max(timings.values())
    report["longest stall ms"] = worst
    report["under target"] = worst < STALL_MS
    return report
