"""Whole pages rebuilt from their chunks, and passages widened to the whole sentences they cut.

A chunk starts and ends where its token budget ran out, often in the middle of a sentence, and a page ends
in the middle of one as often as not. The chunks of a page cover the page's text (each knows its offsets in
it, and overlapping chunks repeat the same characters), so the page can be laid out again from them without
reading the file; its running header and footer (the book's title and the page number, repeated on every
page) are blanked; and a passage's first and last sentence can be finished, from the page before or after
when it runs over.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from localrag.core.errors import StoreUnavailable
from localrag.core.text import spans as sp

log = logging.getLogger("localrag.chat")

# A passage grows by at most this many characters at either end to finish its first and last sentence.
MAX_WIDEN_CHARS = 400
# Pages this far before and after are read to tell a running header from a line of the page (book layouts
# alternate two headers, so the page two away has the same one).
NEIGHBOURS = 2
# A first or last line shorter than this may be a running header or footer.
MAX_HEADER_CHARS = 100
# The letters a line shares with the same line of a nearby page, at least, to be taken as a running header.
MIN_SHARED_LETTERS = 5

PageKey = tuple[int, int]  # (doc_id, page_number)
Mark = tuple[int, str]  # (offset in the page, heading path)


def _chunks_of_pages(conn: psycopg.Connection[Any], keys: Iterable[PageKey], columns: str) -> list[tuple]:
    """Each chunk of the pages ``keys`` as (doc_id, page_number, char_start, *columns)."""
    keys = sorted(set(keys))
    if not keys:
        return []
    return conn.execute(
        f"SELECT c.doc_id, c.page_number, c.char_start, {columns} FROM document_chunks c"
        " JOIN unnest(%s::bigint[], %s::int[]) AS k(doc_id, page_number)"
        " ON c.doc_id = k.doc_id AND c.page_number = k.page_number",
        ([k[0] for k in keys], [k[1] for k in keys]),
    ).fetchall()


def page_texts(conn: psycopg.Connection[Any], keys: Iterable[PageKey]) -> dict[PageKey, str]:
    """The text of each (document, page) that has chunks, laid out from them; gaps become spaces."""
    rows = _chunks_of_pages(conn, keys, "c.text")
    pieces: dict[PageKey, list[tuple[int, str]]] = {}
    for doc_id, page, start, text in rows:
        pieces.setdefault((doc_id, page), []).append((start, text))
    return {key: _lay_out(parts) for key, parts in pieces.items()}


def page_sections(conn: psycopg.Connection[Any], keys: Iterable[PageKey]) -> dict[PageKey, list[Mark]]:
    """Where sections begin on each (document, page), as (offset in the page, heading path), sorted: each
    chunk's start in the section it starts in, and the headings that begin inside it (a chunk written before
    they were kept adds only its start)."""
    rows = _chunks_of_pages(conn, keys, "c.heading_path, c.headings")
    marks: dict[PageKey, set[Mark]] = {}
    for doc_id, page, start, heading, inside in rows:
        found = marks.setdefault((doc_id, page), set())
        if heading:
            found.add((int(start), str(heading)))
        found.update((int(start) + int(offset), str(path)) for offset, path in inside or [] if path)
    return {key: sorted(found) for key, found in marks.items()}


def section_at(marks: Sequence[Mark], offset: int) -> str:
    """The heading path of the section ``offset`` is in (``page_sections``' marks of its page), or ''."""
    i = bisect.bisect_right(marks, (offset, "\U0010ffff")) - 1
    return marks[i][1] if i >= 0 else ""


def whole_sentences(
    pool: Any, sources: Sequence[Any], n: int
) -> tuple[list[Any], dict[PageKey, str], dict[PageKey, list[Mark]]]:
    """The passages an answer's evidence is read from: the first ``n`` of ``sources`` with their cut first and
    last sentences made whole from the page and running headers blanked (the sources as numbered and shown
    stay as retrieved); the pages' text; and where sections begin on the passages' pages
    (``page_sections``). ``pool`` lends the connection; with the store down, the passages as they are."""
    top = sources[:n]
    try:
        with pool.connection() as conn:
            texts = page_texts(conn, around((s.doc_id, s.page_number) for s in top))
            sections = page_sections(conn, ((s.doc_id, s.page_number) for s in top))
    except (StoreUnavailable, psycopg.OperationalError) as exc:  # the store is down; a bug is raised
        log.warning("pages not read for whole sentences: %s", exc)
        return list(sources), {}, {}
    return [widen(s, texts) for s in top] + list(sources[n:]), texts, sections


def around(keys: Iterable[PageKey]) -> set[PageKey]:
    """The pages whose text ``widen`` reads for passages on ``keys``."""
    return {(d, p + i) for d, p in keys for i in range(-NEIGHBOURS, NEIGHBOURS + 1) if p + i >= 1}


def _lay_out(parts: list[tuple[int, str]]) -> str:
    size = max(start + len(text) for start, text in parts)
    page = [" "] * size
    for start, text in parts:
        page[start : start + len(text)] = text
    return "".join(page)


@dataclass
class WholePassage:
    """A retrieved passage (``result``) with its cut sentences made whole: ``text`` is ``before`` characters
    from the previous page, the page's ``text[char_start:char_end]``, and ``after`` characters from the next
    page.
    Every other attribute is the result's."""

    result: Any
    text: str
    char_start: int
    char_end: int
    before: int = 0
    after: int = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.result, name)


