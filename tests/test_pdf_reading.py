"""PDF pages read as a person reads them: on PDFs written here, through the real loader (pdfium) and the
sentence splitter the answers quote from — a hyphen at a line's end, a footnote marker, a heading, a running
head and page number, a sentence over a page break — with offsets still pdfium's character indices."""

from __future__ import annotations

from pathlib import Path

import pypdfium2 as pdfium

from fixtures_chat import passage_of
from fixtures_docs import write_content_pdf
from localrag.core.answer.pages import widen
from localrag.core.ingest.loaders import load
from localrag.core.text import reading
from localrag.core.text import spans as sp


def _body(lines: list[str], top: int = 700, size: int = 11) -> str:
    """Lines of a paragraph in Helvetica, 14 points apart."""
    shown = " T* ".join(f"({line}) Tj" for line in lines)
    return f"BT /F1 {size} Tf 14 TL 72 {top} Td {shown} ET"


def _head(text: str, page: int) -> list[str]:
    """A running head at the top of the page and its number at the bottom."""
    return [f"BT /F1 9 Tf 72 760 Td ({text}) Tj ET", f"BT /F1 9 Tf 300 40 Td ({page}) Tj ET"]


def _sentences(text: str) -> list[str]:
    return [sp.flat(s.text) for s in sp.split_spans(text)]


FILLER = [
    "Every page of this manual holds a few lines of plain text written in one font.",
    "The lines are long enough to fill the width of the page from one side to the other.",
    "A reader finds the same words at the top of every page, and a number at the foot.",
    "None of those running lines belongs in a sentence that an answer quotes to the reader.",
]


def test_a_word_hyphenated_at_a_line_end_is_made_whole_and_a_compound_keeps_its_hyphen(tmp_path: Path):
    pdf = write_content_pdf(
        tmp_path / "hyphen.pdf",
        [
            [
                _body(
                    [
                        "The loader reads the characters of every page and rebuilds each struc-",
                        "ture that the page shows, so that answers can quote it with its built-",
                        "in kernels for x86-64 processors, and every sentence comes out whole.",
                    ]
                )
            ]
        ],
    )
    text = load(pdf).pages[0].text
    assert (
        "The loader reads the characters of every page and rebuilds each structure that the page shows, so "
        "that answers can quote it with its built-in kernels for x86-64 processors, and every sentence comes "
        "out whole."
    ) in _sentences(text)


def test_a_footnote_marker_is_dropped_from_the_word_it_follows(tmp_path: Path):
    superscript = "/F1 6 Tf 4 Ts (39) Tj /F1 11 Tf 0 Ts"
    pdf = write_content_pdf(
        tmp_path / "footnote.pdf",
        [
            [
                "BT /F1 11 Tf 14 TL 72 700 Td",
                "(The number of threads is set by an environment variable, where implemented.) Tj",
                superscript,
                "( Other settings) Tj T*",
                "(are read from the configuration file when the program starts and never again.) Tj ET",
            ]
        ],
    )
    text = load(pdf).pages[0].text
    found = _sentences(text)
    assert "The number of threads is set by an environment variable, where implemented." in found
    assert (
        "Other settings are read from the configuration file when the program starts and never again."
        in found
    )
    assert "39" not in text


def _footnote(marker: str, text: str, top: int) -> str:
    """A footnote's line at the foot of a page: its marker in small raised type, its text in 9 points."""
    return f"BT /F1 6 Tf 4 Ts 72 {top} Td ({marker}) Tj /F1 9 Tf 0 Ts ( {text}) Tj ET"


