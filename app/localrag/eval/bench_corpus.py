"""The benchmark's store: a BEIR corpus (SciFact by default) with its real chunks and vectors, grown with
synthetic chunks to the size measured, laid out in documents, loaded and indexed (``bench retrieval`` and
``bench api``); and documents written as an ingest writes them (``write_doc``).

A synthetic chunk joins the first half of one real chunk's sentences to the second half of another's, and its
vector is the normalised length-weighted mean of the two real vectors (see ``bench_retrieval``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from localrag.core.config import Settings
from localrag.core.embed.onnx_embedder import OnnxEmbedder
from localrag.core.errors import KnownError
from localrag.core.progress import Progress
from localrag.core.retrieve import bm25
from localrag.eval import beir

CHUNKS_PER_DOC = 25
CHUNKS_PER_PAGE = 5
DOC_TYPES = ("pdf",) * 7 + ("markdown",) * 2 + ("text",)


def default_corpus() -> Path:
    env = os.environ.get("LOCALRAG_BENCH_CORPUS")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent.parent / "shared" / "datasets" / "scifact"
        if (candidate / "corpus.jsonl").exists():
            return candidate
    raise KnownError("No corpus to benchmark with: pass --corpus DIR (a BEIR folder such as SciFact).")


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if s]


def synthesize(
    base: Sequence[beir.ChunkRow], vectors: np.ndarray, n: int, seed: int = 0
) -> tuple[list[beir.ChunkRow], np.ndarray, int]:
    """``n`` chunks laid out in documents of 25 chunks (5 a page): the real ones first, then synthetic ones.

    Returns the chunks, their vectors and how many are real.
    """
    real = min(n, len(base))
    texts = [c.text for c in base[:real]]
    out_vecs = np.empty((n, vectors.shape[1]), dtype=np.float32)
    out_vecs[:real] = vectors[:real]
    if n > real:
        split = [_sentences(c.text) for c in base]
        for j, (a, b) in enumerate(synthetic_sources(len(base), n, seed)):
            sa, sb = split[a], split[b]
            head, tail = sa[: max(1, (len(sa) + 1) // 2)], sb[len(sb) // 2 :] or sb
            ta, tb = " ".join(head), " ".join(tail)
            texts.append(ta + " " + tb)
            v = len(ta) * vectors[a] + len(tb) * vectors[b]
            out_vecs[real + j] = v / max(float(np.linalg.norm(v)), 1e-12)
    chunks = []
    for j, text in enumerate(texts):
        index = j % CHUNKS_PER_DOC
        chunks.append(
            beir.ChunkRow(
                j // CHUNKS_PER_DOC,
                index,
                index // CHUNKS_PER_PAGE + 1,
                "",
                text,
                len(text) // 4,
                0,
                len(text),
                hashlib.sha256(text.encode()).hexdigest(),
            )
        )
    return chunks, out_vecs, real


def synthetic_sources(n_base: int, n: int, seed: int = 0) -> np.ndarray:
    """The two real chunks (rows ``(a, b)``, indexes into the base) that each synthetic chunk of
    ``synthesize`` is made of: the first half of ``a``'s sentences, then the second half of ``b``'s."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_base, size=(max(0, n - min(n, n_base)), 2))


@dataclass
class BenchCorpus:
    """A benchmark store's content: ``chunks`` (the ``real`` ones first) with their ``vectors``, laid out in
    ``docs`` (``(path, title, sha256, doc_type)``), and the dataset's ``queries``."""

    dataset: beir.BeirDataset
    queries: list[str]
    base: list[beir.ChunkRow]
    chunks: list[beir.ChunkRow]
    vectors: np.ndarray
    real: int
    docs: list[tuple[str, str, str, str]]


