"""File → Export chat…: the chat shown, with its sources, as Markdown, one HTML file or a PDF.

The text is made by ``core/answer/export.py`` (the same as ``local-rag chat export``); a PDF is that HTML
printed by Qt (``localrag.printing``). Reading the chat, rendering and writing the file run in the background.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from localrag.gui.qt import QtWidgets
from localrag.gui.tasks import Op

FILTERS = {
    "md": "Markdown (*.md)",
    "html": "Web page, one file (*.html)",
    "pdf": "PDF (*.pdf)",
}


def export_chat(library: Any, chat_id: int, path: Path, fmt: str) -> Path:
    """Write chat ``chat_id`` to ``path`` in ``fmt`` (blocking: run it in an ``Op``)."""
    from localrag.core.answer import export

    with library.connect() as conn:
        chat, text = export.export_chat(conn, chat_id, fmt)
    if fmt == "pdf":
        from localrag.printing import html_to_pdf

        html_to_pdf(text, path, title=chat.title)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def format_for(path: str, chosen_filter: str) -> str:
    """The format a file name asks for (its extension), else the filter picked in the dialog."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix in FILTERS:
        return suffix
    if suffix == "htm":
        return "html"
    return next((fmt for fmt, f in FILTERS.items() if f == chosen_filter), "md")


def export_dialog(parent: QtWidgets.QWidget, library: Any, chat_id: int | None, title: str, say: Any) -> None:
    """Ask where to save the chat shown, then write it in the background; ``say(text)`` tells the outcome."""
    if chat_id is None:
        say("Nothing to export yet: ask a question first (a new chat is saved with its first answer).")
        return
    from localrag.core.answer.export import file_name

    stem = file_name(title, "md", chat_id)
    path, chosen = QtWidgets.QFileDialog.getSaveFileName(
        parent, "Export chat", str(Path.home() / stem), ";;".join(FILTERS.values()), FILTERS["md"]
    )
    if not path:
        return
    fmt = format_for(path, chosen)
    target = Path(path) if Path(path).suffix else Path(f"{path}.{fmt}")
    say(f"Exporting the chat to {target.name}…")
    Op(lambda: export_chat(library, chat_id, target, fmt), owner=parent).success(
        lambda p: say(f"Chat exported to {p}")
    ).failure(lambda message, _known: say(f"The chat was not exported: {message}")).run_in_background()