def test_a_sentence_over_a_page_break_skips_the_footnotes_between_its_halves(tmp_path: Path):
    pdf = write_content_pdf(
        tmp_path / "footnotes.pdf",
        [
            [
                *_head("Widget Manual", 1),
                _body(
                    [*FILLER, "Debian systems offer their own way to switch the library: build it, then use"]
                ),
                _footnote("21", "The search order is the fast one, then the generic one.", 120),
                _footnote("22", "Using the other vendor's compilers", 106),
            ],
            [
                *_head("Widget Manual", 2),
                _body(
                    [
                        "update-alternatives to switch between the libraries installed. Other text follows.",
                        *FILLER,
                    ]
                ),
            ],
            [*_head("Widget Manual", 3), _body(FILLER)],
        ],
    )
    pages = load(pdf).pages
    first, second = pages[0].text, pages[1].text
    texts = {(7, p.number): p.text for p in pages}
    notes = sp.footnotes_start(first)
    assert first.index("then use") < notes < first.index("The search order")
    whole = (
        "Debian systems offer their own way to switch the library: build it, then use update-alternatives to "
        "switch between the libraries installed."
    )
    # The body's last sentence, quoted from the first page, is finished from the top of the second.
    start = first.index("Debian systems")
    body_end = first.index("then use") + len("then use")
    assert sp.flat(widen(passage_of(first, start, body_end, page_number=1), texts).text) == whole
    # A footnote that stops mid-sentence is not finished with the next page's body.
    note = first.index("Using the other")
    cut = widen(passage_of(first, note, len(first.rstrip()), page_number=1), texts).text
    assert "update-alternatives" not in cut
    # The top of the second page is joined to the body's sentence, not to the last footnote.
    top = second.index("update-alternatives")
    joined = widen(passage_of(second, top, second.index("Other text"), page_number=2), texts).text
    assert sp.flat(joined) == whole


def test_a_wrapped_line_of_prose_ending_with_a_semicolon_is_not_taken_for_code(tmp_path: Path):
    from localrag.core.ingest.loaders import pdf_versions

    pdf = write_content_pdf(
        tmp_path / "paths.pdf",
        [
            [
                _body(
                    [
                        "Asymptote looks for its files in each directory of the list, in the order in which",
                        "they are given, separated by a colon under UNIX and by a semicolon under MSDOS;",
                        "the first file found is used, and the others are never read by the program at all.",
                        "The loop adds one to the counter for every line it reads:",
                        "count = count + 1;",
                    ]
                )
            ]
        ],
    )
    found = _sentences(load(pdf).pages[0].text)
    assert any("in the order in which they are given, separated by a colon" in s for s in found), found
    assert "count = count + 1;" in found  # a line of code stays a line of its own
    # Indexed by version 5, which broke the sentence there: read again; a PDF without such a line is not.
    assert pdf_versions.reads_differently(pdf, 5)
    plain = write_content_pdf(tmp_path / "plain.pdf", [[_body(FILLER)]])
    assert not pdf_versions.reads_differently(plain, 5)


def test_a_heading_stays_its_own_line_and_is_not_glued_to_the_next_sentence(tmp_path: Path):
    pdf = write_content_pdf(
        tmp_path / "heading.pdf",
        [
            [
                "BT /F1 14 Tf 72 720 Td (A.3.1 BLAS) Tj ET",
                _body(
                    [
                        "An external BLAS library has to be explicitly requested at configure time, and",
                        "the one that ships with the sources is used otherwise, for every build.",
                    ],
                    top=696,
                ),
                "BT /F1 11 Tf 72 650 Td (Notes) Tj ET",
                _body(["Builds without one are slower, by a factor of two on most machines."], top=634),
            ]
        ],
    )
    found = _sentences(load(pdf).pages[0].text)
    assert found[:2] == [
        "A.3.1 BLAS",
        "An external BLAS library has to be explicitly requested at configure time, and the one that ships "
        "with the sources is used otherwise, for every build.",
    ]
    assert found[2:] == ["Notes", "Builds without one are slower, by a factor of two on most machines."]


def test_running_heads_and_page_numbers_are_blanked_and_offsets_stay_pdfiums(tmp_path: Path):
    pdf = write_content_pdf(
        tmp_path / "heads.pdf",
        [[*_head("Widget Manual, second edition", n), _body(FILLER)] for n in (1, 2, 3)],
    )
    pages = load(pdf).pages
    document = pdfium.PdfDocument(pdf)
    for page in pages:
        assert "Widget" not in page.text and str(page.number) not in page.text
        assert _sentences(page.text) == FILLER
        raw = document[page.number - 1].get_textpage().get_text_range()
        assert len(page.text) == len(raw)  # one character for each of pdfium's
        at = page.text.index("The lines are long")
        assert raw[at : at + 18] == "The lines are long"
    document.close()


