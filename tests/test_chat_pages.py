"""Whole sentences for the evidence: pages laid out from their chunks, running headers blanked, passages
widened to the sentences they cut — on the page and across a page break.

Real parts: a PDF written here goes through the real ingestion pipeline into the real store; the chat engine
quotes from it with the real embedding model (the sources lead, so no language model runs)."""

from __future__ import annotations

import pytest

from fixtures_chat import index, passage_of
from fixtures_docs import write_pdf
from localrag.core.answer.engine import ChatEngine
from localrag.core.answer.events import EvidenceReady
from localrag.core.answer.pages import WholePassage, clean_page, page_texts, widen
from localrag.core.answer.request import AskRequest


def test_a_running_header_with_the_page_number_is_blanked_and_the_lines_under_it_kept():
    pages = {
        (7, 1): "Widget Manual 5.4 1\nFirst page text.\n",
        (7, 2): "2 Widget Manual 5.4\nThe cooling fan runs at 1200 rpm.\n",
        (7, 3): "Widget Manual 5.4 3\nThe filter is changed every month.\n",
    }
    page = clean_page(pages, (7, 2))
    assert len(page) == len(pages[(7, 2)])  # offsets unchanged
    assert "Widget" not in page and "2 " not in page[:5]
    assert "The cooling fan runs at 1200 rpm." in page


def test_a_header_glued_to_a_heading_keeps_the_heading():
    pages = {
        (7, 30): "Chapter 6: Add-on packages 25 6.3 Installing packages\nText of the section.\n",
        (7, 31): "Chapter 6: Add-on packages 26\nMore text.\n",
    }
    page = clean_page(pages, (7, 30))
    assert "Chapter" not in page
    assert "6.3 Installing packages" in page


def test_a_first_line_that_differs_from_page_to_page_is_kept():
    pages = {
        (7, 1): "Tomatoes need sun.\nWater them.\n",
        (7, 2): "Basil grows well next to tomatoes.\nPinch the buds.\n",
    }
    assert clean_page(pages, (7, 2)) == pages[(7, 2)]


def test_a_passage_cut_in_mid_sentence_is_widened_to_whole_sentences_on_its_page():
    page = (
        "The pump starts when the tank is full. The cooling fan runs at 1200 rpm in normal operation.\n"
        "Clean the filter once a month. Replace it every year.\n"
    )
    start = page.index("fan runs")
    end = page.index("once a month") + 4
    whole = widen(passage_of(page, start, end), {(7, 2): page})
    assert isinstance(whole, WholePassage)
    assert whole.text == (
        "The cooling fan runs at 1200 rpm in normal operation.\nClean the filter once a month."
    )
    assert page[whole.char_start : whole.char_end] == whole.text
    assert whole.title == "Widget manual"  # everything else is the retrieved passage's


def test_a_sentence_that_runs_onto_the_next_page_is_finished_from_it():
    pages = {
        (7, 2): "Widget Manual 2\nThe filter must be replaced every twelve months or after one thousand\n",
        (7, 3): "Widget Manual 3\nhours of use, whichever comes first. Other text follows here.\n",
        (7, 4): "Widget Manual 4\nAnother page.\n",
    }
    page = pages[(7, 2)]
    start = page.index("The filter")
    whole = widen(passage_of(page, start, len(page)), pages)
    assert whole.text.endswith("or after one thousand hours of use, whichever comes first.")
    assert "Widget" not in whole.text
    assert whole.after > 0 and whole.char_end <= len(page)


def test_a_passage_that_ends_announcing_a_list_takes_its_items():
    page = (
        "2.5 Search paths\n\nIn looking for files, asy searches these paths, in the order listed:\n\n"
        "1. The current directory;\n\n2. The directories named by the variable ASYMPTOTE_DIR;\n\n"
        "3. The directory .asy in the user's home directory.\n\n2.6 Editing modes\n\nEmacs can edit code.\n"
    )
    end = page.index("listed:") + len("listed:")
    whole = widen(passage_of(page, page.index("In looking"), end), {(7, 2): page})
    assert whole.text.endswith("3. The directory .asy in the user's home directory.")
    assert "Editing modes" not in whole.text


def test_a_passage_already_whole_comes_back_unchanged():
    page = "The pump starts when the tank is full. The fan runs at 1200 rpm.\n"
    r = passage_of(page, 0, len(page.rstrip()))
    assert widen(r, {(7, 2): page}) is r
    assert widen(r, {}) is r  # page unknown


MANUAL = [
    ["Widget Manual 1", "Widget Manual", "This manual describes the widget and its care."],
    [
        "Widget Manual 2",
        "Maintenance",
        "Keep the widget dry and away from direct sunlight at all times.",
        "The air filter of the widget must be replaced every twelve months or after",
    ],
    [
        "Widget Manual 3",
        "two thousand hours of use, whichever comes first.",
        "Warranty claims need the receipt and the serial number of the widget.",
    ],
]


@pytest.fixture(scope="module")
def manual(library, tmp_path_factory):
    index(
        library, [write_pdf(tmp_path_factory.mktemp("pages") / "widget.pdf", MANUAL, title="Widget Manual")]
    )
    return library


def test_pages_are_laid_out_from_the_stored_chunks(manual):
    with manual.connect() as conn:
        doc_id = conn.execute("SELECT id FROM documents").fetchone()[0]
        texts = page_texts(conn, [(doc_id, 2), (doc_id, 3), (doc_id, 99)])
    assert set(texts) == {(doc_id, 2), (doc_id, 3)}
    assert "Keep the widget dry" in texts[(doc_id, 2)]
    assert "two thousand hours" in texts[(doc_id, 3)]


def test_the_evidence_quotes_the_whole_sentence_across_the_page_break(manual):
    manual.settings.answer_lead = "sources"
    manual.settings.reword = False
    engine = ChatEngine(manual, None)
    events = list(
        engine.ask(AskRequest("How often must the air filter of the widget be replaced?", persist=False))
    )
    evidence = next(e for e in events if isinstance(e, EvidenceReady)).evidence
    assert evidence.answered
    span = next(s for s in evidence.spans if "air filter" in s.text)
    flat = " ".join(span.text.split())
    assert "every twelve months or after two thousand hours of use, whichever comes first." in flat
    assert "Widget Manual" not in flat  # the next page's running header is not part of the sentence
    assert span.page_number == 2
    assert 0 <= span.char_start < span.char_end  # the highlight stays on the page the sentence starts on
