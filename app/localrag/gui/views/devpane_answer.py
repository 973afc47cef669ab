"""The developer pane's view of an answer's parts: the evidence candidates and the checked sentences.

``EvidencePage`` lists the best-scored sentences of the retrieved passages (``Evidence.candidates``), which of
them the answer quotes, and the score with the features behind it. ``CheckedPage`` lists every sentence the
model wrote with its verdict, the measures behind it and the source span it matched. Both show the full text
of the selected row below the table. ``FiguresPage`` lists the table cells weighed for each operand of a
computation the question asked for, and which ones it used.
"""

from __future__ import annotations

from html import escape
from typing import Any

from localrag.core.answer import cross, figures, reader, support
from localrag.core.text.spans import flat
from localrag.gui.qt import QtCore, QtGui, QtWidgets

FEATURES = ("cross", "semantic", "lexical", "bm25", "passage", "heading", "after_lead_in")
EVIDENCE_COLUMNS = (
    "#",
    "Quoted",
    "[n]",
    "Page",
    "Probability",
    "Cross-encoder",
    "Semantic",
    "Lexical",
    "BM25",
    "Passage",
    "Heading",
    "After a lead-in",
    "Span",
)
CHECKED_COLUMNS = (
    "#",
    "Verdict",
    "Shown",
    "Support",
    "Coverage",
    "Similarity",
    "[n]",
    "Page",
    "Chars",
    "Missing",
    "Sentence",
    "Matched in the source",
)
EVIDENCE_HELP = (
    "Quoted: the answer quotes this span. Probability: the reader's, from its learned weights over every "
    f"feature (select a row to see what each added), then reordered by the cross-encoder's reading of the "
    f"question with the best {cross.RERANK}; a span is quoted from {reader.model().threshold:.2f}"
)
CHECKED_HELP = (
    f"Supported: coverage ≥ {support.MIN_COVERAGE}, support ≥ {support.MIN_SUPPORT}, and every "
    "number and identifier it writes is in the sources"
)
WIDE_COLUMN = 320


