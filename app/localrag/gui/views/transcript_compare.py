"""A comparison as the transcript shows it: a table with a column per side (a document, a collection or a
period), each cell the sentence or figure quoted from that side with its ``[n]`` (``ev:T:I``, a link to
exactly that sentence) and page, "nothing found" where a side has none, and the line saying what changed.
Plain HTML from plain data, coloured from the scheme in force (``ChatPanel._colors``)."""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from localrag.core.answer.compare_table import NOTHING, Comparison
from localrag.core.answer.quotes import Evidence, EvidenceSpan

COMPARED = "Side by side, from your documents:"


def comparison_of(evidence: Evidence | None) -> Comparison | None:
    if evidence is None or not evidence.answered:
        return None
    return Comparison.from_dict(evidence.comparison)


def comparison_html(
    evidence: Evidence | None, said: Callable[[int, EvidenceSpan], str], label: str, c: dict[str, str]
) -> str:
    """The table (empty when the answer compares nothing); ``said(i, span)`` is the HTML of quoted span ``i``
    with its link and page, as the transcript writes a quotation; ``label`` heads the table."""
    table = comparison_of(evidence)
    if table is None or evidence is None:
        return ""
    border = c.get("button_border", c["muted"])
    cell = f"style='border:1px solid {border}; padding:6px 8px; background-color:{c['quote_bg']}'"
    width = max(1, 100 // len(table.columns))
    heads = "".join(
        f"<th width='{width}%' align='left' {cell}>{escape(col.side.name)}</th>" for col in table.columns
    )
    cells = []
    for col in table.columns:
        s = table.cell(col, evidence.spans)
        if s is None:
            text = f"<i style='color:{c['muted']}'>{escape(NOTHING.format(name=col.side.name))}</i>"
        else:
            text = said(col.span, s)
        cells.append(f"<td valign='top' {cell}>{text}</td>")
    change = f"<p style='margin-top:4px'><b>{escape(table.change)}</b></p>" if table.change else ""
    return (
        label
        + "<table width='100%' cellspacing='0' cellpadding='6'"
        + " style='border-collapse:collapse; margin-bottom:4px'>"
        + f"<tr>{heads}</tr><tr>{''.join(cells)}</tr></table>"
        + change
    )
