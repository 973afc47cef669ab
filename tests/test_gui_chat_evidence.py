"""Answers "evidence first" in the window: the quoted sentences show before the model says anything, each
opens the viewer on exactly that sentence, the model's sentences come back checked, and a kept chat looks the
same.

Real parts: the embedded PostgreSQL, the bundled embedding model and GGUF, on a PDF and a Markdown file
indexed by the real pipeline. The transcript's HTML builders are also tested on their own (they take plain
data).
"""

from __future__ import annotations

import pytest

from fixtures_chat import FAST, changed_settings, chat_panel, index, warmed_worker
from test_gui_chat_sources import PAGE_ONE, PAGE_TWO, write_pdf

pytestmark = pytest.mark.gui

MANUAL = """# Lighthouse keeper's manual

## Lamp

The lamp is lit thirty minutes before sunset and put out at sunrise. \
The keeper trims the wick every four hours.

## Fog signal

In fog the horn sounds two blasts every sixty seconds. The compressor is started by the keeper on watch.
"""
FOG = "How often does the fog horn sound?"
SCREENS = "How often are the turbine intake screens cleaned?"


@pytest.fixture(scope="module")
def docs(library, tmp_path_factory):
    """A two-page PDF and a Markdown manual, indexed."""
    folder = tmp_path_factory.mktemp("evidence-docs")
    pdf = write_pdf(folder / "tidal.pdf", [PAGE_ONE, PAGE_TWO])
    (folder / "lighthouse.md").write_text(MANUAL, encoding="utf-8")
    index(library, [pdf, folder / "lighthouse.md"])
    return folder


@pytest.fixture(scope="module")
def short(library):
    """Short answers and a small context: the real model, fast."""
    with changed_settings(library, **FAST, max_tokens=32, reword=True) as lib:
        yield lib


@pytest.fixture(scope="module")
def worker(qapp, short, docs):
    yield from warmed_worker(short)


@pytest.fixture()
def panel(qtbot, short, worker):
    yield from chat_panel(qtbot, short, worker)


def _ask(qtbot, panel, question):
    with qtbot.waitSignal(panel.generation_finished, timeout=60000):
        assert panel.ask(question)
    return panel.turns[-1]


def _flat(text: str) -> str:
    return " ".join(text.split())


# -- asking --------------------------------------------------------------------------------------------------


def test_the_quoted_evidence_shows_before_the_model_answers(qtbot, panel, short, monkeypatch):
    """The model leads: the quoted sentence (with its [n] link) is on screen before the first token, the
    tokens stream above it, and the finished answer is rendered from its checked sentences."""
    from localrag.gui.views.transcript import FROM_DOCUMENTS, NOT_FOUND

    monkeypatch.setattr(short.settings, "answer_lead", "model")
    order: list[tuple[str, str, str]] = []  # (signal, transcript text, transcript html) as each arrived
    panel.evidence_shown.connect(
        lambda e: order.append(("evidence", panel.transcript.toPlainText(), panel.transcript.toHtml()))
    )
    panel_tokens: list[str] = []
    panel.token_received.connect(
        lambda t: (panel_tokens.append(t), order.append(("token", panel.transcript.toPlainText(), "")))
    )
    panel.answer_done.connect(lambda e: order.append(("done", "", "")))
    turn = _ask(qtbot, panel, FOG)

    kinds = [k for k, _, _ in order]
    assert kinds[0] == "evidence" and kinds[-1] == "done" and "token" in kinds, kinds
    assert kinds.count("evidence") == 1 and kinds.count("done") == 1
    # At that moment the quoted sentence is shown, linked to exactly itself, and nothing generated yet.
    evidence = turn.evidence
    assert evidence is not None and evidence.answered and turn.lead == "model"
    span = evidence.spans[0]
    assert "two blasts every sixty seconds" in span.text and span.char_start >= 0
    _, text, html = order[0]
    assert _flat(span.text) in _flat(text) and FROM_DOCUMENTS in text
    assert 'href="ev:0:0"' in html
    # The tokens stream in where the answer goes, above the quote, which stays on screen.
    streamed = _flat(first_answer := "".join(panel_tokens))
    shown = _flat([t for k, t, _ in order if k == "token"][-1])
    assert first_answer and streamed in shown
    assert shown.index(streamed) < shown.index(FROM_DOCUMENTS) < shown.index(_flat(span.text))
    # Done: the answer is rendered from the checked sentences, then the evidence.
    assert turn.generated and not turn.error
    text = panel.transcript.toPlainText()
    html = panel.transcript.toHtml()
    kept = turn.kept()
    assert kept
    for i, g in kept:
        assert _flat(g.text) in _flat(text)
        if g.supported:
            assert f'href="gen:0:{i}"' in html
        else:
            assert f"{_flat(g.text)} ({NOT_FOUND})" in _flat(text)
    assert _flat(text).index(_flat(kept[0][1].text)) < _flat(text).index(FROM_DOCUMENTS)
    assert _flat(text).index(FROM_DOCUMENTS) < _flat(text).index(_flat(span.text))


