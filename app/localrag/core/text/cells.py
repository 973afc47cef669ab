"""Rows of figures read as cells: a table row's label, and each value with the column it sits under.

A quoted row of a financial statement, "Purchases of property, plant and equipment (PP&E) (1,577) (1,373)
(1,420)", is three figures without their years. The page says which: a line above the row ends in as many
column headings ("(Millions) 2018 2017 2016"). The evidence answer then shows "Purchases of property, plant
and equipment (PP&E) — 2018: (1,577) · 2017: (1,373) · 2016: (1,420)", and the column a question names
(2018) is marked. Plain years are column headings in any document; the domain pack acting on a document may
add its own ("FY2018", "Q4 2023" for financial reports).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# One figure of a row: "1,577", "(1,577)", "$ 14,694", "$ (1,577)", "-3.2", "12.5%", or a dash for none.
FIGURE = r"(?:[$€£¥]\s?)?\(?-?[$€£¥]?\s?\d(?:[\d,]*\d)?(?:\.\d+)?\)?%?|[—–-]"
# A line that ends in two or more figures: "Net sales $ 14,694 $ 14,544 $ 12,861", "Other — net 9 (6) (4)".
FIGURES_ROW = re.compile(rf"(?:\s+(?:{FIGURE})){{2,}}\s*$")
_FIGURE = re.compile(rf"(?:{FIGURE})(?=\s|$)")
# A column heading: a year ("2018"). A domain pack may know more ("FY2018", "Q4 2023": ``extra`` below).
_YEAR_HEADING = r"(?<![\w.])(?:19|20)\d\d(?![\w.])"
_HEADING_IN_LINE = re.compile(_YEAR_HEADING)
# How far above a row its column headings are looked for (lines).
MAX_LINES_UP = 80
# A question that asks for a quantity.
_ASKS_QUANTITY = re.compile(
    r"\b(?:how (?:much|many)|amount|ratio|rate|percentage|percent|growth|total|figure|value|calculate|"
    r"compute)\b|%",
    re.IGNORECASE,
)
# A year the question names: "2018", and so "FY2018", "fiscal 2018", "Q4 2023".
_ASKED_YEAR = re.compile(r"((?:19|20)\d\d)\b")


@dataclass
class Cells:
    """A row's ``label`` and its ``(column heading, value)`` pairs, left to right; ``asked`` holds the
    indexes of the columns the question names; ``marks`` the ``(start, end)`` offsets in the page text of
    the asked columns' headings and values (for the source viewer to outline them; empty when not known)."""

    label: str
    columns: list[tuple[str, str]]
    asked: list[int]
    marks: list[tuple[int, int]] = field(default_factory=list)

    def text(self) -> str:
        return f"{self.label} — " + " · ".join(f"{h}: {v}" for h, v in self.columns)

    def to_dict(self) -> dict[str, object]:
        return {
            "label": self.label,
            "columns": [list(c) for c in self.columns],
            "asked": list(self.asked),
            "marks": [list(m) for m in self.marks],
        }

    @classmethod
    def from_dict(cls, data: dict[str, object] | None) -> Cells | None:
        if not data:
            return None
        columns = [(str(h), str(v)) for h, v in data.get("columns") or []]  # type: ignore[attr-defined]
        asked = [int(i) for i in data.get("asked") or []]  # type: ignore[attr-defined]
        marks = [(int(a), int(b)) for a, b in data.get("marks") or []]  # type: ignore[attr-defined]
        return cls(str(data.get("label") or ""), columns, asked, marks)


_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_OTHER_FIGURE = re.compile(r"\(\d|\d,\d|\d{3,}")


def is_column_headings(text: str) -> bool:
    """Whether ``text`` is a table's column headings ("Twelve Months Ended June 30, GAAP results 2022
    $ million 2023 $ million"): two or more years and no other figure, not a sentence. It names the columns of
    the answer but is never the answer."""
    flat = " ".join(text.split())
    if not flat or flat.endswith((".", "?", "!")) or len(set(_YEAR.findall(flat))) < 2:
        return False
    return not _OTHER_FIGURE.search(_YEAR.sub(" ", flat))


def asks_for_quantity(question: str) -> bool:
    """Whether a question asks for a quantity ("how much", an amount, a total, a ratio, a rate, growth…)."""
    return bool(_ASKS_QUANTITY.search(question))


def is_figures_row(line: str) -> bool:
    """Whether ``line`` is a label followed by two or more figures."""
    return bool(FIGURES_ROW.search(line)) and bool(re.search(r"[A-Za-z]", FIGURES_ROW.sub("", line)))


