"""Whole-document and library questions, answered from the documents' structure (no language model needed).

"Summarize the R FAQ", "what are the chapters of X", "compare X and Y" and "which of my documents mention Z"
are about a whole document or the whole library, which a handful of retrieved passages cannot answer. They are
answered from what the store already holds:

- **Sections.** A document's top-level sections are the runs of consecutive chunks that share the first
  component of their ``heading_path`` ("7 R Miscellanea > 7.31 Why…" → "7 R Miscellanea"); when every
  heading shares one first component (a book's title), or the first level holds two parts and the level below
  at least three entries, the level below is used instead (``sections.outline_level``). A chunk that starts
  above that level but opens with the next section's heading (a bare title run on into it) belongs to that
  section. ``compute_sections`` stores each section's title, the page it starts on, its first chunk and its
  *central* chunk: the one whose vector is nearest (cosine, pgvector's ``<=>``) to the mean (``avg``) of the
  section's vectors, computed in PostgreSQL (a chunk with a table of contents' dot leaders comes last). It
  runs when a document becomes ready and after re-embedding (ingest/pipeline.py); a document of an older
  library gets its sections on first use.
- **Outline**: the titled sections with the page each starts on, each citing its first chunk (where its
  heading is). **Summary**: the same list, each with the most representative sentence of its central chunk
  (its first full sentence of body text), citing that chunk. **Compare**: one such block per document, then
  the section titles they share. A document without headings is one untitled section: the answer says so and
  quotes its central passage.
- **Which documents mention Z**: the chunks whose BM25 postings hold every lexeme of Z
  (``to_tsvector('english', Z)``, a ligature read as its letters as BM25 reads it: ``bm25.tsvector``), counted
  per document, best first, each document citing its best-matching chunk (and quoting its first sentence that
  matches Z).

``overview_questions.detect`` recognises such questions by their wording alone and is conservative.
``answer`` decides from the documents: the selected ones, or those whose title, file name or opening line
matches the subject. When none matches it returns ``None`` and the caller answers the question as an ordinary
one, so "what is the difference between R and S?" stays a factual question unless R and S name documents.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from localrag.core.answer.candidates import split_long
from localrag.core.answer.citations import page_phrase
from localrag.core.answer.evidence import EvidenceSpan
from localrag.core.answer.overview_questions import COMPARE, OUTLINE, WHICH_DOCUMENTS, Intent, groupings
from localrag.core.ingest import sections as doc_sections
from localrag.core.retrieve import bm25
from localrag.core.retrieve.results import PAGE_LABEL, Result
from localrag.core.store.db import SHOWN_TITLE, one
from localrag.core.text import glyphs
from localrag.core.text import spans as sp

log = logging.getLogger("localrag.chat.overview")

MAX_SECTIONS = 15  # sections of one document shown with a sentence each; the rest are named only
MAX_NAMED = 60  # sections named for one document; the rest are counted ("and N more")
MAX_SECTIONS_EACH = 8  # per document when several are summarized or compared
MAX_DOCUMENTS = 5  # documents summarized or compared in one answer
MAX_LISTED = 15  # documents listed for "which documents mention Z"

Conn = psycopg.Connection[Any]


@dataclass
class Overview:
    """The answer: ``text`` as a person reads it (every line citing ``[n]`` = ``sources[n-1]``), the quoted
    sentences (``spans``) and the ids of the documents it is about (``documents``)."""

    kind: str
    text: str
    sources: list[Result]
    spans: list[EvidenceSpan]
    documents: list[int]


# -- answering ---------------------------------------------------------------------------------------------


@dataclass
class _Doc:
    id: int
    title: str
    path: str
    pages: int
    opening: str  # the first line of its text (often the real title of a PDF whose metadata has none)


@dataclass
class _Section:
    title: str
    page: int
    first: Result | None
    central: Result | None


def answer(library: Any, question: str, intent: Intent, doc_ids: list[int] | None) -> Overview | None:
    """The answer to ``question`` (whose ``intent`` ``detect`` found) from the documents' structure, or
    ``None`` when it names no document (it is then an ordinary question).

    Args:
        library: the open Library (``connect()``; ``embedder.name`` when sections must be computed).
        doc_ids: the documents the person selected, if any: a question that names none is about them, and
            "which documents mention Z" searches them only.
    """
    log.debug("overview %s for %r", intent.kind, question)
    with library.connect() as conn:
        if intent.kind == WHICH_DOCUMENTS:
            return _which_documents(conn, intent.subject, doc_ids)
        docs = _ready_documents(conn)
        selected = [d for d in docs if doc_ids and d.id in doc_ids]
        if intent.kind == COMPARE:
            chosen = _compared(intent, docs, selected)
        else:
            chosen = _about(intent.subject, docs, selected)
        outlines = [(d, s) for d in chosen if (s := _sections(conn, d, lambda: library.embedder.name))]
        if not outlines or (intent.kind == COMPARE and len(outlines) < 2):
            return None
        return _render(intent.kind, outlines)


def _ready_documents(conn: Conn) -> list[_Doc]:
    rows = conn.execute(
        f"SELECT d.id, {SHOWN_TITLE}, d.path, d.pages, coalesce(left(c.text, 300), '') FROM documents d "
        "LEFT JOIN document_chunks c ON c.doc_id = d.id AND c.chunk_index = 0 "
        "WHERE d.status = 'ready' ORDER BY d.id"
    ).fetchall()
    return [_Doc(i, title, path, pages, _first_line(text)) for i, title, path, pages, text in rows]


def _first_line(text: str) -> str:
    line = next((ln.strip().lstrip("#").strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= 100 else ""


_DETERMINERS = frozenset(
    """the a an this that these those it its them they my our your both all selected current open one two
    three""".split()
)
_GENERIC = frozenset(  # words that say what kind of document, not which one
    sp.stem(w)
    for w in (
        "document doc file pdf paper book text article manual guide handbook documentation vignette page "
        "webpage readme howto booklet leaflet"
    ).split()
)


def _terms(name: str) -> set[str]:
    return {sp.stem(w) for w in re.split(r"[\W_]+", name.lower()) if w and w not in sp.STOPWORDS}


def _subject_terms(subject: str) -> set[str]:
    """The words that name a document ("the R FAQ manual" → r, faq); none for "this document", "them"."""
    return {t for t in _terms(subject) if t not in _DETERMINERS and t not in _GENERIC}


def _same(a: str, b: str) -> bool:
    return a == b or (min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a)))


def _match(terms: set[str], doc: _Doc) -> tuple[float, float] | None:
    """How well ``terms`` name ``doc`` by its title, file name and opening line: (share of the terms found,
    share of the best-matching name covered), or ``None`` when they do not name it."""
    names = [
        _terms(doc.title),
        _terms(os.path.splitext(os.path.basename(doc.path.replace("\\", "/")))[0]),
        _terms(doc.opening),
    ]
    every = set().union(*names)
    hit = {t for t in terms if any(_same(t, n) for n in every)}
    needed = 1.0 if len(terms) <= 2 else 0.75
    if not hit or len(hit) / len(terms) < needed or not any(len(t) >= 3 for t in hit):
        return None  # a lone "R" names no document
    covered = max(sum(any(_same(t, n) for t in hit) for n in name) / len(name) for name in names if name)
    return len(hit) / len(terms), covered


def _named(subject: str, docs: list[_Doc]) -> list[_Doc]:
    """The documents ``subject`` names best (several only when they tie)."""
    terms = _subject_terms(subject)
    scored = [(score, d) for d in docs if terms and (score := _match(terms, d))]
    if not scored:
        return []
    best = max(score for score, _ in scored)
    return [d for score, d in scored if score == best][:MAX_DOCUMENTS]


def _about(subject: str, docs: list[_Doc], selected: list[_Doc]) -> list[_Doc]:
    """The documents a summary or outline is about: those named, else (nothing named) the selection, else the
    library's only document."""
    if _subject_terms(subject):
        return _named(subject, selected) or _named(subject, docs)
    if selected:
        return selected[:MAX_DOCUMENTS]
    return docs if len(docs) == 1 else []


