"""The answer taken from the sources: sentences with offsets, the best sentence for a question, and "not
found".

Real parts: the bundled embedding model scores the sentences (no store needed: the passages are given)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from localrag.core.answer.evidence import ANSWERED, NOT_FOUND, Evidence, find_evidence, question_kind
from localrag.core.text import spans

FAQ_PAGE = (
    "7.30 I installed a package but the functions are not there\n"
    "To actually use the package, it needs to be loaded using library().\n"
    "7.31 Why doesn't R think these numbers are equal?\n"
    "The only numbers that can be represented exactly in R's numeric type are integers and\n"
    "fractions whose denominator is a power of 2. All other numbers are internally rounded\n"
    "to (typically) 53 binary digits accuracy.\n"
    "R> a <- sqrt(2)\n"
    "R> a * a == 2\n"
    "[1] FALSE\n"
    "The function all.equal() compares two objects using a numeric tolerance of\n"
    ".Machine$double.eps ^ 0.5. If you want much greater accuracy than this you will need\n"
    "to consider error propagation carefully.\n"
)
LIBS_PAGE = (
    "6.1 Managing libraries\n"
    "R packages are installed into libraries, which are directories in the file system containing a\n"
    "subdirectory for each package installed there. The default value of the environment variable\n"
    "R_LIBS_USER is a directory in the user's home area where personal packages are installed.\n"
    "Users can have one or more libraries, normally specified by the environment variable R_LIBS.\n"
)
GARDEN = "Tomatoes need at least six hours of direct sunlight every day. Basil grows well next to tomatoes.\n"


@dataclass
class Passage:
    """A retrieved passage as the engine hands it over (the fields ``find_evidence`` reads)."""

    text: str
    doc_id: int = 1
    title: str = "R FAQ"
    path: str = "/docs/R-FAQ.pdf"
    page_number: int = 41
    heading_path: str = ""
    char_start: int = 100
    domain: str = ""  # the domain pack acting on its document (found at ingest)
    doc_type: str = "pdf"

    @property
    def char_end(self) -> int:
        return self.char_start + len(self.text)


@pytest.fixture(scope="module")
def embed(embedder):
    return lambda texts: embedder.embed(texts)


def _quoted(embed, question: str, page: Passage) -> tuple[Evidence, str]:
    """The evidence for ``question`` from the one passage ``page``, and what it quotes, joined."""
    ev = find_evidence(question, [page], embed)
    return ev, " ".join(s.text for s in ev.spans)


def test_sentences_keep_their_offsets_and_short_lines_stand_alone():
    found = spans.split_spans(FAQ_PAGE)
    texts = [s.text for s in found]
    assert "7.31 Why doesn't R think these numbers are equal?" in texts
    assert "R> a <- sqrt(2)" in texts and "[1] FALSE" in texts  # code and output lines are not run together
    # a sentence wrapped over lines stays one sentence
    assert any(t.startswith("The function all.equal() compares") and t.endswith("0.5.") for t in texts)
    for s in found:
        assert FAQ_PAGE[s.start : s.end] == s.text


def test_a_section_number_opening_its_line_stays_with_its_heading():
    page = (
        "On Linux systems we recommend the names vmlinux or vmlinuz, used in kernel source packages.\n\n"
        "6.1.2. /bin : Essential user command binaries (for use by all users)\n\n"
        "Linux systems which require them place these additional files into /bin:\n"
        "3. Run the tests before the package is uploaded.\n"
    )
    texts = [s.text for s in spans.split_spans(page)]
    assert texts[0].endswith("source packages.")  # the next section's number is not glued to it
    assert "6.1.2. /bin : Essential user command binaries (for use by all users)" in texts
    assert "3. Run the tests before the package is uploaded." in texts


def test_a_stop_inside_parentheses_that_close_just_after_it_ends_no_sentence():
    text = "The note goes after the year (see Smith, 1990, chap. 2) in the text. Notes before it are rare."
    texts = [s.text for s in spans.split_spans(text)]
    assert texts == [
        "The note goes after the year (see Smith, 1990, chap. 2) in the text.",
        "Notes before it are rare.",
    ]


def test_the_dots_of_an_ellipsis_set_with_spaces_end_no_sentence():
    # TeX sets "..." as spaced dots: "the . . . arguments" is one sentence, not "the ." and ". arguments".
    text = (
        "The call takes its data, then the . . . arguments, each of two kinds. "
        "Let x1, . . . , xn be the values. And so on . . . The last one is here. .NET users read on."
    )
    texts = [s.text for s in spans.split_spans(text)]
    assert texts == [
        "The call takes its data, then the . . . arguments, each of two kinds.",
        "Let x1, . . . , xn be the values.",
        "And so on . . .",
        "The last one is here.",
        ".NET users read on.",
    ]


def test_a_short_line_that_breaks_off_mid_sentence_does_not_end_it():
    text = (
        "The command update.packages() is the simplest way to ensure that all the packages on\n"
        "your system are up to date. The command-line editing depends on the GNU readline\n"
        "library (including its headers): version 6.0 or later is needed for all the features.\n"
        "A much longer line that sets the longest width of this passage for the short-line rule of the "
        "splitter.\n"
        "set logscale <axes> {<base>}\n"
        "unset logscale <axes>\n"
    )
    texts = [" ".join(s.text.split()) for s in spans.split_spans(text)]
    assert (
        "The command update.packages() is the simplest way to ensure that all the packages on your system "
        "are up to date." in texts
    )
    assert any(
        t.startswith("The command-line editing") and t.endswith("for all the features.") for t in texts
    )
    assert "set logscale <axes> {<base>}" in texts  # syntax lines still stand alone


DEB_OPTIONS = (
    "Supporting the standardized environment variable DEB_BUILD_OPTIONS is recommended.\n"
    "Package maintainers may assume that DEB_BUILD_OPTIONS will not contain conflicting tags.\n"
    "nocheck\n"
    "This tag says to not run any build-time test suite provided by the package.\n"
    "nodoc\n"
    "This tag says to skip any build steps that only generate package documentation.\n"
)


def test_a_definition_list_entry_answers_with_its_term(embed):
    ev = find_evidence(
        "Which DEB_BUILD_OPTIONS flag tells a package build to skip running its test suite?",
        [Passage(DEB_OPTIONS, title="Debian Policy", path="/docs/policy.pdf", page_number=36)],
        embed,
    )
    assert ev.answered
    best = max(ev.spans, key=lambda s: s.score)
    # the term and its description are one entry; a sentence that only repeats the question's own
    # identifier (DEB_BUILD_OPTIONS) is not what "which flag" asks for
    assert best.text.startswith("nocheck") and "test suite" in best.text


@pytest.mark.parametrize("apart", ["\n", "\n\n"], ids=["lines", "paragraphs"])
def test_a_run_of_sentences_stops_where_the_next_definition_list_entry_begins(embed, apart):
    # As a text file's lines, and as a PDF page's text keeps them: each line a paragraph of its own.
    text = DEB_OPTIONS.replace("\n", apart)
    ev = find_evidence(
        "Which DEB_BUILD_OPTIONS flag tells a package build to skip running its test suite?",
        [Passage(text, title="Debian Policy", path="/docs/policy.pdf", page_number=36)],
        embed,
        keep=100,
    )
    # a quote may hold an entry whole, or sentences before it, never both: the sentence before an entry is
    # about something else than the term that opens it, and a description is never quoted without its term
    for term in ("nocheck", "nodoc"):
        holding = [s.text for s in ev.candidates if term in s.text]
        assert holding and all(t.startswith(term) for t in holding), holding
    assert not any(s.text.startswith("This tag says") for s in ev.candidates)
    best = max(ev.spans, key=lambda s: s.score)
    assert best.text.startswith("nocheck") and "test suite" in best.text


CLIENT_PARAMETERS = (
    "Parameters\n"
    "----------\n"
    "url : str\n"
    "    The address of the server, with its scheme.\n"
    "timeout : float, optional\n"
    "    Seconds to wait for the server to answer before giving up. Defaults to 30.\n"
    "retries : int, default=3\n"
    "    How many times a request that failed is sent again.\n"
)


def test_a_parameter_documented_with_its_type_is_quoted_with_its_name(embed):
    # Python's docstrings write each entry "name : type" on its own line, the description below it
    page = Passage(CLIENT_PARAMETERS, title="Client", path="/docs/client.rst", page_number=1)
    ev = find_evidence("How long does the client wait for the server before it gives up?", [page], embed)
    best = max(ev.spans, key=lambda s: s.score)
    assert ev.status == ANSWERED and best.text.startswith("timeout : float") and "giving up" in best.text
    assert "retries" not in best.text


def test_the_sentence_that_answers_is_quoted_with_its_page_and_exact_offsets(embed):
    passages = [
        Passage(GARDEN, doc_id=2, title="Garden", path="/docs/garden.txt", page_number=1),
        Passage(FAQ_PAGE),
    ]
    ev = find_evidence(
        "Why does R think 0.1 + 0.2 is not equal to 0.3, and how should I compare such numbers?",
        passages,
        embed,
    )
    assert ev.status == ANSWERED
    quoted = " ".join(s.text for s in ev.spans)
    assert "all.equal()" in quoted
    span = next(s for s in ev.spans if "all.equal()" in s.text)
    assert span.number == 2 and span.page_number == 41 and span.path == "/docs/R-FAQ.pdf"
    # the offsets point at exactly this sentence of the page (the viewer highlights them)
    page = " " * 100 + FAQ_PAGE
    assert page[span.char_start : span.char_end] == span.text
    assert "Why doesn't R" not in quoted  # the heading asks; it does not answer


def test_an_identifier_question_is_answered_by_the_sentence_naming_the_variable(embed):
    ev = find_evidence(
        "Which environment variable sets the directory for a user's personal R package library?",
        [Passage(LIBS_PAGE, page_number=29)],
        embed,
    )
    assert ev.kind == "identifier"
    assert ev.answered and "R_LIBS_USER" in ev.text()
    assert ev.text().rstrip().endswith("[1]")


def test_nothing_is_quoted_when_no_sentence_answers(embed):
    ev = find_evidence("What is the boiling point of liquid nitrogen in kelvin?", [Passage(GARDEN)], embed)
    assert ev.status == NOT_FOUND
    assert ev.spans == [] and ev.closest == [1]
    assert "do not seem to answer" in ev.text()


BACKENDS = (
    "3.2 Choosing a storage backend\n"
    "The notes app keeps its data in a storage backend that you can name in the settings file. When the\n"
    "settings name no backend, the app tries the following ones, in this order:\n"
    "- SQLite, when Python was built with the sqlite3 module\n"
    "- a plain JSON file in the data folder\n"
    "- memory only, which loses every note on exit\n"
    "The first one that works is used, and the log says which.\n"
    "Backups are written once a day to the folder named by the backup setting.\n"
)


def test_a_lead_in_is_quoted_with_the_whole_list_it_announces(embed):
    ev = find_evidence(
        "I never set a backend. Which ones does it try, and in what order?",
        [Passage(BACKENDS, title="Notes manual", path="/docs/notes.md", page_number=1)],
        embed,
    )
    assert ev.answered
    quoted = ev.text()
    # every item of the list, in the page's order, even where the embedding model did not read one
    places = [quoted.find(item) for item in ("SQLite", "JSON file", "memory only")]
    assert -1 not in places and places == sorted(places)
    assert "Backups" not in quoted  # the list ends where its items do


def test_a_question_on_the_documents_topic_that_they_do_not_answer_is_declined(embed):
    passage = Passage(BACKENDS, title="Notes manual", path="/docs/notes.md", page_number=1)
    asked = find_evidence("Which backends does the notes app try when none is set?", [passage], embed)
    assert asked.answered
    # the same document, a question about its subject that it says nothing of
    ev = find_evidence("How do I share my notes with another person over the network?", [passage], embed)
    assert ev.status == NOT_FOUND and ev.spans == []
    assert ev.signals["top"] >= 0.0 and "coverage" in ev.signals  # what the developer pane shows


def test_a_declined_answer_names_the_nearest_sentence_it_read_and_says_it_may_not_answer(embed):
    passage = Passage(BACKENDS, title="Notes manual", path="/docs/notes.md", page_number=1)
    ev = find_evidence("How do I share my notes with another person over the network?", [passage], embed)
    assert ev.status == NOT_FOUND and ev.spans == [] and len(ev.nearest) == 1
    nearest = ev.nearest[0]
    # the likeliest sentence the reader scored, never the heading, with its source and place
    assert nearest.text == ev.candidates[0].text and nearest.text != "3.2 Choosing a storage backend"
    assert (nearest.number, nearest.page_number) == (1, 1)
    assert BACKENDS[nearest.char_start - passage.char_start :].startswith(nearest.text[:20])
    text = ev.text()
    assert text.startswith("Your documents do not seem to answer this.")
    assert f"which may not answer it: {nearest.shown} [1]" in text
    back = Evidence.from_dict(ev.to_dict())
    assert back is not None and back.nearest[0].text == nearest.text and back.text() == text


def test_question_kinds():
    assert question_kind("Which option makes R CMD INSTALL use my own library?") == "identifier"
    assert question_kind("What environment variable holds the CRAN mirror?") == "identifier"
    assert question_kind("How many samples does gnuplot use by default?") == "number"
    assert question_kind("What is the default resolution of print?") == "number"
    assert question_kind("Why does R think these numbers are different?") == "why"


def test_evidence_survives_a_round_trip_through_json(embed):
    ev = find_evidence("Which environment variable sets the personal library?", [Passage(LIBS_PAGE)], embed)
    back = Evidence.from_dict(ev.to_dict())
    assert (
        back is not None and back.text() == ev.text() and back.spans[0].char_start == ev.spans[0].char_start
    )


CASH_FLOWS_PAGE = (
    "3M Company and Subsidiaries\n"
    "Consolidated Statement of Cash Flows\n"
    "Years ended December 31\n"
    "(Millions) 2018 2017 2016\n"
    "Net income including noncontrolling interest $ 5,363 $ 4,869 $ 5,058\n"
    "Depreciation and amortization 1,488 1,544 1,474\n"
    "Purchases of property, plant and equipment (PP&E) $ (1,577) $ (1,373) $ (1,420)\n"
    "Proceeds from sale of PP&E and other assets 262 49 58\n"
    "Other — net 9 (6) (4)\n"
)


def test_a_quoted_row_of_figures_shows_each_value_under_its_column(embed):
    """The row alone says (1,577) (1,373) (1,420); the answer says which year each figure is, and marks the
    year asked for."""
    start = CASH_FLOWS_PAGE.index("Depreciation")
    passage = Passage(CASH_FLOWS_PAGE[start:], title="3M 10-K 2018", page_number=60, char_start=start)
    question = "How much were the purchases of property, plant and equipment in FY2018?"
    ev = find_evidence(question, [passage], embed, pages={(1, 60): CASH_FLOWS_PAGE})
    assert ev.answered
    span = next(s for s in ev.spans if "Purchases" in s.text)
    row = span.rows[0]
    assert row.label == "Purchases of property, plant and equipment (PP&E)"
    assert row.columns == [("2018", "$ (1,577)"), ("2017", "$ (1,373)"), ("2016", "$ (1,420)")]
    assert row.asked == [0]
    assert (
        "Purchases of property, plant and equipment (PP&E) — 2018: $ (1,577) · 2017: $ (1,373)" in ev.text()
    )
    # The offsets still point at the row itself on the page, for the viewer to highlight.
    assert CASH_FLOWS_PAGE[span.char_start : span.char_end].startswith("Purchases of property")
    # Stored and read back (a chat reopened later shows the same cells).
    assert Evidence.from_dict(ev.to_dict()).spans[ev.spans.index(span)].rows == span.rows
    # Without the page the row is quoted as it stands.
    plain = find_evidence(question, [passage], embed)
    assert all(not s.cells for s in plain.spans) and "(1,577)" in plain.text()


def test_rows_without_column_headings_or_prose_stay_as_quoted():
    from localrag.core import hooks
    from localrag.core.text import cells
    from localrag.core.text.cells import cells_of, split_row

    no_headings = "Net sales 14,694 14,544 12,861\n"
    assert cells_of(no_headings.strip(), no_headings, 0) is None
    assert split_row("The plant opened in 2018 and grew.") is None
    assert split_row("Other — net 9 (6) (4)") == ("Other — net", ["9", "(6)", "(4)"])
    # Column headings name the columns of an answer but are never one; a sentence with two years is prose.
    assert cells.is_column_headings("Twelve Months Ended June 30,\nGAAP results 2022 $ million 2023 $ m")
    assert not cells.is_column_headings("Sales grew between 2022 and 2023.")
    assert not cells.is_column_headings("Net sales 14,544 14,694")
    units = "Months Ended June 30,\nGAAP results 2022 $ million 2023 $ million\nNet sales 14,544 14,694"
    row = cells_of("Net sales 14,544 14,694", units, units.index("Net sales"), "net sales in fiscal 2023")
    assert row is not None and row.columns == [("2022", "14,544"), ("2023", "14,694")] and row.asked == [1]
    # Quarters as column headings are the finance pack's, for a document it acts on.
    quarters = "Three Months Ended\nQ4 2023 Q4 2022\nRevenue 1,200 1,100\n"
    fiscal = hooks.column_headings("finance")
    row = cells_of("Revenue 1,200 1,100", quarters, quarters.index("Revenue"), "revenue in Q4 2023", fiscal)
    assert (
        row is not None and row.columns == [("Q4 2023", "1,200"), ("Q4 2022", "1,100")] and row.asked == [0]
    )
    assert hooks.column_headings("") == ""
    plain = cells_of("Revenue 1,200 1,100", quarters, quarters.index("Revenue"), "revenue in Q4 2023")
    assert plain is not None and plain.columns == [("2023", "1,200"), ("2022", "1,100")]  # years alone


KEY_FINANCIALS = (  # as pdfium gives a real earnings release's page (the spaces at line ends included)
    "We will also continue pursuing value-creating M&A and returning cash to shareholders through share \n"
    "repurchases and a compelling and growing dividend. \n"
    "Key Financials(1)\n"
    "Twelve Months Ended June 30, \n"
    "GAAP results 2022 $ million 2023 $ million\n"
    "Net sales 14,544 14,694 \n"
    "Net income 805 1,048 \n"
    "EPS (diluted US cents) 52.9 70.5 \n"
)


def test_the_row_a_question_names_is_quoted_not_its_column_headings(embed):
    """The headings line and a sentence share the question's words; the row it names holds the answer."""
    passage = Passage(KEY_FINANCIALS, title="Amcor results", page_number=1, char_start=0)
    prose = Passage(  # the next page of the same release: the period as a line, and the change in words
        "Twelve months ended June 30, 2023\n"
        "Net sales for the Amcor Group increased by 1% on a reported basis, which includes an unfavorable "
        "impact of approximately 3% related to movements in foreign exchange rates.\n",
        title="Amcor results",
        page_number=2,
        char_start=0,
    )
    question = "What were the net sales in the twelve months ended June 30, 2023?"
    ev = find_evidence(question, [passage, prose], embed, pages={(1, 1): KEY_FINANCIALS})
    assert ev.answered
    assert ev.spans[0].shown.startswith("Net sales — 2022: 14,544 · 2023: 14,694")
    assert all("GAAP results" not in s.text for s in ev.spans)


