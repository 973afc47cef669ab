"""Embedding models known to the store, the active one, and each model's HNSW cosine index."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import psycopg


def index_name(model: str) -> str:
    """A stable, valid identifier for ``model``'s HNSW index."""
    slug = re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_")[:30]
    return f"chunk_embeddings_hnsw_{slug}_{hashlib.sha1(model.encode()).hexdigest()[:8]}"


def piece_index_name(model: str) -> str:
    """The same for the index of ``model``'s chunk pieces (``chunk_piece_embeddings``)."""
    return index_name(model).replace("chunk_embeddings_", "chunk_pieces_", 1)


def register_model(
    conn: psycopg.Connection[Any],
    name: str,
    dimension: int,
    *,
    activate: bool = True,
    model_dir: str | None = None,
) -> None:
    """Record ``name`` (idempotent), create its partial HNSW cosine indexes (on the chunks' vectors and on
    their pieces'), and make it the active model.

    ``model_dir``: where the model's files are ("" for the bundled model), remembered so that its vectors can
    keep answering while the library is re-embedded with another model (``stand_in_model``).

    The index is on ``embedding::vector(dimension)`` restricted to this model, so queries must be written
    ``WHERE embedding_model = %s ORDER BY embedding::vector(dim) <=> %s LIMIT k`` to use it.
    """
    with conn.transaction():
        conn.execute(
            "INSERT INTO embedding_models (name, dimension) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
            (name, dimension),
        )
        row = conn.execute("SELECT dimension FROM embedding_models WHERE name = %s", (name,)).fetchone()
        if row and row[0] != dimension:
            raise ValueError(f"embedding model {name} is recorded with dimension {row[0]}, not {dimension}")
        literal = name.replace("'", "''")
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS {index_name(name)} ON chunk_embeddings "
            f"USING hnsw ((embedding::vector({int(dimension)})) vector_cosine_ops) "
            f"WITH (m = 16, ef_construction = 64) WHERE embedding_model = '{literal}'"
        )
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS {piece_index_name(name)} ON chunk_piece_embeddings "
            f"USING hnsw ((embedding::vector({int(dimension)})) vector_cosine_ops) "
            f"WITH (m = 16, ef_construction = 64) WHERE embedding_model = '{literal}'"
        )
        if model_dir is not None:
            conn.execute(
                "UPDATE embedding_models SET settings = settings || "
                "jsonb_build_object('model_dir', %s::text) WHERE name = %s",
                (model_dir, name),
            )
        if activate:
            conn.execute("UPDATE embedding_models SET active = false WHERE active AND name <> %s", (name,))
            conn.execute("UPDATE embedding_models SET active = true WHERE name = %s", (name,))


def active_model(conn: psycopg.Connection[Any]) -> tuple[str, int] | None:
    row = conn.execute("SELECT name, dimension FROM embedding_models WHERE active").fetchone()
    return (row[0], row[1]) if row else None


def models_with_vectors(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """How many chunk vectors each model has stored."""
    rows = conn.execute(
        "SELECT m.name, count(e.chunk_id) FROM embedding_models m "
        "LEFT JOIN chunk_embeddings e ON e.embedding_model = m.name GROUP BY m.name"
    ).fetchall()
    return dict(rows)


def stand_in_model(conn: psycopg.Connection[Any], active: str) -> tuple[str, int, str | None] | None:
    """While some chunks of ready documents have no vector from the ``active`` model (a re-embedding after a
    switch of models is under way), the model whose vectors answer for them: the other model with vectors
    that covers most of those chunks, as ``(name, dimension, model_dir)`` (``model_dir`` None when it was
    not recorded). None when the active model's vectors are complete."""
    others = conn.execute(
        "SELECT m.name, m.dimension, m.settings->>'model_dir' FROM embedding_models m WHERE m.name <> %s "
        "AND EXISTS (SELECT 1 FROM chunk_embeddings e WHERE e.embedding_model = m.name)",
        (active,),
    ).fetchall()
    if not others:
        return None
    row = conn.execute(
        "SELECT e.embedding_model, count(*) FROM document_chunks c JOIN documents d ON d.id = c.doc_id "
        "JOIN chunk_embeddings e ON e.chunk_id = c.id AND e.embedding_model <> %(active)s "
        "WHERE d.status = 'ready' AND NOT EXISTS (SELECT 1 FROM chunk_embeddings a "
        "WHERE a.chunk_id = c.id AND a.embedding_model = %(active)s) "
        "GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1",
        {"active": active},
    ).fetchone()
    if row is None:
        return None
    return next(((str(n), int(d), m) for n, d, m in others if n == row[0]), None)
