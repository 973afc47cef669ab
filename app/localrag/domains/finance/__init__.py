"""The finance pack: annual and quarterly reports, SEC filings, earnings releases.

It acts on a document that shows strong evidence of being a financial report (``identity.evidence``: an SEC
cover page, or a statement of cash flows or of operations with rows of figures), or that a person marked as
one (``local-rag meta DOC --domain finance``). For those documents it gives:

- the identity fields: company (the registrant on the cover), kind (10-K, 10-Q, 8-K, earnings release…),
  ticker, fiscal period (``identity``);
- statements first: a question naming a statement or a measure computed from one gets the statement's page
  (``statements``);
- the rows of figures a measure is computed from, as an evidence feature; statement titles as headings;
- fiscal column headings ("FY2018", "Q4 2023");
- the names a statement's rows go by, for the operands of a computation ("capital expenditure" is the row
  "purchases of property, plant and equipment");
- the finance words of routing: words that never name a document ("revenue", "margin") and the kinds a
  question asks for ("10-K", "quarterly report").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from localrag.core.hooks import DomainEvidence, Fields, PinnedPage, RoutingWords, hookimpl
from localrag.domains.finance import identity, statements

DOMAIN = identity.DOMAIN

# Words of questions about reports that never name a document on their own.
COMMON_WORDS = frozenset(
    "fiscal quarter quarters ended ending company companies business share shares stock value cash income "
    "revenue revenues sales cost costs expense expenses profit margin ratio rate growth amount percent "
    "percentage million millions billion billions usd dollars reported report".split()
)
# Kinds a question asks for, and the word the kind of a document of that kind holds.
KINDS_ASKED = (
    (r"\b10-?k\b|\bannual report\b", "annual"),
    (r"\b10-?q\b|\bquarterly report\b", "quarterly"),
    (r"\b8-?k\b", "8-K"),
    (r"\bearnings (?:release|report)\b|\bpress release\b", "earnings"),
)
# Column headings of reports besides plain years: "FY2018", "FY 2018", "Q4 2023".
# Names of the same statement row: a computation's operand named by one finds the row labelled by another.
MEASURE_SYNONYMS = (
    ("revenue", "revenues", "net sales", "sales", "turnover", "total revenue", "net revenue"),
    ("capital expenditure", "capital expenditures", "capex", "purchases of property, plant and equipment"),
    ("operating income", "operating profit", "income from operations"),
    ("net income", "net earnings", "profit for the year"),
    ("cost of sales", "cost of goods sold", "cost of revenue"),
    ("depreciation and amortization", "d&a", "depreciation"),
    ("accounts payable", "trade payables"),
)
COLUMN_HEADINGS = r"(?<![\w.])(?:FY\s?|Q[1-4]\s)(?:19|20)\d\d(?![\w.])"


@hookimpl
def document_domain(
    path: str, title: str, pages: Sequence[tuple[int, str]], pdf_meta: dict[str, str]
) -> DomainEvidence | None:
    found = identity.evidence(pages)
    return DomainEvidence(DOMAIN, found) if found else None


@hookimpl
def identity_fields(
    domain: str, path: str, title: str, first_pages: Sequence[str], pdf_meta: dict[str, str]
) -> Fields | None:
    if domain != DOMAIN:
        return None
    return identity.fields(path, title, first_pages, pdf_meta)


@hookimpl
def routing_words(domains: frozenset[str]) -> RoutingWords | None:
    if DOMAIN not in domains:
        return None
    return RoutingWords(COMMON_WORDS, KINDS_ASKED)


@hookimpl
def pages_first(conn: Any, question: str, documents: Sequence[tuple[int, str]]) -> list[PinnedPage] | None:
    """The first page of each statement the question needs, from the first of its documents (those of the
    best passages that are financial reports, at most ``statements.MAX_DOCUMENTS``) that has it."""
    wanted = statements.asked(question)
    docs = [doc_id for doc_id, domain in documents if domain == DOMAIN][: statements.MAX_DOCUMENTS]
    if not wanted or not docs:
        return None
    pages: list[tuple[statements.Asked, int, int]] = []
    for doc_id in docs:
        missing = [s for s in wanted if all(s is not found for found, _, _ in pages)]
        if not missing:
            break
        pages += [(s, doc_id, page) for s, page in statements.first_pages(conn, doc_id, missing)]
    return [
        PinnedPage(doc_id, page, s.name, s.rows, DOMAIN, f"the question needs the {s.name}")
        for s, doc_id, page in sorted(pages, key=lambda p: wanted.index(p[0]))
    ]


@hookimpl
def evidence_features(question: str, text: str, domain: str) -> dict[str, float] | None:
    if domain != DOMAIN:
        return None
    lines = "|".join(s.rows for s in statements.asked(question) if s.rows)
    if lines and statements.is_row_of(text, lines):
        return {"measure_row": 1.0}
    return None


@hookimpl
def is_title(text: str, domain: str) -> bool | None:
    return statements.is_title(text) if domain == DOMAIN else None


@hookimpl
def column_headings(domain: str) -> str | None:
    return COLUMN_HEADINGS if domain == DOMAIN else None


@hookimpl
def measure_synonyms(domain: str) -> Sequence[Sequence[str]] | None:
    return MEASURE_SYNONYMS if domain == DOMAIN else None