def test_a_measure_is_answered_by_the_statement_lines_it_is_computed_from(embed):
    """Capital expenditure is not written on the cash flow statement: its line reads "Purchases of property,
    plant and equipment", and it is quoted rather than the lines that share the question's words — in a
    document the finance pack acts on."""
    from dataclasses import replace

    page = CASH_FLOWS_PAGE.replace(
        "Depreciation and amortization 1,488 1,544 1,474\n",
        "Net cash provided by operating activities 6,439 6,240 6,662\nCash Flows from Investing Activities\n",
    )
    passage = Passage(page, title="3M 10-K 2018", page_number=60, char_start=0, domain="finance")
    prose = Passage(  # the question's words, and none of its figures
        "Capital expenditure was the largest use of cash in 2018.\n",
        title="3M 10-K 2018",
        page_number=45,
        domain="finance",
    )
    question = "What is the FY2018 capital expenditure amount? Use the cash flow statement."
    ev = find_evidence(question, [passage, prose], embed, pages={(1, 60): page})
    assert ev.answered
    assert "Purchases of property, plant and equipment (PP&E) — 2018: $ (1,577)" in ev.text()
    assert all(s.page_number == 60 for s in ev.spans)  # the figures answer; the sentence beside them does not
    # In a document no pack acts on, the lines with the question's words are quoted.
    ordinary = [replace(passage, domain=""), replace(prose, domain="")]
    plain = find_evidence(question, ordinary, embed, pages={(1, 60): page})
    assert "Purchases" not in plain.text()


