"""The cells of a page's tables, each with where it stands on the page: what a computed figure is made from.

Two shapes of table are read:

- cells separated by tabs, as the Word and HTML loaders write a table: a line without figures names the
  columns ("Sales channel⇥2023 (£)⇥2022 (£)⇥Change", or only "2023 (£)⇥2022 (£)" above rows that start with
  their label), and each line under it is a row — its first cell the label, the others the values under
  those headings;
- a row of figures in running text (a PDF's statement, "Net sales $ 14,694 $ 14,544"), whose column headings
  are the years (or the headings a domain pack knows) of a line above it (``cells.row_columns``).

Each cell keeps the offsets of its row, its value and its column heading in the page text, so the source
viewer can outline exactly the cell and the heading it sits under.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from localrag.core.text.cells import is_figures_row, row_columns

# A figure as a table prints it: "1,046,900", "(985,600)", "$ 14,694", "−1.0%", "+16.2%", "6.75".
_NUMBER = re.compile(
    r"(?P<sign>[-−–+]?)\s?(?P<cur>[$€£¥])?\s?(?P<open>\()?\s?(?P<cur2>[$€£¥])?\s?"
    r"(?P<digits>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?\s?(?P<close>\))?\s?(?P<pct>%)?"
)
_YEAR_ONLY = re.compile(r"^(?:FY\s?|Q[1-4]\s)?(?:19|20)\d\d\b")
_DASH = re.compile(r"^[—–-]$")
# A scale a table states near its headings: "($ million)", "(in thousands)", "(Millions)", "$m".
_SCALE = re.compile(r"\b(?:in\s+)?(thousands?|millions?|billions?)\b|\$\s?(m|bn)\b", re.IGNORECASE)
_CURRENCY = re.compile(r"[$€£¥]")
# How many lines above a table's headings are read for its scale ("(in millions)").
SCALE_LINES = 3


@dataclass(frozen=True)
class TableCell:
    """One value of a table row: the row's ``label``, the ``column`` heading it sits under, the ``value`` as
    printed and as a ``number`` (``None`` for a dash or a word), and its ``unit`` ("£", "$ million", "%",
    or ""). Offsets in the page text: ``row`` (the whole row), ``place`` (the value) and ``heading`` (the
    column heading; ``(-1, -1)`` when it is not on the page). ``table`` numbers the tables of a page."""

    label: str
    column: str
    value: str
    number: float | None
    unit: str
    row: tuple[int, int]
    place: tuple[int, int]
    heading: tuple[int, int]
    table: int


def parse_number(text: str) -> float | None:
    """The value of a printed figure: "(1,577)" → -1577, "−1.0%" → -1.0, "$ 14,694" → 14694; None for a
    dash, a word or anything else than one figure."""
    m = _NUMBER.fullmatch(text.strip())
    if m is None or bool(m.group("open")) != bool(m.group("close")):
        return None
    value = float(m.group("digits").replace(",", "") + (m.group("frac") or ""))
    negative = bool(m.group("open")) or m.group("sign") in ("-", "−", "–")
    return -value if negative else value


def _leading_figure(cell: str) -> str:
    """The figure a cell starts with ("55,800" of "55,800  Balance sheet at…"), or '' when it starts with
    none."""
    m = _NUMBER.match(cell.strip())
    if m is None or not m.group("digits"):
        return ""
    figure = m.group(0).strip()
    return figure if parse_number(figure) is not None else ""


def _unit(heading: str, value: str, scale: str) -> str:
    """A value's unit from its heading ("2023 (£)", "$ million"), its own signs ("$ 14,694", "12.5%") and
    the scale the table states ("(in millions)")."""
    if value.rstrip().endswith("%"):
        return "%"
    currency = _CURRENCY.search(value) or _CURRENCY.search(heading)
    parts = [currency.group(0)] if currency else []
    if "%" in heading and not parts:
        return "%"
    found = _SCALE.search(heading)
    word = scale
    if found:
        word = (found.group(1) or {"m": "million", "bn": "billion"}[found.group(2).lower()]).lower()
    if word:
        parts.append(word.rstrip("s"))
    return " ".join(parts)


def _cell(
    label: str,
    column: str,
    figure: str,
    scale: str,
    row: tuple[int, int],
    place: tuple[int, int],
    heading: tuple[int, int],
    table: int,
) -> TableCell:
    """The cell of ``figure`` (as printed), its number and its unit read from it, its heading and the table's
    ``scale``."""
    number, unit = parse_number(figure), _unit(column, figure, scale)
    return TableCell(label, column, figure, number, unit, row, place, heading, table)


def _cells_of_line(line: str, start: int) -> list[tuple[str, tuple[int, int]]]:
    """A tab-separated line's cells, each with its offsets in the page (trimmed)."""
    out = []
    offset = 0
    for piece in line.split("\t"):
        stripped = piece.strip()
        lead = len(piece) - len(piece.lstrip())
        a = start + offset + lead
        out.append((stripped, (a, a + len(stripped))))
        offset += len(piece) + 1
    return out


