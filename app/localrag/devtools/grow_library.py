"""Grow the library in ``LOCALRAG_HOME`` to N chunks with filler made from its own chunks:
``python -m localrag.devtools.grow_library 20000``.

The filler is the retrieval bench's synthetic chunks (``eval/bench_corpus.synthesize``): the first half of one
real chunk's sentences joined to the second half of another's, its vector the length-weighted mean of theirs,
25 chunks a text document, BM25-indexed like any document. Questions about the library's real documents then
run over a bigger index (``local-rag checks run`` at 20,000 chunks, docs/benchmarks.md). Use a copy of a data
folder: the filler stays in it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import sys
from typing import Any

import numpy as np


def _one(conn: Any, sql: str) -> int:
    row = conn.execute(sql).fetchone()
    return int(row[0]) if row is not None else 0


def grow(target: int) -> tuple[int, int]:
    """Add filler until the library holds ``target`` chunks; returns its chunks and documents."""
    from localrag.core.library import Library
    from localrag.core.retrieve import bm25
    from localrag.core.text import identity
    from localrag.eval import beir
    from localrag.eval.bench_corpus import CHUNKS_PER_DOC, CHUNKS_PER_PAGE, synthesize

    with Library() as lib, lib.connect() as conn:
        model = lib.embedder.name
        rows = conn.execute(
            "SELECT c.text, e.embedding FROM document_chunks c JOIN chunk_embeddings e ON e.chunk_id = c.id "
            "AND e.embedding_model = %s ORDER BY c.id",
            (model,),
        ).fetchall()
        have = _one(conn, "SELECT count(*) FROM document_chunks")
        if not rows or have >= target:
            return have, (_one(conn, "SELECT count(*) FROM documents"))
        base = [beir.ChunkRow(0, 0, 1, "", t, len(t) // 4, 0, len(t), "") for t, _ in rows]
        vectors = np.array([np.asarray(v.to_numpy(), dtype=np.float32) for _, v in rows])
        chunks, out, real = synthesize(base, vectors, len(base) + target - have)
        new, new_vectors = chunks[real:], out[real:]
        doc0 = _one(conn, "SELECT coalesce(max(id), 0) FROM documents")
        chunk0 = _one(conn, "SELECT coalesce(max(id), 0) FROM document_chunks")
        n_docs = (len(new) + CHUNKS_PER_DOC - 1) // CHUNKS_PER_DOC
        now = dt.datetime.now(dt.timezone.utc)
        with conn.transaction():
            with conn.cursor().copy(
                "COPY documents (id, path, title, doc_type, sha256, status, pages, chunks_total, "
                "chunks_embedded, created_at, indexed_at) FROM STDIN"
            ) as copy:
                for d in range(n_docs):
                    k = min(CHUNKS_PER_DOC, len(new) - d * CHUNKS_PER_DOC)
                    sha = hashlib.sha256(f"filler-{doc0 + d}".encode()).hexdigest()
                    pages = (k + CHUNKS_PER_PAGE - 1) // CHUNKS_PER_PAGE
                    row = (doc0 + d + 1, f"/filler/doc{doc0 + d}.txt", f"Filler {d}", "text", sha, "ready")
                    copy.write_row((*row, pages, k, k, now, now))
            with conn.cursor().copy(
                "COPY document_chunks (id, doc_id, chunk_index, page_number, heading_path, text, "
                "token_count, char_start, char_end, text_hash, context) FROM STDIN"
            ) as copy:
                for j, c in enumerate(new):
                    index = j % CHUNKS_PER_DOC
                    digest = hashlib.sha256(c.text.encode()).hexdigest()
                    place = (
                        chunk0 + j + 1,
                        doc0 + j // CHUNKS_PER_DOC + 1,
                        index,
                        index // CHUNKS_PER_PAGE + 1,
                    )
                    copy.write_row((*place, "", c.text, c.token_count, 0, len(c.text), digest, ""))
            with conn.cursor().copy(
                "COPY chunk_embeddings (chunk_id, embedding_model, embedding, context_hash) FROM STDIN WITH "
                "(FORMAT BINARY)"
            ) as copy:
                copy.set_types(["int8", "text", "vector", "text"])
                for j in range(len(new)):
                    copy.write_row((chunk0 + j + 1, model, new_vectors[j], identity.context_hash("")))
            conn.execute("SELECT setval('documents_id_seq', %s)", (doc0 + n_docs,))
            conn.execute("SELECT setval('document_chunks_id_seq', %s)", (chunk0 + len(new),))
        for start in range(0, n_docs, 200):
            bm25.index_documents(conn, range(doc0 + start + 1, doc0 + min(n_docs, start + 200) + 1))
            conn.commit()
        return (
            (_one(conn, "SELECT count(*) FROM document_chunks")),
            (_one(conn, "SELECT count(*) FROM documents")),
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localrag.devtools.grow_library", description=__doc__)
    parser.add_argument("chunks", type=int, help="how many chunks the library should hold")
    args = parser.parse_args(argv)
    chunks, documents = grow(args.chunks)
    print(f"{chunks} chunks in {documents} documents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
