"""Test questions: saved from an answer in the window, run on a real small library (the rank of each page, and
whether the answer quotes it), each run kept in the history with what changed, and read and written as the
JSONL of the ``local-rag eval`` datasets.

Real parts: the embedded PostgreSQL, the bundled embedding model and GGUF, a PDF and a Markdown file indexed
by the real pipeline.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fixtures_chat import FAST, changed_settings, chat_panel, index, warmed_worker
from test_gui_chat_sources import PAGE_ONE, PAGE_TWO, write_pdf

SCREENS = "How often are the turbine intake screens cleaned?"
FOG = "How often does the fog horn sound?"
FOG_NOTES = """# Lighthouse notes

## Fog signal

In fog the horn sounds two blasts every sixty seconds. The keeper on watch starts the compressor.
"""


@pytest.fixture(scope="module")
def docs(library, tmp_path_factory):
    """A two-page PDF (the screens are on page 2) and a Markdown note (one page), indexed."""
    folder = tmp_path_factory.mktemp("checks-docs")
    pdf = write_pdf(folder / "tidal.pdf", [PAGE_ONE, PAGE_TWO])
    (folder / "lighthouse.md").write_text(FOG_NOTES, encoding="utf-8")
    index(library, [pdf, folder / "lighthouse.md"])
    return folder


@pytest.fixture()
def no_checks(library, docs):
    with library.connect() as conn:
        conn.execute("TRUNCATE test_questions, check_runs RESTART IDENTITY CASCADE")
    return library


def _ranked(library, question, k=10):
    from localrag.core.retrieve import retrieve

    return [(r.file_name, r.page_number) for r in retrieve(library, question, k=k).results]


def test_a_run_ranks_each_page_and_its_history_row_says_what_changed(no_checks):
    """The page that answers is found first and quoted; the same question pinned to the wrong page gets that
    page's own rank and is not quoted; a second run with k changed is kept with that change, the models and
    the library's size; a cancelled run is not kept."""
    from localrag.core.checks import store
    from localrag.core.checks.questions import Question
    from localrag.core.checks.results import what_changed
    from localrag.core.checks.run import run_checks
    from localrag.core.progress import CancelToken

    library = no_checks
    with library.connect() as conn:
        right, _ = store.save(conn, Question(SCREENS, "tidal.pdf", [2]))
        wrong, _ = store.save(conn, Question(SCREENS + " (the wrong page)", "tidal.pdf", [1]))
        fog, _ = store.save(conn, Question(FOG, "lighthouse.md", [1]))
    seen = []
    run, results = run_checks(library, progress=seen.append)
    by_id = {r.question_id: r for r in results}
    assert (by_id[right].rank, by_id[right].quoted_on_page) == (1, True)
    assert "Divers clean the turbine intake screens" in by_id[right].quoted
    assert (by_id[fog].rank, by_id[fog].quoted_on_page) == (1, True)
    expected = _ranked(library, SCREENS + " (the wrong page)").index(("tidal.pdf", 1)) + 1
    assert by_id[wrong].rank == expected > 1
    assert not by_id[wrong].quoted_on_page
    assert [(p.done, p.total) for p in seen] == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert (run.questions, run.hits[1], run.quoted) == (3, 2, 2)

    with changed_settings(library, k=3):
        second, _ = run_checks(library)
    with library.connect() as conn:
        history = store.runs(conn)
        last = store.last_results(conn)
        chunks = conn.execute("SELECT count(*) FROM document_chunks").fetchone()[0]
    assert [r.id for r in history] == [run.id, second.id]
    kept = history[-1]
    assert what_changed(history[0], kept) == ["k 8 → 3"]
    assert kept.settings["k"] == 3 and kept.embedding_model == library.embedder.name
    assert kept.llm_model.endswith(".gguf")
    assert (kept.documents, kept.chunks) == (2, chunks)
    assert last[right].rank == 1

    cancel = CancelToken()
    cancel.cancel()
    stopped, done = run_checks(library, cancel=cancel)
    assert stopped.cancelled and not done
    with library.connect() as conn:
        assert len(store.runs(conn)) == 2


def test_jsonl_round_trip_keeps_every_field_and_import_updates(no_checks, tmp_path):
    """Lines in the eval datasets' format come back as they went in (``page`` or ``pages``, extra fields,
    their ids); importing again updates instead of adding twice; a line naming no page is skipped; a bad line
    is named and nothing of its file is read."""
    from localrag.core.checks import store
    from localrag.core.checks.questions import read_jsonl, write_jsonl

    lines = [
        {"id": "t-01", "file": "tidal.pdf", "page": 2, "question": SCREENS, "answer": "once a month",
         "evidence": "Divers clean the turbine intake screens once a month during neap tides.",
         "kind": "numeric"},
        {"id": "t-02", "file": "docs/lighthouse.md", "page": 1, "pages": [1], "question": FOG,
         "answer": "two blasts every sixty seconds", "evidence": "", "kind": "factual",
         "sections": ["Fog signal"], "section_pages": [1]},
        {"id": "t-03", "file": "tidal.pdf", "page": 0, "question": "Who built the barrage?", "answer": "",
         "evidence": "", "kind": "none"},
    ]  # fmt: skip
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    found = read_jsonl(source)
    assert [q.answerable for q in found] == [True, True, False]
    with no_checks.connect() as conn:
        assert store.save_all(conn, [q for q in found if q.answerable]) == (2, 0)
        found[0].pages = [1, 2]
        assert store.save_all(conn, found[:2]) == (0, 2)
        kept = store.questions(conn)
    out = tmp_path / "out.jsonl"
    assert write_jsonl(kept, out) == 2
    back = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert back[0] == {**lines[0], "pages": [1, 2], "page": 1}
    expected = {k: v for k, v in lines[1].items() if k != "pages"}
    assert back[1] == {**expected, "file": "lighthouse.md"}

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(lines[0]) + "\n" + json.dumps({"file": "x.pdf", "page": 1}) + "\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl, line 2: 'question' is missing"):
        read_jsonl(bad)


