"""Figures computed in the open: a question asking for a change or a percentage of figures a table holds is
worked out from the table's cells, each operand cited on its page; a missing operand is named, not guessed.

Real parts: a Word report with a table, indexed into the embedded PostgreSQL, searched with the bundled
embedding model, answered through ``ChatEngine.ask`` with the sources leading (the computation needs no
language model)."""

from __future__ import annotations

from fixtures_chat import changed_settings, index
from fixtures_docs import write_docx
from localrag.core.answer.engine import ChatEngine
from localrag.core.answer.events import Done
from localrag.core.answer.figures import COMPUTED, MISSING, Computation
from localrag.core.answer.pages import page_texts
from localrag.core.answer.request import AskRequest
from localrag.gui.views.source_ref import SourceRef
from localrag.gui.views.transcript import Turn, figure_ref, turn_html

COLORS = dict.fromkeys(("muted", "warning", "error", "you_bg", "quote_bg", "quote_bar"), "#777")


def _report(tmp_path):
    return write_docx(
        tmp_path / "orchard-cooperative-report-2023.docx",
        [
            ("Title", "Orchard Cooperative — Annual Report 2023"),
            ("", "The cooperative presses apples from its members' orchards and sells juice and cider."),
            ("Heading 2", "Sales by product"),
            ("", "Juice sold well all year; the new cider press started in May."),
        ],
        table=[
            ["Product", "2023 (£)", "2022 (£)"],
            ["Apple juice", "48,300", "41,900"],
            ["Cider", "22,750", "—"],
            ["Total sales", "71,050", "41,900"],
        ],
    )


def _ask(library, question: str) -> Done:
    with changed_settings(library, answer_lead="sources", reword=False):
        events = list(ChatEngine(library, None).ask(AskRequest(question, persist=False)))
    done = events[-1]
    assert isinstance(done, Done), events
    return done


def test_a_percentage_change_is_computed_with_each_operand_cited_on_its_page(clean_db, tmp_path):
    index(clean_db, [_report(tmp_path)], ready=1)
    done = _ask(clean_db, "What was the percentage change in apple juice sales from 2022 to 2023?")
    worked = Computation.from_dict(done.evidence.figures if done.evidence else None)
    assert worked is not None and worked.status == COMPUTED, done.answer
    assert worked.result_text == "15.3%"  # (48,300 − 41,900) ÷ 41,900 × 100
    assert [(o.heading, o.value) for o in worked.operands] == [("2022 (£)", "41,900"), ("2023 (£)", "48,300")]
    with clean_db.pool.connection() as conn:
        page = page_texts(conn, [(worked.operands[0].doc_id, 1)])[(worked.operands[0].doc_id, 1)]
    for o in worked.operands:
        assert o.cited and o.page_number == 1 and 1 <= o.number <= len(done.sources)
        heading, value = (page[a:b] for a, b in o.marks)  # the viewer outlines exactly these characters
        assert (heading, value) == (o.heading, o.value)
        assert page[o.row[0] : o.row[1]].startswith("Apple juice")
    # The answer's text, ``ask --json`` and the window show the computation and where each operand is.
    assert "= 15.3%" in done.answer and "Apple juice, 2022 (£): 41,900 [" in done.answer
    assert done.to_json()["figures"]["result_text"] == "15.3%"
    turn = Turn("q", answer=done.answer, evidence=done.evidence, lead=done.lead)
    turn.sources = [SourceRef.from_source(s, i + 1) for i, s in enumerate(done.sources)]
    html = turn_html(0, turn, COLORS)
    assert "15.3%" in html and "href='fig:0:0'" in html and "href='fig:0:1'" in html
    ref = figure_ref(turn, 1)
    assert (
        ref is not None and ref.page_number == 1 and [tuple(m) for m in ref.marks] == worked.operands[1].marks
    )


def test_a_missing_operand_is_named_with_the_closest_cells_not_guessed(clean_db, tmp_path):
    index(clean_db, [_report(tmp_path)], ready=1)
    done = _ask(clean_db, "What was the percentage change in cider sales from 2022 to 2023?")
    worked = Computation.from_dict(done.evidence.figures if done.evidence else None)
    assert worked is not None and worked.status == MISSING and worked.result is None, done.answer
    assert "not computed" in done.answer and "“cider sales”, 2022" in worked.message
    closest = worked.candidates["earlier"]
    assert closest and closest[0].label == "Cider" and closest[0].value == "—"  # shown, with its place
    assert "= " not in done.answer.splitlines()[0]


def test_the_operation_and_operands_are_read_from_the_question_alone():
    from localrag.core.answer.figures import work_out
    from localrag.core.answer.figures_asked import detect

    op = detect("By what percentage did Netflix's long-term debt rise in 2017 compared with 2016?")
    assert op is not None and op.kind == "pct_change" and op.owners == ("Netflix",)
    assert [(w.measure, w.column) for w in op.wanted] == [
        ("long-term debt", "2016"),
        ("long-term debt", "2017"),
    ]
    op = detect("What was the ratio of the society's total income to total expenditure in 2023?")
    assert op is not None and op.kind == "ratio"
    assert [(w.measure, w.column) for w in op.wanted] == [
        ("total income", "2023"),
        ("total expenditure", "2023"),
    ]
    assert detect("What was turnover in 2023?") is None  # a figure to quote, nothing to compute
    # A question that only looks like one, whose words name no row and no year, gets no computation.
    assert work_out("What's the difference between list.sort() and sorted()?", [], lambda keys: {}) is None
