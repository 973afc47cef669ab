"""BM25 inside PostgreSQL: postings of ``to_tsvector('english')`` lexemes, with the statistics kept in step.

What is indexed is each chunk's heading path and text. A chunk's length is its number of lexeme occurrences
(stop words removed), stored in ``document_chunks.lexeme_count`` and, for scoring, in each of its postings
(``bm25_postings.dl``). The statistics follow from the postings alone:

- ``bm25_terms.df``: how many chunks hold the term (rows of ``bm25_postings`` for it);
- ``bm25_stats.n_chunks``: how many chunks have at least one posting (a chunk with no lexeme can never match);
- ``bm25_stats.total_len``: the sum of their lengths.

``index_document`` runs in the transaction that makes a document ready, ``unindex_document`` in the one that
removes it (or replaces it). Both lock ``bm25_terms`` rows in term order and ``bm25_stats`` last, so concurrent
calls wait for each other instead of deadlocking. ``rebuild`` recomputes everything from the postings.

Scoring is Lucene's BM25: ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` and
``tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))``, summed over the query's lexemes.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg

from localrag.core.retrieve.filters import Filters

log = logging.getLogger("localrag.retrieve.bm25")

# Defaults chosen on the SciFact train split (see docs/benchmarks.md).
DEFAULT_K1 = 1.2
DEFAULT_B = 0.75

# The text of a chunk that BM25 sees (the alias ``c`` is document_chunks).
INDEXED_TEXT = "to_tsvector('english', c.heading_path || ' ' || c.text)"


def index_document(conn: psycopg.Connection[Any], doc_id: int) -> None:
    """Add the postings of ``doc_id``'s chunks and count them in the statistics (idempotent)."""
    index_documents(conn, [doc_id])


def unindex_document(conn: psycopg.Connection[Any], doc_id: int) -> None:
    """Remove the postings of ``doc_id``'s chunks and take them out of the statistics."""
    unindex_documents(conn, [doc_id])


def index_documents(conn: psycopg.Connection[Any], doc_ids: Iterable[int]) -> int:
    """``index_document`` for many documents at once (bulk loads). Returns the number of postings written.

    Documents already indexed are re-indexed, so a repeated call never counts a chunk twice.
    """
    ids = sorted(set(int(d) for d in doc_ids))
    if not ids:
        return 0
    with _atomic(conn):
        already = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT c.doc_id FROM document_chunks c WHERE c.doc_id = ANY(%s) "
                "AND EXISTS (SELECT 1 FROM bm25_postings p WHERE p.chunk_id = c.id)",
                (ids,),
            )
        ]
        if already:
            _unindex(conn, already)
        conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS bm25_new (term text, chunk_id bigint, tf integer) ON COMMIT DROP"
        )
        conn.execute("TRUNCATE bm25_new")
        written = conn.execute(
            "INSERT INTO bm25_new (term, chunk_id, tf) "
            f"SELECT l.lexeme, c.id, coalesce(array_length(l.positions, 1), 1) FROM document_chunks c, "
            f"unnest({INDEXED_TEXT}) l WHERE c.doc_id = ANY(%s)",
            (ids,),
        ).rowcount
        conn.execute(
            "UPDATE document_chunks SET lexeme_count = 0 WHERE doc_id = ANY(%s) AND lexeme_count <> 0", (ids,)
        )
        conn.execute(
            "UPDATE document_chunks c SET lexeme_count = s.len "
            "FROM (SELECT chunk_id, sum(tf) AS len FROM bm25_new GROUP BY chunk_id) s WHERE c.id = s.chunk_id"
        )
        conn.execute(
            "INSERT INTO bm25_postings (term, chunk_id, tf, dl) "
            "SELECT term, chunk_id, tf, sum(tf) OVER (PARTITION BY chunk_id) FROM bm25_new"
        )
        # Upserts in term order: two documents indexed at once lock shared terms in the same order.
        conn.execute(
            "INSERT INTO bm25_terms AS t (term, df) "
            "SELECT term, count(*) FROM bm25_new GROUP BY term ORDER BY term "
            "ON CONFLICT (term) DO UPDATE SET df = t.df + excluded.df"
        )
        conn.execute(
            "UPDATE bm25_stats SET n_chunks = n_chunks + s.n, total_len = total_len + s.len "
            "FROM (SELECT count(DISTINCT chunk_id) AS n, coalesce(sum(tf), 0) AS len FROM bm25_new) s "
            "WHERE id = 1"
        )
        conn.execute("DROP TABLE bm25_new")
    return max(0, written)


def unindex_documents(conn: psycopg.Connection[Any], doc_ids: Iterable[int]) -> None:
    """``unindex_document`` for many documents at once."""
    ids = sorted(set(int(d) for d in doc_ids))
    if ids:
        with _atomic(conn):
            _unindex(conn, ids)


