"""Comparisons side by side: a question naming two documents (or periods) is answered as a table, a column per
side, each cell quoted and cited on its page, and a line saying what changed when both cells hold a figure.

Real parts: a 2021 report (PDF, the figure on page 2) and a 2022 report (Word), indexed into the embedded
PostgreSQL, searched with the bundled embedding model and answered through ``ChatEngine.ask`` with the sources
leading; the same answer kept in a chat, exported (Markdown, HTML) and drawn in the transcript."""

from __future__ import annotations

import json
import re

from fixtures_chat import changed_settings, index
from fixtures_docs import write_docx, write_pdf
from localrag.core.answer import export, history
from localrag.core.answer.compare import build, figures_in
from localrag.core.answer.compare_sides import PERIOD, collection_name, document_name, find_sides
from localrag.core.answer.compare_table import NOTHING, Comparison
from localrag.core.answer.engine import ChatEngine
from localrag.core.answer.events import Done
from localrag.core.answer.quotes import ANSWERED, Evidence, EvidenceSpan
from localrag.core.answer.request import AskRequest
from localrag.gui.views.source_ref import SourceRef
from localrag.gui.views.transcript import Turn, span_ref, turn_html

COLORS = dict.fromkeys(("muted", "warning", "error", "you_bg", "quote_bg", "quote_bar"), "#777")
QUESTION = "How did subscription income change between the 2021 and the 2022 report?"


def _reports(tmp_path):
    old = write_pdf(
        tmp_path / "riverside-choir-report-2021.pdf",
        [
            ["Riverside Choir Annual Report 2021", "The choir rehearsed every week in the church hall."],
            [
                "Finances",
                "Subscriptions from members brought in £4,200 during the year.",
                "The spring concert sold most of its seats.",
            ],
        ],
        title="Riverside Choir Annual Report 2021",
    )
    new = write_docx(
        tmp_path / "riverside-choir-report-2022.docx",
        [
            ("Title", "Riverside Choir Annual Report 2022"),
            ("Heading 2", "Finances"),
            ("", "Subscriptions from members brought in £4,650 during the year."),
            ("", "Rehearsals moved to the school hall in March."),
        ],
    )
    return old, new


def _ask(library, question: str, *, persist: bool = False) -> Done:
    with changed_settings(library, answer_lead="sources", reword=False):
        events = list(ChatEngine(library, None).ask(AskRequest(question, persist=persist)))
    done = events[-1]
    assert isinstance(done, Done), events
    return done


def test_two_year_reports_are_compared_side_by_side_each_cell_cited_and_the_change_shown(
    clean_db, tmp_path, qtbot, monkeypatch
):
    old, new = _reports(tmp_path)
    index(clean_db, [old, new])
    done = _ask(clean_db, QUESTION, persist=True)
    assert done.evidence is not None
    table = Comparison.from_dict(done.evidence.comparison)
    assert table is not None, done.answer
    assert [("2021" in c.side.name, "2022" in c.side.name) for c in table.columns] == [
        (True, False),
        (False, True),
    ]
    spans = done.evidence.spans
    cells = [table.cell(c, spans) for c in table.columns]
    assert all(s is not None for s in cells), done.answer
    old_cell, new_cell = cells[0], cells[1]
    assert old_cell is not None and new_cell is not None
    assert "£4,200" in old_cell.text and old_cell.page_number == 2 and old_cell.path == str(old)
    assert "£4,650" in new_cell.text and new_cell.path == str(new)
    for s in cells:  # each cell cites the source it is quoted from
        assert s is not None and 1 <= s.number <= len(done.sources)
        assert done.sources[s.number - 1].doc_id == s.doc_id
    assert table.change.startswith("Change, 2021 → 2022: £4,650 − £4,200 = £450")
    assert "£4,200" in done.answer and "£4,650" in done.answer and "£450" in done.answer
    assert done.to_json()["comparison"]["columns"][0]["figure"] == "£4,200"

    with clean_db.connect() as conn:  # kept with the chat, exported as a table with its page links
        chat = history.get_chat(conn, done.chat_id)
        assert chat is not None
        _, md = export.export_chat(conn, chat.id, "md")
        _, html = export.export_chat(conn, chat.id, "html")
    link = f"file://{old}#page=2"
    row = next(line for line in md.splitlines() if "£4,200" in line)
    assert row.startswith("| ") and "£4,650" in row and f"(<{link}>)" in row
    assert '<table class="compare"' in html and f'href="{link}"' in html and "£450" in html
    _open_in_a_browser(html, link, tmp_path, qtbot, monkeypatch)

    turn = Turn(QUESTION, answer=done.answer, evidence=done.evidence, lead=done.lead)
    turn.sources = [SourceRef.from_source(s, i + 1) for i, s in enumerate(done.sources)]
    drawn = turn_html(0, turn, COLORS)
    assert "ev:0:0" in drawn and "ev:0:1" in drawn and "<th" in drawn
    ref = span_ref(turn, 0)  # the cell's link opens its page with the sentence highlighted
    assert ref is not None and ref.page_number == 2 and "£4,200" in ref.text