def _compared(intent: Intent, docs: list[_Doc], selected: list[_Doc]) -> list[_Doc]:
    """The documents a compare names, each name matching a different document; the selection for "compare
    them"; nothing when any name matches no document."""
    if not intent.others and not _subject_terms(intent.subject):
        return selected[:MAX_DOCUMENTS] if len(selected) >= 2 else []
    for names in groupings(intent):
        chosen: list[_Doc] = []
        for name in names:
            spare = [d for d in selected if d not in chosen]
            found = spare[:1] if not _subject_terms(name) else _named(name, selected) or _named(name, docs)
            found = [d for d in found if d not in chosen]
            if not found:
                break
            chosen.append(found[0])
        else:
            if len(chosen) >= 2:
                return chosen[:MAX_DOCUMENTS]
    return []


def _sections(conn: Conn, doc: _Doc, model: Callable[[], str]) -> list[_Section]:
    """``doc``'s stored sections, computed first when there are none (an older library) or a chunk is gone."""
    rows = _section_rows(conn, doc.id)
    if not rows or any(r[2] is None or r[3] is None for r in rows):
        try:
            doc_sections.compute_sections(conn, doc.id, model())
        except psycopg.OperationalError as exc:  # the store is down; a bug is raised
            log.warning("cannot compute the sections of document %s: %s", doc.id, exc)
        rows = _section_rows(conn, doc.id)
    chunks = _chunk_results(conn, [cid for r in rows for cid in r[2:4] if cid is not None])
    return [
        _Section(title, page, chunks.get(first_id), chunks.get(central_id))
        for title, page, first_id, central_id in rows
    ]