def _atomic(conn: psycopg.Connection[Any]) -> psycopg.Transaction:
    """A savepoint in the caller's transaction, which the caller commits or rolls back.

    On an idle connection that is not in autocommit mode, psycopg's ``transaction()`` would begin and commit a
    transaction of its own; a first statement opens the caller's transaction instead.
    """
    if not conn.autocommit and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        conn.execute("SELECT 1")
    return conn.transaction()


def _unindex(conn: psycopg.Connection[Any], ids: Sequence[int]) -> None:
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS bm25_gone (term text, chunk_id bigint, tf integer) ON COMMIT DROP"
    )
    conn.execute("TRUNCATE bm25_gone")
    conn.execute(
        "INSERT INTO bm25_gone SELECT p.term, p.chunk_id, p.tf FROM document_chunks c "
        "JOIN bm25_postings p ON p.chunk_id = c.id WHERE c.doc_id = ANY(%s)",
        (ids,),
    )
    # Lock the terms in order before changing them (an UPDATE ... FROM visits rows in no set order).
    conn.execute(
        "SELECT 1 FROM bm25_terms WHERE term IN (SELECT DISTINCT term FROM bm25_gone) ORDER BY term FOR UPDATE"
    )
    conn.execute(
        "UPDATE bm25_terms t SET df = t.df - g.n FROM (SELECT term, count(*) AS n FROM bm25_gone GROUP BY term) g "
        "WHERE t.term = g.term"
    )
    conn.execute("DELETE FROM bm25_terms WHERE term IN (SELECT DISTINCT term FROM bm25_gone) AND df <= 0")
    conn.execute(
        "UPDATE bm25_stats SET n_chunks = greatest(0, n_chunks - s.n), total_len = greatest(0, total_len - s.len) "
        "FROM (SELECT count(DISTINCT chunk_id) AS n, coalesce(sum(tf), 0) AS len FROM bm25_gone) s WHERE id = 1"
    )
    conn.execute(
        "DELETE FROM bm25_postings p USING document_chunks c WHERE p.chunk_id = c.id AND c.doc_id = ANY(%s)",
        (ids,),
    )
    conn.execute("DROP TABLE bm25_gone")


def rebuild(conn: psycopg.Connection[Any]) -> None:
    """Recompute the term and length statistics from the postings (a repair; normally never needed)."""
    with conn.transaction():
        conn.execute("LOCK TABLE bm25_terms, bm25_stats IN EXCLUSIVE MODE")
        conn.execute("DELETE FROM bm25_terms")
        conn.execute("INSERT INTO bm25_terms (term, df) SELECT term, count(*) FROM bm25_postings GROUP BY term")
        conn.execute(
            "UPDATE bm25_stats SET n_chunks = s.n, total_len = s.len FROM (SELECT count(DISTINCT chunk_id) AS n, "
            "coalesce(sum(tf), 0) AS len FROM bm25_postings) s WHERE id = 1"
        )