def test_sources_lead_shows_only_checked_rewording(qtbot, panel, worker):
    """A small model only rewords the quotes: its raw tokens never show; its supported sentences do, each with
    its [n], under their own label."""
    from localrag.gui.views.transcript import REWORDED, REWORDING

    statuses: list[str] = []
    tokens: list[str] = []
    panel.token_received.connect(
        lambda t: (tokens.append(t), statuses.append(panel.transcript.toPlainText()))
    )
    checked: list[object] = []
    panel.sentence_checked.connect(checked.append)
    turn = _ask(qtbot, panel, FOG)
    assert turn.lead == "sources" and turn.evidence is not None and turn.evidence.answered
    assert tokens, "the model rewords by default"
    assert all(REWORDING in s for s in statuses)  # while it runs, a status instead of its tokens
    assert [e.sentence.text for e in checked] == [g.text for g in turn.generated]
    text = _flat(panel.transcript.toPlainText())
    html = panel.transcript.toHtml()
    assert _flat(turn.evidence.spans[0].text) in text and 'href="ev:0:0"' in html
    kept = turn.kept()
    assert kept and REWORDED in text
    for i, g in kept:
        assert g.supported and _flat(g.text) in text and f'href="gen:0:{i}"' in html
    for i, g in enumerate(turn.generated):  # a supported rewording left out only repeats the quote
        if g.supported and (i, g) not in kept:
            assert text.count(_flat(g.text)) == 1
    for g in turn.generated:
        if not g.supported:
            assert _flat(g.text) not in text.split(REWORDED)[-1]
    assert REWORDING not in text


def test_clicking_a_quoted_sentence_opens_the_viewer_on_exactly_it(qtbot, panel):
    from localrag.gui.qt import QtCore

    turn = _ask(qtbot, panel, SCREENS)
    assert turn.evidence is not None and turn.evidence.answered
    span = turn.evidence.spans[0]
    assert "intake screens" in span.text and span.page_number == 2 and span.char_start >= 0
    text = panel.transcript.toPlainText()
    assert "p. 2" in text.replace("\xa0", " ")
    with qtbot.waitSignal(panel.source_opened, timeout=5000) as opened:
        panel.transcript.anchorClicked.emit(QtCore.QUrl("ev:0:0"))
    viewer = opened.args[0]
    ref = viewer.ref
    assert (ref.char_start, ref.char_end, ref.text, ref.page_number) == (
        span.char_start,
        span.char_end,
        span.text,
        span.page_number,
    )
    source = turn.sources[span.number - 1]
    assert ref.path == source.path and ref.doc_id == source.doc_id and ref.number == span.number
    with qtbot.waitSignal(viewer.loaded, timeout=20000) as loaded:
        pass
    view = loaded.args[0]
    passage = view.passage
    assert _flat(passage.text[passage.start : passage.end]) == _flat(
        span.text
    )  # that sentence, not the chunk
    assert view.page is not None and view.page.exact and view.page.rects
    viewer.close()


def _quoted_turn(span, **source):
    """A turn answered by ``span`` alone, quoted from one source (``source`` overrides its fields)."""
    from localrag.core.answer.evidence import ANSWERED, Evidence
    from localrag.gui.views.sources import SourceRef
    from localrag.gui.views.transcript import Turn

    fields = {
        "doc_id": 3,
        "title": "R FAQ",
        "path": "/d/R-FAQ.pdf",
        "doc_type": "pdf",
        "page_number": 41,
        "heading_path": "",
        "char_start": 100,
        "char_end": 400,
        "text": "the passage",
        "chunk_ids": [7, 8],
    }
    ref = SourceRef(**{**fields, **source})
    return Turn("q", sources=[ref], evidence=Evidence(ANSWERED, spans=[span]), lead="sources"), ref