MINUTES = (
    "Harbour Lane Bakery Ltd — Minutes of the board meeting held on 12 March 2024\n\n"
    "Held in the upstairs office at 14 Harbour Lane, starting at 6.30 p.m.\n\n"
    "Present: Margaret Oyelaran (Chair), Daniel Pryce (Managing Director), Priya Natarajan (Finance Director)"
    "."
)


def test_the_documents_title_line_is_never_quoted_as_the_answer(embed):
    # A Word file's Title paragraph opens its text; its words are the question's, but it answers nothing.
    minutes = Passage(
        MINUTES,
        title="Harbour Lane Bakery Ltd — Minutes of the board meeting, 12 March 2024",
        path="/docs/minutes.docx",
        page_number=1,
        char_start=0,
    )
    ev, quoted = _quoted(embed, "When and where did the Harbour Lane Bakery board meet?", minutes)
    assert ev.status == ANSWERED and "upstairs office" in quoted
    assert "Minutes of the board meeting" not in quoted


PAPER_END = (
    "When the date of a structural change is unknown, the supF test of Andrews (1993) computes the F "
    "statistic for a break at every possible date and rejects stability when the largest of them is too "
    "large.\n\n"
    "References\n\n"
    "D. W. K. Andrews. Tests for parameter instability and structural change with unknown change point. "
    "Econometrica, 61:821–856, 1993.\n\n"
    "B. E. Hansen. Approximate asymptotic p values for structural-change tests. Journal of Business & "
    "Economic Statistics, 15:60–67, 1997."
)