def stats_drift(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """How far the kept statistics are from those recomputed from the postings (all zeros when right)."""
    row = conn.execute(
        "SELECT (SELECT n_chunks FROM bm25_stats WHERE id = 1) - (SELECT count(DISTINCT chunk_id) FROM bm25_postings),"
        " (SELECT total_len FROM bm25_stats WHERE id = 1) - (SELECT coalesce(sum(tf), 0) FROM bm25_postings),"
        " (SELECT count(*) FROM (SELECT term, count(*) AS n FROM bm25_postings GROUP BY term) p"
        "  FULL JOIN bm25_terms t USING (term) WHERE t.df IS DISTINCT FROM p.n),"
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
        "SELECT lexeme, coalesce(array_length(positions, 1), 1) FROM unnest(to_tsvector('english', %s))",
        (query,),
    ).fetchall()
    return [(r[0], int(r[1])) for r in rows]


def search(
    conn: psycopg.Connection[Any],
    query: str,
    *,
    n: int,
    filters: Filters | None = None,
    k1: float = DEFAULT_K1,
    b: float = DEFAULT_B,
) -> list[tuple[int, float]]:
    """The ``n`` best chunks by BM25 as ``(chunk_id, score)``, best first; empty if the query has no lexeme.

    Postings exist only for ready documents and carry their chunk's length in the primary key, so an
    unfiltered query is an index-only scan of the postings; a filtered one also joins chunks and documents.

    In a large library a query term found in a good share of all chunks ("cell", "use") has many postings
    and little weight. An unfiltered query then scores its rare terms first, adds the common terms' part
    for the best ``PRUNE_CANDIDATES`` chunks only, and keeps that answer when no other chunk could reach the
    top ``n`` (the common terms can add at most ``weight * (k1 + 1)`` each: MaxScore). Otherwise, and for
    filtered queries, every posting of every term is scored. Either way the result is exact.
    """
    rows = conn.execute(
        "SELECT q.term, q.qtf, t.df, s.n_chunks, s.total_len FROM (SELECT lexeme AS term,"
        " coalesce(array_length(positions, 1), 1) AS qtf FROM unnest(to_tsvector('english', %s))) q"
        " JOIN bm25_terms t ON t.term = q.term CROSS JOIN bm25_stats s WHERE s.id = 1 ORDER BY t.df",
        (query,),
    ).fetchall()
    if not rows:
        return []
    n_chunks, total_len = float(rows[0][3]), float(rows[0][4])
    avgdl = max(total_len / max(n_chunks, 1.0), 1.0)
    weights = {term: qtf * math.log(1.0 + (n_chunks - df + 0.5) / (df + 0.5)) for term, qtf, df, _, _ in rows}
    common_df = max(PRUNE_MIN_DF, PRUNE_DF_SHARE * n_chunks)
    common = [term for term, _, df, _, _ in rows if df > common_df]
    params = {"n": int(n), "k1": float(k1), "b": float(b), "avgdl": avgdl}
    filtered = filters is not None and filters.active
    if common and len(common) < len(rows) and not filtered:
        rare = [t for t in weights if t not in common]
        found = _search_pruned(conn, rare, common, weights, params)
        if found is not None:
            return found
    join = ""
    if filtered:
        assert filters is not None
        where, fparams = filters.sql("d")
        params.update(fparams)
        join = f" JOIN document_chunks c ON c.id = p.chunk_id JOIN documents d ON d.id = c.doc_id AND {where}"
    params.update(terms=list(weights), weights=list(weights.values()))
    found = conn.execute(
        f"SELECT p.chunk_id, sum({_TERM_SCORE}) AS score"  # noqa: S608 - the filter SQL is our own
        f" FROM unnest(%(terms)s::text[], %(weights)s::float8[]) qt(term, w)"
        f" JOIN bm25_postings p ON p.term = qt.term{join}"
        " GROUP BY p.chunk_id ORDER BY score DESC, p.chunk_id LIMIT %(n)s",
        params,
    ).fetchall()
    return [(int(cid), float(score)) for cid, score in found]


# One posting's contribution, from the term weight ``qt.w`` (query tf × idf) and the posting ``p``.
_TERM_SCORE = "qt.w * p.tf * (%(k1)s + 1.0) / (p.tf + %(k1)s * (1.0 - %(b)s + %(b)s * p.dl / %(avgdl)s))"
# A term in more than this many chunks (and this share of them) counts as common. At 100k chunks of SciFact-like
# text, pruning at 2 % fell back to the full scan for 41 of 57 queries and doubled BM25 time; at 20 % it always
# held but gained nothing there, so it starts only where a common term has 50,000 postings or more.
PRUNE_MIN_DF = 50_000
PRUNE_DF_SHARE = 0.20
PRUNE_CANDIDATES = 1000


def _search_pruned(
    conn: psycopg.Connection[Any],
    rare: list[str],
    common: list[str],
    weights: dict[str, float],
    params: dict[str, Any],
) -> list[tuple[int, float]] | None:
    """The exact top n from the best chunks by their rare terms, or None when that cannot be guaranteed."""
    params = dict(params, rare=rare, rare_w=[weights[t] for t in rare], common=common,
                  common_w=[weights[t] for t in common], m=PRUNE_CANDIDATES)
    rows = conn.execute(
        "WITH best AS ("  # noqa: S608 - constant SQL
        f" SELECT p.chunk_id, sum({_TERM_SCORE}) AS s"
        " FROM unnest(%(rare)s::text[], %(rare_w)s::float8[]) qt(term, w)"
        " JOIN bm25_postings p ON p.term = qt.term GROUP BY p.chunk_id ORDER BY s DESC LIMIT %(m)s)"
        " SELECT b.chunk_id, b.s + coalesce((SELECT sum(" + _TERM_SCORE + ")"
        "  FROM unnest(%(common)s::text[], %(common_w)s::float8[]) qt(term, w)"
        "  JOIN bm25_postings p ON p.term = qt.term AND p.chunk_id = b.chunk_id), 0) AS score, b.s"
        " FROM best b",
        params,
    ).fetchall()
    n = params["n"]
    if len(rows) < n:
        return None  # chunks holding only common terms would make up the rest
    ranked = sorted(((int(cid), float(score)) for cid, score, _ in rows), key=lambda r: (-r[1], r[0]))[:n]
    least_rare = min(float(r[2]) for r in rows) if len(rows) >= PRUNE_CANDIDATES else 0.0
    common_bound = sum(weights[t] for t in common) * (params["k1"] + 1.0)
    # A chunk left out holds at most the least rare-term score kept (or none) plus every common term.
    if ranked[-1][1] < least_rare + common_bound:
        return None
    return ranked