def test_a_span_without_offsets_opens_the_whole_source():
    from localrag.core.answer.evidence import EvidenceSpan
    from localrag.gui.views.transcript import span_ref

    span = EvidenceSpan("A sentence.", 1, 3, "R FAQ", "/d/R-FAQ.pdf", 41, -1, -1, 0.5)
    turn, source = _quoted_turn(span)
    ref = span_ref(turn, 0)
    assert ref == source and ref is not source
    span.char_start, span.char_end = 120, 131
    ref = span_ref(turn, 0)
    assert (ref.char_start, ref.char_end, ref.text, ref.chunk_ids) == (120, 131, "A sentence.", [7, 8])
    assert span_ref(turn, 1) is None


def test_a_whole_document_answer_is_its_outline_with_links(qtbot, panel):
    """ "What are the sections of X" is answered from the document's structure: the text, with its [n]
    links."""
    turn = _ask(qtbot, panel, "What are the sections of the lighthouse manual?")
    assert turn.evidence is not None and turn.evidence.kind == "outline" and turn.lead == "sources"
    assert "\n" in turn.answer.strip() and not turn.generated
    text = panel.transcript.toPlainText()
    for line in turn.answer.strip().splitlines():
        assert line.strip() in text
    assert 'href="cite:0:1"' in panel.transcript.toHtml() and "“" not in text


# -- history -------------------------------------------------------------------------------------------------


def test_a_reloaded_turn_shows_its_evidence_again(qtbot, panel, short, monkeypatch):
    from localrag.gui.views.chat import ChatPanel
    from localrag.gui.views.transcript import turn_html

    monkeypatch.setattr(short.settings, "answer_lead", "model")
    first = _ask(qtbot, panel, FOG)
    assert first.evidence is not None and first.generated
    other = ChatPanel(short)
    qtbot.addWidget(other)
    try:
        with qtbot.waitSignal(other.history_loaded, timeout=10000):
            other.open_chat(panel.chat_id)
        restored = other.turns[-1]
        assert restored.lead == first.lead == "model"
        assert restored.evidence.to_dict() == first.evidence.to_dict()
        assert [g.to_dict() for g in restored.generated] == [g.to_dict() for g in first.generated]
        # Rendered the same as when it was answered.
        colors = panel._colors()
        assert panel.turns == [first]
        assert turn_html(0, restored, colors) == turn_html(0, first, colors)
        html = other.transcript.toHtml()
        assert 'href="ev:0:0"' in html and _flat(first.evidence.spans[0].text) in _flat(
            other.transcript.toPlainText()
        )
        viewer = other.open_evidence(0, 0)
        assert viewer is not None and viewer.ref.char_start == first.evidence.spans[0].char_start
        viewer.close()
    finally:
        other.shutdown()


def test_an_old_message_without_parts_renders_as_before():
    from localrag.core.answer.citations import Source
    from localrag.core.answer.history import Message
    from localrag.gui.views.transcript import link_citations, turn_html, turns_from_messages

    source = Source(1, 1, "Manual", "/m.md", "markdown", 1, "", [1], cited=True)
    messages = [
        Message(8, 1, "user", "When is the lamp lit?", grounded=True),
        Message(9, 1, "assistant", "At sunset [1].", grounded=True, sources=[source], parts=None),
    ]
    (turn,) = turns_from_messages(messages)
    assert turn.evidence is None and turn.lead == "" and turn.generated == []
    html = turn_html(0, turn, _COLORS)
    assert link_citations("At sunset [1].", 0, 1) in html and "ev:" not in html


# -- the HTML builders ---------------------------------------------------------------------------------------

_COLORS = {
    "muted": "#666666",
    "warning": "#b45309",
    "error": "#c53030",
    "you_bg": "#eef3fc",
    "quote_bg": "#faf7ec",
    "quote_bar": "#e0b53a",
}


