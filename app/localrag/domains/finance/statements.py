"""Financial statements first: a question about a figure of a company's statements gets the statement itself.

"What is the FY2018 capital expenditure of 3M? … relying on the cash flow statement", "Has Amcor's quick ratio
improved?", "Does Boeing have an improving gross margin profile?": the answer is computed from a few lines of
one of the three primary statements, and a report holds hundreds of passages that speak of capital
expenditure or margins in prose (the discussion of results, the notes, the outlook) and match the question's
words better than the statement, whose line reads "Purchases of property, plant and equipment (1,577)".

So a question that names a statement ("the balance sheet", "statement of operations") or a measure computed
from one (``MEASURES``: quick ratio → balance sheet, gross margin → income statement, capital expenditure →
cash flow statement, return on assets → both the balance sheet and the income statement) gets that statement's
first page put first, from the document of its best passage (or of the next best, ``MAX_DOCUMENTS``, when that
one has no such statement): of that page, the passage holding the lines the
measure is computed from ("Purchases of property, plant and equipment" for capital expenditure), else the one
holding most of the question's words. A statement's page is found by what it looks like,
not by its number: the first page of the document whose page head (or first lines) carries the statement's
title in any of its usual forms ("Consolidated Balance Sheets", "Statements of Financial Position",
"Consolidated Statements of Operations", "… of Earnings", "… of Cash Flows") and that holds at least
``MIN_ROWS`` rows of figures (a table of contents or an index of statements names them too, with one page
number each; the primary statements come before the notes' condensed versions). Nothing happens in a library
without such pages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from localrag.core.text.cells import is_figures_row, split_row

MIN_ROWS = 8
# A page's title is in its page head (the chunk's context) or in its first characters.
HEAD_CHARS = 300
TITLE_CHARS = 80
# The documents of the best passages looked in, best first, for a statement the first of them lacks (an
# earnings release without a balance sheet, when the annual report is the next).
MAX_DOCUMENTS = 3


BALANCE, INCOME, CASH = "balance sheet", "income statement", "cash flow statement"
# Each statement's titles (PostgreSQL and Python regular expressions) and how a question names it.
TITLES = {
    BALANCE: r"balance shee\s?ts?|statements? of (?:consolidated )?financial (?:position|condition)",
    INCOME: r"statements? of (?:consolidated )?(?:income|operations|earnings)|income statements?",
    CASH: r"statements? of (?:consolidated )?cash flows?|cash flows? statements?",
}
_NAMED = {
    BALANCE: r"balance sheets?|statements? of financial (?:position|condition)",
    INCOME: r"income statements?|statements? of (?:income|operations|earnings)|\bp&l\b|profit and loss",
    CASH: r"cash flows? statements?|statements? of cash flows?",
}


@dataclass(frozen=True)
class Measure:
    """A measure computed from statement lines: how a question names it (``asked``), the statements that hold
    its inputs, and the labels of those lines (``rows``), all regular expressions."""

    asked: str
    statements: tuple[str, ...]
    rows: str


_SALES = r"net sales|total (?:net )?(?:revenues?|sales)|revenues?"
_ASSETS = r"total assets|" + _SALES
_CURRENT = r"total current assets|total current liabilities"
MEASURES = (
    Measure(
        r"quick ratio|acid[- ]test",
        (BALANCE,),
        r"cash and cash equivalents|marketable securities|short-term investments|receivables?|"
        r"total current liabilities",
    ),
    Measure(r"current ratio|working capital|cash ratio|liquidity", (BALANCE,), _CURRENT + r"|cash and cash"),
    Measure(
        r"\bpp&?n?e\b|property,? plant,? and equipment|fixed assets",
        (BALANCE,),
        r"property,? plant,? and equipment",
    ),
    Measure(r"total assets|total liabilities|book value|net debt", (BALANCE,), r"total (?:assets|liabilit)"),
    Measure(
        r"debt[- ]to[- ](?:equity|assets|capital)|leverage ratio|(?:shareholders|stockholders)'? equity",
        (BALANCE,),
        r"debt|borrowings|total (?:shareholders'?|stockholders'?)? ?equity",
    ),
    Measure(
        r"gross (?:margin|profit)|cost of (?:goods sold|sales|revenues?)|\bcogs\b",
        (INCOME,),
        r"gross (?:profit|margin)|cost of (?:sales|goods sold|revenues?|products)|" + _SALES,
    ),
    Measure(
        r"operating (?:margin|income|profit)|\bebit\b|\bebitda\b",
        (INCOME,),
        r"operating (?:income|profit)|(?:income|earnings|loss) from operations|" + _SALES,
    ),
    Measure(r"(?:net|profit) margin|net (?:income|earnings)", (INCOME,), r"net (?:income|earning)|" + _SALES),
    Measure(
        r"effective tax rate|income tax",
        (INCOME,),
        r"(?:income|earnings) before (?:income )?taxes|provision for income taxes|income tax",
    ),
    Measure(r"(?:revenue|sales) growth|\bcagr\b", (INCOME,), _SALES),
    Measure(r"earnings per share|\beps\b", (INCOME,), r"per share|diluted|basic"),
    Measure(r"sg&a|selling, general", (INCOME,), r"selling, general"),
    Measure(
        r"capital expenditures?|\bcapex\b",
        (CASH,),
        r"purchases? of property|capital expenditures?|additions to property|payments? for property|"
        r"acquisitions? of property",
    ),
    Measure(
        r"free cash flow",
        (CASH,),
        r"net cash (?:provided by|from) operating|purchases? of property|capital expenditures?",
    ),
    Measure(
        r"cash (?:flows? )?from operati\w+|operating cash flows?",
        (CASH,),
        r"net cash (?:provided by|from|used in) operating",
    ),
    Measure(r"dividends? paid|dividend payout", (CASH,), r"dividends"),
    Measure(r"(?:share|stock) (?:repurchases?|buybacks?)", (CASH,), r"repurchases?|treasury stock"),
    Measure(r"depreciation and amortization", (CASH,), r"depreciation"),
    # Measures of both the balance sheet and the income statement.
    Measure(r"capital[- ]intensi\w+", (BALANCE, INCOME), r"property,? plant|total assets|" + _SALES),
    Measure(
        r"return on (?:total |average )?(?:assets|equity|invested capital|capital employed)|"
        r"\broa\b|\broe\b|\broic\b|asset turnover",
        (BALANCE, INCOME),
        r"net (?:income|earnings)|total assets|total (?:shareholders'?|stockholders'?)? ?equity|" + _SALES,
    ),
    Measure(
        r"(?:inventory|receivables?|payables?) turnover|days (?:sales|payables?|inventory)|\bdso\b|\bdpo\b|"
        r"\bdio\b|cash conversion cycle",
        (BALANCE, INCOME),
        r"inventor(?:y|ies)|receivables?|accounts payable|cost of (?:sales|goods sold)|" + _SALES,
    ),
    Measure(r"interest coverage", (BALANCE, INCOME), r"interest expense|operating income|" + _SALES),
)


# A measure of one segment, or adjusted ("non-GAAP"), is not read off the consolidated statements.
_ELSEWHERE = r"\bsegments?\b|non[- ]?gaap|\badjusted\b"


@dataclass(frozen=True)
class Asked:
    """A statement a question needs, and the labels of the lines it needs from it ('' for all of them)."""

    name: str
    title: str
    rows: str


def asked(question: str) -> list[Asked]:
    """The statements a question names or needs for a measure it names (unless it asks for a segment's or an
    adjusted figure), balance sheet, income statement, cash flow statement in that order."""
    rows: dict[str, list[str]] = {}
    for name, named in _NAMED.items():
        if re.search(named, question, re.IGNORECASE):
            rows.setdefault(name, [])
    for measure in () if re.search(_ELSEWHERE, question, re.IGNORECASE) else MEASURES:
        if re.search(measure.asked, question, re.IGNORECASE):
            for name in measure.statements:
                rows.setdefault(name, []).append(measure.rows)
    return [Asked(name, TITLES[name], "|".join(rows[name])) for name in TITLES if name in rows]


def is_title(line: str) -> bool:
    """Whether ``line`` is a statement's title ("Consolidated Statements of Cash Flows"): a heading, never an
    answer."""
    text = " ".join(line.split())
    return (
        len(text) <= TITLE_CHARS
        and not text.endswith((".", "?", "!", ";", ","))  # a sentence that names a statement is not one
        and not any(ch.isdigit() for ch in text)
        and any(re.search(title, text, re.IGNORECASE) for title in TITLES.values())
    )


def is_row_of(text: str, lines: str) -> bool:
    """Whether ``text`` holds a row of figures whose label matches ``lines`` (the rows a measure is computed
    from: "Purchases of property, plant and equipment (1,577)" for capital expenditure)."""
    for line in text.split("\n"):
        row = split_row(line) if is_figures_row(line) else None
        if row is not None and re.search(lines, row[0], re.IGNORECASE):
            return True
    return False


def first_pages(
    conn: psycopg.Connection[Any], doc_id: int, statements: Sequence[Asked]
) -> list[tuple[Asked, int]]:
    """Each statement's first page in the document (see the module), for those it has."""
    found: list[tuple[Asked, int]] = []
    for statement in statements:
        # The pages whose page head or first chunk carries the title, with their text.
        rows = conn.execute(
            "WITH firsts AS ("
            "  SELECT DISTINCT ON (page_number) page_number, text FROM document_chunks"
            "  WHERE doc_id = %(doc)s ORDER BY page_number, chunk_index"
            "), titled AS ("
            "  SELECT page_number FROM firsts WHERE left(text, %(head)s) ~* %(title)s"
            "  UNION SELECT page_number FROM document_chunks"
            "  WHERE doc_id = %(doc)s AND split_part(context, E'\\n', 2) ~* %(title)s"
            ") SELECT c.page_number, string_agg(c.text, E'\\n' ORDER BY c.chunk_index)"
            " FROM document_chunks c JOIN titled t ON t.page_number = c.page_number"
            " WHERE c.doc_id = %(doc)s GROUP BY c.page_number ORDER BY c.page_number",
            {"doc": doc_id, "title": statement.title, "head": HEAD_CHARS},
        ).fetchall()
        for page, text in rows:
            lines = {line.strip() for line in (text or "").split("\n")}  # chunks overlap: lines once
            if sum(1 for line in lines if is_figures_row(line)) >= MIN_ROWS:
                found.append((statement, int(page)))
                break
    return found
