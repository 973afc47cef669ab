"""What a filing is: its company, kind (10-K, 10-Q, 8-K, earnings release…), ticker and fiscal period, read
from an SEC cover page, the PDF's metadata and the file name of a document that carries strong evidence of
being a financial report (``evidence``).

The evidence, looked for at ingest: an SEC cover page ("Form 10-K" … "(Exact name of registrant as specified
in its charter)", or "Securities and Exchange Commission" with a form), or a statement of cash flows or of
operations: a page whose first lines carry its title and that holds at least ``statements.MIN_ROWS`` rows of
figures (an earnings release has no cover page).
Without it the pack does nothing: "8K video" is not an 8-K and "Q3-2022" in a newsletter's file name is no
fiscal quarter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from localrag.core.hooks import Fields
from localrag.core.text.cells import is_figures_row
from localrag.core.text.identity import GENERIC_WORDS
from localrag.domains.finance import statements

DOMAIN = "finance"
# How many pages are looked at for a cover page.
COVER_PAGES = 3
_SEC_FORM = re.compile(r"\bform\s+(10-k|10-q|8-k|20-f|6-k)\b", re.IGNORECASE)
_SEC = re.compile(r"securities and exchange commission", re.IGNORECASE)


def evidence(pages: Sequence[tuple[int, str]]) -> str:
    """Where the document shows it is a financial report ('' when it does not): an SEC cover page or a
    statement of cash flows with rows of figures."""
    for number, text in pages[:COVER_PAGES]:
        flat = " ".join(text.split())
        form = _SEC_FORM.search(flat)
        if form and _REGISTRANT.search(flat):
            return f"page {number}: an SEC cover page (“{form.group(0)}”, “Exact name of registrant”)"
        if form and _SEC.search(flat):
            return (
                f"page {number}: an SEC cover page (“{form.group(0)}”, “Securities and Exchange Commission”)"
            )
    # A balance sheet is no evidence on its own: "water balance sheets" are tables of figures too.
    titles = {"a statement of cash flows": statements.CASH, "an income statement": statements.INCOME}
    for number, text in pages:
        for name, statement in titles.items():
            if not re.search(statements.TITLES[statement], text[: statements.HEAD_CHARS], re.IGNORECASE):
                continue
            rows = sum(1 for line in {line.strip() for line in text.split("\n")} if is_figures_row(line))
            if rows >= statements.MIN_ROWS:
                return f"page {number}: {name} with {rows} rows of figures"
    return ""


def fields(path: str, title: str, first_pages: Sequence[str], pdf_meta: dict[str, str]) -> Fields:
    """The fields of a financial report (see the module), each with where it was found."""
    found = Fields()

    def put(key: str, value: Any, source: str) -> None:
        if value not in (None, "") and key not in found.fields:
            found.fields[key] = value
            found.sources[key] = source

    stem = Path(str(path).replace("\\", "/")).stem
    name = file_name_fields(stem)
    head = "\n".join(first_pages)[:6000]
    cover = _cover_fields(head)
    meta_title = " ".join((pdf_meta.get("Title") or "").split())
    for key in ("kind", "year", "quarter"):
        # A report's file name says its fiscal period the way people file them ("AMCOR_2023Q2_10Q": the
        # quarter of fiscal 2023 that ended in December 2022), so it comes first in a document that is one.
        put(key, name.get(key), "file name")
        put(key, cover.get(key), "first pages")
        put(key, _title_fields(meta_title).get(key), "PDF metadata")
    put("organization", cover.get("organization"), "first pages")
    put("organization", _org_from_title(meta_title), "PDF metadata")
    put("ticker", cover.get("ticker"), "first pages")
    put("date", name.get("date"), "file name")
    put("date", cover.get("date"), "first pages")
    if "annual" in str(found.fields.get("kind", "")):
        found.fields.pop("quarter", None)
        found.sources.pop("quarter", None)
    ends = cover.get("fiscal_year_end") or cover.get("quarter_end")
    if ends:
        put("period_end", ends[0].upper() + ends[1:], "first pages")
    period = _period(found.fields)
    if period:
        put("period", period, found.sources.get("year", "first pages"))
    return found


_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_DATE = rf"(?:(?:{_MONTHS})\.?\s+\d{{1,2}},?\s+((?:19|20)\d\d))"
_YEAR = re.compile(r"(?<![\d.])((?:19|20)\d\d)(?![\d])")
_ORDINAL_QUARTER = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
# Kinds of reports, by what their cover, PDF title or file name say (checked in this order).
_KINDS: tuple[tuple[str, str], ...] = (
    (r"\b10-?k\b", "10-K annual report"),
    (r"\b10-?q\b", "10-Q quarterly report"),
    (r"\b8-?k\b", "8-K current report"),
    (r"\b20-?f\b", "20-F annual report"),
    (r"\b6-?k\b", "6-K report"),
    (r"\bdef\s*14a\b|\bproxy statement\b", "proxy statement"),
    (r"\bearnings\b|\breports? (?:first|second|third|fourth|full)[- ]", "earnings release"),
    (r"\bannual report\b|\bannual\b", "annual report"),
    (r"\bquarterly report\b|\bquarterly\b", "quarterly report"),
)
_REGISTRANT = re.compile(r"\(\s*exact name of (?:the )?registrant", re.IGNORECASE)
_ORG_SUFFIX = re.compile(
    r"^[A-Z0-9][\w&.,'’\- ]{1,60}?\b(Inc|Incorporated|Corp|Corporation|Company|Ltd|Limited|PLC|plc|LLC|N\.V|"
    r"S\.A|AG|SE|GmbH|Group|Holdings)\.?$",
    re.IGNORECASE,
)
# Names on a cover that are not the document's organisation (a stock exchange, an exhibit number).
_NOT_ORG = re.compile(
    r"\b(exchange|securities|commission|exhibit|registered|nasdaq)\b|\d+\.\d", re.IGNORECASE
)


def file_name_fields(stem: str) -> dict[str, Any]:
    """A filing's date, year, quarter and kind as people name report files (``3M_2018_10K``,
    ``acme-2023Q2-10q``); read only for a document with evidence of being a financial report."""
    out: dict[str, Any] = {}
    flat = stem.replace("_", " ").replace(".", " ")
    low = flat.lower()
    date = re.search(r"((?:19|20)\d\d)[-_ ](\d\d)[-_ ](\d\d)", flat)
    if date:
        out["date"] = f"{date.group(1)}-{date.group(2)}-{date.group(3)}"
        low = low.replace(date.group(0).lower(), " ")
    quarter = re.search(
        r"(?:(?<![a-z])((?:19|20)\d\d)\s*-?\s*q([1-4])\b|\bq([1-4])\s*-?\s*((?:19|20)\d\d))", low
    )
    if quarter:
        out["year"] = int(quarter.group(1) or quarter.group(4))
        out["quarter"] = int(quarter.group(2) or quarter.group(3))
    else:
        fy = re.search(r"(?<![a-z])fy\s*-?\s*((?:19|20)?\d\d)(?!\d)", low)
        years = _YEAR.findall(low)
        if fy:
            out["year"] = _full_year(fy.group(1))
        elif years:
            out["year"] = int(years[0])
        elif date:
            out["year"] = int(date.group(1))
    out["kind"] = _kind(low)
    return out


def _cover_fields(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not text:
        return out
    flat = " ".join(text.split())
    low = flat.lower()
    form = re.search(r"\bform\s+(10-k|10-q|8-k|20-f|6-k)\b", low)
    out["kind"] = _kind(form.group(0) if form else low[:1500])
    fiscal = re.search(rf"fiscal year ended\s*:?\s*{_DATE}", low)
    quarter_end = re.search(rf"quarterly period ended\s*:?\s*{_DATE}", low)
    report_date = re.search(rf"date of report[^:]{{0,60}}:\s*{_DATE}", low)
    if fiscal:
        out["year"] = int(fiscal.group(1))
        out["fiscal_year_end"] = _phrase(flat, fiscal)
    elif quarter_end:
        out["year"] = int(quarter_end.group(1))
        out["quarter_end"] = _phrase(flat, quarter_end)
    if report_date:
        out["date"] = _iso(report_date.group(0))
    results = re.search(
        r"\b(first|second|third|fourth|1st|2nd|3rd|4th)[- ]quarter(?: of)?(?: fiscal)?\s+((?:19|20)\d\d)\b",
        low,
    )
    q = re.search(r"\bq([1-4])\s+(?:fy\s*)?((?:19|20)\d\d)\b", low)
    if results and "year" not in out:
        out["quarter"] = _ORDINAL_QUARTER[results.group(1)]
        out["year"] = int(results.group(2))
    elif q and "year" not in out:
        out["quarter"], out["year"] = int(q.group(1)), int(q.group(2))
    out["organization"] = _cover_org(text)
    ticker = re.search(r"\((?:NYSE|NASDAQ|Nasdaq|NYSE American)\s*:\s*([A-Z][A-Z.]{0,5})\)", flat)
    symbol = flat.lower().find("trading symbol")
    if ticker is None and symbol >= 0:
        ticker = re.search(
            r"\b([A-Z][A-Z.]{0,5})\s+(?:The\s+)?(?:New York Stock Exchange|NYSE|Nasdaq|NASDAQ)",
            flat[symbol : symbol + 600],
        )
    if ticker:
        out["ticker"] = ticker.group(1).rstrip(".")
    return out


def _cover_org(text: str) -> str:
    if text.count("\r\n") >= 3:  # some PDFs break lines with CR LF and put every word on a line of its own
        text = "\n".join(line.replace("\n", " ") for line in text.split("\r\n"))
    lines = [" ".join(line.split()).strip("_ ") for line in text.splitlines()]  # rules drawn with "____"
    lines = [line for line in lines if line]
    for i, line in enumerate(lines[:80]):
        if _REGISTRANT.search(line) and i > 0:
            candidate = _REGISTRANT.split(line)[0].strip() or lines[i - 1]
            if 1 < len(candidate) <= 80:
                return _tidy_org(candidate)
    for line in lines[:25]:
        if _ORG_SUFFIX.match(line) and len(line.split()) <= 8 and not _NOT_ORG.search(line):
            return _tidy_org(line)
    sentence = re.search(
        r"\b([A-Z][\w&.'’\-]*(?:\s+[A-Z][\w&.'’\-]*){0,4}),?\s+(?:Inc\.|Corp\.|Corporation|Ltd\.|plc)?\s*"
        r"(?:\([A-Z]+:\s*[A-Z.]+\)\s*)?(?:today\s+)?(?:reports?|reported|announces?|announced|REPORTS?|ANNOUNCES?)\b",
        " ".join(lines[:40]),
    )
    if not sentence or all(w.lower() in GENERIC_WORDS for w in sentence.group(1).split()):
        return ""  # "Annual report", "Quarterly report": a heading, not a company
    return _tidy_org(sentence.group(1))


def _tidy_org(name: str) -> str:
    name = " ".join(name.replace("\u2019", "'").split()).strip(" ,;:")
    if name.isupper() and len(name) > 4:  # "3M COMPANY" → "3M Company"; keep short acronyms
        words = name.split()
        name = " ".join(w if len(w) <= 3 or any(ch.isdigit() for ch in w) else w.capitalize() for w in words)
    return name


def _org_from_title(title: str) -> str:
    """``10-K - 02/07/2019 - 3M Company`` → ``3M Company``; ``Form 8-K for Foot Locker INC filed …`` → Foot
    Locker INC."""
    m = re.search(r"\bfor\s+(.+?)\s+filed\b", title, re.IGNORECASE)
    if m:
        return _tidy_org(m.group(1))
    if _NOT_ORG.search(title):
        return ""
    parts = [p.strip() for p in re.split(r"\s+[-–|]\s+", title) if p.strip()]
    if len(parts) >= 2 and _kind(parts[0].lower()):
        last = parts[-1]
        if not _YEAR.search(last) and not re.search(r"\d/\d", last):
            return _tidy_org(last)
    return ""


def _title_fields(title: str) -> dict[str, Any]:
    if not title:
        return {}
    low = title.lower()
    out: dict[str, Any] = {"kind": _kind(low)}
    q = re.search(r"\bq([1-4])\s+((?:19|20)\d\d)\b", low)
    if q:
        out["quarter"], out["year"] = int(q.group(1)), int(q.group(2))
    return out


def _kind(text: str) -> str:
    for pattern, kind in _KINDS:
        if re.search(pattern, text):
            return kind
    return ""


def _period(fields: dict[str, Any]) -> str:
    year, quarter = fields.get("year"), fields.get("quarter")
    if not year:
        return ""
    if quarter:
        text = f"Q{quarter} {year} (quarter {quarter} of fiscal year {year}, FY{year})"
    elif "annual" in str(fields.get("kind", "")):
        text = f"fiscal year {year} (FY{year})"
    else:
        text = str(year)
    return text


def _phrase(flat: str, m: re.Match[str]) -> str:
    return flat[m.start() : m.end()].strip()


def _iso(text: str) -> str:
    m = re.search(rf"({_MONTHS})\.?\s+(\d{{1,2}}),?\s+((?:19|20)\d\d)", text.lower())
    if not m:
        return ""
    months = _MONTHS.split("|")
    index = months.index(m.group(1))
    month = index + 1 if index < 12 else [1, 2, 3, 4, 6, 7, 8, 9, 9, 10, 11, 12][index - 12]
    return f"{m.group(3)}-{month:02d}-{int(m.group(2)):02d}"


def _full_year(text: str) -> int:
    value = int(text)
    return value if value > 100 else 2000 + value if value < 70 else 1900 + value