def _open_in_a_browser(html: str, link: str, tmp_path, qtbot, monkeypatch) -> None:
    """The exported HTML opened in Chromium (Qt WebEngine, offscreen): it loads, its page links are there as
    links, and it draws (a screenshot kept beside the test's files)."""
    monkeypatch.setenv(
        "QTWEBENGINE_DISABLE_SANDBOX", "1"
    )  # Chromium's sandbox refuses root (CI runs as root)
    from PySide6.QtCore import QUrl
    from PySide6.QtWebEngineWidgets import QWebEngineView

    page = tmp_path / "chat.html"
    page.write_text(html, encoding="utf-8")
    view = QWebEngineView()
    qtbot.addWidget(view)
    view.resize(1000, 700)
    with qtbot.waitSignal(view.loadFinished, timeout=60_000) as loaded:
        view.load(QUrl.fromLocalFile(str(page)))
    assert loaded.args == [True]
    found: list[str] = []
    script = "JSON.stringify(Array.from(document.links).map(a => a.href))"
    view.page().runJavaScript(script, 0, found.append)
    qtbot.waitUntil(lambda: bool(found), timeout=30_000)
    assert link in json.loads(found[0])
    cells: list[str] = []
    view.page().runJavaScript("document.querySelectorAll('table.compare td').length", 0, cells.append)
    qtbot.waitUntil(lambda: bool(cells), timeout=30_000)
    assert int(cells[0]) == 2
    view.show()
    qtbot.waitExposed(view)
    backgrounds = {"#ffffff", "#1e1f22"}  # the export's page colour, light or dark

    def inked(shot) -> int:
        """How many sampled points of the title and first lines are text: far from the page's colour."""
        background = shot.pixelColor(3, shot.height() - 3)
        if background.name() not in backgrounds:
            return 0  # not the page yet (the window before it is painted)
        return sum(
            abs(shot.pixelColor(x, y).lightness() - background.lightness()) > 100
            for x in range(0, shot.width(), 3)
            for y in range(0, 120, 3)
        )

    qtbot.waitUntil(lambda: inked(view.grab().toImage()) > 50, timeout=30_000)  # painted, text and all
    assert view.grab().toImage().save(str(tmp_path / "chat.png"))


def _names():
    return [
        document_name(1, "/d/kestrel-guide.pdf", "Kestrel Print Driver User Guide"),
        document_name(2, "/d/oqb.pdf", "Open Quiz Builder"),
        document_name(3, "/d/harbour-report-2023.docx", "Harbour Mill Ltd Annual Report 2023"),
        document_name(4, "/d/harbour-minutes-2024-03.docx", "Harbour Mill Ltd Minutes of the board meeting"),
        document_name(5, "/d/brookside-report-2023.docx", "Brookside Society Annual Report 2023"),
        collection_name("Lab protocols", [6, 7]),
    ]