def _section_rows(conn: Conn, doc_id: int) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT title, page_number, first_chunk_id, central_chunk_id FROM document_sections "
        "WHERE doc_id = %s ORDER BY ordinal",
        (doc_id,),
    ).fetchall()


def _chunk_results(conn: Conn, chunk_ids: list[int]) -> dict[int, Result]:
    rows = conn.execute(
        f"SELECT c.id, c.doc_id, d.doc_type, {SHOWN_TITLE}, d.path, c.page_number, c.heading_path, c.text, "
        f"c.char_start, c.char_end, c.chunk_index, c.text_hash, {PAGE_LABEL} "
        "FROM document_chunks c JOIN documents d ON d.id = c.doc_id WHERE c.id = ANY(%s)",
        (chunk_ids,),
    ).fetchall()
    return {
        r[0]: Result(
            chunk_ids=[r[0]],
            doc_id=r[1],
            doc_type=r[2],
            title=r[3],
            path=r[4],
            page_number=r[5],
            heading_path=r[6],
            text=r[7],
            similarity=0.0,
            char_start=r[8],
            char_end=r[9],
            scores={},
            chunk_index=r[10],
            text_hash=r[11],
            page_label=r[12],
        )
        for r in rows
    }


# -- writing the answer ------------------------------------------------------------------------------------


class _Sources:
    """The numbered sources of an answer: each chunk once, numbered from 1 in order of first citation."""

    def __init__(self) -> None:
        self.results: list[Result] = []
        self._numbers: dict[int, int] = {}

    def number(self, result: Result) -> int:
        key = result.chunk_ids[0]
        if key not in self._numbers:
            self.results.append(result)
            self._numbers[key] = len(self.results)
        return self._numbers[key]


def _render(kind: str, outlines: list[tuple[_Doc, list[_Section]]]) -> Overview:
    book = _Sources()
    spans: list[EvidenceSpan] = []
    blocks: list[str] = []
    several = len(outlines) > 1
    for doc, sections in outlines:
        lines, found = _block(
            doc,
            sections,
            book,
            sentences=kind != OUTLINE,
            limit=MAX_SECTIONS_EACH if several else MAX_SECTIONS,
            named=MAX_SECTIONS_EACH if several else MAX_NAMED,
        )
        blocks.append("\n".join(lines))
        spans.extend(found)
    if kind == COMPARE:
        blocks.insert(0, "Comparing " + _and([d.title for d, _ in outlines]) + ":")
        shared = _shared_titles(outlines, book)
        if shared:
            blocks.append(shared)
    return Overview(kind, "\n\n".join(blocks), book.results, spans, [d.id for d, _ in outlines])


def _block(
    doc: _Doc, sections: list[_Section], book: _Sources, *, sentences: bool, limit: int, named: int
) -> tuple[list[str], list[EvidenceSpan]]:
    """One document's first ``named`` sections, one line each, the first ``limit`` with their representative
    sentences when ``sentences``."""
    titled = [s for s in sections if s.title and (s.first or s.central)]
    if not titled:
        return _no_headings(doc, sections, book)
    lines = [f"{doc.title} has {_count(len(titled), 'section')}:"]
    spans = []
    for i, s in enumerate(titled[:named], 1):
        anchor = s.first or s.central
        assert anchor is not None
        n = book.number(anchor)
        label = anchor.page_label if anchor.page_number == s.page else ""
        head = f"{i}. {s.title}" + (f" — {page_phrase(s.page, label)}" if doc.pages > 1 else "")
        quote = _representative(s) if sentences and i <= limit else None
        if quote is None:
            lines.append(f"{head} [{n}]")
            spans.append(_evidence(_heading_span(anchor, s.title), anchor, n))
            continue
        sentence, chunk = quote
        m = book.number(chunk)
        cite = f" [{n}]" if m != n else ""
        lines.append(f"{head}{cite}: {sp.flat(sentence.text)} [{m}]")
        spans.append(_evidence(sentence, chunk, m))
    if len(titled) > named:
        lines.append(f"…and {len(titled) - named} more.")
    return lines, spans


