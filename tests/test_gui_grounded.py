"""The window when the documents do not answer: the not-found turn with its closest passages and the button
that asks the model alone, whose answer is headed as the model's from its first word; the developer pane of
an answer that sent no prompt; what the window says with "Use my documents" off.

Real parts: the embedded PostgreSQL, the bundled embedding model and GGUF, documents indexed by the real
pipeline.
"""

from __future__ import annotations

import pytest

from fixtures_chat import FAST, changed_settings, chat_panel, index, warmed_worker
from localrag.core.answer.events import MODEL_ALONE, MODEL_ALONE_LABEL, NOT_ANSWERED
from localrag.core.answer.quotes import NEAREST
from localrag.gui.views.transcript import ASK_MODEL_ALONE, CLOSEST
from localrag.gui.views.transcript import NOT_ANSWERED as NOT_ANSWERED_LINE
from test_grounded import DOCS, OFF_TOPIC, SHARES_A_WORD

pytestmark = pytest.mark.gui


@pytest.fixture(scope="module")
def docs(library, tmp_path_factory):
    folder = tmp_path_factory.mktemp("gui-grounded-docs")
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    index(library, [folder], ready=len(DOCS))
    return folder


@pytest.fixture(scope="module")
def short(library):
    with changed_settings(library, **FAST, max_tokens=16, reword=False) as lib:
        yield lib


@pytest.fixture(scope="module")
def worker(qapp, short, docs):
    yield from warmed_worker(short)


@pytest.fixture()
def panel(qtbot, short, worker):
    yield from chat_panel(qtbot, short, worker)


def _finished(qtbot, panel, start):
    with qtbot.waitSignal(panel.generation_finished, timeout=60000):
        assert start()
    return panel.turns[-1]


def test_a_declined_answer_shows_the_nearest_sentence_read_which_opens_at_its_place(qtbot, panel):
    """The reader read passages and found no sentence likely enough: the turn says so, quotes the likeliest
    one as the nearest (not as an answer), lists the closest passages, and the quote opens its source at
    it."""
    turn = _finished(qtbot, panel, lambda: panel.ask(SHARES_A_WORD[0]))
    assert turn.basis == NOT_ANSWERED and turn.evidence is not None and not turn.evidence.spans
    nearest = turn.evidence.nearest[0]
    text = panel.transcript.toPlainText()
    assert (
        text.index(NOT_ANSWERED_LINE)
        < text.index(NEAREST)
        < text.index(nearest.text[:30])
        < text.index(CLOSEST)
    )
    index = len(panel.turns) - 1
    assert f'href="ev:{index}:0"' in panel.transcript.toHtml()
    viewer = panel.open_evidence(index, 0)
    assert viewer is not None and nearest.text in viewer.ref.text
    assert viewer.ref.char_start == nearest.char_start
    viewer.close()


def test_not_found_offers_the_model_alone_whose_answer_is_headed_as_such(qtbot, panel):
    from localrag.gui.qt import QtCore

    tokens: list[str] = []
    panel.token_received.connect(tokens.append)
    turn = _finished(qtbot, panel, lambda: panel.ask(OFF_TOPIC[3]))
    assert turn.basis == NOT_ANSWERED and not tokens  # the model wrote nothing
    text = panel.transcript.toPlainText()
    assert NOT_ANSWERED_LINE in text and ASK_MODEL_ALONE in text and "model alone" not in text
    assert turn.sources and "Sources" not in text  # the closest passages are listed once
    assert 'href="alone:0"' in panel.transcript.toHtml()

    # The button: the same question, to the model alone. Its heading shows with its first word.
    seen_at_first_token: list[str] = []

    def first_token(_text: str) -> None:
        if not seen_at_first_token:
            seen_at_first_token.append(panel.transcript.toPlainText())

    panel.token_received.connect(first_token)
    turn = _finished(qtbot, panel, lambda: panel._on_anchor(QtCore.QUrl("alone:0")) or panel.generating)
    assert turn.question == OFF_TOPIC[3] and not turn.grounded and turn.basis == MODEL_ALONE
    assert turn.answer.strip() and tokens
    later = seen_at_first_token[0].split(OFF_TOPIC[3])[-1]  # the second turn
    assert MODEL_ALONE_LABEL in later
    text = panel.transcript.toPlainText()
    second = text.split(OFF_TOPIC[3])[-1]
    assert second.index(MODEL_ALONE_LABEL) < second.index(turn.answer.strip()[:20])
    assert text.count(MODEL_ALONE_LABEL) == 1  # the not-found turn is not the model's


def test_strict_keeps_its_answer_without_the_button(qtbot, panel):
    panel.strict.setChecked(True)
    try:
        turn = _finished(qtbot, panel, lambda: panel.ask(OFF_TOPIC[1]))
    finally:
        panel.strict.setChecked(False)
    assert turn.answer == "I could not find this in your documents."
    assert ASK_MODEL_ALONE not in panel.transcript.toPlainText()


def test_dev_pane_says_when_no_prompt_was_sent(qtbot, panel, short):
    """After an answer the model wrote, a quoted one: the Prompt tab no longer shows the earlier prompt, says
    none was sent, and shows the quoted answer's unlimited budget as no limit."""
    from localrag.gui.views.devpane import NO_PROMPT, DevPane

    pane = DevPane(short)
    qtbot.addWidget(pane)
    panel.generation_started.connect(pane.start_question)
    panel.retrieval_done.connect(pane.show_retrieval)
    panel.prompt_ready.connect(pane.show_prompt)
    panel.answer_done.connect(pane.show_done)
    _finished(qtbot, panel, lambda: panel.ask("What is a factor?", grounded=False))
    assert "What is a factor?" in pane.prompt_view.toPlainText()
    turn = _finished(qtbot, panel, lambda: panel.ask("How do I read a data file into a data frame?"))
    assert turn.evidence is not None and turn.evidence.answered and turn.lead == "sources"
    assert pane.prompt_view.toPlainText() == ""
    info = pane.prompt_info.text()
    assert NO_PROMPT in info and "no limit" in info and "1000000" not in info


def test_with_grounding_off_the_window_says_the_chat_does_not_use_the_documents(qtbot, panel):
    from localrag.gui.views.documents import DocumentsPanel

    documents = DocumentsPanel()
    qtbot.addWidget(documents)
    panel.use_documents.toggled.connect(documents.set_grounding)
    assert "searches all documents" in documents.scope_label.text()
    panel.use_documents.setChecked(False)
    try:
        assert "does not use your documents" in documents.scope_label.text()
        assert panel.scope_label.text() == "Scope: no documents"
    finally:
        panel.use_documents.setChecked(True)
    assert "searches all documents" in documents.scope_label.text()
    assert panel.scope_label.text() == "Scope: all documents"


def test_the_context_budget_reads_as_a_person_would_say_it():
    from localrag.core.answer.run import UNLIMITED_TOKENS
    from localrag.gui.views.devpane import budget_text

    assert budget_text(300, 1200) == "<b>300</b> of 1200 tokens"
    assert budget_text(1551, UNLIMITED_TOKENS) == "<b>1551</b> tokens, no limit"
    assert budget_text(0, 0) == "none"
