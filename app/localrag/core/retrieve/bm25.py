"""BM25 inside PostgreSQL: postings of ``to_tsvector('english')`` lexemes, with the statistics kept in step.

What is indexed is each chunk's context (its document's identity and heading path) and text, with each
ligature read as its letters (``tsvector``: "eﬀect" is the lexeme "effect"; a text without a ligature gives
the lexemes it always gave, so no posting written before goes stale). A chunk's length is its number of
lexeme occurrences (stop words removed), stored in ``document_chunks.lexeme_count`` and, for scoring, in each
of its postings (``bm25_postings.dl``). The statistics follow from the postings alone:

- ``bm25_terms.df``: how many chunks hold the term (rows of ``bm25_postings`` for it);
- ``bm25_stats.n_chunks``: how many chunks have at least one posting (a chunk with no lexeme can never match);
- ``bm25_stats.total_len``: the sum of their lengths.

``index_document`` runs in the transaction that makes a document ready, ``unindex_document`` in the one that
removes it (or replaces it). Both lock ``bm25_terms`` rows in term order and ``bm25_stats`` last, so
concurrent calls wait for each other instead of deadlocking. ``rebuild`` recomputes everything from the
postings.

Scoring is Lucene's BM25: ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` and
``tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))``, summed over the query's lexemes.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from localrag.core.retrieve.filters import Filters
from localrag.core.text import glyphs

log = logging.getLogger("localrag.retrieve.bm25")

# Defaults chosen on the tuning half of a public retrieval benchmark (see docs/benchmarks.md).
DEFAULT_K1 = 1.2
DEFAULT_B = 0.75


# Typographic marks that PostgreSQL's text parser, in the C locale the store runs in (every character beyond
# ASCII a letter), would glue to the word beside them: a manual's ‘set’ and ‘-o pipefail’, "model’s",
# "2010–2015", two words joined by a no-break space, "etc…", "•item". Each is read as the ASCII mark a person
# reads it as (quotes, apostrophes and hyphens), or as a space (dashes, bullets, ellipses, arrows, spaces).
MARKS: dict[str, str] = {
    **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u2039\u203a", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb", '"'),
    **dict.fromkeys("\u2010\u2011", "-"),
    **dict.fromkeys(
        "\u2012\u2013\u2014\u2015\u2212\u2026\u2022\u2023\u2043\u00b7\u25aa\u25e6\u2192\u2190\u21d2\u00d7"
        "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u200b\u202f\u205f\u3000",
        " ",
    ),
}
# Characters that show nothing and join what is around them (a soft hyphen, zero-width joiners, a byte order
# mark): dropped, so "inter\u00adnational" is "international".
INVISIBLE = "\u00ad\u200c\u200d\u2060\ufeff"
# A change to what the parser is given (``MARKS``, the ligatures, ``INDEXED_TEXT``) comes with a migration
# that writes every posting again with the new expression, as ``migrations/0015_bm25_typographic_marks.sql``
# does (a test checks that the latest such migration holds ``INDEXED_TEXT`` as it is).


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def tsvector(expr: str) -> str:
    """SQL: ``to_tsvector('english', expr)`` over the SQL text ``expr`` with each ligature replaced by its
    letters (``glyphs.LIGATURES``), each typographic mark by its ASCII reading (``MARKS``) and without the
    characters that show nothing (``INVISIBLE``), for chunks and
    queries alike: PostgreSQL's parser keeps "ﬁ" in a word ("stratiﬁed" would be the lexeme "stratiﬁ",
    never "stratifi") and ‘ ’ too ("‘set’")."""
    marks = _literal("".join(MARKS) + INVISIBLE)
    expr = f"translate({expr}, {marks}, {_literal(''.join(MARKS.values()))})"
    for ligature, letters in glyphs.LIGATURES.items():
        expr = f"replace({expr}, '{ligature}', '{letters}')"
    return f"to_tsvector('english', {expr})"


# The text of a chunk that BM25 sees (the alias ``c`` is document_chunks).
# Its context (the document's line and the heading path, ``core/text/identity.py``) and its text; a chunk
# written without a context (a library from before contexts, until ``reembed`` refreshes it) its heading path.
INDEXED_TEXT = tsvector("CASE WHEN c.context = '' THEN c.heading_path ELSE c.context END || ' ' || c.text")


def index_document(conn: psycopg.Connection[Any], doc_id: int) -> None:
    """Add the postings of ``doc_id``'s chunks and count them in the statistics (idempotent)."""
    index_documents(conn, [doc_id])


