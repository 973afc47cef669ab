"""The chat panel, the generation worker and the chats list, with the real model on real indexed documents.

Answers are kept short (``max_tokens``) and the context small so that the whole file runs in well under a
minute. The only stand-ins are fault injectors: a model loader that fails or waits for a gate, and a store URL
that points at nothing.
"""

from __future__ import annotations

import threading

import pytest

from fixtures_chat import FAST, changed_settings, chat_panel, index, warmed_worker

pytestmark = pytest.mark.gui

MANUAL = """# Lighthouse keeper's manual

## Lamp

The lamp is lit thirty minutes before sunset and put out at sunrise. \
The keeper trims the wick every four hours.

## Fog signal

In fog the horn sounds two blasts every sixty seconds. The compressor is started by the keeper on watch.
"""
RECIPES = """# Bakery notes

Rye sourdough needs a starter fed twelve hours before mixing. \
The loaves bake for fifty minutes at 230 degrees.
"""


@pytest.fixture(scope="module")
def docs(library, tmp_path_factory):
    """Two small indexed documents."""
    folder = tmp_path_factory.mktemp("chat-docs")
    (folder / "lighthouse.md").write_text(MANUAL, encoding="utf-8")
    (folder / "bakery.md").write_text(RECIPES, encoding="utf-8")
    index(library, [folder / "lighthouse.md", folder / "bakery.md"])
    return folder


@pytest.fixture(scope="module")
def short(library):
    """Short answers; what leads is fixed here (the tests that need the model's own words ask for them)."""
    with changed_settings(library, **FAST, max_tokens=24, reword=False) as lib:
        yield lib


@pytest.fixture(scope="module")
def worker(qapp, short, docs):
    """One warmed generation worker shared by the panels of this module (as the window shares one)."""
    yield from warmed_worker(short)


@pytest.fixture()
def panel(qtbot, short, worker):
    yield from chat_panel(qtbot, short, worker)


def _ask(qtbot, panel, question, timeout=60000):
    with qtbot.waitSignal(panel.generation_finished, timeout=timeout):
        assert panel.ask(question)
    return panel.turns[-1]


# -- the worker ----------------------------------------------------------------------------------------------


def test_streaming_delivers_tokens_as_signals_in_order(qtbot, worker, short, monkeypatch):
    """Searching, retrieved, the evidence (before the model runs), the prompt, then the tokens with each
    sentence checked as it completes, and done. The small model only rewords the quoted evidence: the answer
    is the evidence, then the reworded sentences the sources support."""
    from localrag.core.answer.events import REWORD_LABEL
    from localrag.core.answer.support import strip_marks
    from localrag.gui.chat_worker import AskRequest

    monkeypatch.setattr(short.settings, "reword", True)
    seen: list[tuple[str, object]] = []
    slots = {
        worker.searching: lambda: seen.append(("searching", None)),
        worker.retrieved: lambda e: seen.append(("retrieved", e)),
        worker.evidence: lambda e: seen.append(("evidence", e)),
        worker.prompt: lambda p: seen.append(("prompt", p)),
        worker.token: lambda t: seen.append(("token", t)),
        worker.checked: lambda e: seen.append(("checked", e)),
        worker.done: lambda e: seen.append(("done", e)),
        worker.failed: lambda m, k: seen.append(("failed", m)),
    }
    for signal, slot in slots.items():
        signal.connect(slot)
    try:
        with qtbot.waitSignal(worker.request_finished, timeout=60000):
            assert worker.ask(AskRequest("When is the lamp lit?", grounded=True))
            assert not worker.ask(AskRequest("A second question while the first runs"))
    finally:
        for signal, slot in slots.items():
            signal.disconnect(slot)
    kinds = [k for k, _ in seen]
    assert "failed" not in kinds, seen
    assert kinds[:4] == ["searching", "retrieved", "evidence", "prompt"] and kinds[-1] == "done"
    tokens = [v for k, v in seen if k == "token"]
    checked = [v.sentence for k, v in seen if k == "checked"]
    assert len(tokens) >= 2 and set(kinds[4:-1]) == {"token", "checked"} and kinds[4] == "token"
    done = seen[-1][1]
    evidence = seen[2][1]
    assert evidence.lead == done.lead == "sources" and evidence.evidence is done.evidence
    assert done.evidence.answered and "thirty minutes before sunset" in evidence.text
    # The tokens arrived in order: each checked sentence is the next one of what they spell.
    written = " ".join(strip_marks("".join(tokens)).split())
    at = 0
    for sentence in checked:
        at = written.index(" ".join(sentence.text.split()), at)
    assert [g.to_dict() for g in done.generated] == [g.to_dict() for g in checked] and checked
    # The answer: the evidence, then the reworded sentences the sources support (and only those).
    supported = [g.shown() for g in checked if g.supported]
    assert done.answer == evidence.text + (f"\n\n{REWORD_LABEL} {' '.join(supported)}" if supported else "")
    assert done.sources and any("lighthouse" in s.path for s in done.sources)
    # The prompt the developer pane shows is the one the model read, special tokens included.
    view = seen[3][1]
    assert "When is the lamp lit?" in view.rendered and "<|im_start|>" in view.rendered
    assert view.prompt.prompt_tokens == len(view.prompt.tokens) > 0