def _turn(lead: str, *, strict: bool = False, status: str = "answered"):
    from localrag.core.answer.evidence import Evidence, EvidenceSpan
    from localrag.core.answer.support import CheckedSentence
    from localrag.gui.views.sources import SourceRef
    from localrag.gui.views.transcript import Turn

    sources = [
        SourceRef(
            doc_id=1,
            title="R FAQ",
            path="/d/R-FAQ.pdf",
            doc_type="pdf",
            page_number=41,
            heading_path="",
            char_start=0,
            char_end=300,
            text="R packages are installed into libraries. " * 6,
        ),
        SourceRef(
            doc_id=2,
            title="Notes",
            path="/d/notes.md",
            doc_type="markdown",
            page_number=1,
            heading_path="",
            char_start=0,
            char_end=80,
            text="Unrelated notes.",
        ),
    ]
    span = EvidenceSpan(
        "R packages are installed into libraries.", 1, 1, "R FAQ", "/d/R-FAQ.pdf", 41, 10, 51, 0.7
    )
    evidence = Evidence(status, spans=[span] if status == "answered" else [], closest=[1])
    generated = [
        CheckedSentence(
            "Packages go into libraries.",
            True,
            1,
            1.0,
            0.9,
            0.95,
            page_number=41,
            char_start=10,
            char_end=51,
            source_text=span.text,
        ),
        CheckedSentence("They are updated every Tuesday.", False, 1, 0.2, 0.3, 0.25),
    ]
    return Turn(
        "Where are packages installed?",
        strict=strict,
        sources=sources,
        evidence=evidence,
        lead=lead,
        generated=generated,
        answer="(composed by the engine)",
    )


def test_quoted_sentences_are_a_quotation_with_their_link_and_page():
    from localrag.gui.views.transcript import FROM_DOCUMENTS, turn_html

    html = turn_html(2, _turn("sources"), _COLORS)
    assert FROM_DOCUMENTS in html and "“R packages are installed into libraries.”" in html
    assert "href='ev:2:0'" in html and ">[1]</a>" in html and "p.&nbsp;41" in html
    assert _COLORS["quote_bg"] in html and _COLORS["quote_bar"] in html
    # The sources lead: only the supported rewording is kept, with a link to the sentence it matched.
    assert "Packages go into libraries." in html and "href='gen:2:0'" in html
    assert "every Tuesday" not in html
    # A rewording that repeats the quote word for word is not shown twice.
    from localrag.core.answer.support import CheckedSentence

    turn = _turn("sources")
    turn.generated.append(CheckedSentence("R packages are installed into libraries", True, 1))
    assert turn_html(2, turn, _COLORS).count("R packages are installed into libraries") == 1


def test_the_model_leads_with_unsupported_sentences_marked_or_left_out_when_strict():
    from localrag.gui.views.transcript import FROM_DOCUMENTS, NOT_FOUND, NOTHING_CHECKED, turn_html

    html = turn_html(0, _turn("model"), _COLORS)
    assert html.index("Packages go into libraries.") < html.index(FROM_DOCUMENTS) < html.index("“R packages")
    marked = f"<span style='color:{_COLORS['warning']}'>They are updated every Tuesday. <i>({NOT_FOUND})</i>"
    assert marked in html and "href='gen:0:0'" in html and "gen:0:1" not in html
    strict = turn_html(0, _turn("model", strict=True), _COLORS)
    assert "every Tuesday" not in strict and "Packages go into libraries." in strict
    turn = _turn("model", strict=True)
    turn.generated = turn.generated[1:]
    assert NOTHING_CHECKED in turn_html(0, turn, _COLORS)


def test_not_found_says_so_and_lists_the_closest_passages():
    from localrag.gui.views.transcript import CLOSEST, NOT_ANSWERED, turn_html

    html = turn_html(0, _turn("sources", status="not_found"), _COLORS)
    assert NOT_ANSWERED in html and CLOSEST in html and f"color:{_COLORS['muted']}" in html
    assert "href='src:0:1'" in html and "R packages are installed into libraries." in html
    assert "ev:0:" not in html and "“" not in html


def test_an_outline_renders_as_its_text_with_links_even_while_pending():
    from localrag.gui.views.transcript import link_citations, turn_html

    turn = _turn("sources")
    turn.evidence.kind = "outline"
    turn.answer = "R FAQ has 2 sections:\n1. Libraries [1]\n2. Notes [2]"
    for pending in (True, False):
        turn.pending = pending
        html = turn_html(0, turn, _COLORS)
        assert link_citations(turn.answer, 0, 2) in html and "ev:0:" not in html


