"""A comparison's table: a column per side with its cell, and the line saying what changed. Plain data, read
back from a saved answer by every front end; ``compare.py`` builds it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from localrag.core.answer.compare_sides import DOCUMENT, Side

NOTHING = "Nothing found in {name} for this."
# A sentence's figure: "£38,000", "60p", "12.5%", "1,046,900" (a year or a day of a month is none).


@dataclass
class Column:
    """A side and its cell: ``span`` indexes the evidence's spans (-1: nothing found there); ``figure`` is
    the one figure its cell holds, as printed ("" when none or several)."""

    side: Side
    span: int = -1
    figure: str = ""
    amount: float | None = None
    unit: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.side.to_dict(),
            "span": self.span,
            "figure": self.figure,
            "amount": self.amount,
            "unit": self.unit,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Column:
        side = Side(
            str(data.get("name") or ""),
            str(data.get("kind") or DOCUMENT),
            [int(d) for d in data.get("doc_ids") or []],
            str(data.get("why") or ""),
            str(data.get("year") or ""),
        )
        amount = data.get("amount")
        return cls(
            side,
            int(data.get("span", -1)),
            str(data.get("figure") or ""),
            float(amount) if amount is not None else None,
            str(data.get("unit") or ""),
        )


@dataclass
class Comparison:
    """The table: its ``columns`` (a side and its cell each), the ``change`` line ("" when the figures are
    not comparable), and every name weighed for the sides (``considered``, the developer pane)."""

    columns: list[Column]
    change: str = ""
    considered: list[dict[str, Any]] = field(default_factory=list)

    def cell(self, column: Column, spans: Sequence[Any]) -> Any:
        return spans[column.span] if 0 <= column.span < len(spans) else None

    def text(self, spans: Sequence[Any]) -> str:
        """The table as lines: each side with its quoted cell and ``[n]``, or that nothing was found; then
        what changed."""
        lines = [f"Side by side: {' | '.join(c.side.name for c in self.columns)}"]
        for c in self.columns:
            s = self.cell(c, spans)
            said = f"“{s.shown}” [{s.number}]" if s is not None else NOTHING.format(name=c.side.name)
            lines.append(f"{c.side.name}: {said}")
        if self.change:
            lines.append(self.change)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": [c.to_dict() for c in self.columns],
            "change": self.change,
            "considered": list(self.considered),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Comparison | None:
        if not data or not data.get("columns"):
            return None
        return cls(
            [Column.from_dict(c) for c in data["columns"]],
            str(data.get("change") or ""),
            list(data.get("considered") or []),
        )