def unindex_document(conn: psycopg.Connection[Any], doc_id: int) -> None:
    """Remove the postings of ``doc_id``'s chunks and take them out of the statistics."""
    unindex_documents(conn, [doc_id])


def is_indexed(conn: psycopg.Connection[Any], doc_id: int) -> bool:
    """Whether ``doc_id`` has postings (a document is indexed whole, or in its first chunks while it is
    read)."""
    row = conn.execute("SELECT EXISTS (SELECT 1 FROM bm25_postings WHERE doc_id = %s)", (doc_id,)).fetchone()
    return bool(row and row[0])


def index_documents(conn: psycopg.Connection[Any], doc_ids: Iterable[int]) -> int:
    """``index_document`` for many documents at once (bulk loads). Returns the number of postings written.

    Documents already indexed are re-indexed, so a repeated call never counts a chunk twice.
    """
    ids = sorted({int(d) for d in doc_ids})
    if not ids:
        return 0
    with _atomic(conn):
        already = [
            r[0]
            for r in conn.execute(
                "SELECT d FROM unnest(%s::bigint[]) d WHERE EXISTS (SELECT 1 FROM bm25_postings p "
                "WHERE p.doc_id = d)",
                (ids,),
            )
        ]
        if already:
            _unindex(conn, "p.doc_id = ANY(%(ids)s)", {"ids": already})
        return _index(conn, "c.doc_id = ANY(%(ids)s)", {"ids": ids})


def index_chunks(
    conn: psycopg.Connection[Any], doc_id: int, chunk_indexes: Sequence[int], *, new: bool = False
) -> int:
    """Add the postings of some of ``doc_id``'s chunks (by ``chunk_index``): the ones just written while the
    document is read (``new``: they have none yet), or those whose context changed (indexed again). Returns
    the number of postings written."""
    if not chunk_indexes:
        return 0
    params = {"doc": int(doc_id), "idx": [int(i) for i in chunk_indexes]}
    with _atomic(conn):
        if not new:
            _unindex(
                conn,
                "p.doc_id = %(doc)s AND p.chunk_id IN (SELECT c.id FROM document_chunks c "
                "WHERE c.doc_id = %(doc)s AND c.chunk_index = ANY(%(idx)s))",
                params,
            )
        return _index(conn, "c.doc_id = %(doc)s AND c.chunk_index = ANY(%(idx)s)", params)


def unindex_documents(conn: psycopg.Connection[Any], doc_ids: Iterable[int]) -> None:
    """``unindex_document`` for many documents at once."""
    ids = sorted({int(d) for d in doc_ids})
    if ids:
        with _atomic(conn):
            _unindex(conn, "p.doc_id = ANY(%(ids)s)", {"ids": ids})


def _atomic(conn: psycopg.Connection[Any]) -> AbstractContextManager[psycopg.Transaction]:
    """A savepoint in the caller's transaction, which the caller commits or rolls back.

    On an idle connection that is not in autocommit mode, psycopg's ``transaction()`` would begin and commit a
    transaction of its own; a first statement opens the caller's transaction instead.
    """
    if not conn.autocommit and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        conn.execute("SELECT 1")
    return conn.transaction()


def _index(conn: psycopg.Connection[Any], chunks: str, params: dict[str, Any]) -> int:
    """Write the postings of the chunks ``c`` (document_chunks) that the condition ``chunks`` selects (none of
    them indexed yet) and count them in the statistics. One statement: a folder of small files indexes a
    document at a time, and each statement is a round trip and a plan."""
    row = conn.execute(
        "WITH new AS MATERIALIZED (SELECT l.lexeme AS term, c.id AS chunk_id, c.doc_id, "
        f"coalesce(array_length(l.positions, 1), 1) AS tf FROM document_chunks c, unnest({INDEXED_TEXT}) l "
        f"WHERE {chunks}), "
        "lens AS (SELECT c.id, coalesce(sum(n.tf), 0) AS len FROM document_chunks c "
        f"LEFT JOIN new n ON n.chunk_id = c.id WHERE {chunks} GROUP BY c.id), "
        "counted AS (UPDATE document_chunks c SET lexeme_count = lens.len FROM lens "
        "WHERE c.id = lens.id AND c.lexeme_count <> lens.len), "
        "posted AS (INSERT INTO bm25_postings (term, chunk_id, doc_id, tf, dl) "
        "SELECT term, chunk_id, doc_id, tf, sum(tf) OVER (PARTITION BY chunk_id) FROM new), "
        # Upserts in term order: two documents indexed at once lock shared terms in the same order.
        "termed AS (INSERT INTO bm25_terms AS t (term, df) "
        "SELECT term, count(*) FROM new GROUP BY term ORDER BY term "
        "ON CONFLICT (term) DO UPDATE SET df = t.df + excluded.df), "
        "counted_all AS (UPDATE bm25_stats SET n_chunks = n_chunks + s.n, total_len = total_len + s.len "
        "FROM (SELECT count(DISTINCT chunk_id) AS n, coalesce(sum(tf), 0) AS len FROM new) s "
        "WHERE id = 1) "
        "SELECT count(*) FROM new",
        params,
    ).fetchone()
    return int(row[0]) if row else 0