def test_a_pending_turn_marks_where_the_tokens_go():
    from localrag.gui.views.transcript import REWORDING, STREAM_MARK, answer_html

    turn = _turn("model")
    turn.pending, turn.answer, turn.generated = True, "Packages go", []
    html = answer_html(turn, 0, _COLORS)
    assert html.index(STREAM_MARK) < html.index("“R packages")  # the model's answer above the quotes
    turn = _turn("sources")
    turn.pending, turn.status, turn.generated = True, REWORDING, []
    html = answer_html(turn, 0, _COLORS)
    assert STREAM_MARK not in html and html.index("“R packages") < html.index(REWORDING)


# -- the developer pane --------------------------------------------------------------------------------------


def test_dev_pane_shows_the_evidence_candidates_and_each_checked_sentence(qtbot, panel, short, monkeypatch):
    from localrag.gui.views.devpane import DevPane
    from localrag.gui.views.devpane_answer import FEATURES, checked_row, evidence_row

    monkeypatch.setattr(short.settings, "answer_lead", "model")
    pane = DevPane(short)
    qtbot.addWidget(pane)
    panel.retrieval_done.connect(pane.show_retrieval)
    panel.evidence_shown.connect(pane.show_evidence)
    panel.answer_done.connect(pane.show_done)
    with qtbot.waitSignal(panel.answer_done, timeout=60000) as done:
        assert panel.ask(FOG)
    event = done.args[0]
    evidence = event.evidence
    assert evidence.candidates and pane.evidence_table.rowCount() == len(evidence.candidates)
    assert "cross" in evidence.candidates[0].features  # the cross-encoder read the best spans
    table = pane.evidence_table
    for row, candidate in enumerate(evidence.candidates):
        cells = [table.item(row, col).text() for col in range(1, table.columnCount())]
        quoted = any((candidate.text, candidate.char_start) == (s.text, s.char_start) for s in evidence.spans)
        assert cells == evidence_row(candidate, quoted)
        assert cells[3] == f"{candidate.score:.4f}"
        for name, cell in zip(FEATURES, cells[4 : 4 + len(FEATURES)], strict=True):
            assert cell == (f"{candidate.features[name]:.4f}" if name in candidate.features else "–")
    assert pane.evidence_table.item(0, 1).text() == "yes"  # the best candidate is the one quoted
    info = pane.evidence_page.info.text()
    assert "answered" in info and "model" in info
    assert "ms embedding" in info and "answers at all" in info  # the reader's time apart, and its signal
    assert pane.checked_table.rowCount() == len(event.generated) > 0
    table = pane.checked_table
    for row, g in enumerate(event.generated):
        cells = [table.item(row, col).text() for col in range(1, table.columnCount())]
        assert cells == checked_row(g, g.supported or g.shown() in event.answer)
        assert cells[0] == ("supported" if g.supported else "not found")
        assert cells[2:5] == [f"{g.support:.4f}", f"{g.coverage:.4f}", f"{g.similarity:.4f}"]
        assert cells[-1] == _flat(g.source_text)
    pane.checked_table.selectRow(0)
    detail = pane.checked_page.detail.toPlainText()
    assert event.generated[0].text in detail and event.generated[0].source_text in detail


def test_a_quote_is_labelled_with_the_section_it_is_in():
    """Beside each quoted sentence: its document, the innermost heading it is under, and its page."""
    from localrag.core.answer.evidence import EvidenceSpan
    from localrag.gui.views.transcript import turn_html

    span = EvidenceSpan(
        "Run pip install localrag.", 1, 3, "Installing Local RAG", "/d/install.md", 1, 20, 45, 0.7
    )
    span.section = "Installing Local RAG › Linux"
    turn, _ = _quoted_turn(
        span, title="Installing Local RAG", path="/d/install.md", doc_type="markdown", page_number=1
    )
    colors = dict.fromkeys(("muted", "warning", "error", "you_bg", "quote_bg", "quote_bar"), "#777")
    drawn = turn_html(0, turn, colors)
    assert "Installing Local RAG · Linux" in drawn
    span.section = "Installing Local RAG"  # a quote under the title alone names it once
    assert "Installing Local RAG · Installing Local RAG" not in turn_html(0, turn, colors)