def test_a_bibliography_entry_is_never_quoted_as_the_answer(embed):
    # A cited paper's title holds the question's words; the entry answers nothing.
    paper = Passage(PAPER_END, title="Testing for structural change", path="/docs/paper.pdf", page_number=14)
    ev, quoted = _quoted(embed, "How do I test for a structural change at an unknown date?", paper)
    assert ev.status == ANSWERED and "supF test" in quoted
    assert "Econometrica" not in quoted and "Hansen" not in quoted


GIT_FIXES = (
    "Fixing mistakes\n\n"
    "If you’ve messed up the working tree, but haven’t yet committed your mistake, you can return the entire "
    "working tree to the last committed state with\n\n"
    "$ git restore --staged --worktree :/\n\n"
    "If you make a commit that you later wish you hadn’t, there are two fundamentally different ways to fix "
    "the problem:\n\n"
    "You can create a new commit that undoes whatever was done by the old commit."
)


def test_a_sentence_that_stops_before_its_command_is_quoted_with_it(embed):
    # An HTML page sets the command apart from the sentence that introduces it, with no colon between.
    page = Passage(GIT_FIXES, title="Git User Manual", path="/docs/user-manual.html", page_number=1)
    ev, quoted = _quoted(embed, "How do I return my working tree to the last committed state?", page)
    assert ev.status == ANSWERED and "last committed state with" in quoted
    assert "git restore --staged --worktree" in quoted