def widen(result: Any, pages: dict[PageKey, str]) -> Any:
    """``result`` with running headers blanked and its first and last sentences whole (``WholePassage``), or
    ``result`` itself when its offsets are not an exact slice of its page or its page is unknown."""
    key = (result.doc_id, result.page_number)
    page = clean_page(pages, key)
    start, end = result.char_start, result.char_end
    if not page or end - start != len(result.text) or end > len(page):
        return result
    lo, hi = max(0, start - MAX_WIDEN_CHARS), min(len(page), end + MAX_WIDEN_CHARS)
    new_start, new_end = start, end
    for s in sp.split_spans(page[lo:hi]):
        a, b = lo + s.start, lo + s.end
        if a < start < b and (a > lo or lo == 0):
            new_start = a
        if a < end < b and (b < hi or hi == len(page)):
            new_end = b
    while new_end > new_start and page[new_end - 1].isspace():
        new_end -= 1
    if page[new_start:new_end].endswith(":"):
        new_end = _announced(page, new_end)
    text = page[new_start:new_end]
    before = after = ""
    pdf = getattr(result, "doc_type", "") == "pdf"  # its footnotes come between its body and the next page
    if not page[:new_start].strip() and _starts_mid_sentence(text):
        before = _continued_from(clean_page(pages, (key[0], key[1] - 1)), text, footnotes=pdf)
    # A footnote does not go on at the top of the next page; the body does.
    notes = sp.footnotes_start(page) if pdf else len(page)
    if new_end <= notes and not page[new_end:notes].strip() and _ends_mid_sentence(text):
        after = _finished_by(clean_page(pages, (key[0], key[1] + 1)), text)
    if (new_start, new_end) == (start, end) and not before and not after and text == result.text:
        return result
    return WholePassage(
        result,
        before + text + after,
        new_start,
        new_end,
        before=len(before),
        after=len(after),
    )


def _announced(page: str, end: int) -> int:
    """Where the list a passage's last sentence announces (it ends with a colon) ends on its page: its items
    whole, within ``MAX_WIDEN_CHARS``; ``end`` itself when no item follows."""
    window = page[end : end + MAX_WIDEN_CHARS]
    whole = end + len(window) == len(page)  # the window holds the rest of the page
    out = end
    for s in sp.split_spans(window):
        if not sp.LIST_ITEM.match(s.text) or (s.end == len(window.rstrip()) and not whole):
            break  # not an item, or one the window may cut
        out = end + s.end
    return out


