"""Domain packs: a pack acts only on a document that shows evidence of its field (or that a person marked),
and a document's identity holds only fields found with evidence."""

from __future__ import annotations

import pytest

from fixtures_docs import write_pdf
from localrag.core import hooks
from localrag.core.ingest import metadata
from localrag.core.ingest.pipeline import index_paths
from localrag.core.retrieve import retrieve
from localrag.domains.finance import statements

# Files that once got a finance label (or a name from their file name), as people write them.
ORDINARY_TEXT = {
    "Thesis_2021.md": """# Mass balance of three alpine glaciers, 1990–2020

A thesis submitted for the degree of Master of Science in Glaciology.

## Abstract

Annual precipitation and summer melt decide the annual mass balance of a glacier. This thesis reports the
annual report of stake measurements on three glaciers and compares the winter balance with the summer
balance. Form 10 of the survey protocol lists the stakes; the quarterly readings of 2021 are in the appendix.
""",
    "camera-guide.md": """# Camera guide

The camera records 8K video at up to 30 frames per second, and 4K video at up to 120 frames per second.
Hold the shutter button halfway to focus. The battery lasts about two hours of recording.
""",
    "quarterly-club-newsletter-Q3-2022.md": """# Riverside Rowing Club newsletter

Our quarterly report on the season: the men's eight won at the autumn regatta, the boathouse roof was
repaired, and the annual dinner is on the first Friday of December. New members train on Saturday mornings.
""",
}
ORDINARY_PDFS = {
    "R-FAQ.pdf": ["R FAQ", "Frequently Asked Questions on R", "How can R be installed? See the manual."],
    "R-admin.pdf": ["R Installation and Administration", "Installing R under Unix-alikes is described here."],
    "developers-reference.pdf": [
        "Debian Developer's Reference",
        "This document gives an overview of the recommended procedures for Debian developers.",
    ],
}
FINANCE_WORDS = ("10-K", "8-K", "10-Q", "annual report", "quarterly report", "fiscal year", "FY20", "Q3 2022")


def _cover(company: str, year: int) -> list[str]:
    return [
        "UNITED STATES SECURITIES AND EXCHANGE COMMISSION",
        "Washington, D.C. 20549",
        "FORM 10-K",
        f"For the fiscal year ended December 31, {year}",
        company,
        "(Exact name of registrant as specified in its charter)",
    ]


def _balance_sheet(title: str) -> list[str]:
    rows = [
        ("Cash and cash equivalents", 2853, 3053),
        ("Accounts receivable, net", 4020, 3869),
        ("Inventories", 2591, 2425),
        ("Total current assets", 10181, 9936),
        ("Property, plant and equipment, net", 8738, 8866),
        ("Total assets", 36500, 37987),
        ("Accounts payable", 2266, 1945),
        ("Total current liabilities", 7244, 7687),
        ("Total equity", 9848, 11622),
    ]
    return [title, "(In thousands) 2023 2022"] + [f"{label} {a:,} {b:,}" for label, a, b in rows]


def test_ordinary_files_get_no_finance_label_and_a_10k_keeps_its_identity(clean_db, tmp_path):
    for name, text in ORDINARY_TEXT.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    for name, lines in ORDINARY_PDFS.items():
        write_pdf(tmp_path / name, [lines])
    write_pdf(
        tmp_path / "GLOBEX_2018_10K.pdf",
        [_cover("GLOBEX HOLDINGS, INC.", 2018), _balance_sheet("Consolidated Balance Sheets")],
    )
    assert index_paths(clean_db, [tmp_path]).ready == 7
    with clean_db.connect() as conn:
        rows = conn.execute(
            "SELECT d.path, d.meta, array_agg(c.context) FROM documents d JOIN document_chunks c "
            "ON c.doc_id = d.id GROUP BY d.id"
        ).fetchall()
    found = {path.rsplit("/", 1)[-1]: (meta, contexts) for path, meta, contexts in rows}
    for name in [*ORDINARY_TEXT, *ORDINARY_PDFS]:
        meta, contexts = found[name]
        assert "domain" not in meta, name
        # No organisation from the file name, no kind or period from a word that looks like one.
        assert not {"organization", "kind", "period", "quarter", "year"} & meta.keys(), (name, meta)
        for context in contexts:
            assert not any(word.lower() in context.lower() for word in FINANCE_WORDS), (name, context)
    meta, contexts = found["GLOBEX_2018_10K.pdf"]
    assert meta["domain"] == "finance"
    assert "page 1: an SEC cover page" in meta["sources"]["domain"]
    assert meta["organization"] == "Globex Holdings, Inc."
    assert meta["kind"] == "10-K annual report" and meta["year"] == 2018
    assert meta["sources"]["organization"] == "first pages"
    # A filing's file name says its fiscal period ("GLOBEX_2018_10K"): read because the cover is evidence.
    assert meta["sources"]["year"] == "file name"
    assert contexts[0].startswith("Globex Holdings, Inc. · 10-K annual report · fiscal year 2018")