def _unindex(conn: psycopg.Connection[Any], postings: str, params: dict[str, Any]) -> None:
    """Remove the postings ``p`` that the condition ``postings`` selects and take them out of the
    statistics. Nothing to remove (a document read for the first time) costs one look."""
    found = conn.execute(f"SELECT EXISTS (SELECT 1 FROM bm25_postings p WHERE {postings})", params).fetchone()
    if not (found and found[0]):
        return
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS bm25_gone (term text, chunk_id bigint, tf integer) ON COMMIT DROP"
    )
    conn.execute("TRUNCATE bm25_gone")
    gone = conn.execute(
        f"INSERT INTO bm25_gone SELECT p.term, p.chunk_id, p.tf FROM bm25_postings p WHERE {postings}", params
    ).rowcount
    if gone:
        # Lock the terms in order before changing them (an UPDATE ... FROM visits rows in no set order).
        conn.execute(
            "SELECT 1 FROM bm25_terms WHERE term IN (SELECT DISTINCT term FROM bm25_gone) ORDER BY term FOR "
            "UPDATE"
        )
        conn.execute(
            "UPDATE bm25_terms t SET df = t.df - g.n FROM (SELECT term, count(*) AS n FROM bm25_gone GROUP "
            "BY term) g WHERE t.term = g.term"
        )
        conn.execute("DELETE FROM bm25_terms WHERE term IN (SELECT DISTINCT term FROM bm25_gone) AND df <= 0")
        conn.execute(
            "UPDATE bm25_stats SET n_chunks = greatest(0, n_chunks - s.n), total_len = greatest(0, total_len "
            "- s.len) FROM (SELECT count(DISTINCT chunk_id) AS n, coalesce(sum(tf), 0) AS len FROM "
            "bm25_gone) s WHERE id = 1"
        )
        conn.execute(f"DELETE FROM bm25_postings p WHERE {postings}", params)
    conn.execute("DROP TABLE bm25_gone")


def rebuild(conn: psycopg.Connection[Any]) -> None:
    """Recompute the term and length statistics from the postings (a repair; normally never needed)."""
    with conn.transaction():
        conn.execute("LOCK TABLE bm25_terms, bm25_stats IN EXCLUSIVE MODE")
        conn.execute("DELETE FROM bm25_terms")
        conn.execute(
            "INSERT INTO bm25_terms (term, df) SELECT term, count(*) FROM bm25_postings GROUP BY term"
        )
        conn.execute(
            "UPDATE bm25_stats SET n_chunks = s.n, total_len = s.len FROM (SELECT count(DISTINCT chunk_id) "
            "AS n, coalesce(sum(tf), 0) AS len FROM bm25_postings) s WHERE id = 1"
        )