def test_a_sentence_over_a_page_break_is_joined_whole(tmp_path: Path):
    pdf = write_content_pdf(
        tmp_path / "break.pdf",
        [
            [
                *_head("Widget Manual", 1),
                _body([*FILLER, "The filter must be replaced every twelve months or after"]),
            ],
            [
                *_head("Widget Manual", 2),
                _body(
                    ["one thousand hours of use, whichever comes first. Other text follows here.", *FILLER]
                ),
            ],
            [*_head("Widget Manual", 3), _body(FILLER)],
        ],
    )
    pages = load(pdf).pages
    first, second = sp.split_spans(pages[0].text), sp.split_spans(pages[1].text)
    end = sp.open_end(first)
    assert end is not None
    whole = (
        "The filter must be replaced every twelve months or after one thousand hours of use, whichever "
        "comes first."
    )
    assert sp.flat(sp.join_across(end.text, second[0].text)) == whole
    # An answer quoting the end of the first page finishes the sentence from the second.
    start = pages[0].text.index("The filter")
    result = passage_of(pages[0].text, start, end.end, page_number=1)
    assert sp.flat(widen(result, {(7, p.number): p.text for p in pages}).text) == whole


def test_the_hyphen_rule_reads_the_documents_own_words():
    assert reading.keep_hyphen("struc", "tures") is False
    assert reading.keep_hyphen("built", "in") is True  # too short to be a hyphenated syllable
    assert reading.keep_hyphen("Language", "specific", {"language-specific"}) is True
    assert reading.keep_hyphen("Language", "specific", {"languagespecific"}) is False
    assert reading.keep_hyphen("754", "2019") is True and reading.keep_hyphen("away-from", "zero") is True
    # Without font sizes (OCR, the fallback reader), a number right after a sentence's end is a marker.
    text = "It is set where implemented.39 Other settings are read once.\r\nA second line follows it here."
    assert "implemented.   Other" in reading.reading_text(text)
    # pdfium's mark of a word hyphenated at the page's last line stays a hyphen, for the next page to mend.
    end = reading.reading_text("The loader rebuilds every struc\ufffe")
    assert sp.join_across(end, "tures of the page.") == "The loader rebuilds every structures of the page."


def test_a_pdf_indexed_by_an_older_loader_is_indexed_again_with_the_new_one(library, tmp_path: Path):
    from fixtures_chat import index
    from localrag.core.ingest import metadata
    from localrag.core.ingest.documents import reembed_needed
    from localrag.core.ingest.loaders import pdf as pdf_loader
    from localrag.core.ingest.pipeline import Ingestor

    pdf = write_content_pdf(tmp_path / "older.pdf", [[_body(FILLER)]])
    index(library, [pdf])
    with library.connect() as conn:
        (doc_id,) = conn.execute("SELECT id FROM documents").fetchone()
        # As a library indexed before the reading text: no extraction version in its metadata.
        conn.execute("UPDATE documents SET meta = meta - 'extraction' WHERE id = %s", (doc_id,))
        conn.commit()
        assert metadata.outdated_extractions(conn) == [doc_id]
        assert reembed_needed(conn, library.embedder.name) == 1
    with Ingestor(library) as ingestor:
        ingestor.reembed()
    with library.connect() as conn:
        rows = conn.execute("SELECT id, status, (meta->>'extraction')::int FROM documents").fetchall()
        assert [r[1:] for r in rows] == [("ready", pdf_loader.EXTRACTION_VERSION)] and rows[0][0] != doc_id
        assert metadata.outdated_extractions(conn) == []
        text = " ".join(r[0] for r in conn.execute("SELECT text FROM document_chunks ORDER BY chunk_index"))
    assert FILLER[1] in sp.flat(text)


def test_reading_a_pdfs_metadata_waits_for_pdfium_like_every_other_use(tmp_path):
    """pdfium is not thread-safe: while the source viewer renders a page (it holds the lock), ingest's read of
    a PDF's metadata waits for it instead of entering pdfium beside it."""
    import threading

    from localrag.core.ingest.metadata import pdf_metadata
    from localrag.core.pdfium_lock import PDFIUM_LOCK

    path = write_content_pdf(tmp_path / "a.pdf", [["A page of text."]])
    found: list[dict[str, str]] = []
    reader = threading.Thread(target=lambda: found.append(pdf_metadata(path)))
    with PDFIUM_LOCK:  # the viewer, rendering
        reader.start()
        reader.join(0.5)
        assert reader.is_alive() and not found
    reader.join(10)
    assert found and set(found[0]) == {"Title", "Author", "CreationDate"}


