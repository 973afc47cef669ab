"""What a document is — its title's kind, author and date — found at ingest, and the context each chunk is
searched with.

A library often holds many near-identical documents (one company's annual reports year after year, the same
manual in several versions). A chunk's own text rarely says which of them it comes from, so every chunk is
indexed (BM25 and its vector) with a short *context*: one line naming its document (title, organisation,
kind, period) and one naming where it sits (its heading path, or for a page without one the first lines of
the page: "Consolidated Statements of Cash Flows").

The core knows documents, not industries. A field is kept only when it was found with evidence, and
``sources`` says where: the author in the PDF's metadata; a date written as a date ("June 14, 2021",
"2021-06-14") on the first pages or in the file name; a kind the document's title says ("… User's Guide",
"Minutes of …"). Never a kind or a period from a word in the file name that merely looks like a form
("8K") or a year ("Thesis_2021"), and never an organisation from a file name. Organisation, kind and period
of a field's documents (an annual report's company and fiscal year) come from the domain pack that acts on
the document (``core/hooks.py``), passed in as ``pack``.
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
VERSION = 2
PAGE_HEAD_LINES = 3
PAGE_HEAD_CHARS = 120
CONTEXT_CHARS = 300
# How far into the first pages a date written as a date is looked for.
DATE_CHARS = 3000

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_WRITTEN_DATE = re.compile(
    rf"\b(?:({_MONTHS})\.?\s+(\d{{1,2}}),?\s+((?:19|20)\d\d)"
    rf"|(\d{{1,2}})\s+({_MONTHS})\.?,?\s+((?:19|20)\d\d)"
    r"|((?:19|20)\d\d)-(\d\d)-(\d\d))\b",
    re.IGNORECASE,
)
# Kinds of documents any field has, when their title says so (checked in this order).
_KINDS: tuple[tuple[str, str], ...] = (
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


@dataclass
class Identity:
    """A document's metadata (``fields``: kind, author, date, year, and those of the pack that acts on it:
    organization, period…) and where each came from (``sources``)."""

    fields: dict[str, Any]
    sources: dict[str, str]
    domain: str = ""
    evidence: str = ""

    def to_meta(self) -> dict[str, Any]:
        meta = {**self.fields, "sources": dict(self.sources), "version": VERSION}
        if self.domain:
            meta["domain"] = self.domain
            meta["sources"]["domain"] = self.evidence
        return meta


def extract(
    path: str | Path,
    title: str = "",
    first_pages: Sequence[str] = (),
    pdf_meta: dict[str, str] | None = None,
    *,
    pack: tuple[str, str, dict[str, Any], dict[str, str]] | None = None,
) -> Identity:
    """The metadata of a document from its file name, its first pages' text and its PDF metadata.

    ``pack``: ``(domain, evidence, fields, sources)`` of the domain pack that acts on the document; its
    fields replace the generic kind and date (a pack knows which date of a cover is the report's)."""
    fields: dict[str, Any] = {}
    sources: dict[str, str] = {}

    def put(key: str, value: Any, source: str) -> None:
        if value not in (None, "") and key not in fields:
            fields[key] = value
            sources[key] = source

    pdf_meta = pdf_meta or {}
    meta_title = " ".join((pdf_meta.get("Title") or "").split())
    if pack is not None:
        for key, value in pack[2].items():
            put(key, value, pack[3].get(key, pack[0]))
    else:
        put("kind", _kind(title), "title")
        put("kind", _kind(meta_title), "PDF metadata")
        stem = Path(str(path).replace("\\", "/")).stem
        put("date", written_date(stem), "file name")
        put("date", written_date("\n".join(first_pages)[:DATE_CHARS]), "first pages")
        if fields.get("date"):
            put("year", int(str(fields["date"])[:4]), sources["date"])
    author = " ".join((pdf_meta.get("Author") or "").split())
    if author and len(author) <= 120:
        put("author", author, "PDF metadata")
    created = re.match(r"D?:?((?:19|20)\d\d)(\d\d)?(\d\d)?", pdf_meta.get("CreationDate") or "")
    if created:  # when the file was made, not the period it is about: kept, not in the context line
        put("created", "-".join(g for g in created.groups() if g), "PDF metadata")
    if pack is None:
        return Identity(fields, sources)
    return Identity(fields, sources, pack[0], pack[1])


def written_date(text: str) -> str:
    """The first date written as a date in ``text`` ("June 14, 2021", "14 June 2021", "2021-06-14") as
    ``YYYY-MM-DD``, or ''."""
    for m in _WRITTEN_DATE.finditer(text):
        g = m.groups()
        if g[6]:
            year, month, day = int(g[6]), int(g[7]), int(g[8])
        else:
            name = (g[0] or g[4]).lower()
            months = _MONTHS.split("|")
            index = months.index(name)
            month = index + 1 if index < 12 else [1, 2, 3, 4, 6, 7, 8, 9, 9, 10, 11, 12][index - 12]
            year, day = int(g[2] or g[5]), int(g[1] or g[3])
        if 1 <= month <= 12 and 1 <= day <= 31:
            return f"{year}-{month:02d}-{day:02d}"
    return ""


# A word of a file name that says a period: ``2021``, ``FY2021``, ``2019Q2``, ``20210331`` — not a name that
# merely holds four digits (``doc1907``).
_PERIOD_WORD = re.compile(r"(?:fy|q[1-4]|h[12])?(?:19|20)\d\d(?:\d\d){0,2}(?:q[1-4]|h[12])?")


def name_words(stem: str) -> str:
    """The leading words of a file name that are neither a period nor a kind (``AMERICANWATERWORKS`` of
    ``AMERICANWATERWORKS_2021_10K``): what routing may match a question's words against, never a field."""
    words = [w for w in re.split(r"[\s\-]+", stem.replace("_", " ").replace(".", " ")) if w]
    out = []
    for w in words:
        lw = w.lower()
        if _PERIOD_WORD.fullmatch(lw) or re.fullmatch(r"(fy|q[1-4]|h[12]|\d+[a-z]?|[a-z]?\d+)", lw):
            break
        if lw in GENERIC_WORDS or _kind(lw):
            break
        out.append(w)
    return " ".join(out) if 0 < len(out) <= 4 else ""


def _kind(text: str) -> str:
    low = text.lower()
    for pattern, kind in _KINDS:
        if re.search(pattern, low):
            return kind
    return ""


# -- the context each chunk is searched with -----------------------------------------------------------------


def document_line(title: str, meta: dict[str, Any]) -> str:
    """One line naming the document: ``Acme Ltd · annual report · 2018 · Acme annual report 2018``. Parts
    already said by an earlier part are left out."""
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