def clean_page(pages: dict[PageKey, str], key: PageKey) -> str:
    """The page's text with its running header and footer lines blanked (offsets unchanged)."""
    page = pages.get(key)
    if not page:
        return ""
    for which in (0, -1):
        line = _edge_line(page, which)
        if line is None:
            continue
        a, b = line
        cut = _repeated_part(page[a:b], [_edge_text(pages.get((key[0], key[1] + d)), which) for d in _OTHERS])
        if cut:
            page = page[:a] + " " * cut + page[a + cut :]
    return page


_OTHERS = [d for d in range(-NEIGHBOURS, NEIGHBOURS + 1) if d]


def _edge_line(page: str, which: int) -> tuple[int, int] | None:
    """The offsets of the page's first (``which`` 0) or last (-1) non-blank line."""
    lines = [m for m in re.finditer(r"[^\n]+", page) if m.group(0).strip()]
    if not lines:
        return None
    m = lines[which]
    return (m.start(), m.end()) if len(m.group(0).strip()) <= MAX_HEADER_CHARS else None


def _edge_text(page: str | None, which: int) -> str:
    if not page:
        return ""
    line = _edge_line(page, which)
    return page[line[0] : line[1]] if line else ""


def _letters(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalpha())


def _repeated_part(line: str, others: list[str]) -> int:
    """How many leading characters of ``line`` are a running header: a page number alone, or the letters it
    shares with the same line of a nearby page (with the numbers around them). 0 when none."""
    if re.fullmatch(r"\s*(?:\d{1,4}|[ivxlc]{1,6})\s*", line, re.IGNORECASE):
        return len(line)
    mine = _letters(line)
    best = 0
    for other in others:
        theirs = _letters(other)
        shared = 0
        while shared < min(len(mine), len(theirs)) and mine[shared] == theirs[shared]:
            shared += 1
        best = max(best, shared)
    if best < MIN_SHARED_LETTERS or (best < len(mine) and not re.search(r"\d", line)):
        return 0
    # Where the shared letters end in ``line``, then past the numbers and punctuation that follow them.
    seen = 0
    i = 0
    while i < len(line) and seen < best:
        if line[i].isalpha():
            seen += 1
        i += 1
    while i < len(line) and not line[i].isalpha():
        i += 1
    if i < len(line):  # a heading follows on the same line: keep its number with it
        i = len(line[:i].rstrip()) - len(re.search(r"[\d.]*\s*$", line[:i].rstrip()).group(0))  # type: ignore[union-attr]
        i = max(i, 0)
    return i


def _starts_mid_sentence(text: str) -> bool:
    first = text.lstrip()[:1]
    return first.isalpha() and first.islower()


def _ends_mid_sentence(text: str) -> bool:
    last = text.rstrip()[-1:]
    return bool(last) and (last.isalnum() or last in ",;-(")


def _finished_by(page: str, text: str) -> str:
    """What finishes ``text`` (the end of a page) at the top of the next ``page``, as a reader joins them."""
    spans = sp.split_spans(page[: MAX_WIDEN_CHARS * 2])
    if not spans:
        return ""
    joined = sp.join_across(text, spans[0].text)
    # A word hyphenated across the break: the passage keeps its hyphen, the word goes on without a space.
    return joined[len(text) :] if joined.startswith(text) else spans[0].text


def _continued_from(page: str, text: str, *, footnotes: bool = False) -> str:
    """The sentence ``text`` (the top of a page) continues from the previous ``page``: its last unfinished
    one (before the footnotes of a PDF page, with ``footnotes``), joined as a reader joins them."""
    end = sp.open_end(sp.split_spans((sp.body(page) if footnotes else page)[-MAX_WIDEN_CHARS * 2 :]))
    if end is None:
        return ""
    joined = sp.join_across(end.text, text)
    return joined[: len(joined) - len(text)]
