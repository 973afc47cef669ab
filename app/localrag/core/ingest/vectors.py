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

from localrag.core.ingest import pieces
from localrag.core.text import identity


@dataclass
class Batch:
    """Chunks to embed: ``rows`` ``(chunk id, text in its context, word pieces, context)`` in reading
    order, and the pieces of those that lack them (``piece_rows`` ``(chunk id, piece number)`` beside
    ``piece_texts``)."""

    rows: list[tuple[int, str, int, str]]
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
        "WHERE p.chunk_id = c.id AND p.embedding_model = %s) FROM document_chunks c WHERE c.id = ANY(%s) "
        "ORDER BY c.chunk_index",
        (model, list(ids)),
    ).fetchall()
    conn.commit()
    batch = Batch(
        [
            (cid, identity.embedding_text(fit(context, n), text), n, context)
            for cid, text, n, context, _ in found
        ]
    )
    for cid, text, _n, _context, has_pieces in found:
        if not has_pieces:
            for number, piece in enumerate(pieces.piece_texts(text, count_tokens)):
                batch.piece_rows.append((cid, number))
                batch.piece_texts.append(piece)
    return batch


def write(conn: psycopg.Connection[Any], doc_id: int, model: str, batch: Batch, vectors: np.ndarray) -> None:
    """Store the batch's vectors (``vectors``: in the order of ``batch.texts``) in one transaction: each
    chunk's (replacing a stale one), its pieces', and the document's count of embedded chunks."""
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
            "UPDATE documents SET chunks_embedded = (SELECT count(*) FROM chunk_embeddings e JOIN "
            "document_chunks c ON c.id = e.chunk_id WHERE c.doc_id = %s AND e.embedding_model = %s), "
            "updated_at = now() WHERE id = %s",
            (doc_id, model, doc_id),
        )
