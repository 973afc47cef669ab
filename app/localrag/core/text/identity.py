"""What a document is: its organisation, period and kind, found at ingest, and the context each chunk is
searched with.

A library often holds many near-identical documents (one company's annual reports year after year, the same
manual in several versions). A chunk's own text rarely says which of them it comes from, so every chunk is
indexed (BM25 and its vector) with a short *context*: one line naming its document (title, organisation,
kind, period) and one naming where it sits (its heading path, or for a page without one the first lines of
the page: "Consolidated Statements of Cash Flows").

Metadata comes from, in order of trust: what a person edited, the file name (``COMPANY_2018_10K.pdf``,
``report-2019.pdf``, ``acme-2023Q2-10q.pdf``), the first pages' text ("FORM 10-K", "For the fiscal year ended
December 31, 2018", the name above "(Exact name of registrant …)", "Acme Corp Reports First-Quarter 2023
Results") and the PDF's metadata (Title, Author, CreationDate).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The version of the extraction below; documents extracted by an older one are refreshed by ``reembed``.
VERSION = 1
PAGE_HEAD_LINES = 3
PAGE_HEAD_CHARS = 120
CONTEXT_CHARS = 300

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_DATE = rf"(?:(?:{_MONTHS})\.?\s+\d{{1,2}},?\s+((?:19|20)\d\d))"
_YEAR = re.compile(r"(?<![\d.])((?:19|20)\d\d)(?![\d])")
_ORDINAL_QUARTER = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
# Kinds of documents, by what their file name or first pages say (checked in this order).
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
    (r"\binvoice\b", "invoice"),
    (r"\bagreement\b|\bcontract\b", "contract"),
    (r"\bmanual\b|\buser'?s? guide\b|\breference guide\b|\bhandbook\b", "manual"),
    (r"\bminutes\b", "minutes"),
    (r"\bpolicy\b", "policy"),
)
# Words of file names and titles that say what kind of document it is, not whose.
GENERIC_WORDS = frozenset(
    "report reports annual quarterly quarter earnings release results form filing dated final draft copy "
    "version rev scan scanned doc document documents file manual guide handbook reference user users "
    "statement statements presentation notes minutes invoice contract agreement policy the of and for "
    "a an in on to fy q1 q2 q3 q4 h1 h2 inc corp co ltd plc llc company corporation group holdings "
    "international exhibit current".split()
)
_LEGAL = re.compile(
    r"[,\s]+(inc|incorporated|corp|corporation|co|company|ltd|limited|plc|llc|lp|n\.?v|s\.?a|ag|se|gmbh)\.?$",
    re.IGNORECASE,
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


@dataclass
class Identity:
    """A document's metadata (``fields``: organization, kind, period, date, year, quarter) and where each
    came from (``sources``)."""

    fields: dict[str, Any]
    sources: dict[str, str]

    def to_meta(self) -> dict[str, Any]:
        return {**self.fields, "sources": self.sources, "version": VERSION}


def extract(
    path: str | Path,
    title: str = "",
    first_pages: Sequence[str] = (),
    pdf_meta: dict[str, str] | None = None,
) -> Identity:
    """The metadata of a document from its file name, its first pages' text and its PDF metadata."""
    fields: dict[str, Any] = {}
    sources: dict[str, str] = {}

    def put(key: str, value: Any, source: str) -> None:
        if value not in (None, "") and key not in fields:
            fields[key] = value
            sources[key] = source

    pdf_meta = pdf_meta or {}
    stem = Path(str(path).replace("\\", "/")).stem
    name = file_name_fields(stem)
    head = "\n".join(first_pages)[:6000]
    cover = _cover_fields(head)
    meta_title = " ".join((pdf_meta.get("Title") or "").split())
    for key in ("kind", "year", "quarter"):
        put(key, name.get(key), "file name")
        put(key, cover.get(key), "first pages")
        put(key, _title_fields(meta_title).get(key), "PDF metadata")
    put("organization", cover.get("organization"), "first pages")
    put("organization", _org_from_title(meta_title), "PDF metadata")
    put("organization", name.get("organization"), "file name")
    put("ticker", cover.get("ticker"), "first pages")
    put("date", name.get("date"), "file name")
    put("date", cover.get("date"), "first pages")
    created = re.match(r"D?:?((?:19|20)\d\d)(\d\d)?(\d\d)?", pdf_meta.get("CreationDate") or "")
    if created:  # when the file was made, not the period it is about: kept, not in the context line
        put("created", "-".join(g for g in created.groups() if g), "PDF metadata")
    if "annual" in str(fields.get("kind", "")):
        fields.pop("quarter", None)
    ends = cover.get("fiscal_year_end") or cover.get("quarter_end")
    if ends:
        put("period_end", ends[0].upper() + ends[1:], "first pages")
    fields["period"] = _period(fields, cover)
    if fields["period"]:
        sources["period"] = sources.get("year", "first pages")
    else:
        del fields["period"]
    return Identity(fields, sources)


