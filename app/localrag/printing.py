"""HTML printed to PDF with Qt's printing (``QTextDocument`` on a ``QPdfWriter``): an exported chat, from the
window (File → Export chat…) or from ``local-rag chat export --format pdf``.

A front end's helper, never the core's: it needs the Qt GUI libraries. It runs on any thread once a
``QGuiApplication`` exists; ``gui_application`` makes one without a screen for the command line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def gui_application() -> Any:
    """The process's ``QGuiApplication``, made (drawing off screen unless a platform was chosen) when the
    command line has none."""
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance()
    if app is None:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QGuiApplication(["local-rag"])
    return app


def html_to_pdf(html: str, path: Path, *, title: str = "") -> None:
    """Print ``html`` to the PDF file ``path`` (A4, 15 mm margins); links stay links.

    Raises:
        OSError: the file cannot be written.
    """
    from PySide6.QtCore import QMarginsF
    from PySide6.QtGui import QPageLayout, QPageSize, QPdfWriter, QTextDocument

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = QPdfWriter(str(path))
    writer.setPageSize(QPageSize(QPageSize.PageSizeId.A4))
    writer.setPageMargins(QMarginsF(15, 15, 15, 15), QPageLayout.Unit.Millimeter)
    writer.setTitle(title)
    writer.setCreator("Local RAG")
    document = QTextDocument()
    document.setHtml(html)
    document.print_(writer)
    del writer  # the file is finished when the writer goes
    if not path.is_file() or path.stat().st_size == 0:
        raise OSError(f"Could not write {path}.")