def test_shutdown_during_generation_stops_and_waits(qtbot, short, docs):
    from localrag.gui.chat_worker import AskRequest, ChatWorker

    worker = ChatWorker(short)
    worker.warm_up()
    with qtbot.waitSignal(worker.token, timeout=60000):
        worker.ask(
            AskRequest("Write a long story about a lighthouse keeper.", grounded=False, max_tokens=400)
        )
    assert worker.shutdown(30000)
    assert worker._thread is None and not worker.busy


# -- the panel -----------------------------------------------------------------------------------------------


def test_answer_quotes_the_sources_with_linked_citations(qtbot, panel):
    """A small model does not reword (the setting is off): the quoted sentence is the answer, at once."""
    from localrag.gui.qt import QtCore

    tokens: list[str] = []
    panel.token_received.connect(tokens.append)
    with (
        qtbot.waitSignal(panel.retrieval_done, timeout=60000) as retrieved,
        qtbot.waitSignal(panel.generation_finished, timeout=60000),
    ):
        assert panel.ask("How often does the fog horn sound?")
        assert "Searching your documents" in panel.transcript.toPlainText()
        assert panel.generating and panel.stop_button.isEnabled() and not panel.send_button.isEnabled()
    turn = panel.turns[-1]
    # The quoted sentence is the answer; the model was not needed.
    assert not tokens and turn.evidence is not None and turn.lead == "sources" and not turn.generated
    assert turn.answer == turn.evidence.text()
    assert "two blasts every sixty seconds" in turn.evidence.spans[0].text
    assert "two blasts every sixty seconds" in panel.transcript.toPlainText()
    assert 'href="ev:0:0"' in panel.transcript.toHtml()
    assert turn.sources and not turn.error
    assert retrieved.args[0].response.results
    assert not panel.generating and panel.send_button.isEnabled()
    html = panel.transcript.toHtml()
    assert "Sources" in panel.transcript.toPlainText()
    assert "lighthouse" in panel.transcript.toPlainText().lower()
    assert 'href="src:0:1"' in html
    # Clicking a source opens the viewer on it.
    with qtbot.waitSignal(panel.source_opened, timeout=5000) as opened:
        panel.transcript.anchorClicked.emit(QtCore.QUrl("src:0:1"))
    viewer = opened.args[0]
    with qtbot.waitSignal(viewer.loaded, timeout=20000):
        pass
    assert viewer.ref.path == turn.sources[0].path
    viewer.close()


