"""A chunk's pieces: a few of its sentences at a time, each with a vector of its own beside the chunk's.

A chunk (about 200 word pieces, with its context) is embedded as one vector, and the embedding model was
trained on texts of at most 128 word pieces: a chunk that holds the answer in one sentence among others on
other matters gets a vector that is about all of them. A piece is a window of consecutive sentences of the
chunk, from each sentence on, up to ``WIDTH`` word pieces (a sentence longer than that is a piece by itself).
The vector leg ranks a chunk by its own cosine and its best piece's, weighted by the setting ``piece_weight``
(``(cos + w·best) / (1 + w)``, ``core/retrieve/vector.py``), so a question that matches one sentence well
finds its chunk.

Pieces depend on the chunk's text alone (not its context). At ingestion they are embedded in the same requests
as their chunks and stored in the same transactions (``vectors.py``); a library
indexed before they existed gets them from re-embedding (``reembed``): until then its chunks rank by their own
vectors, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import psycopg

from localrag.core.text import spans as sp

# The longest window of sentences, in word pieces (special tokens aside).
WIDTH = 64

# A ready document some of whose chunks have no piece from the model ``%s`` (the document's id as ``d.id``).
LACKING = (
    "EXISTS (SELECT 1 FROM document_chunks c WHERE c.doc_id = d.id AND NOT EXISTS ("
    "SELECT 1 FROM chunk_piece_embeddings p WHERE p.chunk_id = c.id AND p.embedding_model = %s))"
)


def piece_texts(text: str, count_tokens: Callable[[list[str]], list[int]], width: int = WIDTH) -> list[str]:
    """The windows of consecutive sentences of ``text``: one from each sentence on, as many sentences as fit
    in ``width`` word pieces (at least one), ending at the window that reaches the last sentence."""
    spans = sp.split_spans(text)
    if not spans:
        return [text] if text.strip() else []
    counts = count_tokens([s.text for s in spans])
    out = []
    for i in range(len(spans)):
        n, j = 0, i
        while j < len(spans) and (j == i or n + counts[j] <= width):
            n += counts[j]
            j += 1
        out.append(text[spans[i].start : spans[j - 1].end])
        if j == len(spans):
            break
    return out


def token_counter(embedder: Any) -> Callable[[list[str]], list[int]]:
    """Word pieces per text, special tokens aside, by the embedding model's tokenizer."""
    tokenizer = getattr(embedder, "tokenizer", None)
    if tokenizer is None:
        return lambda texts: [len(t.split()) for t in texts]
    return lambda texts: [max(0, len(e.ids) - 2) for e in tokenizer.encode_batch(texts)] if texts else []


def chunks_lacking(conn: psycopg.Connection[Any], doc_id: int, model: str) -> list[int]:
    """The ids of the document's chunks without a piece from ``model``, in reading order."""
    return [
        int(r[0])
        for r in conn.execute(
            "SELECT c.id FROM document_chunks c WHERE c.doc_id = %s AND NOT EXISTS ("
            "SELECT 1 FROM chunk_piece_embeddings p WHERE p.chunk_id = c.id AND p.embedding_model = %s) "
            "ORDER BY c.chunk_index",
            (doc_id, model),
        ).fetchall()
    ]


def vector_text(vec: Any) -> str:
    """A vector as pgvector reads it in COPY (one format of the whole vector: a quarter of the time of
    formatting each number, which the ingesting thread spends beside the model)."""
    values = vec.tolist() if hasattr(vec, "tolist") else list(vec)
    return _vector_format(len(values)) % tuple(values)


@cache
def _vector_format(dimension: int) -> str:
    return "[" + ",".join(["%.7g"] * dimension) + "]"


def copy_rows(
    conn: psycopg.Connection[Any], model: str, rows: Sequence[tuple[int, int]], vectors: Any
) -> None:
    """Replace the pieces of the chunks in ``rows`` (``(chunk_id, piece number)`` for each vector, in order)
    with these vectors (call inside a transaction)."""
    conn.execute(
        "DELETE FROM chunk_piece_embeddings WHERE chunk_id = ANY(%s) AND embedding_model = %s",
        (sorted({cid for cid, _ in rows}), model),
    )
    with conn.cursor().copy(
        "COPY chunk_piece_embeddings (chunk_id, embedding_model, piece, embedding) FROM STDIN"
    ) as copy:
        for (chunk_id, piece), vec in zip(rows, vectors, strict=True):
            copy.write_row((chunk_id, model, piece, vector_text(vec)))


def write(conn: psycopg.Connection[Any], model: str, rows: Sequence[tuple[int, int]], vectors: Any) -> None:
    """Store the pieces' vectors in a transaction of their own (``copy_rows``)."""
    with conn.transaction():
        copy_rows(conn, model, rows, vectors)


# Chunks whose pieces are embedded and committed together: a kill loses at most this much work.
BATCH_CHUNKS = 32


def embed_document(
    conn: psycopg.Connection[Any],
    doc_id: int,
    model: str,
    count_tokens: Callable[[list[str]], list[int]],
    embed: Callable[[list[str]], Any],
) -> int:
    """Embed and store the pieces of the document's chunks that have none from ``model`` yet, a batch of
    chunks at a time (``embed``: texts → vectors; it raises when the work is cancelled). Returns how many
    pieces were written."""
    todo = chunks_lacking(conn, doc_id, model)
    conn.commit()
    written = 0
    for i in range(0, len(todo), BATCH_CHUNKS):  # a large document's texts never sit in memory at once
        batch = conn.execute(
            "SELECT id, text FROM document_chunks WHERE id = ANY(%s) ORDER BY chunk_index",
            (todo[i : i + BATCH_CHUNKS],),
        ).fetchall()
        conn.commit()
        rows: list[tuple[int, int]] = []
        texts: list[str] = []
        for cid, text in batch:
            for n, piece in enumerate(piece_texts(text, count_tokens)):
                rows.append((cid, n))
                texts.append(piece)
        if texts:
            write(conn, model, rows, embed(texts))
            written += len(texts)
    return written
