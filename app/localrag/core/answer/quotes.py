"""What an answer quotes: each span with its source, page and offsets (``EvidenceSpan``), and the whole
finding (``Evidence``: answered, or the closest passages to read instead). Made by ``evidence.find_evidence``;
kept with the chat and shown by the window, ``ask`` and the API."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from localrag.core.answer.figures import Computation, Operand
from localrag.core.answer.notices import NOT_ANSWERED_TEXT
from localrag.core.text import spans as sp
from localrag.core.text.cells import Cells
from localrag.core.text.reading import CODE_SIGNS

ANSWERED, NOT_FOUND = "answered", "not_found"
_LISTED = "The closest passages are listed below."
NOT_FOUND_TEXT = f"{NOT_ANSWERED_TEXT} {_LISTED}"
# A not-found answer that names the sentence the reader found likeliest, below its bar for an answer.
NEAREST = "The nearest sentence, which may not answer it:"
NEAREST_TEXT = f"{NOT_ANSWERED_TEXT} {NEAREST} {{quote}} [{{number}}]\n{_LISTED}"


@dataclass
class EvidenceSpan:
    """One quoted sentence: its text, the source ``[number]`` it is from, where it is, and why it was chosen.

    ``char_start``/``char_end`` are offsets in the page text (like a chunk's), ``-1`` when the passage it came
    from was not an exact slice of the page (a join of chunks that did not overlap exactly)."""

    text: str
    number: int
    doc_id: int
    title: str
    path: str
    page_number: int
    char_start: int
    char_end: int
    score: float
    features: dict[str, float] = field(default_factory=dict)
    # Quoted rows of figures read as cells under their columns' headings (``cells.Cells.to_dict``, a row
    # each), else empty.
    cells: list[dict[str, Any]] = field(default_factory=list)
    domain: str = ""  # the domain pack acting on its document (``core/hooks.py``)
    page_label: str = ""  # the number printed on its page when it is not ``page_number``
    section: str = ""  # the heading path of the section it is in on its page ('' when not known)

    @property
    def rows(self) -> list[Cells]:
        return [row for row in map(Cells.from_dict, self.cells) if row is not None]

    @property
    def shown(self) -> str:
        """The sentence as a person reads it; rows of figures as their labels and each value in its column."""
        rows = self.rows
        return "; ".join(row.text() for row in rows) if rows else display(self.text)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["score"] = round(self.score, 4)
        d["features"] = {k: round(v, 4) for k, v in self.features.items()}
        return d

    @classmethod
    def of_operand(cls, o: Operand, text: str, score: float = 0.0) -> EvidenceSpan:
        """A computation's operand as a span: its row on its page, quoted as ``text``."""
        return cls(
            text=text,
            number=o.number,
            doc_id=o.doc_id,
            title=o.title,
            path=o.path,
            page_number=o.page_number,
            char_start=o.row[0],
            char_end=o.row[1],
            score=score,
            page_label=o.page_label,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvidenceSpan:
        known = {f: data[f] for f in cls.__dataclass_fields__ if f in data}
        known.setdefault("features", {})
        known.setdefault("cells", [])
        for name, default in (
            ("text", ""),
            ("number", 0),
            ("doc_id", 0),
            ("title", ""),
            ("path", ""),
            ("page_number", 1),
            ("char_start", -1),
            ("char_end", -1),
            ("score", 0.0),
        ):
            known.setdefault(name, default)
        return cls(**known)


@dataclass
class Evidence:
    """What the sources answer: ``status`` is ``answered`` (``spans`` hold the answer) or ``not_found``
    (``closest`` are the numbers of the passages to read instead). ``kind`` is the question's kind
    (``identifier``, ``number`` or ``""``); ``candidates`` are the best-scored sentences, for the developer
    pane."""

    status: str
    spans: list[EvidenceSpan] = field(default_factory=list)
    closest: list[int] = field(default_factory=list)
    kind: str = ""
    candidates: list[EvidenceSpan] = field(default_factory=list)
    seconds: float = 0.0
    # The computation the question asks for (``figures.Computation.to_dict``), or None.
    figures: dict[str, Any] | None = None
    # The embedding model's share of ``seconds``; what says whether the documents answer at all
    # (``reader.ANSWERS_SIGNALS``).
    embed_seconds: float = 0.0
    signals: dict[str, float] = field(default_factory=dict)
    # The sides set side by side, each with its cell (``compare_table.Comparison.to_dict``), or None.
    comparison: dict[str, Any] | None = None
    # Not found: the likeliest sentence the reader read, short of what an answer needs (at most one).
    nearest: list[EvidenceSpan] = field(default_factory=list)

    @property
    def answered(self) -> bool:
        return self.status == ANSWERED

    def text(self) -> str:
        """The answer as a person reads it: the computation the question asks for, if any (its formula and
        each operand with its ``[n]``), then each quoted sentence on one line with its ``[n]``; a comparison
        as its sides, each with its cell, and what changed."""
        from localrag.core.answer.compare_table import Comparison

        table = Comparison.from_dict(self.comparison)
        worked = Computation.from_dict(self.figures)  # the computation asked for comes first
        if table is not None and self.answered:
            return "\n\n".join(t for t in (worked.text() if worked else "", table.text(self.spans)) if t)
        if self.answered:
            quoted = "\n".join(f"{s.shown} [{s.number}]" for s in self.spans)
        elif self.nearest:
            quoted = NEAREST_TEXT.format(quote=self.nearest[0].shown, number=self.nearest[0].number)
        else:
            quoted = NOT_FOUND_TEXT
        return "\n\n".join(t for t in (worked.text() if worked else "", quoted) if t)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "kind": self.kind,
            "spans": [s.to_dict() for s in self.spans],
            "closest": list(self.closest),
            "candidates": [s.to_dict() for s in self.candidates],
            "seconds": round(self.seconds, 4),
            "figures": self.figures,
            "embed_seconds": round(self.embed_seconds, 4),
            "signals": {k: round(v, 4) for k, v in self.signals.items()},
            "comparison": self.comparison,
            "nearest": [s.to_dict() for s in self.nearest],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Evidence | None:
        if not data:
            return None
        return cls(
            status=str(data.get("status") or NOT_FOUND),
            spans=[EvidenceSpan.from_dict(s) for s in data.get("spans") or []],
            closest=[int(n) for n in data.get("closest") or []],
            kind=str(data.get("kind") or ""),
            candidates=[EvidenceSpan.from_dict(s) for s in data.get("candidates") or []],
            seconds=float(data.get("seconds") or 0.0),
            figures=data.get("figures") or None,
            embed_seconds=float(data.get("embed_seconds") or 0.0),
            signals={str(k): float(v) for k, v in (data.get("signals") or {}).items()},
            comparison=data.get("comparison") or None,
            nearest=[EvidenceSpan.from_dict(s) for s in data.get("nearest") or []],
        )


def display(text: str) -> str:
    """A sentence as shown: on one line, unless it is several lines of code or a table."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) > 1 and all(_code(ln) or len(ln) < 40 for ln in lines):
        if all(_code(ln) for ln in lines):
            return "`" + "` `".join(lines) + "`"
        # a list's item shows its own bullet or number, and needs no other mark before it
        return lines[0] + "".join(("" if sp.LIST_ITEM.match(ln) else " ·") + " " + ln for ln in lines[1:])
    flat = sp.flat(text)
    return f"`{flat}`" if _code(flat) else flat


def _code(line: str) -> bool:
    """Whether a line is shown as code: a prompt's command, or a short line ending as a statement or block
    does; a long clause of prose ending with a semicolon ("… an appropriate copyright notice;", "2. A list
    of directories (separated by : under UNIX);") is prose: code has operators, brackets or a call in it."""
    if not sp.is_code_line(line):
        return False
    return bool(sp.CODE_PROMPT.match(line)) or len(line.split()) < 8 or bool(CODE_SIGNS.search(line))