def field_of(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` for a dict (a stored answer), ``obj.name`` for a dataclass (a live one)."""
    if obj is None:
        return default
    return obj.get(name, default) if isinstance(obj, dict) else getattr(obj, name, default)


def fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def same_span(a: Any, b: Any) -> bool:
    keys = ("number", "char_start", "char_end", "text")
    return all(field_of(a, k) == field_of(b, k) for k in keys)


def evidence_row(span: Any, quoted: bool) -> list[str]:
    """The cells of an evidence candidate (an ``EvidenceSpan``), in ``EVIDENCE_COLUMNS`` order after ``#``."""
    features = field_of(span, "features") or {}
    return [
        "yes" if quoted else "",
        f"[{field_of(span, 'number')}]",
        fmt(field_of(span, "page_number")),
        fmt(field_of(span, "score")),
        *(fmt(features[name]) if name in features else "–" for name in FEATURES),
        flat(str(field_of(span, "text") or "")),
    ]


def checked_row(sentence: Any, shown: bool) -> list[str]:
    """The cells of one checked sentence (a ``CheckedSentence``), in ``CHECKED_COLUMNS`` order after ``#``."""
    number = field_of(sentence, "number")
    start, end = field_of(sentence, "char_start", -1), field_of(sentence, "char_end", -1)
    return [
        "supported" if field_of(sentence, "supported") else "not found",
        "yes" if shown else "no",
        *(fmt(float(field_of(sentence, k) or 0.0)) for k in ("support", "coverage", "similarity")),
        f"[{number}]" if number is not None else "–",
        fmt(field_of(sentence, "page_number")) if number is not None else "–",
        f"{start}–{end}" if start is not None and start >= 0 else "–",
        ", ".join(field_of(sentence, "missing") or []),
        flat(str(field_of(sentence, "text") or "")),
        flat(str(field_of(sentence, "source_text") or "")),
    ]


def shown_in(done: Any, sentence: Any) -> bool:
    """Whether the answer of ``done`` keeps ``sentence``: it is supported, or the model leads and the answer
    shows it marked as not found (``Done.to_json`` decides the same way)."""
    if field_of(sentence, "supported"):
        return True
    shown = getattr(sentence, "shown", None)
    return (
        field_of(done, "lead") == "model"
        and callable(shown)
        and shown() in str(field_of(done, "answer") or "")
    )


class _Page(QtWidgets.QWidget):
    """A summary line, a table and the full text of the selected row."""

    def __init__(
        self,
        columns: tuple[str, ...],
        name: str,
        help_text: str,
        empty: str,
        placeholder: str,
        parent: QtWidgets.QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.columns = columns
        self.info = QtWidgets.QLabel(empty, self)
        self.info.setWordWrap(True)
        self.info.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.table = QtWidgets.QTableWidget(0, len(columns), self)
        self.table.setHorizontalHeaderLabels(list(columns))
        self.table.setAccessibleName(name)
        self.table.setToolTip(help_text)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(QtCore.Qt.TextElideMode.ElideRight)
        self.table.horizontalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self._on_selection)
        self.detail = QtWidgets.QPlainTextEdit(self)
        self.detail.setReadOnly(True)
        self.detail.setPlaceholderText(placeholder)
        self.detail.setAccessibleName(f"{name}: the selected row")
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical, self)
        split.addWidget(self.table)
        split.addWidget(self.detail)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.info)
        layout.addWidget(split, 1)
        self.items: list[Any] = []

    def _fill(
        self,
        rows: list[list[str]],
        numeric: set[int],
        *,
        bold: set[int] | None = None,
        warn: dict[int, int] | None = None,
    ) -> None:
        """Rows of cells; ``bold`` rows in bold; ``warn`` maps a row to its column in the warning colour."""
        from localrag.gui import theme

        warning = QtGui.QColor(theme.colors().warning)
        self.table.setRowCount(len(rows))
        for r, cells in enumerate(rows):
            for col, text in enumerate(cells):
                item = QtWidgets.QTableWidgetItem(text)
                if col in numeric:
                    item.setTextAlignment(
                        QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter
                    )
                if bold and r in bold:
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                if warn and warn.get(r) == col:
                    item.setForeground(warning)
                if len(text) > 40:
                    item.setToolTip(text)
                self.table.setItem(r, col, item)
        self.table.resizeColumnsToContents()
        for col in range(self.table.columnCount()):
            self.table.setColumnWidth(col, min(self.table.columnWidth(col), WIDE_COLUMN))
        self.detail.clear()

    def _on_selection(self) -> None:
        rows = {i.row() for i in self.table.selectedItems()}
        if len(rows) == 1:
            self.detail.setPlainText(self.describe(self.items[rows.pop()]))

    def describe(self, item: Any) -> str:
        raise NotImplementedError


class EvidencePage(_Page):
    """The evidence candidates of the last answer, best first; the quoted ones in bold.

    Public:
        set_evidence(evidence, lead): an ``Evidence`` (or its dict) and what leads the answer (``None``:
            clear).
        clear(why): no evidence, and why.
        table: one row per candidate (``evidence_row`` gives its cells after ``#``).
    """

    EMPTY = "No evidence yet."

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(
            EVIDENCE_COLUMNS,
            "Evidence candidates",
            EVIDENCE_HELP,
            self.EMPTY,
            "Select a row to read the sentence and its features.",
            parent,
        )

    def clear(self, why: str = "") -> None:
        self.items = []
        self.info.setText(escape(why or self.EMPTY))
        self._fill([], set())

    def set_evidence(self, evidence: Any, lead: str = "") -> None:
        if evidence is None:
            self.clear()
            return
        spans = list(field_of(evidence, "spans") or [])
        candidates = list(field_of(evidence, "candidates") or []) or spans
        self.items = candidates
        bits = [f"Evidence: <b>{escape(str(field_of(evidence, 'status') or '?'))}</b>"]
        if field_of(evidence, "kind"):
            bits.append(f"question kind {escape(str(field_of(evidence, 'kind')))}")
        bits.append(f"{len(spans)} quoted of {len(candidates)} candidates")
        seconds = field_of(evidence, "seconds")
        if isinstance(seconds, (int, float)) and seconds:
            embedding = field_of(evidence, "embed_seconds") or 0.0
            bits.append(f"{seconds * 1000:.0f} ms ({embedding * 1000:.0f} ms embedding)")
        signals = field_of(evidence, "signals") or {}
        answers = reader.model().answers
        if signals and answers is not None:
            p = answers.probability(signals)
            bits.append(f"answers at all {p:.2f} (declined under {answers.threshold:.2f})")
        if lead:
            bits.append(f"lead <b>{escape(lead)}</b>")
        if field_of(evidence, "closest"):
            bits.append("closest " + ", ".join(f"[{n}]" for n in field_of(evidence, "closest")))
        self.info.setText(" · ".join(bits))
        quoted = {i for i, c in enumerate(candidates) if any(same_span(c, s) for s in spans)}
        rows = [[str(i + 1), *evidence_row(c, i in quoted)] for i, c in enumerate(candidates)]
        self._fill(rows, {0, *range(2, len(EVIDENCE_COLUMNS) - 1)}, bold=quoted)

    def describe(self, span: Any) -> str:
        features = field_of(span, "features") or {}
        where = (
            f"[{field_of(span, 'number')}] {field_of(span, 'title') or field_of(span, 'path')} · page "
            f"{field_of(span, 'page_number')} · chars "
            f"{field_of(span, 'char_start')}–{field_of(span, 'char_end')}"
        )
        added = reader.model().contributions(features)
        parts = " · ".join(f"{k} {fmt(features.get(k, 0.0), 3)} ({w:+.2f})" for k, w in added)
        scores = f"probability {fmt(field_of(span, 'score'))} — each feature, and what it added: {parts}"
        if "cross" in features:
            scores += (
                f"\ncross-encoder {fmt(features['cross'], 3)}: the question and this span read together; "
                f"it reorders the reader's best {cross.RERANK} (the probability includes it)"
            )
        return f"{where}\n{scores}\n\n{field_of(span, 'text') or ''}"


class CheckedPage(_Page):
    """Every sentence the model wrote for the last answer, as checked against the sources.

    Public:
        set_rows(rows, lead): ``(CheckedSentence, shown)`` pairs in order, and what leads the answer.
        clear(why): nothing was generated, and why.
        table: one row per sentence (``checked_row`` gives its cells after ``#``).
    """

    EMPTY = "No generated sentences yet."

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(
            CHECKED_COLUMNS,
            "Generated sentences as checked",
            CHECKED_HELP,
            self.EMPTY,
            "Select a row to compare the sentence with the source it matched.",
            parent,
        )

    def clear(self, why: str = "") -> None:
        self.items = []
        self.info.setText(escape(why or self.EMPTY))
        self._fill([], set())

    def set_rows(self, rows: list[tuple[Any, bool]], lead: str = "") -> None:
        if not rows:
            self.clear("The model wrote nothing to check." if lead else "")
            return
        self.items = [g for g, _ in rows]
        supported = sum(1 for g, _ in rows if field_of(g, "supported"))
        shown = sum(1 for _, s in rows if s)
        self.info.setText(
            f"<b>{supported}</b> of {len(rows)} generated sentences supported by the sources · "
            f"{shown} shown" + (f" · lead <b>{escape(lead)}</b>" if lead else "")
        )
        cells = [[str(i + 1), *checked_row(g, s)] for i, (g, s) in enumerate(rows)]
        warn = {i: 1 for i, (g, _) in enumerate(rows) if not field_of(g, "supported")}
        self._fill(cells, {0, *range(3, 9)}, warn=warn)

    def describe(self, g: Any) -> str:
        verdict = "supported" if field_of(g, "supported") else "not found in the sources"
        keys = ("support", "coverage", "similarity")
        measures = " · ".join(f"{k} {fmt(float(field_of(g, k) or 0.0))}" for k in keys)
        missing = field_of(g, "missing") or []
        head = f"{verdict} · {measures}" + (f" · missing: {', '.join(missing)}" if missing else "")
        if field_of(g, "number") is None:
            where = "Matched in no source."
        else:
            where = (
                f"Matched in source [{field_of(g, 'number')}], page {field_of(g, 'page_number')}, chars "
                f"{field_of(g, 'char_start')}–{field_of(g, 'char_end')}:"
            )
        generated, source = field_of(g, "text") or "", field_of(g, "source_text") or ""
        return f"{head}\n\nGenerated:\n{generated}\n\n{where}\n{source}"


FIGURES_COLUMNS = ("#", "Used", "Operand", "Row", "Column", "Value", "Match", "[n]", "Page")
FIGURES_HELP = (
    "The table cells weighed for each operand of the computation the question asks for: Match is how well "
    "the row's label is what the question names (a row is a candidate from "
    f"{figures.MIN_MATCH:.2f}); Used: the cell the computation took"
)


class FiguresPage(_Page):
    """The operands considered for the computation the last question asked for (``Evidence.figures``).

    Public:
        set_figures(figures): a ``Computation`` dict (``None``: the question asked for none).
        table: one row per cell weighed; the ones used in bold.
    """

    EMPTY = "The last question asked for no computation."

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(
            FIGURES_COLUMNS,
            "Operands considered",
            FIGURES_HELP,
            self.EMPTY,
            "Select a row to see where the cell is.",
            parent,
        )

    def set_figures(self, data: dict[str, Any] | None) -> None:
        worked = figures.Computation.from_dict(data)
        if worked is None:
            self.items = []
            self.info.setText(escape(self.EMPTY))
            self._fill([], set())
            return
        used = {(o.doc_id, o.page_number, tuple(o.row), o.heading) for o in worked.operands if not o.problem}
        self.items = list(worked.considered)
        bits = [f"{escape(worked.subject)}: <b>{escape(worked.status)}</b>"]
        bits.append(escape(f"{worked.formula} = {worked.result_text}" if worked.computed else worked.message))
        self.info.setText(" · ".join(bits))
        rows, bold = [], set()
        for i, o in enumerate(self.items):
            chosen = (o.doc_id, o.page_number, tuple(o.row), o.heading) in used
            if chosen:
                bold.add(i)
            rows.append(
                [
                    str(i + 1),
                    "yes" if chosen else "",
                    o.named(),
                    o.label,
                    o.heading,
                    o.value,
                    f"{o.score:.2f}",
                    f"[{o.number}]",
                    o.where(),
                ]
            )
        self._fill(rows, {0, 5, 6}, bold=bold)

    def describe(self, o: Any) -> str:
        return (
            f"{o.named()}\n[{o.number}] {o.title or o.path} · {o.where()} · row at chars "
            f"{o.row[0]}–{o.row[1]}"
            f"\n{o.label} — {o.heading}: {o.value} ({o.unit or 'no unit'})"
        )