def test_the_sides_come_from_the_question_words_matched_to_the_library_names():
    names = _names()
    sides, considered = find_sides("Are Kestrel and OQB under the same licence?", names)
    assert [s.doc_ids for s in sides] == [[1], [2]]  # "OQB": the initials of a title
    assert any("oqb" in c["words"] for c in considered)
    # Two reports fit "the annual report" equally: the one retrieval ranked first is taken.
    question = "Does the figure the board approved match the one in the annual report?"
    assert [s.doc_ids for s in find_sides(question, names, ranked=[4, 3, 5])[0]] == [[4], [3]]
    assert [s.doc_ids for s in find_sides(question, names, ranked=[5, 4, 3])[0]] == [[4], [5]]
    sides, _ = find_sides("How did turnover change between 2022 and 2023?", names)
    assert [(s.kind, s.name) for s in sides] == [(PERIOD, "2022"), (PERIOD, "2023")]
    assert find_sides("What does Kestrel say about paper sizes?", names)[0] == []  # one document: none
    sides, _ = find_sides("Do the lab protocols and the Kestrel guide differ on cleaning?", names)
    assert sorted(s.kind for s in sides) == ["collection", "document"]


def test_a_common_word_is_not_a_title_s_initials():
    """ "at" is the initials of "Argparse Tutorial" and a word of most questions: only "AT" names it."""
    names = [*_names(), document_name(8, "/d/argparse.html", "Argparse Tutorial")]
    question = "Does Kestrel need at least two drivers, compared with the quiz builder?"
    assert [s.doc_ids for s in find_sides(question, names)[0]] == [[1], [2]]
    assert [s.doc_ids for s in find_sides("Is AT newer than OQB?", names)[0]] == [[8], [2]]
    sides, _ = find_sides("are oqb and kestrel under the same licence?", names)
    assert [s.doc_ids for s in sides] == [[2], [1]]


def test_a_side_with_nothing_found_says_so_and_no_change_is_made_up():
    sides, considered = find_sides("Are Kestrel and OQB under the same licence?", _names())
    quoted = EvidenceSpan(
        "Kestrel is licensed under the GPL, version 2.", 1, 1, "Kestrel", "/d/k.pdf", 3, 0, 40, 0.9
    )
    evidence = Evidence(ANSWERED, spans=[quoted])
    table = build("", evidence, sides, considered, lambda side, own: own)
    assert [c.span for c in table.columns] == [0, -1]
    assert NOTHING.format(name="Open Quiz Builder") in evidence.text()
    assert table.change == ""  # one side has no figure: nothing to set against it
    assert figures_in("expected to cost about £38,000, to be paid on 30 April 2024 from version 2.1") == [
        ("£38,000", 38000.0, "£")
    ]
    assert re.search(r"“Kestrel is licensed", evidence.text())


def test_a_heading_alone_is_no_cell():
    sides, considered = find_sides("Are Kestrel and OQB under the same licence?", _names())
    heading = EvidenceSpan("## Licence", 1, 1, "Kestrel", "/d/k.pdf", 3, 0, 10, 0.9)
    quoted = EvidenceSpan(
        "Open Quiz Builder is released under the MIT licence.", 2, 2, "OQB", "/d/o.pdf", 1, 0, 50, 0.8
    )
    evidence = Evidence(ANSWERED, spans=[heading, quoted])
    table = build("", evidence, sides, considered, lambda side, own: own)
    assert [c.span for c in table.columns] == [-1, 0]  # the heading says nothing of Kestrel's licence
    assert NOTHING.format(name="Kestrel Print Driver User Guide") in evidence.text()
    assert "## Licence" not in evidence.text()
