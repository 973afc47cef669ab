"""The stored chunks a search found, read as passages (``Result``): ``fetch`` reads their rows, ``as_result``
makes one row a passage with the scores that found it."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg

from localrag.core import hooks
from localrag.core.retrieve import fuse
from localrag.core.retrieve.filters import searchable
from localrag.core.retrieve.results import PAGE_LABEL, Result
from localrag.core.store.db import SHOWN_TITLE


def fetch(
    conn: psycopg.Connection[Any],
    ids: list[int],
    model: str,
    dim: int,
    qvec: np.ndarray | None,
    similarity_for: list[int] | None = None,
) -> dict[int, tuple]:
    """The chunks ``ids`` of searchable documents; the query's cosine similarity is computed for
    ``similarity_for`` (the chunks only the BM25 leg found: the vector leg's own come with theirs), so that a
    large library reads the stored vectors of a few chunks only. The last column says whether a chunk of a
    document still being indexed has no vector yet (it can be found by keywords only)."""
    if not ids:
        return {}
    params: dict[str, Any] = {"ids": ids}
    sim = "NULL::float8"
    if qvec is not None and similarity_for:
        sim = (
            f"CASE WHEN c.id = ANY(%(sim_ids)s) THEN (SELECT 1.0 - (e.embedding::vector({int(dim)}) <=>"
            f" %(q)s::vector({int(dim)})) FROM chunk_embeddings e WHERE e.chunk_id = c.id"
            " AND e.embedding_model = %(model)s) END"
        )
        params.update(q=np.asarray(qvec, dtype=np.float32), model=model, sim_ids=similarity_for)
    rows = conn.execute(
        f"SELECT c.id, c.doc_id, d.doc_type, {SHOWN_TITLE}, d.path, c.page_number, c.chunk_index,"
        f" c.heading_path, c.text, c.char_start, c.char_end, c.text_hash, {sim}, c.context,"
        f" coalesce(d.meta->>'domain', ''), {PAGE_LABEL},"
        " d.status <> 'ready' AND NOT EXISTS (SELECT 1 FROM chunk_embeddings e WHERE e.chunk_id = c.id)"
        " FROM document_chunks c"
        " JOIN documents d ON d.id = c.doc_id"
        f" WHERE c.id = ANY(%(ids)s) AND {searchable('d')}",
        params,
    ).fetchall()
    return {int(r[0]): r for r in rows}


def as_result(row: tuple, f: fuse.Candidate) -> Result:
    (
        cid,
        doc_id,
        doc_type,
        title,
        path,
        page,
        index,
        heading,
        text,
        start,
        end,
        text_hash,
        sim,
        context,
        domain,
        page_label,
        keywords_only,
    ) = row
    similarity = float(sim) if sim is not None else (f.vector if f.vector is not None else None)
    return Result(
        chunk_ids=[int(cid)],
        doc_id=int(doc_id),
        doc_type=doc_type,
        title=title,
        path=path,
        page_number=int(page),
        heading_path=heading,
        text=text,
        similarity=similarity if similarity is not None else 0.0,
        char_start=int(start),
        char_end=int(end),
        scores={
            "vector": similarity,
            "bm25": f.bm25,
            "vector_rank": f.vector_rank,
            "bm25_rank": f.bm25_rank,
            "fused": f.fused,
        },
        chunk_index=int(index),
        text_hash=text_hash,
        context=context or "",
        domain="" if domain == hooks.NO_DOMAIN else str(domain or ""),
        page_label=str(page_label or ""),
        keywords_only=bool(keywords_only),
    )
