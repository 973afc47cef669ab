"""The developer pane: what retrieval, the evidence, the prompt and the check did for the last question, and
a retrieval-only box.

For the last question it lists every retrieved span (its merged chunk ids) with both scores, its rank in each
list, the fused score, whether it passed the floor, and where it is (document, page, heading); the time each
stage took; the exact prompt sent to the language model with its token counts and what the budget dropped; the
evidence candidates (the best-scored sentences, which of them the answer quotes, the score and its features);
and each generated sentence as checked against the sources (support, coverage, similarity, verdict and the
source span it matched). The retrieval-only box runs a query through ``retrieve`` and shows the same table
without the model.
"""

from __future__ import annotations

import logging
from html import escape
from typing import Any

from localrag.core.answer.run import UNLIMITED_TOKENS
from localrag.core.library import Library
from localrag.gui.qt import QtCore, QtGui, QtWidgets, Signal
from localrag.gui.tasks import Op
from localrag.gui.views.devpane_answer import CheckedPage, EvidencePage, FiguresPage, shown_in
from localrag.gui.views.devpane_answer import field_of as _get
from localrag.gui.views.devpane_answer import fmt as _fmt
from localrag.gui.views.devpane_compare import ComparePage

log = logging.getLogger("localrag.gui.devpane")

STAGES = ("embed", "vector", "bm25", "fuse", "fetch", "merge", "pack")
COLUMNS = (
    "#",
    "Chunks",
    "Document",
    "Page",
    "Heading",
    "Vector",
    "V rank",
    "BM25",
    "B rank",
    "Fused",
    "Floor",
    "Prompt",
)
# What became of a passage on its way into the prompt (the "Prompt" column).
_PROMPT_HELP = (
    "[n]: in the prompt as source n · budget: dropped by the context budget · window: dropped to fit "
    "the model's context window · below bar: under the chat's relevance bar · –: no prompt was built"
)
_NUMERIC = {5, 7, 9}
NO_PROMPT = "No prompt was sent to the model for this answer."


def budget_text(used: Any, budget: Any) -> str:
    """ "<b>used</b> of N tokens", or "<b>used</b> tokens, no limit" for a budget that is no limit (every
    passage found is a source when the quoted sources lead)."""
    if isinstance(budget, int) and budget >= UNLIMITED_TOKENS:
        return f"<b>{used}</b> tokens, no limit"
    if budget == 0 and not used:  # nothing was packed for a model (nothing relevant, or strict mode)
        return "none"
    return f"<b>{used}</b> of {budget} tokens"


def pack_note(pin: dict[str, Any]) -> str:
    """One line saying which domain pack put which page first, and why it acts on that document."""
    evidence = str(pin.get("evidence") or "")
    why = "set by hand" if evidence in ("", "edited") else evidence
    page, reason = pin.get("page"), pin.get("why")
    return f"Pack {pin.get('pack')}: page {page} first ({reason}; it acts on the document: {why})."


KEYWORDS_ONLY = "keywords only"


def result_row(result: Any) -> list[str]:
    """The cells of one retrieved span, in ``COLUMNS`` order after the ``#`` column (the test reads these)."""
    scores = _get(result, "scores") or {}
    chunk_ids = _get(result, "chunk_ids") or []
    title = _get(result, "title") or ""
    doc_id = _get(result, "doc_id")
    floor = _get(result, "passed_floor")
    return [
        ", ".join(str(c) for c in chunk_ids),
        f"{title} (#{doc_id})" if doc_id is not None else title,
        _fmt(_get(result, "page_number")),
        _get(result, "heading_path") or "",
        # A passage of a document still being embedded, with no vector yet, is found by keywords only.
        KEYWORDS_ONLY if _get(result, "keywords_only") else _fmt(_get(scores, "vector")),
        _fmt(_get(scores, "vector_rank")),
        _fmt(_get(scores, "bm25")),
        _fmt(_get(scores, "bm25_rank")),
        _fmt(_get(scores, "fused"), 5),
        "–" if floor is None else ("passed" if floor else "below"),
    ]


