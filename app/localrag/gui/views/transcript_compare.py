"""A comparison as the transcript shows it: a table with a column per side (a document, a collection or a
period), each cell the sentence or figure quoted from that side with its ``[n]`` (``ev:T:I``, a link to
exactly that sentence) and page, "nothing found" where a side has none, and the line saying what changed.
Plain HTML from plain data, coloured from the scheme in force (``ChatPanel._colors``)."""

from __future__ import annotations

from html import escape

from localrag.core.answer.citations import page_phrase
from localrag.core.answer.compare import NOTHING, Comparison
from localrag.gui.views import transcript as t

COMPARED = "Side by side, from your documents:"


def comparison_of(turn: t.Turn) -> Comparison | None:
    ev = turn.evidence
    if ev is None or not ev.answered:
        return None
    return Comparison.from_dict(ev.comparison)


def comparison_html(turn: t.Turn, index: int, c: dict[str, str]) -> str:
    """The table (empty when the answer compares nothing)."""
    table = comparison_of(turn)
    if table is None or turn.evidence is None:
        return ""
    spans = turn.evidence.spans
    border = c.get("button_border", c["muted"])
    cell = f"style='border:1px solid {border}; padding:6px 8px; background-color:{c['quote_bg']}'"
    width = max(1, 100 // len(table.columns))
    heads = "".join(
        f"<th width='{width}%' align='left' {cell}>{escape(col.side.name)}</th>" for col in table.columns
    )
    cells = []
    for col in table.columns:
        s = table.cell(col, spans)
        if s is None:
            said = f"<i style='color:{c['muted']}'>{escape(NOTHING.format(name=col.side.name))}</i>"
        else:
            i = col.span
            ref = turn.sources[s.number - 1] if turn.valid(s.number) else None
            where = ""
            if t._has_pages(ref, s.page_number):
                page = t._page_html(page_phrase(s.page_number, s.page_label))
                where = f"<span style='color:{c['muted']}'> · {page}</span>"
            said = f"“{t._quoted(s)}”&nbsp;<a href='ev:{index}:{i}' style='{t._LINK}'>[{s.number}]</a>{where}"
        cells.append(f"<td valign='top' {cell}>{said}</td>")
    change = f"<p style='margin-top:4px'><b>{escape(table.change)}</b></p>" if table.change else ""
    return (
        t._label(COMPARED, c)
        + "<table width='100%' cellspacing='0' cellpadding='6'"
        + " style='border-collapse:collapse; margin-bottom:4px'>"
        + f"<tr>{heads}</tr><tr>{''.join(cells)}</tr></table>"
        + change
    )
