"""Whole-document and library questions answered from structure: real documents through the real pipeline,
the real store and the real embedding model. Recognising the questions, the sections stored at ingest (titles,
pages, central chunks), outline, summary and compare answers, "which documents mention Z", questions that name
no document, and an ingest that survives a failure to compute sections."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fixtures_chat import index
from fixtures_docs import write_pdf
from localrag.core.answer import overview
from localrag.core.answer.overview_questions import detect, groupings
from localrag.core.ingest.sections import section_keys

TOMATOES = [
    "Tomatoes need at least six hours of direct sunlight every day.",
    "Water tomato plants deeply twice a week rather than a little every day.",
    "Stake or cage each plant early so the stems do not bend under the weight of the fruit.",
    "Pinch out the side shoots of cordon varieties to keep the plant tidy and productive.",
    "Feed the plants with a potash-rich fertiliser once the first flowers appear.",
    "Yellow lower leaves are normal late in the season and can be removed.",
    "Blossom end rot comes from irregular watering, not from a lack of fertiliser.",
    "Harvest tomatoes when they are fully coloured and slightly soft to the touch.",
    "A zeppelin-shaped variety called Long Keeper stores well into the winter.",
    "Green tomatoes left at the end of the season ripen indoors on a sunny windowsill.",
    "Rotate the tomato bed every year to keep soil diseases from building up.",
    "Mulch around the stems keeps the soil moist and the roots cool in summer.",
]
BASIL = [
    "Basil grows well next to tomatoes and likes the same warm, sunny spot.",
    "Pinch off the flower buds of basil to keep the leaves tender and sweet.",
]
COMPOST = [
    "Compost made from kitchen scraps feeds the soil and the creatures living in it.",
    "Mix green material such as grass clippings with brown material such as dry leaves.",
    "Turn the compost pile every two weeks so that it gets enough air.",
    "A compost heap that smells bad is too wet and needs more brown material.",
    "Finished compost is dark, crumbly and smells like a forest floor.",
    "Spread a layer of compost on the beds in autumn and let the worms work it in.",
    "Do not add meat, dairy or diseased plants to a garden compost heap.",
    "An old zeppelin hangar in the village now houses the community compost bays.",
    "Leaf mould is a slower kind of compost made from autumn leaves alone.",
    "A closed bin keeps rain off the heap and holds the heat that speeds it up.",
    "Chop large stems into small pieces so that they rot down faster.",
    "A handful of soil adds the microbes that start the composting process.",
]


def _handbook() -> str:
    sections = [("Tomatoes", TOMATOES * 2), ("Basil", BASIL), ("Compost", COMPOST * 2)]
    return "# Gardening Handbook\n\n" + "".join(f"## {t}\n\n{' '.join(text)}\n\n" for t, text in sections)


def _manual_pages() -> list[list[str]]:
    return [
        [
            "Introduction",
            "This manual explains how to install and run the fixture program.",
            "The program indexes local documents and answers questions about them.",
            "Every answer cites the page of the document it comes from.",
        ],
        [
            "Installing",
            "Installing the program takes one command in a terminal.",
            "The installer checks the version of Python before it starts.",
            "A log file records every step of the installation.",
        ],
        [
            "The installer creates a data folder in your home directory.",
            "Remove the data folder to start again from an empty library.",
        ],
        [
            "Troubleshooting",
            "If the program does not start, read the log file first.",
            "A zeppelin icon in the status bar means an update is being downloaded.",
            "Restart the program after the update has been installed.",
        ],
    ]


NOTES = (
    "Meeting notes from the spring planning session.\n\nThe group agreed to meet every second Tuesday. "
    "The treasurer will present the budget at the next meeting. Volunteers are needed for the seed swap.\n"
)


@pytest.fixture(scope="module")
def corpus(library, tmp_path_factory):
    """Three documents through the real pipeline into an emptied store: a Markdown handbook with three
    sections, a four-page PDF manual with an outline, and plain notes. "zeppelin" is in the first two only."""
    folder = tmp_path_factory.mktemp("overview")
    (folder / "gardening-handbook.md").write_text(_handbook(), encoding="utf-8")
    write_pdf(
        folder / "fixture-manual.pdf",
        _manual_pages(),
        title="Fixture Manual",
        outline=[("Introduction", 0, None), ("Installing", 1, None), ("Troubleshooting", 3, None)],
    )
    (folder / "meeting-notes.txt").write_text(NOTES, encoding="utf-8")
    index(library, [folder], ready=3)
    return library


def _doc_id(library, file_name: str) -> int:
    with library.connect() as conn:
        return conn.execute("SELECT id FROM documents WHERE path LIKE %s", ("%" + file_name,)).fetchone()[0]


def _sections(library, doc_id: int) -> list[tuple]:
    with library.connect() as conn:
        return conn.execute(
            "SELECT ordinal, title, page_number, chunk_count, first_chunk_id, central_chunk_id "
            "FROM document_sections WHERE doc_id = %s ORDER BY ordinal",
            (doc_id,),
        ).fetchall()


def _ask(library, question: str, doc_ids: list[int] | None = None):
    intent = detect(question)
    assert intent is not None, question
    return overview.answer(library, question, intent, doc_ids)


# -- recognising the questions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "kind", "subject"),
    [
        ("List the chapters of the R FAQ.", "outline", "the R FAQ"),
        (
            "What are the main sections of the Filesystem Hierarchy Standard?",
            "outline",
            "the Filesystem Hierarchy Standard",
        ),
        (
            "What are the main parts of the R Installation and Administration manual?",
            "outline",
            "the R Installation and Administration manual",
        ),
        ("How is the R FAQ organized?", "outline", "the R FAQ"),
        ("Table of contents", "outline", ""),
        ("Summarize the Octave manual: what does it cover?", "summary", "the Octave manual"),
        ("Can you summarise this document, please?", "summary", "this document"),
        ("What is the R FAQ about?", "summary", "the R FAQ"),
        ("What topics does the R FAQ cover?", "summary", "the R FAQ"),
        ("What topics does the gnuplot tutorial walk through?", "summary", "the gnuplot tutorial"),
        ("What does the policy manual cover, chapter by chapter?", "summary", "the policy manual"),
        ("What parts is the R FAQ divided into?", "outline", "the R FAQ"),
        ("What's in the R FAQ — what are its main sections?", "outline", "the R FAQ"),
        ("What items were on the agenda of the June meeting?", "outline", "the June meeting"),
        ("Give me an overview of what the gnuplot 5.4 manual covers.", "summary", "the gnuplot 5.4 manual"),
        ("Compare the R FAQ and the R admin manual", "compare", "the R FAQ"),
        ("What is the difference between R and S?", "compare", "R"),
        ("Which of my documents mention CRAN?", "which_documents", "CRAN"),
        ("Which documents talk about “mirrors”?", "which_documents", "mirrors"),
        ("Where do my documents mention lattice?", "which_documents", "lattice"),
        ("Do any of my files discuss zeppelins?", "which_documents", "zeppelins"),
        # Two or three clauses: one says what is asked, another (or the same) which document.
        ("What's in the widget handbook? Give me the sections", "outline", "the widget handbook"),
        ("What is the R FAQ about and what are its main chapters?", "outline", "the R FAQ"),
        ("what's in this Octave manual, what chapters does it have?", "outline", "this Octave manual"),
        ("What's in the R FAQ? What does it cover?", "summary", "the R FAQ"),
        ("What does the policy manual cover? list the sections", "outline", "the policy manual"),
    ],
)
def test_detect_recognises_whole_document_questions(question, kind, subject):
    intent = detect(question)
    assert intent is not None and (intent.kind, intent.subject) == (kind, subject)


@pytest.mark.parametrize(
    "question",
    [
        "How do I set the CRAN mirror?",
        "What is R?",
        "Why doesn't R think these numbers are equal?",
        "Which files does R read at startup?",
        "Which file contains the site profile?",
        "What does the lm function return?",
        "What is the structure of a data frame?",
        "What are the parts of a function?",
        "Where is the data folder?",
        "What is the default backup interval?",
        "Which documents do I need for a visa?",
        "Can R read Excel files?",
        "What is in the default config file?",
        # A clause that is an ordinary question makes the whole one ordinary.
        "What's in the handbook? How much is a consultation?",
        "What is the default port, and what does it mean?",
        "How do I install it and what are its requirements?",
        "What does the lm function return? And what are its parts?",
    ],
)
def test_detect_leaves_ordinary_questions_alone(question):
    assert detect(question) is None


def test_compare_names_keep_their_words():
    intent = detect("Compare the R FAQ and R Installation and Administration")
    assert intent is not None and intent.kind == "compare"
    assert [intent.subject, *intent.others] == ["the R FAQ", "R Installation", "Administration"]
    assert ["the R FAQ", "R Installation and Administration"] in groupings(intent)


def test_section_keys_use_the_second_level_under_a_shared_title():
    paths = ["Book", "Book > One", "Book > One > Detail", "Book > Two"]
    texts = ["# Book\n\n## One\n\nThe first part starts here.", None, None, None]
    assert section_keys(paths, texts) == ["One", "One", "One", "Two"]
    # Body text before the next heading keeps the chunk above the sections; no shared title: the first level.
    assert section_keys(["Book", "Book > One"], ["Words of a preface. More of them.", None]) == ["", "One"]
    assert section_keys(["A > x", "B", ""], [None, None, "text"]) == ["A", "B", ""]


def test_without_headings_chapters_named_in_the_text_make_the_sections():
    texts = [
        "Filesystem Hierarchy Standard\nTable of Contents\n1. Introduction . . . . . . . . 1",
        "Chapter 1. Introduction . . . . . . . . . . 1\nChapter 2. The Filesystem . . . . . . 2",  # contents
        "1\nChapter 1. Introduction\n1.1. Purpose\nThis standard enables software to find files.",
        "Users can predict where files are. More text of the introduction.",
        "3\nChapter 2. The Root Filesystem\n2.1. Purpose\nThe root filesystem must be adequate to boot.",
    ]
    assert section_keys([""] * len(texts), texts) == [
        "",
        "",
        "1 Introduction",
        "1 Introduction",
        "2 The Root Filesystem",
    ]


# -- sections stored at ingest ----------------------------------------------------------------------------


def test_markdown_sections_are_stored_at_ingest_with_central_chunks(corpus):
    doc_id = _doc_id(corpus, "gardening-handbook.md")
    sections = _sections(corpus, doc_id)
    assert [s[1] for s in sections] == ["Tomatoes", "Basil", "Compost"]
    assert all(s[2] == 1 for s in sections)  # Markdown is one page
    with corpus.connect() as conn:
        chunks = conn.execute(
            "SELECT c.id, c.chunk_index, e.embedding::text FROM document_chunks c JOIN chunk_embeddings e "
            "ON e.chunk_id = c.id AND e.embedding_model = %s WHERE c.doc_id = %s ORDER BY c.chunk_index",
            (corpus.embedder.name, doc_id),
        ).fetchall()
    index = {cid: i for i, (cid, _, _) in enumerate(chunks)}
    vectors = np.array([np.array(v.strip("[]").split(","), dtype=np.float64) for _, _, v in chunks])
    starts = [index[s[4]] for s in sections] + [len(chunks)]
    assert starts[0] == 0 and starts == sorted(starts)
    assert sum(s[3] for s in sections) == len(chunks)
    for s, lo, hi in zip(sections, starts, starts[1:], strict=False):
        assert s[3] == hi - lo
        members = vectors[lo:hi]
        mean = members.mean(axis=0)
        cosine = members @ mean / (np.linalg.norm(members, axis=1) * np.linalg.norm(mean))
        assert index[s[5]] == lo + int(np.argmax(cosine)), s[1]  # the chunk nearest the section's mean
    assert sections[0][3] >= 2 and sections[2][3] >= 2  # the long sections span several chunks


def test_pdf_sections_start_on_their_outline_pages(corpus):
    sections = _sections(corpus, _doc_id(corpus, "fixture-manual.pdf"))
    titled = [(s[1], s[2]) for s in sections if s[1]]
    assert titled == [("Introduction", 1), ("Installing", 2), ("Troubleshooting", 4)]


def test_sections_are_computed_on_first_use_when_missing(corpus):
    doc_id = _doc_id(corpus, "gardening-handbook.md")
    before = _sections(corpus, doc_id)
    with corpus.connect() as conn:
        conn.execute("DELETE FROM document_sections WHERE doc_id = %s", (doc_id,))
    found = _ask(corpus, "What are the sections of the gardening handbook?")
    assert found is not None and _sections(corpus, doc_id) == before


# -- answers ---------------------------------------------------------------------------------------------


def _check_citations(found) -> None:
    """Every line but the headings ("X has 3 sections:") cites real sources, each of them; every
    span is in its source."""
    lines = [ln for ln in found.text.splitlines() if ln.strip() and not ln.endswith(":")]
    assert lines and all(re.search(r"\[\d+\]$", ln) for ln in lines), found.text
    numbers = {int(n) for n in re.findall(r"\[(\d+)\]", found.text)}
    assert numbers == set(range(1, len(found.sources) + 1))
    for span in found.spans:
        src = found.sources[span.number - 1]
        assert src.text[span.char_start - src.char_start : span.char_end - src.char_start] == span.text
        assert span.page_number == src.page_number and span.doc_id == src.doc_id


def test_outline_names_the_top_level_sections_and_cites_them(corpus):
    found = _ask(corpus, "What are the chapters of the Fixture Manual?")
    assert found is not None and found.kind == "outline"
    assert found.documents == [_doc_id(corpus, "fixture-manual.pdf")]
    lines = found.text.splitlines()
    assert lines[0] == "Fixture Manual has 3 sections:"
    assert lines[1:] == [
        "1. Introduction — p. 1 [1]",
        "2. Installing — p. 2 [2]",
        "3. Troubleshooting — p. 4 [3]",
    ]
    assert [s.page_number for s in found.sources] == [1, 2, 4]  # each cites where its section starts
    assert [s.text for s in found.spans] == ["Introduction", "Installing", "Troubleshooting"]
    _check_citations(found)


def test_a_question_in_two_clauses_naming_the_document_by_its_kind_gets_its_outline(corpus):
    """ "What's in the fixture page? give me the sections": the clauses make one outline question, and the
    words that say what kind of document it is ("page", "vignette", "readme"…) do not have to be in its
    title."""
    found = _ask(corpus, "what's in the fixture page? give me the sections")
    assert found is not None and found.kind == "outline"
    assert found.documents == [_doc_id(corpus, "fixture-manual.pdf")]
    assert found.text.splitlines()[0] == "Fixture Manual has 3 sections:"


def test_summary_lists_each_section_with_its_central_sentence(corpus):
    found = _ask(corpus, "Summarize the gardening handbook")
    assert found is not None and found.kind == "summary"
    lines = found.text.splitlines()
    assert lines[0] == "Gardening Handbook has 3 sections:"
    assert [ln.split(":")[0].split(" [")[0] for ln in lines[1:]] == ["1. Tomatoes", "2. Basil", "3. Compost"]
    # Each line quotes a full sentence of its section's central chunk, and cites that chunk.
    sections = _sections(corpus, _doc_id(corpus, "gardening-handbook.md"))
    assert [found.sources[s.number - 1].chunk_ids for s in found.spans] == [[s[5]] for s in sections]
    assert [s.text in pool for s, pool in zip(found.spans, (TOMATOES, BASIL, COMPOST), strict=True)] == [
        True
    ] * 3
    assert all(f"{s.text} [{s.number}]" in found.text for s in found.spans)
    _check_citations(found)


def test_a_long_summary_names_every_section_and_quotes_the_first_ones(corpus, monkeypatch):
    # The limits are lowered so that the three-section handbook stands for a manual with dozens of chapters.
    monkeypatch.setattr(overview, "MAX_SECTIONS", 1)
    monkeypatch.setattr(overview, "MAX_NAMED", 2)
    found = _ask(corpus, "Summarize the gardening handbook")
    assert found is not None
    lines = found.text.splitlines()
    assert lines[1].startswith("1. Tomatoes") and ": " in lines[1]  # quoted
    assert lines[2].split(" [")[0] == "2. Basil"  # named and cited, not quoted
    assert lines[2].endswith("]") and ": " not in lines[2]
    assert lines[3] == "…and 1 more."
    # The two sections' starts and the first one's central chunk (quoted), each cited once: three chunks,
    # or two when the central chunk is where its section starts.
    sections = _sections(corpus, _doc_id(corpus, "gardening-handbook.md"))
    assert len(found.sources) == len({s[4] for s in sections[:2]} | {sections[0][5]})


def test_selected_document_answers_a_question_that_names_none(corpus):
    doc_id = _doc_id(corpus, "fixture-manual.pdf")
    found = _ask(corpus, "What is this document about?", [doc_id])
    assert found is not None and found.documents == [doc_id]
    assert found.text.startswith("Fixture Manual has 3 sections:")


def test_compare_gives_one_block_per_document(corpus):
    found = _ask(corpus, "Compare the gardening handbook and the fixture manual")
    assert found is not None and found.kind == "compare"
    handbook, manual = _doc_id(corpus, "gardening-handbook.md"), _doc_id(corpus, "fixture-manual.pdf")
    assert found.documents == [handbook, manual]
    assert found.text.startswith("Comparing Gardening Handbook and Fixture Manual:")
    assert "Gardening Handbook has 3 sections:" in found.text
    assert "Fixture Manual has 3 sections:" in found.text
    _check_citations(found)


def test_which_documents_counts_matching_passages_per_document(corpus):
    found = _ask(corpus, "Which of my documents mention zeppelins?")
    assert found is not None and found.kind == "which_documents"
    with corpus.connect() as conn:
        expected = dict(
            conn.execute(
                "SELECT doc_id, count(*) FROM document_chunks "
                "WHERE (heading_path || ' ' || text) ILIKE '%zeppelin%' GROUP BY doc_id"
            ).fetchall()
        )
    assert len(expected) == 2
    order = sorted(expected, key=lambda d: (-expected[d], d))
    assert found.documents == order
    lines = found.text.splitlines()
    assert lines[0] == "2 documents mention “zeppelins”:"
    for line, doc_id, src in zip(lines[1:], order, found.sources, strict=True):
        n = expected[doc_id]
        assert line.endswith(f": {n} passage{'s' if n > 1 else ''} [{found.sources.index(src) + 1}]")
        assert src.doc_id == doc_id and "zeppelin" in src.text.lower()
    assert all("zeppelin" in s.text.lower() for s in found.spans)
    _check_citations(found)


def test_which_documents_within_the_selection(corpus):
    notes = _doc_id(corpus, "meeting-notes.txt")
    found = _ask(corpus, "Which documents mention zeppelins?", [notes])
    assert found is not None and found.sources == [] and found.documents == []
    assert found.text == "None of the selected documents mention “zeppelins”."


@pytest.mark.parametrize(
    "question",
    [
        "Summarize the quantum physics lecture notes",
        "What is the difference between R and S?",
        "What are the sections of the tax return?",
        "What is the fuss about?",
    ],
)
def test_a_question_naming_no_known_document_is_left_to_retrieval(corpus, question):
    assert _ask(corpus, question) is None


def test_ingest_survives_a_failure_to_compute_sections(corpus, tmp_path):
    """With the sections table out of the way the document still becomes ready; its sections are computed on
    first use."""
    from localrag.core.ingest.documents import remove_document
    from localrag.core.ingest.pipeline import Ingestor

    path = tmp_path / "pond-notes.md"
    path.write_text(
        "# Pond Notes\n\nFrogs lay their eggs in shallow water early in the spring.\n", encoding="utf-8"
    )
    with corpus.connect() as conn:
        conn.execute("ALTER TABLE document_sections RENAME TO document_sections_away")
    try:
        with Ingestor(corpus) as ingestor:
            ingestor.enqueue([path])
            summary = ingestor.run()
    finally:
        with corpus.connect() as conn:
            conn.execute("ALTER TABLE document_sections_away RENAME TO document_sections")
    assert summary.ready == 1
    doc_id = _doc_id(corpus, "pond-notes.md")
    try:
        assert _sections(corpus, doc_id) == []
        found = _ask(corpus, "What is the pond notes document about?")
        assert found is not None and found.documents == [doc_id]
        assert found.text == (
            "Pond Notes has 1 section:\n"
            "1. Pond Notes: Frogs lay their eggs in shallow water early in the spring. [1]"
        )
        assert [s[1] for s in _sections(corpus, doc_id)] == ["Pond Notes"]
    finally:
        with corpus.connect() as conn:
            remove_document(conn, doc_id)


def test_an_outline_of_two_parts_shows_the_sections_within_them():
    paths = [
        "Articles",
        "Articles > Getting started",
        "Articles > Backups",
        "Knowledge Base",
        "Knowledge Base > Error 42",
        "Knowledge Base > Error 42 > Details",
    ]
    keys = section_keys(paths, [None] * len(paths))
    assert keys == ["", "Getting started", "Backups", "", "Error 42", "Error 42"]
    # two parts with one section each, or three parts, are the sections themselves
    assert section_keys(["A", "A > x", "B > y"], [None] * 3) == ["A", "A", "B"]
    assert section_keys(["A > x", "B > y", "C > z"], [None] * 3) == ["A", "B", "C"]
    # a shared title over two parts over their chapters: the chapters
    deep = ["T > I > one", "T > I > two", "T > II > three"]
    assert section_keys(deep, [None] * 3) == ["one", "two", "three"]