def _representative(section: _Section) -> tuple[sp.Span, Result] | None:
    """The sentence that stands for the section: the first full sentence of its central chunk, else of its
    first chunk, else the first line of text of either."""
    for full in (True, False):
        for chunk in (section.central, section.first):
            sentence = _central_sentence(chunk, full=full) if chunk is not None else None
            if sentence is not None and chunk is not None:
                return sentence, chunk
    return None


def _no_headings(doc: _Doc, sections: list[_Section], book: _Sources) -> tuple[list[str], list[EvidenceSpan]]:
    """A document without headings: says so, and quotes its central passage."""
    quote = next((q for s in sections if (q := _representative(s))), None)
    if quote is None:
        return [f"{doc.title} has no section headings."], []
    sentence, chunk = quote
    n = book.number(chunk)
    page = f" ({page_phrase(chunk.page_number, chunk.page_label)})" if doc.pages > 1 else ""
    line = (
        f"{doc.title} has no section headings. Its most central passage{page}: {sp.flat(sentence.text)} [{n}]"
    )
    return [line], [_evidence(sentence, chunk, n)]


def _shared_titles(outlines: list[tuple[_Doc, list[_Section]]], book: _Sources) -> str:
    """The section titles every compared document has, each citing where it is in each."""
    firsts = [
        {sp.folded(s.title): s.first for s in sections if s.title and s.first} for _, sections in outlines
    ]
    common = [t for t in firsts[0] if all(t in f for f in firsts[1:])][:MAX_SECTIONS_EACH]
    if not common:
        return ""
    who = "Both" if len(outlines) == 2 else "All of them"
    items = []
    for t in common:
        chunks = [f[t] for f in firsts]
        name = next(s.title for s in outlines[0][1] if sp.folded(s.title) == t)
        items.append(f"“{name}” " + "".join(f"[{book.number(c)}]" for c in chunks if c is not None))
    return f"{who} have a section named " + _and(items) + "."


def _central_sentence(chunk: Result, *, full: bool = True) -> sp.Span | None:
    """The passage's most representative sentence: its first full sentence of body text (or, not ``full``, its
    first line of six words or more that is not a heading); ``None`` when there is none (a list, an index)."""
    heads = [sp.folded(h) for h in chunk.heading_path.split(" > ") if h]
    spans = [s for s in split_long(sp.split_spans(chunk.text)) if _is_text(s, heads)]
    for s in spans:
        flat = sp.flat(s.text)
        starts = re.match(r"[\"'“‘(]?[A-Z0-9]", flat) is not None  # not the end of a sentence cut in two
        if starts and re.search(r"[.!][\"'”’)\]]*$", flat) and not s.ends_with_question:
            return s
    return spans[0] if spans and not full else None


def _is_text(span: sp.Span, heads: list[str]) -> bool:
    """Whether ``span`` is six words or more of text, not a heading, a running header, code or a table of
    contents' line."""
    flat = sp.flat(span.text)
    folded = sp.folded(flat)
    if flat.startswith("#") or sp.is_code_line(flat) or re.search(r"(?:\.\s?){4,}", flat):
        return False
    padded = f" {folded} "
    if any(h and f" {h} " in padded and len(padded.replace(f" {h} ", " ").split()) <= 3 for h in heads):
        return False  # the heading itself, or a running header ("Chapter 5: R Add-On Packages 24")
    return len(sp.words(flat)) >= 6


def _heading_span(chunk: Result, title: str) -> sp.Span:
    """Where ``title`` is written in ``chunk`` (its heading), else the chunk's first sentence."""
    words = title.split()
    m = re.search(r"\s+".join(map(re.escape, words)), chunk.text, re.IGNORECASE) if words else None
    if m:
        return sp.Span(m.start(), m.end(), m.group(0))
    spans = sp.split_spans(chunk.text)
    return spans[0] if spans else sp.Span(0, len(chunk.text), chunk.text)