def figures_share(text: str) -> float:
    """The share of ``text``'s non-empty lines that are rows of figures (a label, two or more numbers)."""
    lines = [line for line in text.split("\n") if line.strip()]
    return sum(1 for line in lines if FIGURES_ROW.search(line)) / len(lines) if lines else 0.0


def split_row(line: str) -> tuple[str, list[str]] | None:
    """A row's label and its figures, or None when ``line`` is not a row of figures."""
    line = " ".join(line.split())
    match = FIGURES_ROW.search(line)
    if match is None:
        return None
    label = line[: match.start()].rstrip(" $€£¥:")
    figures = [" ".join(f.split()) for f in _FIGURE.findall(line[match.start() :].strip())]
    if not re.search(r"[A-Za-z]", label) or len(figures) < 2:
        return None
    if all(_HEADING_IN_LINE.fullmatch(f) for f in figures):
        return None  # years: a table's column headings, not a row of figures
    return label, figures


def _heading_pattern(extra: str) -> re.Pattern[str]:
    return re.compile(f"{extra}|{_YEAR_HEADING}", re.IGNORECASE) if extra else _HEADING_IN_LINE


def headings_above(page: str, row_start: int, count: int, extra: str = "") -> list[str] | None:
    """The ``count`` column headings of the table a row at ``row_start`` of ``page`` belongs to: the years or
    quarters of the nearest line above that has exactly that many and no other figure ("(Millions) 2018 2017
    2016", "GAAP results 2022 $ million 2023 $ million", "Q4 2023 Q4 2022")."""
    found = _headings_at(page, row_start, count, extra)
    return [h for h, _ in found] if found is not None else None


def _headings_at(
    page: str, row_start: int, count: int, extra: str = ""
) -> list[tuple[str, tuple[int, int]]] | None:
    """``headings_above`` with each heading's offsets in ``page``; ``extra``: a regular expression for column
    headings besides years, from the domain pack acting on the document ("FY2018", "Q4 2023")."""
    pattern = _heading_pattern(extra)
    end = max(0, row_start)
    for _ in range(MAX_LINES_UP):
        if end <= 0:
            break
        start = page.rfind("\n", 0, end - 1) + 1
        line = page[start:end]
        matches = list(pattern.finditer(line))
        if len(matches) == count and not _OTHER_FIGURE.search(pattern.sub(" ", line)):
            return [(_heading(m.group(0)), (start + m.start(), start + m.end())) for m in matches]
        end = start
    return None


def _heading(text: str) -> str:
    text = " ".join(text.split())
    return text.upper() if text[:1].isalpha() else text


def _figure_offsets(row: str, row_start: int, count: int) -> list[tuple[int, int]]:
    """The page offsets of a row's ``count`` figures (``row`` as it stands at ``row_start``), or [] when they
    are not found as split."""
    match = FIGURES_ROW.search(row)
    if match is None:
        return []
    found = [(row_start + m.start(), row_start + m.end()) for m in _FIGURE.finditer(row, match.start())]
    return found if len(found) == count else []


def cells_of(row: str, page: str, row_start: int, question: str = "", headings: str = "") -> Cells | None:
    """``row`` (a line at ``row_start`` of ``page``) as cells under its column headings, or None when it is
    not a row of figures or its headings are not found. ``headings``: column headings besides years (see
    ``_headings_at``)."""
    split = split_row(row)
    if split is None:
        return None
    label, figures = split
    found = _headings_at(page, row_start, len(figures), headings)
    if found is None:
        return None
    names = [h for h, _ in found]
    years = {m.group(1) for m in _ASKED_YEAR.finditer(question)}
    asked = [i for i, h in enumerate(names) if any(y in h for y in years)]
    values = _figure_offsets(row, row_start, len(figures)) if page[row_start:].startswith(row) else []
    marks = [m for i in asked for m in (found[i][1], values[i])] if values else []
    return Cells(label, list(zip(names, figures, strict=True)), asked, marks)


def row_columns(
    row: str, page: str, row_start: int, headings: str = ""
) -> tuple[str, list[tuple[str, tuple[int, int], str, tuple[int, int]]]] | None:
    """``row`` (a line at ``row_start`` of ``page``) as its label and, for each of its figures, the column
    heading above it, the heading's offsets in ``page``, the figure and its offsets; None when it is not a row
    of figures, its headings are not found, or it does not stand at ``row_start``."""
    split = split_row(row)
    if split is None or not page[row_start:].startswith(row):
        return None
    label, figures = split
    found = _headings_at(page, row_start, len(figures), headings)
    values = _figure_offsets(row, row_start, len(figures))
    if found is None or not values:
        return None
    return label, [
        (name, where, figure, place)
        for (name, where), figure, place in zip(found, figures, values, strict=True)
    ]