def test_after_the_ligatures_change_only_a_pdf_that_reads_differently_is_indexed_again(
    library, tmp_path: Path
):
    from fixtures_chat import index
    from localrag.core.ingest import metadata
    from localrag.core.ingest.loaders import pdf as pdf_loader
    from localrag.core.ingest.pipeline import Ingestor

    plain = write_content_pdf(tmp_path / "plain.pdf", [[_body(FILLER)]])
    lost = write_content_pdf(
        tmp_path / "lost.pdf",
        [["BT /F1 11 Tf 14 TL 72 740 Td", r"(The coe\036cients are di\033erent.) Tj T*", "ET"]],
    )
    gone = write_content_pdf(tmp_path / "gone.pdf", [[_body(FILLER[::-1])]])
    index(library, [plain, lost, gone])
    gone.unlink()  # moved away since: nothing to read again, and the library stops asking
    with library.connect() as conn:
        # As indexed by the loader before lost ligatures were put back.
        conn.execute("UPDATE documents SET meta = jsonb_set(meta, '{extraction}', '2')")
        conn.commit()
        before = dict(conn.execute("SELECT path, id FROM documents").fetchall())
        assert len(metadata.outdated_extractions(conn)) == 3
    with Ingestor(library) as ingestor:
        ingestor.reembed()
    with library.connect() as conn:
        after = {
            p: (i, v)
            for p, i, v in conn.execute(
                "SELECT path, id, (meta->>'extraction')::int FROM documents WHERE status = 'ready'"
            )
        }
        assert metadata.outdated_extractions(conn) == []
        text = " ".join(
            r[0]
            for r in conn.execute(
                "SELECT c.text FROM document_chunks c JOIN documents d ON d.id = c.doc_id WHERE d.path = %s",
                (str(lost),),
            )
        )
    # The plain PDF kept its text, chunks and vectors; the one with lost ligatures was read again.
    assert after[str(plain)] == (before[str(plain)], pdf_loader.EXTRACTION_VERSION)
    assert after[str(gone)] == (before[str(gone)], pdf_loader.EXTRACTION_VERSION)
    assert after[str(lost)][0] != before[str(lost)] and "coeﬃcients are diﬀerent" in text


def _titled(path: Path) -> Path:
    """A first page with a two-line title in 24-point type, an author line, then the text in 11 points."""
    return write_content_pdf(
        path,
        [
            [
                "BT /F1 24 Tf 28 TL 72 720 Td (Growing Tomatoes) Tj T* (on a Small Balcony) Tj ET",
                "BT /F1 12 Tf 72 640 Td (Ana Gardener) Tj ET",
                _body(FILLER, top=600),
            ]
        ],
    )


def test_a_title_printed_large_on_the_first_page_names_a_pdf_whose_metadata_names_none(tmp_path: Path):
    from localrag.core.ingest.loaders import pdf as pdf_loader

    assert load(_titled(tmp_path / "tomatoes-v2.pdf")).title == "Growing Tomatoes on a Small Balcony"
    # Type that does not stand out names nothing: the file's name stays the title.
    assert load(write_content_pdf(tmp_path / "notes-v2.pdf", [[_body(FILLER)]])).title == "notes-v2"
    assert pdf_loader.metadata_title("Microsoft Word - report.docx") == ""
    assert pdf_loader.metadata_title("Annual Report 2021") == "Annual Report 2021"


def test_a_logo_in_larger_type_than_the_title_is_not_taken_for_it(tmp_path: Path):
    from localrag.core.ingest.loaders import pdf_versions

    # A cover whose logo repeats the product's name, its first letter drawn (not text), under the title.
    cover = write_content_pdf(
        tmp_path / "vectors.pdf",
        [
            [
                "BT /F1 20 Tf 24 TL 72 720 Td (Asymptote: the Vector Graphics) Tj T* (Language) Tj ET",
                "BT /F1 11 Tf 72 660 Td (For version 2.85) Tj ET",
                "BT /F1 25 Tf 100 560 Td (symptote) Tj ET",
                _body(FILLER, top=500),
            ]
        ],
    )
    assert load(cover).title == "Asymptote: the Vector Graphics Language"
    # Indexed by version 4, which took the logo: read again; a PDF whose title was right is not.
    assert pdf_versions.reads_differently(cover, 4)
    assert not pdf_versions.reads_differently(_titled(tmp_path / "tomatoes.pdf"), 4)