def _evidence(span: sp.Span, chunk: Result, number: int) -> EvidenceSpan:
    return EvidenceSpan(
        text=span.text,
        number=number,
        doc_id=chunk.doc_id,
        title=chunk.title,
        path=chunk.path,
        page_number=chunk.page_number,
        char_start=chunk.char_start + span.start,
        char_end=chunk.char_start + span.end,
        score=0.0,
    )


# -- which documents mention Z -------------------------------------------------------------------------------

_MENTIONS_SQL = (
    "WITH hits AS (SELECT p.chunk_id, sum(p.tf::float8 / (p.tf + 0.3 + 0.009 * p.dl)) AS impact "
    "              FROM bm25_postings p WHERE p.term = ANY(%(terms)s) GROUP BY p.chunk_id "
    "              HAVING count(DISTINCT p.term) = %(n)s) "
    "SELECT c.doc_id, count(*) AS passages, "
    "       (array_agg(c.id ORDER BY h.impact DESC, c.chunk_index))[1] AS best "
    "FROM hits h JOIN document_chunks c ON c.id = h.chunk_id JOIN documents d ON d.id = c.doc_id "
    "WHERE d.status = 'ready' AND (%(ids)s::bigint[] IS NULL OR c.doc_id = ANY(%(ids)s::bigint[])) "
    "GROUP BY c.doc_id ORDER BY passages DESC, c.doc_id"
)


def _which_documents(conn: Conn, term: str, doc_ids: list[int] | None) -> Overview | None:
    """How many passages of each document hold every word of ``term`` (as BM25 indexes them), best first."""
    lexemes = one(
        conn.execute(
            f"SELECT coalesce(array_agg(DISTINCT lexeme), '{{}}') FROM unnest({bm25.tsvector('%s')})",
            (term,),
        )
    )[0]
    if not lexemes:
        return None  # only stop words
    ids = list(doc_ids) if doc_ids else None
    rows = conn.execute(_MENTIONS_SQL, {"terms": lexemes, "n": len(lexemes), "ids": ids}).fetchall()
    where = "the selected documents" if ids else "your documents"
    if not rows:
        return Overview(WHICH_DOCUMENTS, f"None of {where} mention “{term}”.", [], [], [])
    chunks = _chunk_results(conn, [best for _, _, best in rows[:MAX_LISTED]])
    book = _Sources()
    spans = []
    verb = "mentions" if len(rows) == 1 else "mention"
    found = _count(len(rows), "document")
    if ids:
        found = f"{len(rows)} of the {_count(len(ids), 'selected document')}"
    lines = [f"{found} {verb} “{term}”:"]
    for _, passages, best in rows[:MAX_LISTED]:
        chunk = chunks.get(best)
        if chunk is None:  # removed meanwhile
            continue
        n = book.number(chunk)
        lines.append(f"- {chunk.title}: {_count(passages, 'passage')} [{n}]")
        spans.append(_evidence(_matching_sentence(conn, chunk, term), chunk, n))
    if len(rows) > MAX_LISTED:
        lines.append(f"…and {_count(len(rows) - MAX_LISTED, 'more document')}.")
    return Overview(WHICH_DOCUMENTS, "\n".join(lines), book.results, spans, [r[0] for r in rows])


def _matching_sentence(conn: Conn, chunk: Result, term: str) -> sp.Span:
    """The chunk's first sentence that matches ``term`` (the chunk may match by its heading only)."""
    spans = split_long(sp.split_spans(chunk.text)) or [sp.Span(0, len(chunk.text), chunk.text)]
    row = conn.execute(
        "SELECT i FROM unnest(%s::text[]) WITH ORDINALITY AS s (t, i) "
        f"WHERE {bm25.tsvector('t')} @@ plainto_tsquery('english', %s) ORDER BY i LIMIT 1",
        ([s.text for s in spans], glyphs.letters(term)),
    ).fetchone()
    return spans[row[0] - 1] if row else spans[0]


# -- words ---------------------------------------------------------------------------------------------------


def _noun(n: int, noun: str) -> str:
    return noun if n == 1 else noun + "s"


def _count(n: int, noun: str) -> str:
    return f"{n} {_noun(n, noun)}"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
