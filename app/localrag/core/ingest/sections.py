"""A document's top-level sections, stored at ingest with the central chunk of each (table
``document_sections``): what whole-document answers (``core/answer/overview.py``) are built from.

A section is a run of chunks under one top-level heading (the outline's or the Markdown's), or, where a
document has no headings, under one "Chapter N. Title" line of its text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from localrag.core.text import spans as sp

Conn = psycopg.Connection[Any]


def compute_sections(conn: Conn, doc_id: int, embedding_model: str) -> int:
    """(Re)compute and store the top-level sections of ``doc_id``, with their central chunks by
    ``embedding_model``'s vectors (the first chunk of a section stands in where vectors are missing).

    Runs in a transaction of its own, or a savepoint inside the caller's. Returns how many sections.
    """
    with conn.transaction():
        rows = conn.execute(
            "SELECT id, heading_path, CASE WHEN strpos(heading_path, ' > ') = 0 THEN left(text, 400) END "
            "FROM document_chunks WHERE doc_id = %s ORDER BY chunk_index",
            (doc_id,),
        ).fetchall()
        conn.execute("DELETE FROM document_sections WHERE doc_id = %s", (doc_id,))
        if not rows:
            return 0
        ordinals, titles = _runs(section_keys([r[1] for r in rows], [r[2] for r in rows]))
        found = conn.execute(
            "SELECT dimension FROM embedding_models WHERE name = %s", (embedding_model,)
        ).fetchone()
        conn.execute(
            _insert_sections_sql(found[0] if found else None),
            {
                "doc": doc_id,
                "ids": [r[0] for r in rows],
                "ords": ordinals,
                "titles": titles,
                "model": embedding_model,
            },
        )
        return len(titles)


def section_keys(heading_paths: Sequence[str], texts: Sequence[str | None]) -> list[str]:
    """The top-level section title of each chunk ("" above the first one), given the chunks' heading paths
    and, for those with at most one component, the start of their text."""
    parts = [p.split(" > ") if p else [] for p in heading_paths]
    level = outline_level(parts)
    keys = [p[level] if len(p) > level else "" for p in parts]
    following = [""] * len(keys)  # the next titled chunk's title
    for i in range(len(keys) - 2, -1, -1):
        following[i] = keys[i + 1] or following[i + 1]
    for i, text in enumerate(texts):
        if not keys[i] and text and following[i] and _opens_with(text, following[i]):
            keys[i] = following[i]
    if not any(keys):  # no outline and no headings found: chapters named in the text ("Chapter 3. Title")
        keys = chapter_keys(texts)
    return keys


# An outline level with this few entries names parts, not what the document covers ("Part I", "Part II"):
# the level below is shown when it has at least ``ENOUGH_SECTIONS`` entries (or, under one shared title, any).
ENOUGH_SECTIONS = 3
DEEPEST_LEVEL = 2


def outline_level(parts: Sequence[Sequence[str]]) -> int:
    """The heading level (0 the first) whose entries are a document's sections, given its chunks' heading
    paths as lists: the first, unless it holds only a shared title or two parts and the level below holds
    more."""
    level = 0
    while level < DEEPEST_LEVEL:
        here = {p[level] for p in parts if len(p) > level}
        below = {tuple(p[: level + 2]) for p in parts if len(p) > level + 1}
        if not below or len(here) >= ENOUGH_SECTIONS or (len(here) == 2 and len(below) < ENOUGH_SECTIONS):
            break
        level += 1
    return level


# "Chapter 3. The Root Filesystem", "CHAPTER IV: Results", "Appendix A. Glossary" on a line of its own (not a
# table of contents' line, which ends with dot leaders or a page number).
_CHAPTER_LINE = re.compile(
    r"^\s*(?:chapter|part|appendix)\s+(\d{1,3}|[ivxlc]{1,7}|[a-z])\s*[.:]?\s+(\S.{0,80}?)\s*$", re.IGNORECASE
)


def chapter_keys(texts: Sequence[str | None]) -> list[str]:
    """Each chunk's chapter ("" before the first), from chapter lines near the start of the chunks' text."""
    keys: list[str] = []
    current = ""
    for text in texts:
        for line in (text or "").splitlines()[:6]:
            m = _CHAPTER_LINE.match(line)
            if m and not re.search(r"(?:\.\s?){3}|\s\d+$", m.group(2)):
                current = f"{m.group(1)} {m.group(2)}"
                break
        keys.append(current)
    return keys


def _opens_with(text: str, title: str) -> bool:
    """Whether ``text`` starts with heading lines only, up to one that is ``title``."""
    for line in text.splitlines()[:6]:
        line = line.strip().lstrip("#").strip()
        if not line:
            continue
        if sp.folded(line) == sp.folded(title):
            return True
        if len(line) > 80 or line.endswith((".", "?", "!", ":", ",")):
            return False  # body text of its own
    return False


def _runs(keys: list[str]) -> tuple[list[int], list[str]]:
    """Each chunk's section number (runs of one key) and the sections' titles."""
    ordinals: list[int] = []
    titles: list[str] = []
    for i, key in enumerate(keys):
        if i == 0 or key != keys[i - 1]:
            titles.append(key)
        ordinals.append(len(titles))
    return ordinals, titles


def _insert_sections_sql(dimension: int | None) -> sql.Composed:
    vector: sql.Composable
    if dimension:
        vector = sql.SQL("e.embedding::vector({})").format(sql.SQL(str(int(dimension))))
        join = sql.SQL("LEFT JOIN chunk_embeddings e ON e.chunk_id = c.id AND e.embedding_model = %(model)s")
    else:
        vector, join = sql.SQL("NULL::vector"), sql.SQL("")
    return sql.SQL(
        "WITH a AS (SELECT * FROM unnest(%(ids)s::bigint[], %(ords)s::int[]) AS a (chunk_id, ordinal)), "
        "v AS (SELECT a.ordinal, c.id, c.chunk_index, c.page_number, {vector} AS vec, "
        "             c.text ~ '(\\.\\s?){{8}}\\s*[0-9ivx]' AS toc "
        "      FROM a JOIN document_chunks c ON c.id = a.chunk_id {join}), "
        "s AS (SELECT ordinal, avg(vec) AS mean, count(*) AS n, min(page_number) AS page, "
        "             (array_agg(id ORDER BY chunk_index))[1] AS first_id FROM v GROUP BY ordinal), "
        "central AS (SELECT DISTINCT ON (v.ordinal) v.ordinal, v.id FROM v JOIN s USING (ordinal) "
        "            ORDER BY v.ordinal, v.toc, v.vec <=> s.mean NULLS LAST, v.chunk_index) "
        "INSERT INTO document_sections "
        "(doc_id, ordinal, title, page_number, chunk_count, first_chunk_id, central_chunk_id) "
        "SELECT %(doc)s, s.ordinal, (%(titles)s::text[])[s.ordinal], s.page, s.n, s.first_id, central.id "
        "FROM s JOIN central USING (ordinal)"
    ).format(vector=vector, join=join)
