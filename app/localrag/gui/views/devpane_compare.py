"""The developer pane's Compare tab: the sides the last question set side by side, why each was taken, its
cell; and every document or collection name the question's words matched (``Evidence.comparison``)."""

from __future__ import annotations

from html import escape
from typing import Any

from localrag.core.answer.compare_table import Comparison
from localrag.gui.qt import QtWidgets
from localrag.gui.views.devpane_answer import _Page, field_of

COMPARE_COLUMNS = ("#", "Side", "Kind", "Why", "Cell", "[n]", "Figure")
COMPARE_HELP = (
    "The sides of a comparison: documents, collections or periods the question's words name (a word "
    "counts more the fewer names share it), each with the sentence or figure quoted for it"
)


class ComparePage(_Page):
    """The sides of the last question's comparison.

    Public:
        set_comparison(data, spans): a ``Comparison`` dict (``None``: the question compared nothing) and the
            evidence's spans its cells index.
        table: one row per side.
    """

    EMPTY = "The last question compared nothing."

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(
            COMPARE_COLUMNS,
            "Sides compared",
            COMPARE_HELP,
            self.EMPTY,
            "Select a side to see its cell.",
            parent,
        )

    def set_comparison(self, data: dict[str, Any] | None, spans: list[Any] | None = None) -> None:
        table = Comparison.from_dict(data)
        if table is None:
            self.items = []
            self.info.setText(escape(self.EMPTY))
            self._fill([], set())
            return
        spans = list(spans or [])
        names = "; ".join(
            f"{c.get('name')} ({', '.join(c.get('words') or [])}: {c.get('score')})" for c in table.considered
        )
        bits = [f"<b>{len(table.columns)} sides</b>", escape(table.change or "no comparable figures")]
        if names:
            bits.append("names matched: " + escape(names))
        self.info.setText(" · ".join(bits))
        self.items = []
        rows = []
        for i, col in enumerate(table.columns):
            s = spans[col.span] if 0 <= col.span < len(spans) else None
            text = str(field_of(s, "text") or "") if s is not None else ""
            self.items.append((col, text, s))
            number = f"[{field_of(s, 'number')}]" if s is not None else ""
            side = col.side
            rows.append([str(i + 1), side.name, side.kind, side.why, text or "—", number, col.figure])
        self._fill(rows, {0})

    def describe(self, item: Any) -> str:
        col, text, s = item
        where = ""
        if s is not None:
            name = field_of(s, "title") or field_of(s, "path")
            where = f"\n[{field_of(s, 'number')}] {name} · page {field_of(s, 'page_number')}"
        docs = ", ".join(str(d) for d in col.side.doc_ids) or "—"
        head = f"{col.side.name} ({col.side.kind}; documents {docs})\nWhy: {col.side.why}{where}"
        return f"{head}\n\n{text or 'Nothing found.'}"