def file_name_fields(stem: str) -> dict[str, Any]:
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
    words = [w for w in re.split(r"[\s\-]+", flat) if w]
    org_words = []
    for w in words:  # the leading words that are neither a period nor a kind: whose document it is
        lw = w.lower()
        if _YEAR.search(lw) or re.fullmatch(r"(fy|q[1-4]|h[12]|\d+[a-z]?|[a-z]?\d+)", lw):
            break
        if lw in GENERIC_WORDS or _kind(lw):
            break
        org_words.append(w)
    if org_words and len(org_words) <= 4:
        out["organization"] = " ".join(org_words)
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
    lines = [" ".join(line.split()) for line in text.splitlines()]
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
        r"(?:\([A-Z]+:\s*[A-Z.]+\)\s*)?(?:today\s+)?(?:reports?|reported|announces?|announced)\b",
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


def _period(fields: dict[str, Any], cover: dict[str, Any]) -> str:
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


# -- the context each chunk is searched with -----------------------------------------------------------------


def document_line(title: str, meta: dict[str, Any]) -> str:
    """One line naming the document: ``3M Company · 10-K annual report · fiscal year 2018 (FY2018), … · 3M
    2018 10K``. Parts already said by an earlier part are left out."""
    parts: list[str] = []
    for value in (meta.get("organization"), meta.get("kind"), meta.get("period"), meta.get("date"), title):
        text = " ".join(str(value or "").split())
        if value is title:
            said = _fold(" ".join(parts))
            words = [w for w in re.findall(r"[A-Za-z]{3,}", text) if w.lower() not in GENERIC_WORDS]
            if all(_fold(w) in said for w in words):
                continue  # a number (an accession number), or nothing the line does not say already
        if text and not any(_fold(text) in _fold(p) for p in parts):
            parts.append(text)
    return " · ".join(parts)[:CONTEXT_CHARS]


def chunk_context(doc_line: str, heading_path: str, page_head: str = "") -> str:
    """The context of one chunk: its document's line, then its heading path (or, without one, the first lines
    of its page)."""
    where = heading_path or page_head
    if where and _fold(where) in _fold(doc_line):
        where = ""
    return "\n".join(p for p in (doc_line, where) if p)


def embedding_text(context: str, text: str) -> str:
    """What the embedding model reads for a chunk: its context, then its text (the context's lines the text
    already starts with are not repeated)."""
    head = _fold(text[: len(context) + 40])
    lines = [line for line in context.split("\n") if line and not head.startswith(_fold(line))]
    return "\n".join([*lines, text]) if lines else text


class ContextFitter:
    """A chunk's context cut (at a word piece) to what the embedding model takes beside the chunk's text."""

    def __init__(self, embedder: Any) -> None:
        self.limit = int(getattr(embedder, "max_tokens", 0) or 0)
        self.tokenizer = getattr(embedder, "tokenizer", None)
        self._offsets: dict[str, list[tuple[int, int]]] = {}

    def __call__(self, context: str, text_tokens: int) -> str:
        if not context or not self.limit or self.tokenizer is None:
            return context
        offsets = self._offsets.get(context)
        if offsets is None:
            # The real word pieces' offsets ([CLS] and [SEP] left out); a line break costs one more.
            offsets = self._offsets[context] = list(self.tokenizer.encode(context).offsets[1:-1])
        budget = self.limit - int(text_tokens) - 1 - context.count("\n")
        if len(offsets) <= budget:
            return context
        return context[: offsets[budget - 1][1]] if budget > 0 else ""


def context_hash(context: str) -> str:
    """What ``chunk_embeddings.context_hash`` holds for a vector embedded with ``context`` (PostgreSQL's
    ``md5(context)``)."""
    return hashlib.md5(context.encode("utf-8")).hexdigest()


def page_heads(pages: Iterable[tuple[int, str]]) -> dict[int, str]:
    """The first few short lines of each page, without the running headers repeated on many pages (a title,
    "Table of Contents", a page number)."""
    tops: dict[int, list[str]] = {}
    for number, text in pages:
        lines = []
        for line in text.splitlines()[:12]:
            line = " ".join(line.split())
            # A heading-like line: short, starts as a title does, is not the end of a sentence.
            title_like = (line[:1].isupper() or line[:1].isdigit()) and bool(re.search(r"[A-Za-z]{3}", line))
            if len(line) <= PAGE_HEAD_CHARS and title_like and not line.endswith((".", ",", ";")):
                lines.append(line)
        tops[number] = lines[: PAGE_HEAD_LINES + 3]
    seen = Counter(_fold(line) for lines in tops.values() for line in set(lines))
    running = {line for line, n in seen.items() if n >= max(3, len(tops) // 5)}
    return {
        number: " · ".join([line for line in lines if _fold(line) not in running][:PAGE_HEAD_LINES])
        for number, lines in tops.items()
    }


def _fold(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", "", text.lower())
