"""A batch of a document's chunks as the embedding model sees it, and its vectors as the store keeps them.

Each chunk is embedded in its context, and the windows of its sentences (``pieces``) beside it: both go to the
model in one request, so that one pass of the length-sorted batches covers them (the pieces are short, the
chunks long: sorted together they pad little), and one transaction stores the chunk's vector and its pieces'.
A chunk that already has its pieces from this model (its context changed, its text did not) gets only its own
vector again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg

from localrag.core.ingest import metadata, pieces
from localrag.core.text import identity


@dataclass
class Batch:
    """Chunks to embed: ``rows`` ``(chunk id, text in its context, word pieces, context)`` in reading
    order, and the pieces of those that lack them (``piece_rows`` ``(chunk id, piece number)`` beside
    ``piece_texts``)."""

    rows: list[tuple[int, str, int, str]]
    docs: set[int] = field(default_factory=set)  # the documents the chunks belong to
    piece_rows: list[tuple[int, int]] = field(default_factory=list)
    piece_texts: list[str] = field(default_factory=list)

    @property
    def texts(self) -> list[str]:
        """What the model embeds: the chunks, then their pieces."""
        return [r[1] for r in self.rows] + self.piece_texts

    @property
    def tokens(self) -> int:
        return sum(r[2] for r in self.rows)


def read_batch(
    conn: psycopg.Connection[Any],
    ids: Sequence[int],
    model: str,
    fit: Callable[[str, int], str],
    count_tokens: Callable[[list[str]], list[int]],
) -> Batch:
    """The chunks ``ids`` (in reading order) with their texts as embedded (``fit``: the context as it fits
    beside ``n`` word pieces of text), and the pieces of those that have none from ``model``."""
    found = conn.execute(
        "SELECT c.id, c.text, c.token_count, c.context, EXISTS (SELECT 1 FROM chunk_piece_embeddings p "
        "WHERE p.chunk_id = c.id AND p.embedding_model = %s), c.doc_id FROM document_chunks c "
        "WHERE c.id = ANY(%s) ORDER BY c.doc_id, c.chunk_index",
        (model, list(ids)),
    ).fetchall()
    conn.commit()
    batch = Batch(
        [
            (cid, identity.embedding_text(fit(context, n), text), n, context)
            for cid, text, n, context, _, _ in found
        ],
        docs={r[5] for r in found},
    )
    for cid, text, _n, _context, has_pieces, _doc in found:
        if not has_pieces:
            for number, piece in enumerate(pieces.piece_texts(text, count_tokens)):
                batch.piece_rows.append((cid, number))
                batch.piece_texts.append(piece)
    return batch


def write(conn: psycopg.Connection[Any], model: str, batch: Batch, vectors: np.ndarray) -> None:
    """Store the batch's vectors (``vectors``: in the order of ``batch.texts``) in one transaction: each
    chunk's (replacing a stale one), its pieces', and its documents' counts of embedded chunks."""
    n = len(batch.rows)
    with conn.transaction():
        conn.execute(
            "DELETE FROM chunk_embeddings WHERE chunk_id = ANY(%s) AND embedding_model = %s",
            ([r[0] for r in batch.rows], model),
        )
        with conn.cursor().copy(
            "COPY chunk_embeddings (chunk_id, embedding_model, embedding, context_hash) FROM STDIN"
        ) as copy:
            for (chunk_id, _text, _n, context), vec in zip(batch.rows, vectors[:n], strict=True):
                copy.write_row((chunk_id, model, pieces.vector_text(vec), identity.context_hash(context)))
        if batch.piece_rows:
            pieces.copy_rows(conn, model, batch.piece_rows, vectors[n:])
        conn.execute(
            "UPDATE documents d SET chunks_embedded = (SELECT count(*) FROM chunk_embeddings e JOIN "
            "document_chunks c ON c.id = e.chunk_id WHERE c.doc_id = d.id AND e.embedding_model = %s), "
            "updated_at = now() WHERE d.id = ANY(%s)",
            (model, sorted(batch.docs)),
        )


def reuse_stored(conn: psycopg.Connection[Any], doc_ids: Sequence[int], model: str) -> None:
    """Give the documents' chunks whose exact text, in the same context, already has a vector from ``model``
    in another document (an unchanged part of a changed file, a duplicate passage) that vector."""
    with conn.transaction():
        conn.execute(
            "INSERT INTO chunk_embeddings (chunk_id, embedding_model, embedding, context_hash) "
            "SELECT DISTINCT ON (c.id) c.id, e.embedding_model, e.embedding, e.context_hash "
            "FROM document_chunks c JOIN document_chunks o ON o.text_hash = c.text_hash "
            "AND o.context = c.context AND o.doc_id <> c.doc_id "
            "JOIN chunk_embeddings e ON e.chunk_id = o.id AND e.embedding_model = %s "
            f"AND {metadata.CURRENT_VECTOR.replace('c.', 'o.')} "
            "WHERE c.doc_id = ANY(%s) ON CONFLICT DO NOTHING",
            (model, list(doc_ids)),
        )


def embed_documents(
    conn: psycopg.Connection[Any],
    doc_ids: Sequence[int],
    model: str,
    embedder: Any,
    embed: Callable[[list[str]], np.ndarray],
    batch_chunks: int,
) -> tuple[int, int, int]:
    """Embed the chunks (and pieces) of several small documents together, up to ``batch_chunks`` chunks per
    request to the model (``embed``), and store their vectors: a one-line file costs a share of a batch
    instead of a request of its own. Only chunks without a current vector are embedded; the documents' own
    steps then find their vectors in place. Returns the chunks, pieces and word pieces (of the chunks'
    texts) embedded."""
    reuse_stored(conn, doc_ids, model)
    ids = [
        int(r[0])
        for r in conn.execute(
            "SELECT c.id FROM document_chunks c WHERE c.doc_id = ANY(%s) AND NOT EXISTS (SELECT 1 FROM "
            "chunk_embeddings e WHERE e.chunk_id = c.id AND e.embedding_model = %s "
            f"AND {metadata.CURRENT_VECTOR}) ORDER BY c.doc_id, c.chunk_index",
            (list(doc_ids), model),
        )
    ]
    conn.commit()
    fit, count = identity.ContextFitter(embedder), pieces.token_counter(embedder)
    chunks = piece_count = tokens = 0
    for i in range(0, len(ids), batch_chunks):
        batch = read_batch(conn, ids[i : i + batch_chunks], model, fit, count)
        write(conn, model, batch, embed(batch.texts))
        chunks, piece_count, tokens = (
            chunks + len(batch.rows),
            piece_count + len(batch.piece_rows),
            tokens + batch.tokens,
        )
    return chunks, piece_count, tokens