def _is_heading_line(cells: list[tuple[str, tuple[int, int]]]) -> bool:
    """Whether a tab-separated line names columns: no cell after the first starts with a figure other than a
    year ("2023 (£)")."""
    rest = [c for c, _ in cells[1:] if c]
    return bool(rest) and all(not _leading_figure(c) or _YEAR_ONLY.match(c) for c in rest)


def _scale_above(page: str, start: int) -> str:
    """The scale ("million") stated on the lines just above ``start``, or ''."""
    lines = [ln for ln in page[:start].splitlines() if ln.strip()][-SCALE_LINES:]
    for line in reversed(lines):
        found = _SCALE.search(line)
        if found and len(line) < 120:
            return (found.group(1) or {"m": "million", "bn": "billion"}[found.group(2).lower()]).lower()
    return ""


def tab_cells(page: str) -> list[TableCell]:
    """The cells of the tab-separated tables of ``page``."""
    out: list[TableCell] = []
    heading: list[tuple[str, tuple[int, int]]] = []
    scale, table = "", -1
    pos = 0
    for line in page.split("\n"):
        start, pos = pos, pos + len(line) + 1
        if "\t" not in line:
            if line.strip():
                heading = []
            continue
        cells = _cells_of_line(line, start)
        if _is_heading_line(cells):
            heading, table = cells, table + 1
            scale = _scale_above(page, start)
            continue
        if not heading:
            continue
        label, row = cells[0][0], (start, start + len(line.rstrip()))
        names = heading[1:] if len(heading) == len(cells) else heading
        if len(names) != len(cells) - 1 or not re.search(r"[^\W\d_]", label):
            continue  # a row with a cell missing: its values cannot be placed under their headings
        for (name, where), (cell, place) in zip(names, cells[1:], strict=True):
            figure = _leading_figure(cell) or (cell if _DASH.match(cell) else "")
            if not figure:
                continue
            value_place = (place[0], place[0] + len(figure))
            out.append(_cell(label, name, figure, scale, row, value_place, where, table))
    return out


def figure_row_cells(page: str, headings: str = "") -> list[TableCell]:
    """The cells of the rows of figures in running text whose column headings are found above them."""
    out: list[TableCell] = []
    pos = 0
    tables: dict[tuple[int, int], int] = {}
    for line in page.split("\n"):
        start, pos = pos, pos + len(line) + 1
        if "\t" in line or not is_figures_row(line):
            continue
        found = row_columns(line, page, start, headings)
        if found is None:
            continue
        label, columns = found
        table = tables.setdefault(columns[0][1], 1000 + len(tables))
        scale = _scale_above(page, columns[0][1][0])
        row = (start, start + len(line.rstrip()))
        out.extend(
            _cell(label, name, figure, scale, row, place, where, table)
            for name, where, figure, place in columns
        )
    return out


def page_cells(page: str, headings: str = "") -> list[TableCell]:
    """Every table cell of ``page`` with a place: tab-separated tables, then rows of figures under headings
    (``headings``: a regular expression for column headings besides years, from a domain pack)."""
    return tab_cells(page) + figure_row_cells(page, headings)