def test_a_question_about_soil_liquidity_is_no_finance_question_in_a_library_without_reports(
    clean_db, tmp_path
):
    """The question names "liquidity", a measure read off a balance sheet; a library with a page titled
    "Balance sheets" and rows of figures, but no financial report, gets no statement put first."""
    (tmp_path / "soil-hydrology.md").write_text(
        "# Soil hydrology\n\nAfter rain the pores of a clay soil fill with water: the soil loses strength "
        "and its liquidity rises until it drains. Sandy soils drain within hours.\n",
        encoding="utf-8",
    )
    write_pdf(
        tmp_path / "field-trial.pdf",
        [["Field trial of soil moisture after rain"], _balance_sheet("Water balance sheets of the plots")],
    )
    assert index_paths(clean_db, [tmp_path]).ready == 2
    question = "How does the liquidity of the soil change after rain?"
    assert statements.asked(question)  # the pack alone would read it as a balance-sheet question
    resp = retrieve(clean_db, question, k=5)
    assert "pages_first" not in resp.routing
    assert all(r.domain == "" for r in resp.results)
    assert resp.results[0].file_name == "soil-hydrology.md"


def test_a_pack_acts_only_on_a_document_with_evidence_or_turned_on_by_a_person(clean_db, tmp_path):
    write_pdf(
        tmp_path / "globex-statements.pdf",
        [
            [
                "Liquidity and capital resources",
                "Globex watches its quick ratio and its liquidity closely. The quick ratio improved in",
                "2023 compared with 2022 as management reduced short-term borrowings; liquidity",
                "remained strong and the quick ratio is reviewed by the board each quarter together with",
                "the gross margin and the current ratio. Globex expects its quick ratio to improve in 2024.",
            ],
            _balance_sheet("Consolidated Balance Sheets"),
        ],
    )
    assert index_paths(clean_db, [tmp_path]).ready == 1
    question = "Has Globex's quick ratio improved?"
    plain = retrieve(clean_db, question, k=5)
    assert "pages_first" not in plain.routing  # no cover page, no statement of cash flows: no evidence
    assert all("pinned" not in r.scores for r in plain.results)
    with clean_db.connect() as conn:
        doc_id = conn.execute("SELECT id FROM documents").fetchone()[0]
        with pytest.raises(ValueError, match="unknown domain pack"):
            metadata.edit(conn, doc_id, {"domain": "astrology"})
        conn.rollback()
        metadata.edit(conn, doc_id, {"domain": "finance"})
        conn.commit()
        meta = metadata.document_meta(conn, doc_id)
    assert meta["domain"] == "finance" and meta["sources"]["domain"] == "edited"
    marked = retrieve(clean_db, question, k=5)
    assert marked.results[0].page_number == 2 and marked.results[0].domain == "finance"
    assert marked.results[0].scores["pinned"] == "balance sheet"
    assert marked.routing["pages_first"][0]["pack"] == "finance"
    assert marked.routing["pages_first"][0]["why"] == "the question needs the balance sheet"
    assert marked.routing["pages_first"][0]["evidence"] == "edited"  # turned on by a person
    with clean_db.connect() as conn:  # turned off again: the pack no longer acts
        metadata.edit(conn, doc_id, {"domain": hooks.NO_DOMAIN})
        conn.commit()
    assert "pages_first" not in retrieve(clean_db, question, k=5).routing


def test_the_packs_are_registered_through_the_hook_points():
    assert "finance" in hooks.packs()
    words = hooks.routing_words(frozenset({"finance"}))
    assert "revenue" in words.common and any(kind == "annual" for _, kind in words.kinds)
    assert hooks.routing_words(frozenset()) == hooks.RoutingWords()
    assert hooks.is_title("Consolidated Statements of Cash Flows", "finance")
    assert not hooks.is_title("Consolidated Statements of Cash Flows", "")
    assert hooks.evidence_features(
        "capital expenditure?", "Purchases of property, plant 1,577 1,373", "finance"
    )
    assert (
        hooks.evidence_features("capital expenditure?", "Purchases of property, plant 1,577 1,373", "") == {}
    )


def test_the_developer_pane_says_which_pack_put_a_page_first_and_why():
    from localrag.gui.views.devpane import pack_note

    pin = {"pack": "finance", "page": 5, "why": "the question needs the balance sheet", "evidence": "edited"}
    assert pack_note(pin) == (
        "Pack finance: page 5 first (the question needs the balance sheet; "
        "it acts on the document: set by hand)."
    )
    found = {**pin, "evidence": "page 1: an SEC cover page (“FORM 10-K”, “Exact name of registrant”)"}
    assert "page 1: an SEC cover page" in pack_note(found)