def test_a_span_that_stops_before_its_sentence_ends_is_told_apart():
    assert spans.unfinished("you can return the entire working tree to the last committed state with")
    assert spans.unfinished("Finally, run") and spans.unfinished("Set the variable to")
    assert not spans.unfinished("Finally, run it again.") and not spans.unfinished("Use this command:")
    assert not spans.unfinished("Installing the package") and not spans.unfinished("")


PLOT_PAGE = (
    "OLS-based CUSUM test\n\nTime\n\nEmpirical fluctuation process\n\n"
    "1988 1990 1992 1994 1996 1998 2000\n\n0 1 2 3 4\n\n"
    "Figure 2: The boundaries of the process for the seatbelt data\n\n"
    "Zeileis (2000) showed that the resulting OLS-based CUSUM test has better power for structural changes "
    "early and late in the sample period. It measures how far the cumulative sums of the residuals stray "
    "from zero."
)


def test_a_plots_labels_are_never_quoted_as_the_answer(embed):
    # A PDF's plot gives its axes' numbers and labels as lines of text; they hold the question's words.
    page = Passage(PLOT_PAGE, title="strucchange", path="/docs/strucchange.pdf", page_number=7)
    ev, quoted = _quoted(embed, "What does the OLS-based CUSUM test look at?", page)
    assert ev.status == ANSWERED and "OLS-based CUSUM test has better power" in quoted
    assert not any(s.text.startswith("OLS-based CUSUM test") or "Time" in s.text for s in ev.spans)