def test_only_real_sources_become_links():
    from localrag.gui.views.chat import link_citations

    html = link_citations("See [1] and [3], also [1, 2] and [12].", 4, 2)
    assert html.count('href="cite:4:1"') == 2 and html.count('href="cite:4:2"') == 1
    assert ">[1]</a>" in html  # a lone citation is one link, brackets included
    assert "[3]" in html and "[12]" in html and "cite:4:3" not in html and "cite:4:12" not in html


def test_ctrl_enter_sends_and_escape_stops(qtbot, panel, monkeypatch):
    from localrag.gui.qt import Qt

    monkeypatch.setattr(panel.library.settings, "max_tokens", 400)
    panel.use_documents.setChecked(False)  # plain local chat
    assert not panel.strict.isEnabled()
    panel.question.setFocus()
    qtbot.keyClicks(panel.question, "Tell me a long story about the sea.")
    with qtbot.waitSignal(panel.token_received, timeout=60000):
        qtbot.keyClick(panel.question, Qt.Key_Return, Qt.ControlModifier)
    assert panel.question.toPlainText() == ""
    with qtbot.waitSignal(panel.generation_finished, timeout=30000):
        panel.stop_action.trigger()  # Esc
    turn = panel.turns[-1]
    assert turn.stopped and not turn.grounded and not turn.sources
    assert len(turn.answer) < 400 * 8


def test_a_pause_in_typing_prepares_the_question_so_its_answer_starts_from_the_cache(
    qtbot, panel, worker, short, monkeypatch
):
    """Typing, then a pause: the worker evaluates the question's prompt in the background; sent as typed, the
    answer continues from it. Typing again cancels what was being prepared."""
    from localrag.gui.qt import Qt

    monkeypatch.setattr(
        short.settings, "answer_lead", "model"
    )  # the model writes the answer: it has a prompt

    panel.question.setFocus()
    with qtbot.waitSignal(worker.prepared, timeout=60000) as prepared:
        qtbot.keyClicks(panel.question, "When is the lighthouse lamp lit?")
    assert prepared.args[0] > 100
    with qtbot.waitSignal(panel.answer_done, timeout=60000) as done:
        qtbot.keyClick(panel.question, Qt.Key_Return, Qt.ControlModifier)
    timings = done.args[0].timings
    assert timings["cached_tokens"] >= timings["prompt_tokens"] - 1
    qtbot.waitUntil(lambda: not worker.busy, timeout=10000)  # ``done`` comes just before the worker is free
    # More typing cancels the draft in hand (``cancel_draft``): nothing is prepared.
    from localrag.gui.chat_worker import AskRequest

    with qtbot.waitSignal(worker.prepared, timeout=60000) as prepared:
        assert worker.prepare(AskRequest("How long do the rye loaves bake?", chat_id=panel.chat_id))
        worker.cancel_draft()
    assert prepared.args[0] == 0


def test_reading_ahead_waits_for_a_pause_and_can_be_turned_off(qtbot, panel, worker, monkeypatch):
    """Only a pause in typing (not each key) asks for a draft, and the setting turns it off."""
    drafts: list = []
    monkeypatch.setattr(worker, "prepare", lambda request: drafts.append(request.question) or True)
    panel.question.setFocus()
    pause = panel._draft_timer  # the pause in typing that asks for a draft; its slot runs before the test's
    with qtbot.waitSignal(pause.timeout, timeout=10000):
        qtbot.keyClicks(panel.question, "How long do the loaves bake")
    assert drafts == ["How long do the loaves bake"]
    monkeypatch.setattr(panel.library.settings, "prepare_while_typing", False)
    with qtbot.waitSignal(pause.timeout, timeout=10000):
        qtbot.keyClicks(panel.question, " at 230 degrees?")
    assert drafts == ["How long do the loaves bake"]
    panel.question.clear()


def test_strict_with_nothing_relevant_says_so(qtbot, panel):
    from localrag.core.answer.prompts import NOT_FOUND

    panel.strict.setChecked(True)
    turn = _ask(qtbot, panel, "zzqx vlorp")
    assert turn.strict and not turn.error and not turn.sources
    assert turn.answer == NOT_FOUND  # said plainly, without the model making something up
    assert NOT_FOUND in panel.transcript.toPlainText()