@pytest.mark.gui
def test_saving_a_test_question_from_an_answer_and_running_it_in_the_window(qtbot, no_checks):
    """Under an answer, "Save as a test question…" opens the dialog on the quoted page; the person picks the
    other source instead (the answer was wrong, say), saves, and the Test questions view runs it in the
    background: the progress bar counts, the row shows the rank, the totals and the history follow."""
    from localrag.gui.qt import QtCore
    from localrag.gui.views.checks import TestQuestionsWindow
    from localrag.gui.views.checks_save import save_from_turn

    with changed_settings(no_checks, **{**FAST, "answer_lead": "sources", "reword": False}) as library:
        worker_gen = warmed_worker(library)
        worker = next(worker_gen)
        panel_gen = chat_panel(qtbot, library, worker)
        panel = next(panel_gen)
        try:
            with qtbot.waitSignal(panel.generation_finished, timeout=60000):
                assert panel.ask(SCREENS)
            assert "Save as a test question…" in panel.transcript.toPlainText()
            with qtbot.waitSignal(panel.test_question_requested, timeout=2000) as asked:
                panel._on_anchor(QtCore.QUrl("check:0"))
            assert asked.args == [0]
            dialog = save_from_turn(library, panel.turns[0], panel)
            assert dialog is not None
            qtbot.waitUntil(lambda: dialog.document.count() == 2, timeout=10000)
            assert (dialog.document.currentData(), dialog.pages_edit.text()) == ("tidal.pdf", "2")
            assert "Divers clean the turbine intake screens" in dialog.answer_edit.toPlainText()
            # Another document and page, as for a wrong answer; then back to the quoted page, from the picks.
            dialog.document.setCurrentIndex(dialog.document.findData("lighthouse.md"))
            dialog.pages_edit.setText("1")
            edited = dialog.edited()
            assert (edited.file, edited.pages, edited.question) == ("lighthouse.md", [1], SCREENS)
            assert dialog.picks.itemText(1).startswith("Quoted: ")
            dialog.picks.setCurrentIndex(1)
            dialog.picks.activated.emit(1)
            assert (dialog.document.currentData(), dialog.pages_edit.text()) == ("tidal.pdf", "2")
            with qtbot.waitSignal(dialog.saved, timeout=10000) as saved:
                dialog.save_button.click()

            window = TestQuestionsWindow(library)
            qtbot.addWidget(window)
            window.show()
            qtbot.waitUntil(lambda: window.table.topLevelItemCount() == 1, timeout=10000)
            assert window.questions[0].id == saved.args[0]
            assert (window.questions[0].file, window.questions[0].pages) == ("tidal.pdf", [2])
            with qtbot.waitSignal(window.run_finished, timeout=60000) as finished:
                window.run_button.click()
                assert window.progress.isVisible() and window.cancel_button.isVisible()
            run = finished.args[0]
            assert not run.cancelled and (run.questions, run.hits[1], run.quoted) == (1, 1, 1)
            qtbot.waitUntil(lambda: window.runs_table.topLevelItemCount() == 1, timeout=10000)
            row = window.table.topLevelItem(0)
            assert (row.text(3), row.text(4)) == ("1", "yes")
            assert not window.progress.isVisible() and window.run_button.isVisible()
            assert "found at 1: 1/1" in window.totals.text()
            assert window.chart.points and window.chart.points[0].run.id == run.id
        finally:
            for gen in (panel_gen, worker_gen):
                with pytest.raises(StopIteration):
                    next(gen)


def _checks(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "localrag", "checks", *args]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300)


def test_the_command_line_imports_runs_and_exports(no_checks, tmp_path):
    """``local-rag checks``: a bad file adds nothing; a dataset file goes in, runs (one page found first and
    quoted, one not in the library), and comes back out line for line."""
    lines = [
        {"id": "c-1", "file": "tidal.pdf", "page": 2, "question": SCREENS, "answer": "once a month",
         "evidence": "", "kind": "numeric"},
        {"id": "c-2", "file": "absent.pdf", "page": 3, "question": FOG, "answer": "", "evidence": "",
         "kind": "factual"},
    ]  # fmt: skip
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(lines[0]) + "\n{not json\n", encoding="utf-8")

    out = _checks("import", str(bad))
    assert out.returncode == 2 and "bad.jsonl, line 2" in out.stderr, out.stderr
    out = _checks("import", str(good), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"added": 2, "updated": 0, "skipped": 0}
    out = _checks("run", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    by_label = {r["id"]: r for r in report["results"]}
    assert (by_label["c-1"]["rank"], by_label["c-1"]["quoted_on_page"]) == (1, True)
    assert (by_label["c-2"]["rank"], by_label["c-2"]["quoted_on_page"]) == (None, False)
    assert (report["run"]["questions"], report["run"]["hit@1"], report["run"]["documents"]) == (2, 1, 2)
    out = _checks("export", "-")
    assert out.returncode == 0, out.stderr
    assert [json.loads(line) for line in out.stdout.splitlines()] == lines
