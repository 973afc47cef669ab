"""The vector leg: nearest chunks by cosine distance on the active model's HNSW index.

The index is partial (one per model) and built on ``embedding::vector(dim)``, so the query repeats exactly
that expression and the model condition. ``hnsw.ef_search`` is the setting, grown in proportion to the store
beyond 250k vectors (``scaled_ef_search``). Every query is filtered (at least to ready documents), so it runs
with ``hnsw.iterative_scan = relaxed_order``: the index scan goes on past ``ef_search`` until enough rows pass
the filter, and the rows are sorted again outside. When even that finds fewer than ``n`` rows (a very
selective filter), the same query runs once more as an exact scan over the rows the filter allows. A query
limited to documents that hold at most ``EXACT_CHUNKS`` chunks (a question that names a document) runs that
exact scan at once: the graph would be walked far for the few rows that pass.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg

from localrag.core.retrieve.filters import Filters


def search(
    conn: psycopg.Connection[Any],
    query_vector: np.ndarray,
    *,
    model: str,
    dimension: int,
    n: int,
    filters: Filters,
    ef_search: int = 100,
    lacking: str | None = None,
) -> list[tuple[int, float]]:
    """The ``n`` nearest chunks of ready documents as ``(chunk_id, cosine similarity)``, nearest first.

    ``lacking``: only chunks without a vector from this model (another model's vectors standing in for it).
    """
    where, params = filters.sql("d")
    if lacking is not None:
        where += (
            " AND NOT EXISTS (SELECT 1 FROM chunk_embeddings a WHERE a.chunk_id = e.chunk_id"
            " AND a.embedding_model = %(lacking)s)"
        )
        params["lacking"] = lacking
    dim = int(dimension)
    params.update(q=np.asarray(query_vector, dtype=np.float32), model=model, n=int(n))
    expr = f"e.embedding::vector({dim}) <=> %(q)s::vector({dim})"
    # ``+ 0`` keeps the planner off the index: an exact scan over what the filter allows.
    exact = (
        f"SELECT e.chunk_id, {expr} AS dist FROM chunk_embeddings e"
        " JOIN document_chunks c ON c.id = e.chunk_id JOIN documents d ON d.id = c.doc_id"
        f" WHERE e.embedding_model = %(model)s AND {where}"
        f" ORDER BY ({expr}) + 0, e.chunk_id LIMIT %(n)s"
    )
    if filters.doc_ids is not None and _chunks_of(conn, filters.doc_ids) <= EXACT_CHUNKS:
        rows = conn.execute(exact, params).fetchall()
        return [(int(cid), 1.0 - float(dist)) for cid, dist in rows]
    conn.execute(
        "SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', 'relaxed_order', "
        "true)",
        (str(max(scaled_ef_search(conn, ef_search), int(n))),),
    )
    rows = conn.execute(
        "WITH hits AS MATERIALIZED ("
        f" SELECT e.chunk_id, {expr} AS dist FROM chunk_embeddings e"
        " JOIN document_chunks c ON c.id = e.chunk_id JOIN documents d ON d.id = c.doc_id"
        f" WHERE e.embedding_model = %(model)s AND {where}"
        f" ORDER BY {expr} LIMIT %(n)s"
        ") SELECT chunk_id, dist FROM hits ORDER BY dist, chunk_id",
        params,
    ).fetchall()
    if len(rows) < n:
        rows = conn.execute(exact, params).fetchall()
    return [(int(cid), 1.0 - float(dist)) for cid, dist in rows]


EXACT_CHUNKS = 10_000  # a query limited to documents this small is answered by an exact scan


def _chunks_of(conn: psycopg.Connection[Any], doc_ids: tuple[int, ...]) -> int:
    row = conn.execute(
        "SELECT coalesce(sum(chunks_total), 0) FROM documents WHERE id = ANY(%s)", (list(doc_ids),)
    ).fetchone()
    return int(row[0]) if row else 0


# Pieces read per chunk wanted: a chunk's nearest pieces often come several at a time.
PIECES_PER_CHUNK = 3


def with_pieces(
    conn: psycopg.Connection[Any],
    query_vector: np.ndarray,
    hits: list[tuple[int, float]],
    *,
    model: str,
    dimension: int,
    n: int,
    filters: Filters,
    weight: float = 1.0,
) -> list[tuple[int, float]]:
    """``hits`` (the nearest chunks, as ``search`` returns them) with the chunks of the nearest pieces
    (``core/ingest/pieces.py``) added, ranked by ``(cosine + weight × best piece's cosine) / (1 + weight)``;
    the first ``n`` as ``(chunk_id, the chunk's own cosine)``. A chunk without pieces ranks by its own
    cosine.

    Runs in the transaction of ``search`` (its HNSW settings hold)."""
    if weight <= 0 or n <= 0:
        return hits
    where, params = filters.sql("d")
    dim = int(dimension)
    q = np.asarray(query_vector, dtype=np.float32)
    params.update(q=q, model=model, m=int(n) * PIECES_PER_CHUNK)
    expr = f"p.embedding::vector({dim}) <=> %(q)s::vector({dim})"
    best = {
        int(cid): 1.0 - float(dist)
        for cid, dist in conn.execute(
            "WITH hits AS MATERIALIZED ("
            f" SELECT p.chunk_id, {expr} AS dist FROM chunk_piece_embeddings p"
            " JOIN document_chunks c ON c.id = p.chunk_id JOIN documents d ON d.id = c.doc_id"
            f" WHERE p.embedding_model = %(model)s AND {where}"
            f" ORDER BY {expr} LIMIT %(m)s"
            ") SELECT chunk_id, min(dist) FROM hits GROUP BY chunk_id",
            params,
        ).fetchall()
    }
    own = dict(hits)
    found = [cid for cid in best if cid not in own]
    if found:
        own.update(
            (int(cid), float(sim))
            for cid, sim in conn.execute(
                f"SELECT chunk_id, 1.0 - (embedding::vector({dim}) <=> %s::vector({dim}))"
                " FROM chunk_embeddings WHERE chunk_id = ANY(%s) AND embedding_model = %s",
                (q, found, model),
            ).fetchall()
        )
    rest = [cid for cid in own if cid not in best]
    if rest:
        best.update(
            (int(cid), float(sim))
            for cid, sim in conn.execute(
                f"SELECT chunk_id, max(1.0 - (embedding::vector({dim}) <=> %s::vector({dim})))"
                " FROM chunk_piece_embeddings WHERE chunk_id = ANY(%s) AND embedding_model = %s"
                " GROUP BY chunk_id",
                (q, rest, model),
            ).fetchall()
        )

    def score(cid: int) -> float:
        return (own[cid] + weight * best.get(cid, own[cid])) / (1.0 + weight)

    ranked = sorted(own, key=lambda cid: (-score(cid), cid))[: int(n)]
    return [(cid, own[cid]) for cid in ranked]


# HNSW recall at a fixed ef_search falls as the graph grows (measured, docs/benchmarks.md: recall@10 0.99 at
# 100k vectors and 0.91 at 1M with 100; 0.947 with 200 and 0.968 with 400 at 1M). Beyond this many vectors the
# setting grows in proportion, up to ten times.
EF_SEARCH_BASE_VECTORS = 250_000
EF_SEARCH_MAX_FACTOR = 10


def scaled_ef_search(conn: psycopg.Connection[Any], ef_search: int) -> int:
    """``ef_search`` for the store's size: as set up to 250k vectors, then in proportion (400 at 1M)."""
    row = conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'chunk_embeddings'::regclass").fetchone()
    vectors = float(row[0]) if row and row[0] and row[0] > 0 else 0.0
    factor = min(max(vectors / EF_SEARCH_BASE_VECTORS, 1.0), float(EF_SEARCH_MAX_FACTOR))
    return round(int(ef_search) * factor)


def model_mismatch(conn: psycopg.Connection[Any], model: str) -> bool:
    """Whether the store holds vectors of other models but none of ``model`` (the library needs
    re-embedding)."""
    row = conn.execute(
        "SELECT NOT EXISTS (SELECT 1 FROM chunk_embeddings WHERE embedding_model = %s) AND EXISTS ("
        " SELECT 1 FROM embedding_models m WHERE m.name <> %s"
        " AND EXISTS (SELECT 1 FROM chunk_embeddings e WHERE e.embedding_model = m.name))",
        (model, model),
    ).fetchone()
    return bool(row and row[0])