def test_question_waits_while_the_model_loads(qtbot, short, docs):
    from localrag.core.llm.llm import load_llm
    from localrag.gui.chat_worker import ChatWorker
    from localrag.gui.views.chat import WAITING, ChatPanel

    gate = threading.Event()

    def slow_load(settings):  # fault injector: the real model, loaded only once the gate opens
        gate.wait(30)
        return load_llm(settings)

    panel = ChatPanel(short, worker=ChatWorker(short, loader=slow_load))
    qtbot.addWidget(panel)
    try:
        panel.show()
        panel.use_documents.setChecked(False)  # plain chat: the shortest prompt; waiting is what is tested
        assert panel.ask("When is the lamp put out?")  # before warm-up: held
        assert WAITING in panel.transcript.toPlainText()
        with qtbot.waitSignal(panel.worker.model_loading, timeout=5000):
            panel.warm_up()
        qtbot.waitUntil(lambda: WAITING in panel.transcript.toPlainText(), timeout=5000)
        assert panel.generating  # the window keeps running meanwhile: this very wait spins its event loop
        with qtbot.waitSignal(panel.generation_finished, timeout=60000):
            gate.set()
        turn = panel.turns[-1]
        assert turn.answer and not turn.error and WAITING not in panel.transcript.toPlainText()
    finally:
        gate.set()
        panel.worker.shutdown(60000)


def test_model_that_cannot_load_still_shows_sources(qtbot, short, docs):
    from localrag.core.errors import ModelMissing
    from localrag.gui.chat_worker import ChatWorker
    from localrag.gui.views.chat import ChatPanel

    def broken_load(_settings):  # fault injector
        raise ModelMissing("Cannot load the language model broken.gguf: bad magic.")

    panel = ChatPanel(short, worker=ChatWorker(short, loader=broken_load))
    qtbot.addWidget(panel)
    try:
        with qtbot.waitSignal(
            panel.model_state_changed, timeout=10000, check_params_cb=lambda s: s == "failed"
        ):
            panel.warm_up()
        turn = _ask(qtbot, panel, "How often does the fog horn sound?")
        # The sources answer without the model: the quoted sentence.
        assert not turn.error and turn.lead == "sources" and turn.evidence.answered and not turn.generated
        assert turn.answer == turn.evidence.text() and "two blasts every sixty seconds" in turn.answer
        assert turn.sources
        text = panel.transcript.toPlainText()
        assert "Sources" in text and "two blasts every sixty seconds" in text
        assert "sources only" in panel.status_label.text()
        assert "broken.gguf" in panel.status_label.toolTip()
    finally:
        panel.worker.shutdown(60000)


def test_store_down_answers_ungrounded_and_says_so(qtbot, docs, monkeypatch):
    from localrag.core.config import Settings
    from localrag.core.library import Library
    from localrag.gui.views.chat import ChatPanel

    # Fault injector: a store URL where nothing listens.
    settings = Settings.load()
    settings.database_url = "postgresql://localrag@127.0.0.1:9/none?connect_timeout=2"
    settings.max_tokens = 16
    settings.fast_llm_copy = False
    settings.threads = 1
    dead = Library(settings, owner=False)
    dead.conninfo = settings.database_url
    panel = ChatPanel(dead)
    qtbot.addWidget(panel)
    try:
        panel.warm_up()
        turn = _ask(qtbot, panel, "How often does the fog horn sound?")
        assert turn.answer and not turn.sources
        assert "could not be searched" in turn.notice and "not based on" in turn.notice
    finally:
        panel.shutdown(60000)


# -- kept chats ----------------------------------------------------------------------------------------------