CONTENTS_AND_TEXT = (
    "Table of Contents\n\n"
    "3 Utilities . . . . . . . . . . . . . . . . . . . . . . . . . . . 5\n"
    "3.1 The asn1Parser program . . . . . . . . . . . . . . . . . . . . 5\n"
    "3.2 The asn1Coding program . . . . . . . . . . . . . . . . . . . . 6\n\n"
    "The asn1Parser program reads a single file with ASN.1 definitions and generates a file with an array to "
    "use with the library's functions."
)


def test_a_table_of_contents_line_is_never_quoted_as_the_answer(embed):
    page = Passage(CONTENTS_AND_TEXT, title="Libtasn1", path="/docs/libtasn1.pdf", page_number=2)
    ev = find_evidence("What does the asn1Parser program do?", [page], embed)
    assert ev.status == ANSWERED and "reads a single file" in " ".join(s.text for s in ev.spans)
    assert not any(". . ." in s.text for s in ev.spans)


# The foot of a PDF page as the reader leaves it: the body's last sentence runs onto the next page, and the
# footnotes under it open with their markers blanked.
FOOTED_PAGE = (
    "R can be built against several BLAS libraries, and packages that use one must then be re-installed.\n\n"
    "Debian/Ubuntu systems provide a system-specific way to switch the BLAS in use: build R with the option "
    "to select the reference BLAS, and then use\n\n"
    "   The search order is currently OpenBLAS, BLIS, ATLAS and finally a generic libblas.\n\n"
    "   Using the Oracle Developer Studio compilers"
)