def test_a_logos_word_in_an_authors_address_does_not_make_the_authors_the_title(tmp_path: Path):
    from localrag.core.ingest.loaders import pdf_versions

    # A manual's cover: its one-word name in the largest type, the authors in larger type than the text, one
    # of them with the project's address (which holds the name).
    cover = write_content_pdf(
        tmp_path / "widget-manual.pdf",
        [
            [
                "BT /F1 30 Tf 72 720 Td (Widgetlib) Tj ET",
                "BT /F1 13 Tf 72 690 Td (A library of widgets for the terminal) Tj ET",
                "BT /F1 18 Tf 22 TL 72 640 Td (Ana Author) Tj "
                "T* (Ben Writer \\(bugs-widgetlib@example.org\\)) Tj ET",
                _body(FILLER, top=560),
            ]
        ],
    )
    assert load(cover).title == "Widgetlib"
    # Indexed by version 6, which took the authors' lines: read again; a PDF whose title was right is not.
    assert pdf_versions.reads_differently(cover, 6)
    assert not pdf_versions.reads_differently(_titled(tmp_path / "tomatoes.pdf"), 6)


def test_after_the_titles_and_dashes_change_only_a_pdf_that_reads_differently_is_indexed_again(
    library, tmp_path: Path
):
    from fixtures_chat import index
    from localrag.core.ingest.pipeline import Ingestor

    titled, plain = (
        _titled(tmp_path / "tomatoes.pdf"),
        write_content_pdf(tmp_path / "notes.pdf", [[_body(FILLER)]]),
    )
    dashed = write_content_pdf(
        tmp_path / "dashed.pdf",
        [
            [
                "BT /F1 11 Tf 14 TL 72 740 Td",
                r"(In the years 1991\0252001 the \034gures di\033er.) Tj T*",
                "ET",
            ]
        ],
    )
    ligatures = write_content_pdf(  # read right by version 3 already
        tmp_path / "ligatures.pdf",
        [["BT /F1 11 Tf 14 TL 72 740 Td", r"(The coe\036cients are di\033erent.) Tj T*", "ET"]],
    )
    index(library, [titled, plain, dashed, ligatures])
    with library.connect() as conn:
        # As indexed by the loader before first-page titles and dashes: the file's name as title.
        conn.execute(
            "UPDATE documents SET meta = jsonb_set(meta, '{extraction}', '3'), title = 'tomatoes' "
            "WHERE path = %s",
            (str(titled),),
        )
        conn.execute("UPDATE documents SET meta = jsonb_set(meta, '{extraction}', '3')")
        conn.commit()
        before = dict(conn.execute("SELECT path, id FROM documents").fetchall())
    with Ingestor(library) as ingestor:
        summary = ingestor.reembed()
    with library.connect() as conn:
        after = {p: (i, t) for p, i, t in conn.execute("SELECT path, id, title FROM documents")}
        context = conn.execute(
            "SELECT c.context FROM document_chunks c JOIN documents d ON d.id = c.doc_id WHERE d.path = %s",
            (str(titled),),
        ).fetchone()[0]
        dashed_text = conn.execute(
            "SELECT c.text FROM document_chunks c JOIN documents d ON d.id = c.doc_id WHERE d.path = %s",
            (str(dashed),),
        ).fetchone()[0]
    assert summary.read_again == 2 and "1991–2001" in dashed_text
    assert after[str(dashed)][0] != before[str(dashed)]
    assert after[str(plain)] == (before[str(plain)], "notes")
    assert after[str(ligatures)][0] == before[str(ligatures)]
    assert after[str(titled)][0] != before[str(titled)]
    assert after[str(titled)][1] == "Growing Tomatoes on a Small Balcony" and "Growing Tomatoes" in context