def test_chats_are_kept_renamed_reopened_and_deleted(qtbot, panel, short):
    from localrag.gui.views.chat import ChatPanel
    from localrag.gui.views.chats_list import ChatsList

    with short.connect() as conn:  # earlier tests of this module kept their chats
        conn.execute("TRUNCATE chats RESTART IDENTITY CASCADE")
        conn.commit()
    chats = ChatsList(short)
    qtbot.addWidget(chats)
    chats.chat_selected.connect(panel.open_chat)
    chats.new_chat_requested.connect(panel.new_chat)
    chats.chat_deleted.connect(panel.forget_chat)
    panel.chat_changed.connect(chats.refresh)

    with qtbot.waitSignal(chats.refreshed, timeout=60000):
        first = _ask(qtbot, panel, "When is the lamp lit?")
    chat_id = panel.chat_id
    assert chat_id is not None and chats.list.count() == 1
    assert chats.current_id() == chat_id or chats.item_for(chat_id) is not None

    with qtbot.waitSignal(chats.refreshed, timeout=10000):
        chats.rename_chat(chat_id, "Lamp hours")
    assert chats.item_for(chat_id).text() == "Lamp hours"

    # Ctrl+N: a new, empty chat; the first one is still listed.
    panel.new_chat_action.trigger()
    assert panel.chat_id is None and panel.turns == []

    # Reopening restores the messages and their sources.
    other = ChatPanel(short)
    qtbot.addWidget(other)
    try:
        with qtbot.waitSignal(other.history_loaded, timeout=10000):
            other.open_chat(chat_id)
        assert other.title_label.text() == "Lamp hours"
        assert len(other.turns) == 1
        restored = other.turns[0]
        assert restored.question == "When is the lamp lit?"
        assert restored.answer.strip() == first.answer.strip()
        assert [s.chunk_ids for s in restored.sources] == [s.chunk_ids for s in first.sources]
        assert "Sources" in other.transcript.toPlainText()
    finally:
        other.shutdown()

    with qtbot.waitSignal(chats.chat_deleted, timeout=10000):
        chats.delete_chat(chat_id)
    qtbot.waitUntil(lambda: chats.list.count() == 0, timeout=10000)
    assert chats.empty_label.isVisible() or not chats.isVisible()


def test_dev_pane_follows_the_last_question(qtbot, panel, short, monkeypatch):
    from localrag.gui.views.devpane import DevPane, result_row

    monkeypatch.setattr(short.settings, "answer_lead", "model")  # every source goes into the prompt

    pane = DevPane(short)
    qtbot.addWidget(pane)
    panel.retrieval_done.connect(pane.show_retrieval)
    panel.prompt_ready.connect(pane.show_prompt)
    panel.answer_done.connect(pane.show_done)
    with qtbot.waitSignal(panel.retrieval_done, timeout=60000) as retrieved:
        turn = _ask(qtbot, panel, "When does the keeper trim the wick?")
    event = retrieved.args[0]
    results = event.response.results
    assert pane.table.rowCount() == len(results) > 0
    for row, result in enumerate(results):
        cells = [pane.table.item(row, col).text() for col in range(1, pane.table.columnCount())]
        assert cells[:-1] == result_row(result)
    # The last column says which source number each passage got in the prompt.
    numbers = {pane.table.item(row, pane.table.columnCount() - 1).text() for row in range(len(results))}
    assert {f"[{s.number}]" for s in turn.sources} <= numbers
    # The exact prompt, with its token accounting, and the answer's timings.
    prompt_text = pane.prompt_view.toPlainText()
    assert "When does the keeper trim the wick?" in prompt_text and "<|im_start|>" in prompt_text
    assert "trims the wick every four hours" in prompt_text  # the retrieved passage itself
    assert "tokens" in pane.prompt_info.text()
    assert "first token" in pane.timings_label.text() and "embed" in pane.timings_label.text()
    # How the model runs on this machine: the CPU kernels loaded (and the tuning, when measured).
    from localrag.core.llm.backends import cpu_backend

    assert f"{cpu_backend().variant} kernels" in pane.timings_label.text()