def test_a_sentence_cut_by_its_page_end_is_not_finished_with_its_footnotes(embed):
    page = Passage(FOOTED_PAGE, title="R Installation and Administration", path="/docs/R-admin.pdf")
    ev = find_evidence("On Debian, how do I switch the BLAS that R uses?", [page], embed)
    quoted = [s.text for s in ev.spans]
    assert ev.status == ANSWERED and any("system-specific way to switch" in q for q in quoted)
    assert not any("and then use" in q and "search order" in q for q in quoted)
    assert not any("generic libblas" in q and "Oracle" in q for q in quoted)


ZSH_OPTIONS = (
    "Changing Directories\n\n"
    "AUTO_CD (-J)\nIf a command is issued that can't be executed as a normal command, and the command is the "
    "name of a directory, perform the cd command to that directory.\n\n"
    "AUTO_PUSHD (-N)\nMake cd push the old directory onto the directory stack.\n\n"
    "CDABLE_VARS (-T)\nIf the argument to cd is not a directory, it is tried as a parameter's value.\n"
)


def test_a_definition_is_quoted_with_its_term_and_without_the_next_one(embed):
    page = Passage(
        ZSH_OPTIONS, title="Options (zsh)", path="/docs/Options.html", page_number=1, doc_type="html"
    )
    ev = find_evidence("zsh: I want cd to push the old directory onto the stack automatically", [page], embed)
    best = max(ev.spans, key=lambda s: s.score)
    assert ev.status == ANSWERED and best.text.startswith("AUTO_PUSHD (-N)") and "push the old" in best.text
    assert "CDABLE_VARS" not in best.text


SEARCH_PATHS = (
    "2.5 Search paths\n\n"
    "In looking for Asymptote files, asy will search the following paths, in the order listed:\n\n"
    "1. The current directory;\n\n"
    "2. A list of one or more directories specified by the configuration variable dir or environment "
    "variable ASYMPTOTE_DIR (separated by : under UNIX and ; under MSDOS);\n\n"
    "3. The directory specified by the environment variable ASYMPTOTE_HOME.\n"
)


def test_a_numbered_lists_items_are_quoted_after_the_sentence_that_announces_them(embed):
    page = Passage(SEARCH_PATHS, title="Asymptote", path="/docs/asymptote.pdf", page_number=11)
    ev, quoted = _quoted(embed, "Which directories does asy search for files, in what order?", page)
    assert ev.status == ANSWERED and "in the order listed:" in quoted
    assert "1. The current directory;" in quoted and "2. A list of one or more directories" in quoted