class DevPane(QtWidgets.QWidget):
    """Retrieval and prompt details for developers; meant for a dock widget.

    Feed it from the chat panel: ``retrieval_done`` → ``show_retrieval``, ``prompt_ready`` → ``show_prompt``,
    ``answer_done`` → ``show_done`` (and ``evidence_shown`` → ``show_evidence`` to see the evidence before the
    answer is done).

    Public:
        show_retrieval(event): an object with ``query``, ``response`` (a ``RetrievalResponse``) and optionally
            ``packed`` (a ``PackedContext``); the engine's ``Retrieved`` event qualifies.
        show_prompt(view): the exact prompt (the worker's ``PromptView``, an engine ``Prompt`` or a string)
            with its token counts and what the budget dropped.
        show_evidence(event): the evidence candidates of the engine's ``EvidenceReady`` event.
        start_question(): a question was sent: the last one's prompt goes (``show_done`` says when the answer
            had none).
        show_done(event): the answer's timings (first token, prompt processing, tokens/s) from ``Done``, its
            evidence candidates and each generated sentence as checked.
        run_retrieval(query): run the retrieval-only box (off the UI thread).
        set_scope(doc_ids, doc_types): the filters the retrieval-only box uses (the chat's document scope).
        table: the results table (rows in retrieval order; ``result_row`` gives each row's cells).
        evidence_table: the evidence candidates, best first (``devpane_answer.evidence_row`` gives each row's
            cells); checked_table: the generated sentences in order (``devpane_answer.checked_row``).

    Signals:
        retrieval_finished(object): the retrieval-only box got a ``RetrievalResponse``.
        retrieval_failed(str): the retrieval-only box failed (the message says why).
    """

    retrieval_finished = Signal(object)
    retrieval_failed = Signal(str)

    def __init__(self, library: Library, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.library = library
        self.setObjectName("developer-pane-content")
        self.setAccessibleName("Developer pane")
        self.doc_ids: list[int] | None = None
        self.collection_id: int | None = None  # the chat's collection (set by the window)
        self.doc_types: list[str] | None = None
        self.response: Any = None
        self.packed: Any = None
        self._running = False

        # Retrieval only.
        self.query_edit = QtWidgets.QLineEdit(self)
        self.query_edit.setPlaceholderText("Retrieval only: type a query…")
        self.query_edit.setAccessibleName("Retrieval-only query")
        self.query_edit.setClearButtonEnabled(True)
        self.query_edit.returnPressed.connect(lambda: self.run_retrieval(self.query_edit.text()))
        self.mode_box = QtWidgets.QComboBox(self)
        self.mode_box.addItems(["hybrid", "vector", "keyword"])
        self.mode_box.setAccessibleName("Retrieval mode")
        self.mode_box.setToolTip("Retrieval mode for the retrieval-only box")
        self.k_box = QtWidgets.QSpinBox(self)
        self.k_box.setRange(1, 100)
        self.k_box.setValue(library.settings.k)
        self.k_box.setPrefix("k ")
        self.k_box.setAccessibleName("Number of results")
        self.run_button = QtWidgets.QPushButton("Retrieve", self)
        self.run_button.setAccessibleName("Run retrieval only")
        self.run_button.clicked.connect(lambda: self.run_retrieval(self.query_edit.text()))
        box = QtWidgets.QHBoxLayout()
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(self.query_edit, 1)
        box.addWidget(self.mode_box)
        box.addWidget(self.k_box)
        box.addWidget(self.run_button)

        self.query_label = QtWidgets.QLabel("No question yet.", self)
        self.query_label.setWordWrap(True)
        self.query_label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status_label = QtWidgets.QLabel("", self)
        self.status_label.setWordWrap(True)

        # Results.
        self.table = QtWidgets.QTableWidget(0, len(COLUMNS), self)
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setAccessibleName("Retrieved chunks")
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(QtCore.Qt.TextElideMode.ElideRight)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        self.candidates_box = QtWidgets.QCheckBox("All candidates", self)
        self.candidates_box.setAccessibleName("Show every fused candidate chunk")
        self.candidates_box.setToolTip(
            "Every fused candidate chunk before merging, including those under the floor"
        )
        self.candidates_box.toggled.connect(lambda _: self._fill_table(self._rows_to_show()))
        self.table.itemSelectionChanged.connect(self._show_selected_text)
        self.chunk_text = QtWidgets.QPlainTextEdit(self)
        self.chunk_text.setReadOnly(True)
        self.chunk_text.setPlaceholderText("Select a row to read its text.")
        self.chunk_text.setAccessibleName("Selected chunk text")

        # Timings.
        self.timings_label = QtWidgets.QLabel("", self)
        self.timings_label.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.timings_label.setWordWrap(True)
        self.timings_label.setAccessibleName("Stage timings")

        # Prompt.
        self.prompt_info = QtWidgets.QLabel("", self)
        self.prompt_info.setWordWrap(True)
        self.prompt_info.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.prompt_view = QtWidgets.QPlainTextEdit(self)
        self.prompt_view.setReadOnly(True)
        self.prompt_view.setAccessibleName("Prompt sent to the language model")
        self.prompt_view.setPlaceholderText("The exact prompt of the last answer shows here.")
        self.prompt_view.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.WidgetWidth)
        mono = QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont)
        self.prompt_view.setFont(mono)

        results_page = QtWidgets.QWidget(self)
        rl = QtWidgets.QVBoxLayout(results_page)
        rl.setContentsMargins(0, 0, 0, 0)
        inner = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical, results_page)
        inner.addWidget(self.table)
        inner.addWidget(self.chunk_text)
        inner.setStretchFactor(0, 3)
        inner.setStretchFactor(1, 1)
        rl.addWidget(inner, 1)
        prompt_page = QtWidgets.QWidget(self)
        pl = QtWidgets.QVBoxLayout(prompt_page)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.addWidget(self.prompt_info)
        pl.addWidget(self.prompt_view, 1)
        self.tabs = QtWidgets.QTabWidget(self)
        self.tabs.addTab(results_page, "Retrieved")
        self.evidence_page = EvidencePage(self)
        self.checked_page = CheckedPage(self)
        self.evidence_table = self.evidence_page.table
        self.checked_table = self.checked_page.table
        self.tabs.addTab(self.evidence_page, "Evidence")
        self.tabs.addTab(prompt_page, "Prompt")
        self.tabs.addTab(self.checked_page, "Checked")
        self.figures_page = FiguresPage(self)
        self.tabs.addTab(self.figures_page, "Figures")
        self.compare_page = ComparePage(self)
        self.tabs.addTab(self.compare_page, "Compare")

        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(box)
        layout.addWidget(self.query_label)
        layout.addWidget(self.timings_label)
        status_row = QtWidgets.QHBoxLayout()
        status_row.addWidget(self.status_label, 1)
        status_row.addWidget(self.candidates_box)
        layout.addLayout(status_row)
        layout.addWidget(self.tabs, 1)
        self._results: list[Any] = []
        self._generation: dict[str, Any] = {}
        self._prompt_fate: dict[tuple[int, ...], str] | None = None
        self._prompt_seen = False
        self._budget_html = ""

    # -- input ---------------------------------------------------------------------------------------------

    def set_scope(self, doc_ids: list[int] | None, doc_types: list[str] | None) -> None:
        """Limit the retrieval-only box to these documents/types (``None``: all)."""
        self.doc_ids = list(doc_ids) if doc_ids else None
        self.doc_types = list(doc_types) if doc_types else None

    def run_retrieval(self, query: str) -> bool:
        """Run ``retrieve`` for ``query`` without the model; returns False when there is nothing to run."""
        query = query.strip()
        if not query or self._running:
            return False
        from localrag.core.retrieve import retrieve

        self._running = True
        self.run_button.setEnabled(False)
        self.status_label.setText("Retrieving…")
        mode, k = self.mode_box.currentText(), self.k_box.value()
        doc_ids, doc_types, collection = self.doc_ids, self.doc_types, self.collection_id

        def work() -> Any:
            return retrieve(
                self.library,
                query,
                k=k,
                mode=mode,
                doc_ids=doc_ids,
                doc_types=doc_types,
                collection=collection,
            )

        def done(response: Any) -> None:
            self._finish_run()
            self._prompt_fate = None
            self._show(query, response, None)
            self.prompt_info.setText("Retrieval only: no prompt was built.")
            self.prompt_view.clear()
            self.retrieval_finished.emit(response)

        def failed(message: str, _known: bool) -> None:
            self._finish_run()
            self.status_label.setText(f"Retrieval failed: {message}")
            self.retrieval_failed.emit(message)

        Op(work, owner=self).success(done).failure(failed).run_in_background()
        return True

    def _finish_run(self) -> None:
        self._running = False
        self.run_button.setEnabled(True)
        self.status_label.setText("")

    # -- output --------------------------------------------------------------------------------------------

    def show_retrieval(self, event: Any) -> None:
        """Show a question's retrieval: ``event.response`` and, when given, ``event.packed`` and
        ``event.sources`` (the numbered sources of the prompt)."""
        self._generation = {}
        self._clear_answer_parts()
        self._forget_prompt()
        response = _get(event, "response")
        query = _get(event, "query") or _get(response, "query") or ""
        self._prompt_fate = self._fates(_get(event, "packed"), _get(event, "sources"))
        self._show(query, response, _get(event, "packed"))

    def start_question(self) -> None:
        """A question was sent: the previous question's prompt is no longer this one's."""
        self._forget_prompt()
        self.prompt_info.setText("")

    def _forget_prompt(self) -> None:
        self._prompt_seen = False
        self._budget_html = ""
        self.prompt_view.clear()

    @staticmethod
    def _fates(packed: Any, sources: Any) -> dict[tuple[int, ...], str] | None:
        if packed is None and not sources:
            return None
        fate: dict[tuple[int, ...], str] = {}
        for item in _get(packed, "dropped") or []:
            result = item[0] if isinstance(item, tuple) else item
            fate[tuple(_get(result, "chunk_ids") or [])] = "budget"
        for result in _get(packed, "sources") or []:
            fate[tuple(_get(result, "chunk_ids") or [])] = "window"
        for i, source in enumerate(sources or [], 1):
            fate[tuple(_get(source, "chunk_ids") or [])] = f"[{_get(source, 'number') or i}]"
        return fate

    def _show(self, query: str, response: Any, packed: Any) -> None:
        self.response, self.packed = response, packed
        self.query_label.setText(f"<b>Query:</b> {escape(query)}" if query else "")
        reason = _get(response, "reason")
        error = _get(response, "error")
        notes = []
        if reason == "model_mismatch":
            notes.append("Stored vectors are from another embedding model: re-embed to search them.")
        elif reason == "error":
            notes.append(f"The store failed: {error or 'unknown error'} (the answer was not grounded).")
        elif reason:
            notes.append(f"Reason: {reason}" + (f" ({error})" if error else ""))
        routing = _get(response, "routing")
        if isinstance(routing, dict) and routing.get("doc_ids"):
            notes.append(f"Routing ({routing.get('mode')}): {routing.get('reason', '')}.")
        if isinstance(routing, dict):
            notes += [pack_note(pin) for pin in routing.get("pages_first") or ()]
        candidates = _get(response, "candidates")
        results = list(_get(response, "results") or [])
        if isinstance(candidates, list):
            below = sum(1 for c in candidates if _get(c, "passed_floor") is False)
            notes.append(
                f"{len(results)} passages from {len(candidates)} candidate chunks"
                + (f" ({below} under the floor)" if below else "")
                + "."
            )
        pending = sum(1 for r in results if _get(r, "keywords_only"))
        if pending:
            notes.append(
                f"{pending} found by keywords only: their document is still being embedded (column Vector)."
            )
        self.status_label.setText(" ".join(notes))
        self._fill_table(self._rows_to_show())
        self._render_timings()
        if packed is not None:
            self._render_budget(packed)

    def _rows_to_show(self) -> list[Any]:
        if self.candidates_box.isChecked():
            return list(_get(self.response, "candidates") or [])
        return list(_get(self.response, "results") or [])

    def _fill_table(self, results: list[Any]) -> None:
        self._results = results
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(results))
        muted = self.palette().color(QtGui.QPalette.ColorGroup.Disabled, QtGui.QPalette.ColorRole.Text)
        for row, result in enumerate(results):
            fate = "–"
            if self._prompt_fate is not None:
                fate = self._prompt_fate.get(tuple(_get(result, "chunk_ids") or []), "below bar")
            cells = [str(row + 1), *result_row(result), fate]
            passed = _get(result, "passed_floor")
            for col, text in enumerate(cells):
                item = QtWidgets.QTableWidgetItem(text)
                if col in _NUMERIC or col in (0, 3, 6, 8):
                    item.setTextAlignment(
                        QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter
                    )
                if passed is False:
                    item.setForeground(muted)
                if col == 2:
                    item.setToolTip(_get(result, "path") or "")
                if col == 4:
                    item.setToolTip(text)
                if col == len(COLUMNS) - 1:
                    item.setToolTip(_PROMPT_HELP)
                self.table.setItem(row, col, item)
        self.table.resizeColumnsToContents()
        self.table.setColumnWidth(2, min(self.table.columnWidth(2), 200))
        self.table.horizontalHeader().setSectionResizeMode(4, QtWidgets.QHeaderView.ResizeMode.Stretch)
        self.chunk_text.clear()

    def _show_selected_text(self) -> None:
        rows = {i.row() for i in self.table.selectedItems()}
        if len(rows) == 1:
            result = self._results[rows.pop()]
            span = f"chars {_get(result, 'char_start')}–{_get(result, 'char_end')}"
            self.chunk_text.setPlainText(f"[{span}]\n{_get(result, 'text', '')}")

    def _render_timings(self) -> None:
        timings = dict(_get(self.response, "timings") or {})
        parts = []
        order = [s for s in STAGES if s in timings]
        order += [s for s in timings if s not in STAGES and s != "total"]
        order += ["total"] if "total" in timings else []
        for stage in order:
            value = timings[stage]
            if isinstance(value, (int, float)):
                parts.append(f"{escape(str(stage))} <b>{value:.1f}</b> ms")
        line = " · ".join(parts)
        if self._generation:
            answer = " · ".join(f"{escape(k)} <b>{escape(v)}</b>" for k, v in self._generation.items())
            line = (f"Retrieval: {line}<br>" if line else "") + f"Answer: {answer}"
        self.timings_label.setText(line)

    def _render_budget(self, packed: Any) -> None:
        used, budget = _get(packed, "used_tokens"), _get(packed, "budget")
        dropped = list(_get(packed, "dropped") or [])
        sources = list(_get(packed, "sources") or [])
        text = f"Context: {budget_text(used, budget)}, {len(sources)} sources packed"
        if dropped:
            names = []
            for d in dropped:
                result, why = d if isinstance(d, tuple) else (d, "")
                title = _get(result, "title")
                name = (
                    f"{escape(str(title))} p.{_get(result, 'page_number')}" if title else escape(str(result))
                )
                names.append(name + (f" ({escape(why)})" if why else ""))
            text += f"; dropped by the budget: {len(dropped)} ({'; '.join(names)})"
        else:
            text += "; nothing dropped"
        self.prompt_info.setText(text)
        self._budget_html = text

    def show_prompt(self, view: Any) -> None:
        """Show the exact prompt sent to the model and its token accounting.

        ``view`` is the worker's ``PromptView`` (``prompt`` and ``rendered``), an engine ``Prompt``, or a
        string.
        """
        self._prompt_seen = True
        if isinstance(view, str):
            self.prompt_view.setPlainText(view)
            return
        prompt = _get(view, "prompt", view)
        rendered = _get(view, "rendered") or _get(prompt, "text") or ""
        self.prompt_view.setPlainText(rendered)
        lines = []
        total, budget = _get(prompt, "prompt_tokens"), _get(prompt, "budget")
        if total is not None:
            mode = _get(prompt, "mode")
            lines.append(
                f"Prompt <b>{total}</b> tokens"
                + (f" of {budget} allowed" if budget else "")
                + (f" · answer limit {_get(prompt, 'max_tokens')}" if _get(prompt, "max_tokens") else "")
                + (f" · mode {escape(str(mode))}" if mode else "")
            )
        packed = _get(prompt, "packed")
        context = _get(prompt, "context_tokens")
        parts = []
        if packed is not None:
            parts.append(
                f"sources {budget_text(_get(packed, 'used_tokens'), _get(packed, 'budget'))} "
                f"({len(_get(packed, 'sources') or [])} sources)"
            )
        elif context:
            parts.append(f"sources <b>{context}</b> tokens")
        history = _get(prompt, "history_tokens")
        if history is not None:
            parts.append(f"history <b>{history}</b> tokens ({_get(prompt, 'history_turns', 0)} messages)")
        if parts:
            lines.append(" · ".join(parts))
        dropped = []
        for item in _get(prompt, "dropped") or []:
            result, why = item if isinstance(item, tuple) else (item, "")
            title = _get(result, "title") or _get(result, "path") or "?"
            dropped.append(
                f"{escape(str(title))} p.{_get(result, 'page_number')}" + (f" ({why})" if why else "")
            )
        if dropped:
            lines.append(f"Dropped by the budget: {len(dropped)} passage(s): {'; '.join(dropped)}")
        if _get(prompt, "sources_dropped"):
            lines.append(f"Sources dropped to fit the context window: {_get(prompt, 'sources_dropped')}")
        if _get(prompt, "history_dropped"):
            lines.append(f"Earlier messages left out: {_get(prompt, 'history_dropped')}")
        if _get(prompt, "question_cut"):
            lines.append("The question itself was shortened to fit.")
        if not dropped and not _get(prompt, "sources_dropped") and not _get(prompt, "history_dropped"):
            lines.append("Nothing was dropped.")
        self.prompt_info.setText("<br>".join(lines))

    def show_done(self, event: Any) -> None:
        """Add the answer's timings (time to first token, prompt processing, tokens per second) from
        ``Done``."""
        timings: dict[str, Any] = dict(_get(event, "timings") or {})
        names = {
            "retrieval_s": "retrieval",
            "evidence_s": "evidence",
            "evidence_at_s": "evidence shown at",
            "wait_s": "model wait",
            "prompt_s": "prompt eval",
            "ttft_s": "first token",
            "total_s": "total",
            "prompt_tokens": "prompt tokens",
            "cached_tokens": "cached",
            "tokens": "generated",
            "tokens_per_s": "tok/s",
        }
        generation: dict[str, str] = {}
        if isinstance(timings.get("llm_setup"), str) and timings["llm_setup"]:
            generation["model"] = timings["llm_setup"]  # CPU kernels and the tuning measured here
        for key, value in timings.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            name = names.get(key, key)
            if key.endswith("_per_s"):
                generation[name] = f"{value:.1f}"
            elif key.endswith("_s"):
                generation[name] = f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"
            else:
                generation[name] = str(value)
        self._generation = generation
        self._render_timings()
        if not self._prompt_seen:  # quoted from the sources, not found, or about whole documents
            self.prompt_view.clear()
            self.prompt_info.setText("<br>".join(t for t in (self._budget_html, escape(NO_PROMPT)) if t))
        evidence = _get(event, "evidence")
        if evidence is None:
            self._clear_answer_parts("No evidence: the answer was not taken from the documents.")
            return
        lead = str(_get(event, "lead") or "")
        self.evidence_page.set_evidence(evidence, lead)
        self.figures_page.set_figures(_get(evidence, "figures"))
        self.compare_page.set_comparison(_get(evidence, "comparison"), _get(evidence, "spans"))
        self.checked_page.set_rows([(g, shown_in(event, g)) for g in _get(event, "generated") or []], lead)

    def show_evidence(self, event: Any) -> None:
        """Show the evidence of the engine's ``EvidenceReady`` event (it comes before the model runs)."""
        self.evidence_page.set_evidence(_get(event, "evidence"), str(_get(event, "lead") or ""))
        self.figures_page.set_figures(_get(_get(event, "evidence"), "figures"))
        ev = _get(event, "evidence")
        self.compare_page.set_comparison(_get(ev, "comparison"), _get(ev, "spans"))
        self.checked_page.clear()

    def _clear_answer_parts(self, why: str = "") -> None:
        self.evidence_page.clear(why)
        self.figures_page.set_figures(None)
        self.compare_page.set_comparison(None)
        self.checked_page.clear(why)