def build_corpus(
    n_chunks: int,
    corpus: Path | None,
    embedder: OnnxEmbedder,
    settings: Settings,
    cache_dir: Path | None = None,
    progress: beir.ProgressFn | None = None,
) -> BenchCorpus:
    """``n_chunks`` chunks from the BEIR folder ``corpus`` (default: ``default_corpus()``), real then
    synthetic (``synthesize``), and its test and train queries."""
    folder = corpus or default_corpus()
    ds = beir.load_dataset(folder, "test")
    query_texts = list(ds.queries.values())
    with contextlib.suppress(KnownError):
        query_texts += list(beir.load_dataset(folder, "train").queries.values())
    query_texts = list(dict.fromkeys(query_texts))
    if progress:
        progress(Progress(f"chunking {len(ds.corpus)} documents"))
    base = beir.chunk_corpus(ds, embedder, settings)
    base_vecs = beir.embed_cached(embedder, beir.embedding_texts(embedder, base), cache_dir, progress)
    chunks, vecs, real = synthesize(base, base_vecs, n_chunks)
    n_docs = (len(chunks) + CHUNKS_PER_DOC - 1) // CHUNKS_PER_DOC
    docs = [
        (
            f"/bench/doc{d}.{_ext(DOC_TYPES[d % len(DOC_TYPES)])}",
            f"Document {d}",
            hashlib.sha256(f"bench-{d}".encode()).hexdigest(),
            DOC_TYPES[d % len(DOC_TYPES)],
        )
        for d in range(n_docs)
    ]
    return BenchCorpus(ds, query_texts, base, chunks, vecs, real, docs)


def _ext(doc_type: str) -> str:
    return {"pdf": "pdf", "markdown": "md", "text": "txt"}[doc_type]


def load_chunks(
    conn: Any,
    docs: list,
    chunks: list,
    vecs: np.ndarray,
    embedder: OnnxEmbedder,
    progress: beir.ProgressFn | None,
) -> None:
    # Postings are built in slices of documents so that progress shows and temp tables stay small.
    beir.bulk_load(
        conn,
        docs,
        chunks,
        vecs,
        embedder.name,
        embedder.dimension,
        index_bm25=False,
        maintenance_work_mem="4GB" if len(chunks) > 200_000 else "1GB",
    )
    step = 2000
    report = Progress("BM25 postings", 0, len(docs), "documents")
    for start in range(0, len(docs), step):
        bm25.index_documents(conn, range(start + 1, min(len(docs), start + step) + 1))
        conn.commit()
        report.done = min(len(docs), start + step)
        if progress:
            progress(report)
    conn.autocommit = True
    try:
        for table in ("documents", "document_chunks", "chunk_embeddings", "bm25_postings", "bm25_terms"):
            conn.execute(f"VACUUM ANALYZE {table}")
    finally:
        conn.autocommit = False


def write_doc(conn: Any, doc: int, batch: Sequence[beir.ChunkRow], vectors: np.ndarray, model: str) -> None:
    with conn.transaction():
        doc_id = conn.execute(
            "INSERT INTO documents (path, title, doc_type, sha256, status) VALUES (%s, %s, 'pdf', %s, "
            "'embedding') RETURNING id",
            (
                f"/bench/ingest{doc}.pdf",
                f"Ingested {doc}",
                hashlib.sha256(f"ingest-{doc}-{time.time_ns()}".encode()).hexdigest(),
            ),
        ).fetchone()[0]
        with conn.cursor().copy(
            "COPY document_chunks (doc_id, chunk_index, page_number, heading_path, text, token_count, "
            "char_start, char_end, text_hash) FROM STDIN"
        ) as copy:
            for i, b in enumerate(batch):
                copy.write_row(
                    (
                        doc_id,
                        i,
                        i // CHUNKS_PER_PAGE + 1,
                        b.heading_path,
                        b.text,
                        b.token_count,
                        b.char_start,
                        b.char_end,
                        b.text_hash,
                    )
                )
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM document_chunks WHERE doc_id = %s ORDER BY chunk_index", (doc_id,)
            )
        ]
        with conn.cursor().copy(
            "COPY chunk_embeddings (chunk_id, embedding_model, embedding) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int8", "text", "vector"])
            for cid, v in zip(ids, vectors, strict=True):
                copy.write_row((cid, model, v))
    with conn.transaction():
        bm25.index_document(conn, doc_id)
        conn.execute("UPDATE documents SET status = 'ready', indexed_at = now() WHERE id = %s", (doc_id,))