HELP_REQUEST = (
    "2. How to ask for help\n\n"
    "Email the help desk or fill in the form on the intranet. Each request gets a ticket number by reply.\n\n"
    "Please include in every request:\n\n"
    "• your name and the site you are at;\n\n"
    "• the asset tag of the device;\n\n"
    "• what you were trying to do and what happened instead.\n\n"
    "The help desk is staffed from Monday to Friday, 09:00 to 17:00.\n"
)


def test_a_lead_in_and_its_items_are_one_quote_under_one_citation(embed):
    page = Passage(
        HELP_REQUEST, title="Help-desk procedure", path="/docs/helpdesk.docx", page_number=1, char_start=0
    )
    ev = find_evidence("What information should I include in every request to the help desk?", [page], embed)
    holding = [s for s in ev.spans if "Please include" in s.text]
    assert ev.status == ANSWERED and len(holding) == 1, [s.text for s in ev.spans]
    quote = holding[0]
    assert quote.text.startswith("Please include in every request:")
    assert quote.text.endswith("what happened instead.")
    assert HELP_REQUEST[quote.char_start : quote.char_end] == quote.text  # its place on the page, exactly
    assert not any(s.text.startswith("•") for s in ev.spans)


CLUBS = (
    "Reading group\n\n"
    "The reading group meets on the first Monday of each month in the library's back room. "
    "Members pay five pounds a year.\n\n"
    "Chess club\n\n"
    "The chess club plays on Thursday evenings from seven o'clock.\n"
)


def test_a_label_on_a_line_of_its_own_is_not_quoted_glued_to_the_sentence_after_it(embed):
    page = Passage(CLUBS, title="Village hall", path="/docs/hall.docx", page_number=1, char_start=0)
    ev = find_evidence("When does the reading group meet?", [page], embed, keep=100)
    assert ev.status == ANSWERED
    assert ev.spans[0].text.startswith("The reading group meets on the first Monday")
    assert not any(s.text.startswith(("Reading group\n", "Chess club\n")) for s in ev.candidates)


def test_a_tables_rows_read_as_one_run_of_text_are_cut_at_their_lines():
    from localrag.core.answer.candidates import MAX_SPAN_CHARS, split_long

    rows = [
        "COLUMNS=120 dpkg -l package_name_pattern list status of an installed package for the bug report",
        "dpkg -L package_name list contents of an installed package",
        "dpkg -S file_name_pattern list installed packages which have matching file name",
        "apt-file search file_name_pattern list packages in archive which have matching file name",
        "apt-file list package_name_pattern list contents of matching packages in archive",
        "dpkg-reconfigure package_name reconfigure the exact package",
    ]
    text = "  ".join(rows)  # a PDF page's line breaks, as the reader leaves them between rows it joined
    assert len(text) > MAX_SPAN_CHARS
    pieces = [s.text for s in split_long(spans.split_spans(text))]
    assert "dpkg -L package_name list contents of an installed package" in pieces
    assert all(len(p) <= MAX_SPAN_CHARS for p in pieces)
    for s in split_long(spans.split_spans(text)):
        assert text[s.start : s.end] == s.text


COMMITTEE_MINUTES = (
    "Minutes of the committee meeting, 4 May 2024\n"
    "Present: the chair, the treasurer and four members.\n"
    "1. Accounts\n"
    "The treasurer reported a balance of £2,310 at the end of April.\n"
    "2. Any other business\n"
    "None was raised.\n"
    "Date of next meeting\n"
    "Tuesday 2 July 2024 at 7 p.m., in the village hall.\n"
)


def test_a_label_on_a_line_of_its_own_is_quoted_with_the_line_it_names(embed):
    """A form's or minutes' label ("Date of next meeting") names what the next line gives: quoted alone it
    answers nothing, so the line after it comes with it."""
    page = Passage(COMMITTEE_MINUTES, title="Committee minutes", path="/docs/minutes.docx", page_number=1)
    ev, quoted = _quoted(embed, "When's the next committee meeting?", page)
    assert ev.answered and "Tuesday 2 July 2024 at 7 p.m." in quoted