def stats_drift(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """How far the kept statistics are from those recomputed from the postings (all zeros when right)."""
    row = conn.execute(
        "SELECT (SELECT n_chunks FROM bm25_stats WHERE id = 1) - (SELECT count(DISTINCT chunk_id) FROM "
        "bm25_postings), (SELECT total_len FROM bm25_stats WHERE id = 1) - (SELECT coalesce(sum(tf), 0) FROM "
        "bm25_postings), (SELECT count(*) FROM (SELECT term, count(*) AS n FROM bm25_postings GROUP BY term) "
        "p  FULL JOIN bm25_terms t USING (term) WHERE t.df IS DISTINCT FROM p.n),"
        " (SELECT count(*) FROM document_chunks c WHERE c.lexeme_count <>"
        "  coalesce((SELECT sum(tf) FROM bm25_postings p WHERE p.chunk_id = c.id), 0)"
        "  AND EXISTS (SELECT 1 FROM bm25_postings p WHERE p.chunk_id = c.id))"
        " + (SELECT count(*) FROM bm25_postings p JOIN document_chunks c ON c.id = p.chunk_id"
        "  WHERE p.dl <> c.lexeme_count)"
    ).fetchone()
    assert row is not None
    return {"n_chunks": int(row[0]), "total_len": int(row[1]), "terms": int(row[2]), "lengths": int(row[3])}


def query_terms(conn: psycopg.Connection[Any], query: str) -> list[tuple[str, int]]:
    """The query's lexemes with their counts, tokenised exactly as the chunks were."""
    rows = conn.execute(
        f"SELECT lexeme, coalesce(array_length(positions, 1), 1) FROM unnest({tsvector('%s')})",
        (query,),
    ).fetchall()
    return [(r[0], int(r[1])) for r in rows]


def known(conn: psycopg.Connection[Any], words: Sequence[str]) -> set[str]:
    """The ``words`` an indexed chunk holds: one of their lexemes is a term of the index."""
    if not words:
        return set()
    rows = conn.execute(
        f"SELECT w FROM unnest(%s::text[]) AS u(w) WHERE EXISTS (SELECT 1 FROM unnest({tsvector('w')}) q "
        "JOIN bm25_terms t ON t.term = q.lexeme AND t.df > 0)",
        (list(words),),
    ).fetchall()
    return {str(r[0]) for r in rows}


def search(
    conn: psycopg.Connection[Any],
    query: str,
    *,
    n: int,
    filters: Filters | None = None,
    k1: float = DEFAULT_K1,
    b: float = DEFAULT_B,
    exact: bool = False,
) -> list[tuple[int, float]]:
    """The ``n`` best chunks by BM25 as ``(chunk_id, score)``, best first; empty if the query has no lexeme.

    Postings exist only for documents a search may return (``filters.SEARCHABLE``) and carry their chunk's
    document and length, so an unfiltered query reads only indexes. A query limited to some documents (a
    question that names one) reads only their postings (the ``bm25_postings_doc`` index) and scores them all;
    another filter joins each posting it reads to its chunk and document.

    In a large library a query term found in many chunks ("cell", "use") has tens of thousands of postings and
    little weight. When a term has more than ``TERM_POSTINGS_READ`` postings, an unfiltered query reads only
    that many of them, best first by their share of the score (the ``bm25_postings_impact`` index), scores the
    chunks found that way, and computes the exact score of the best ``RESCORED`` of them from all their
    postings. The chunks left out hold a frequent term only with a low term frequency or in a long text;
    ``exact=True`` scores every posting instead (the benchmark compares the two). A filtered query reads best
    first too, and scores every posting when fewer than ``n`` of the chunks so found pass the filter.
    """
    rows = conn.execute(
        "SELECT q.term, q.qtf, t.df, s.n_chunks, s.total_len FROM (SELECT lexeme AS term,"
        f" coalesce(array_length(positions, 1), 1) AS qtf FROM unnest({tsvector('%s')})) q"
        " JOIN bm25_terms t ON t.term = q.term CROSS JOIN bm25_stats s WHERE s.id = 1 ORDER BY t.df",
        (query,),
    ).fetchall()
    if not rows:
        return []
    n_chunks, total_len = float(rows[0][3]), float(rows[0][4])
    avgdl = max(total_len / max(n_chunks, 1.0), 1.0)
    weights = {term: qtf * math.log(1.0 + (n_chunks - df + 0.5) / (df + 0.5)) for term, qtf, df, _, _ in rows}
    params: dict[str, Any] = {
        "n": int(n),
        "k1": float(k1),
        "b": float(b),
        "avgdl": avgdl,
        "terms": list(weights),
        "weights": list(weights.values()),
    }
    join = ""
    if filters is not None and filters.active:
        where, fparams = filters.sql("d")
        params.update(fparams)
        if not filters.only_documents:
            join = (
                " JOIN document_chunks c ON c.id = p.chunk_id"
                f" JOIN documents d ON d.id = c.doc_id AND {where}"
            )
        if filters.doc_ids is not None:
            found = conn.execute(
                f"SELECT p.chunk_id, sum({_TERM_SCORE}) AS score"
                " FROM unnest(%(terms)s::text[], %(weights)s::float8[]) qt(term, w)"
                f" JOIN bm25_postings p ON p.doc_id = ANY(%(f_doc_ids)s) AND p.term = qt.term{join}"
                " GROUP BY p.chunk_id ORDER BY score DESC, p.chunk_id LIMIT %(n)s",
                params,
            ).fetchall()
            return [(int(cid), float(score)) for cid, score in found]
    if not exact and _impact_order_pays([df for _, _, df, _, _ in rows]):
        params.update(m=TERM_POSTINGS_READ, r=max(RESCORED, int(n)))
        found = conn.execute(_impact_sql(join), params).fetchall()
        # A filter can leave too few of the postings read best first; then every posting is scored.
        if len(found) >= n or not join:
            return [(int(cid), float(score)) for cid, score in found]
    # Every posting, read from the same index as best first (in its order), so that only one index on terms is
    # read by searches and stays in memory in a large library.
    found = conn.execute(
        f"SELECT p.chunk_id, sum({_TERM_SCORE}) AS score"
        f" FROM unnest(%(terms)s::text[], %(weights)s::float8[]) qt(term, w) CROSS JOIN LATERAL ("
        f" SELECT p.chunk_id, p.tf, p.dl FROM bm25_postings p WHERE p.term = qt.term ORDER BY {_IMPACT} "
        f"DESC) p{join} GROUP BY p.chunk_id ORDER BY score DESC, p.chunk_id LIMIT %(n)s",
        params,
    ).fetchall()
    return [(int(cid), float(score)) for cid, score in found]


# One posting's contribution, from the term weight ``qt.w`` (query tf × idf) and the posting ``p``.
_TERM_SCORE = "qt.w * p.tf * (%(k1)s + 1.0) / (p.tf + %(k1)s * (1.0 - %(b)s + %(b)s * p.dl / %(avgdl)s))"
# The order of the ``bm25_postings_impact`` index (migration 0003), repeated exactly so that the index serves
# it.
_IMPACT = "(p.tf::float8 / (p.tf::float8 + 0.3 + 0.009 * p.dl::float8))"
# Postings read per frequent term, and how many of the chunks found are scored exactly. Measured at 1M chunks
# of scientific abstracts and text made of them (docs/benchmarks.md), recall@10 against scoring every posting
# / BM25 leg p50: 2000 and 200: 0.75 / 23 ms; 2000 and 1000: 0.90 / 43 ms; 5000 and 1000: 0.96 / 61 ms (every
# posting: about 1 s).
TERM_POSTINGS_READ = 5000
RESCORED = 1000
RESCORE_POSTINGS = 30  # what rescoring one chunk costs (one probe of the chunk index), in postings read


def _impact_order_pays(dfs: list[int]) -> bool:
    """Whether reading frequent terms best first reads far fewer postings than reading them all: it reads up
    to ``TERM_POSTINGS_READ`` per term, then the postings of the ``RESCORED`` chunks it found (tens each)."""
    every = sum(dfs)
    best_first = sum(min(df, TERM_POSTINGS_READ) for df in dfs) + RESCORED * RESCORE_POSTINGS
    return every > 2 * best_first


def _impact_sql(join: str = "") -> str:
    """Best first: each term's best postings (``join`` keeps those of the documents a filter allows), summed
    per chunk; the best ``r`` chunks found are then scored from all their postings
    (``bm25_postings_chunk``)."""
    return (
        "WITH qt AS MATERIALIZED (SELECT * FROM unnest(%(terms)s::text[], %(weights)s::float8[]) AS qt(term, "
        "w)), found AS MATERIALIZED ("
        f" SELECT p.chunk_id, sum({_TERM_SCORE}) AS s FROM qt CROSS JOIN LATERAL ("
        "  SELECT p.chunk_id, p.tf, p.dl FROM bm25_postings p WHERE p.term = qt.term"
        f"  ORDER BY {_IMPACT} DESC LIMIT %(m)s) p{join}"
        " GROUP BY p.chunk_id ORDER BY s DESC LIMIT %(r)s)"
        f" SELECT f.chunk_id, (SELECT sum({_TERM_SCORE}) FROM qt CROSS JOIN LATERAL (SELECT p.tf, p.dl"
        "  FROM bm25_postings p WHERE p.term = qt.term AND p.chunk_id = f.chunk_id) p) AS score"
        " FROM found f ORDER BY score DESC, f.chunk_id LIMIT %(n)s"
    )
