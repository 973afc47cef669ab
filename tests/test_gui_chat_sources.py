"""The source viewer and the developer pane, on real documents indexed by the real pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_chat import index
from fixtures_docs import write_content_pdf

pytestmark = pytest.mark.gui

PAGE_ONE = [
    "Tidal Power Station Handbook",
    "The barrage holds back the sea at high tide and releases it through turbines.",
    "Each turbine produces about ten megawatts when the head of water exceeds two metres.",
]
PAGE_TWO = [
    "Maintenance",
    "Sluice gates are inspected every spring for corrosion and marine growth.",
    "Divers clean the turbine intake screens once a month during neap tides.",
    "A logbook records the torque of every gate motor after each inspection.",
]
NOTES = """# Harbour notes

## Moorings

Visiting yachts moor on the pontoon by the lifeboat station. The harbour master collects fees at dawn.

## Fuel

Diesel is sold at the fuel berth from eight until noon, cash only.
"""


def write_pdf(path: Path, pages: list[list[str]]) -> Path:
    """A PDF whose pages hold these lines in Helvetica (a real text layer, as a word processor writes)."""
    return write_content_pdf(
        path,
        [["BT /F1 11 Tf 15 TL 72 720 Td", *(f"({line}) Tj T*" for line in lines), "ET"] for lines in pages],
    )


# A cash flow statement laid out in columns: (x, y, text) in points, each piece placed on its own.
CASH_FLOWS = [
    (72, 720, "Globex Holdings and Subsidiaries"),
    (72, 704, "Consolidated Statement of Cash Flows"),
    (72, 680, "(Millions)"),
    (380, 680, "2018"),
    (450, 680, "2017"),
    (520, 680, "2016"),
    (72, 664, "Net cash provided by operating activities"),
    (372, 664, "6,439"),
    (442, 664, "6,240"),
    (512, 664, "6,662"),
    (72, 648, "Purchases of property, plant and equipment"),
    (368, 648, "(1,577)"),
    (438, 648, "(1,373)"),
    (508, 648, "(1,420)"),
    (72, 632, "Proceeds from sale of businesses"),
    (380, 632, "846"),
    (444, 632, "1,065"),
    (520, 632, "142"),
]


def write_placed_pdf(path: Path, pieces: list[tuple[int, int, str]]) -> Path:
    """A one-page PDF with each text piece placed at its own position (as a table is typeset)."""
    return write_content_pdf(path, [[f"BT /F1 10 Tf {x} {y} Td ({text}) Tj ET" for x, y, text in pieces]])


@pytest.fixture(scope="module")
def docs(library, tmp_path_factory):
    """A two-page PDF, a Markdown file and a one-page statement in columns, indexed."""
    folder = tmp_path_factory.mktemp("viewer-docs")
    pdf = write_pdf(folder / "tidal.pdf", [PAGE_ONE, PAGE_TWO])
    md = folder / "harbour.md"
    md.write_text(NOTES, encoding="utf-8")
    table = write_placed_pdf(folder / "globex-cash-flows.pdf", CASH_FLOWS)
    index(library, [pdf, md, table])
    return {"pdf": pdf, "md": md, "table": table}


def _top(library, query, doc_type):
    from localrag.core.retrieve import retrieve

    response = retrieve(library, query, doc_types=[doc_type])
    assert response.reason is None, response.error
    assert response.results, query
    return response.results[0]


def test_pdf_source_shows_the_page_with_the_passage_highlighted(qtbot, library, docs):
    from localrag.gui.views.sources import SourceRef, SourceViewer, page_pixmap

    result = _top(library, "How often are the turbine intake screens cleaned?", "pdf")
    assert result.page_number == 2
    viewer = SourceViewer(library, SourceRef.from_result(result, 2))
    qtbot.addWidget(viewer)
    with qtbot.waitSignal(viewer.loaded, timeout=20000) as blocker:
        viewer.show()
    view = blocker.args[0]
    assert view.page is not None and view.page_error == ""
    assert view.page.exact  # found at its recorded offsets, not by searching for its words
    # The highlight sits on the page's text lines: inside the page, below the top margin.
    height, width = view.page.pixels.shape[:2]
    assert view.page.rects
    for x, y, w, h in view.page.rects:
        assert 0 <= x < width and 0 <= y < height and w > 0 and h > 0
    top = min(r[1] for r in view.page.rects) / height
    assert 0.05 < top < 0.3  # the text block starts near the top of a US Letter page (72 pt margin)
    # The highlighted pixels are tinted yellow: a rectangle holds less blue than in the plain rendering.
    pixmap = page_pixmap(view.page).toImage()
    x, y, w, h = (int(v) for v in view.page.rects[0])
    plain_blue = view.page.pixels[y : y + h, x : x + w, 2].mean()
    tinted = [pixmap.pixelColor(i, j).blue() for j in range(y, y + h) for i in range(x, x + w)]
    tinted_blue = sum(tinted) / len(tinted)
    assert tinted_blue < plain_blue - 20, (tinted_blue, plain_blue)
    # The passage pane highlights exactly the cited text.
    passage = view.passage
    assert "intake screens" in passage.text[passage.start : passage.end]
    assert " ".join(passage.text[passage.start : passage.end].split()) == " ".join(result.text.split())
    assert viewer.open_button.isEnabled()
    assert "tidal" in viewer.windowTitle().lower() or "page 2" in viewer.windowTitle()


def test_text_source_shows_the_passage_in_its_context(qtbot, library, docs):
    from localrag.core.answer.citations import Source
    from localrag.gui.views.sources import SourceRef, SourceViewer

    result = _top(library, "When is diesel sold at the fuel berth?", "markdown")
    stored = Source.from_dict(Source.from_result(1, result).to_dict())  # as kept with the message
    viewer = SourceViewer(library, SourceRef.from_source(stored))
    qtbot.addWidget(viewer)
    with qtbot.waitSignal(viewer.loaded, timeout=20000) as blocker:
        viewer.show()
    view = blocker.args[0]
    assert view.page is None and not viewer.page_scroll.isVisible()
    cited = view.passage.text[view.passage.start : view.passage.end]
    assert "Diesel is sold" in cited
    # The text pane paints the cited span, and only it.
    from localrag.gui.qt import QtGui

    def background_at(pos):
        cursor = QtGui.QTextCursor(viewer.passage_view.document())
        cursor.setPosition(pos + 1)  # the format of the character before the cursor
        return cursor.charFormat().background().color().name()

    assert background_at(view.passage.start + cited.index("Diesel")) == "#ffe45c"
    if view.passage.start > 0:
        assert background_at(0) != "#ffe45c"


def test_missing_file_still_shows_the_indexed_text(qtbot, library, docs, tmp_path):
    from localrag.gui.views.sources import SourceRef, SourceViewer

    result = _top(library, "What does each turbine produce?", "pdf")
    ref = SourceRef.from_result(result)
    ref.path = str(tmp_path / "moved-away.pdf")
    viewer = SourceViewer(library, ref)
    qtbot.addWidget(viewer)
    with qtbot.waitSignal(viewer.loaded, timeout=20000) as blocker:
        viewer.show()
    view = blocker.args[0]
    assert view.page is None and "no longer" in view.page_error
    assert "megawatts" in view.passage.text


def test_dev_pane_scores_match_retrieve(qtbot, library, docs):
    from localrag.core.retrieve import retrieve
    from localrag.gui.qt import Qt
    from localrag.gui.views.devpane import DevPane, result_row

    pane = DevPane(library)
    qtbot.addWidget(pane)
    pane.show()
    query = "turbine inspection of the sluice gates"
    pane.query_edit.setText(query)
    with qtbot.waitSignal(pane.retrieval_finished, timeout=30000) as blocker:
        qtbot.mouseClick(pane.run_button, Qt.LeftButton)
    shown = blocker.args[0]
    expected = retrieve(library, query, k=pane.k_box.value(), mode="hybrid")
    assert [r.chunk_ids for r in shown.results] == [r.chunk_ids for r in expected.results]
    assert pane.table.rowCount() == len(expected.results) > 0
    for row, result in enumerate(expected.results):
        cells = [pane.table.item(row, col).text() for col in range(1, pane.table.columnCount() - 1)]
        assert cells == result_row(result)
        scores = result.scores
        assert cells[4] == f"{scores['vector']:.4f}"
        assert cells[6] == (f"{scores['bm25']:.4f}" if scores["bm25"] is not None else "–")
        assert cells[8] == f"{scores['fused']:.5f}"
        assert cells[9] == ("passed" if result.passed_floor else "below")
    # Timings of each stage are shown.
    for stage in ("embed", "vector", "bm25", "fuse", "merge"):
        assert stage in pane.timings_label.text()
    # Every fused candidate, including any under the floor, on request.
    pane.candidates_box.setChecked(True)
    assert pane.table.rowCount() == len(shown.candidates)


def test_the_asked_cell_of_a_quoted_row_is_outlined_on_the_page(qtbot, library, docs):
    """A quoted row of figures: the row is highlighted, and the year asked for is outlined twice — its column
    heading and the row's value under it, found from pdfium's character positions."""
    from localrag.core.answer.evidence import find_evidence
    from localrag.core.answer.pages import page_texts
    from localrag.core.retrieve import retrieve
    from localrag.gui.views.sources import SourceRef, SourceViewer

    question = "What were the purchases of property, plant and equipment in FY2017?"
    result = retrieve(library, question, path_glob="globex-cash-flows.pdf").results[0]
    with library.pool.connection() as conn:
        pages = page_texts(conn, [(result.doc_id, result.page_number)])
    ev = find_evidence(question, [result], None, pages=pages)
    span = next(s for s in ev.spans if "Purchases" in s.text)
    row = next(r for r in span.rows if r.label == "Purchases of property, plant and equipment")
    assert row.asked == [1]
    page = pages[(result.doc_id, result.page_number)]
    assert [page[a:b] for a, b in row.marks] == ["2017", "(1,373)"]

    ref = SourceRef.from_result(result, 1)
    ref.char_start, ref.char_end, ref.text, ref.marks = span.char_start, span.char_end, span.text, row.marks
    viewer = SourceViewer(library, ref)
    qtbot.addWidget(viewer)
    with qtbot.waitSignal(viewer.loaded, timeout=20000) as blocker:
        viewer.show()
    shown = blocker.args[0].page
    assert shown is not None and shown.exact and len(shown.marks) == 2
    (heading,), (value,) = shown.marks
    # The heading sits above the value, in the same column; the value is on the highlighted row.
    assert heading[1] + heading[3] <= value[1]
    assert heading[0] < value[0] + value[2] and value[0] < heading[0] + heading[2]
    assert any(r[1] <= value[1] + value[3] / 2 <= r[1] + r[3] for r in shown.rects)
    # Another year's column is elsewhere on the line: the 2018 value lies left of the outlined one.
    assert value[0] > min(r[0] for r in shown.rects) + 200
