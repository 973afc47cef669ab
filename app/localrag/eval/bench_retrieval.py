"""``local-rag bench retrieval --chunks N``: the retrieval hot path at N chunks, HNSW recall, and under
ingest.

The store is a throw-away embedded PostgreSQL filled from a BEIR corpus (SciFact by default):

- its real chunks with their real vectors (the same chunking and cached vectors as ``local-rag eval``);
- beyond those, synthetic chunks: each joins the first half of one real chunk's sentences to the second half
  of another's, and its vector is the normalised length-weighted mean of the two real vectors. The text is
  real prose (so BM25 postings and term statistics are computed by PostgreSQL exactly as for documents), the
  vectors lie where real ones lie; they are not what the model would give for that text, which does not matter
  for latency or for HNSW recall against an exact scan of the same vectors.

Measured: the hot path ``retrieve(k=8, hybrid)`` with a fresh query each time (embed + vector leg, beside it
the BM25 leg, then fuse + fetch + merge) on pooled connections as in the app, p50/p95; the same with a type
filter; recall@10 of the vector leg against exact nearest neighbours computed in numpy, and of the BM25 leg
against scoring every posting; and the hot path again while an ingest runs through one shared
``EmbeddingService`` (queries ahead of queued batches, as in the app) and writes documents with BM25 indexing.

With ``--store DIR`` the loaded store is kept between runs (a 1M-chunk load takes an hour). It then remembers
the queries it was measured with and measures others next time (a repeated query finds its pages already in
memory, a new question does not): the dataset's queries, then its documents' titles as questions. Recall is
measured with the same dataset queries on every run, and the exact BM25 answers are kept in the store. A
server restarted on a kept store reads its saved buffers back in the background; the run waits for that first.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import psycopg

from localrag.core.config import Settings
from localrag.core.embed.onnx_embedder import OnnxEmbedder, load_embedder
from localrag.core.embed.service import EmbeddingService
from localrag.core.errors import KnownError
from localrag.core.progress import Progress, print_progress
from localrag.core.retrieve import bm25, vector
from localrag.core.retrieve.filters import Filters
from localrag.core.retrieve.retriever import Tuning, retrieve
from localrag.core.store import db
from localrag.eval import beir, metrics

CHUNKS_PER_DOC = 25
CHUNKS_PER_PAGE = 5
DOC_TYPES = ("pdf",) * 7 + ("markdown",) * 2 + ("text",)
INGEST_BATCH = 64  # the ingestion pipeline's chunks per embedding batch
INGEST_QUERY_PAUSE_S = 0.3  # between two questions asked during the ingest
WARM_QUERIES = 100  # run before measuring, others than the ones measured


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("retrieval", help="hot-path latency, HNSW recall@10 and latency during an ingest")
    p.add_argument(
        "--chunks", type=int, default=20_000, help="chunks in the throw-away store (default 20000)"
    )
    p.add_argument("--queries", type=int, default=200, help="queries per measurement (default 200)")
    p.add_argument(
        "--corpus",
        type=Path,
        default=None,
        help="a BEIR folder giving texts and queries (default: LOCALRAG_BENCH_CORPUS, "
        "else ../shared/datasets/scifact next to the source tree)",
    )
    p.add_argument("--no-ingest", action="store_true", help="skip the measurement during an ingest")
    p.add_argument(
        "--ingest-queries",
        type=int,
        default=50,
        help="queries measured during the ingest (default 50; each may wait for an embedding batch)",
    )
    p.add_argument(
        "--no-query-lane",
        action="store_true",
        help="during the ingest, embed queries between slices of the ingestion batch (the fallback) "
        "instead of in their own session",
    )
    p.add_argument("--ef-search", type=int, default=None, help="hnsw.ef_search (default: the setting)")
    p.add_argument(
        "--store",
        type=Path,
        default=None,
        help="keep the loaded store in this folder and reuse it when run again with the same --chunks "
        "(default: a throw-away store)",
    )
    p.add_argument(
        "--database-url",
        default=None,
        help="measure on this PostgreSQL server (an empty database, filled once and reused when run again "
        "with the same --chunks) instead of a throw-away embedded one",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    cache = Path(os.environ["LOCALRAG_EVAL_CACHE"]) if os.environ.get("LOCALRAG_EVAL_CACHE") else None
    report = bench(
        args.chunks,
        queries=args.queries,
        corpus=args.corpus,
        with_ingest=not args.no_ingest,
        ingest_queries=args.ingest_queries,
        cache_dir=cache,
        progress=print_progress,
        query_lane=not args.no_query_lane,
        ef_search=args.ef_search,
        store=args.store,
        database_url=args.database_url,
    )
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    hot, rec = report["hot_path_ms"], report["hnsw_recall@10"]
    print(
        f"{report['chunks']} chunks ({report['synthetic_chunks']} synthetic), {report['documents']} "
        f"documents; {report['machine']['cpu']} × {report['machine']['cores']}"
    )
    print(f"hot path (embed + search + fuse + merge), k=8 hybrid: p50 {hot['p50']} ms, p95 {hot['p95']} ms")
    for stage, v in report["stages_ms"].items():
        print(f"  {stage:8} p50 {v['p50']:7.2f}  p95 {v['p95']:7.2f}")
    f = report["filtered_ms"]
    print(f"filtered (doc type markdown): p50 {f['p50']} ms, p95 {f['p95']} ms")
    r = report["routed_ms"]
    print(f"routed (one document): p50 {r['p50']} ms, p95 {r['p95']} ms")
    print(f"HNSW recall@10 vs exact (ef_search {report['ef_search_used']}): {rec}")
    print(f"BM25 recall@10 vs scoring every posting: {report['bm25_recall@10']}")
    if "while_ingesting" in report:
        w = report["while_ingesting"]
        print(
            f"while ingesting ({w['ingest_chunks_per_s']} chunks/s): p50 {w['hot_path_ms']['p50']} ms, "
            f"p95 {w['hot_path_ms']['p95']} ms (embed p95 {w['stages_ms']['embed']['p95']} ms)"
        )
    return 0


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


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }


# -- the corpus ----------------------------------------------------------------------------------------------


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if s]


def synthesize(
    base: Sequence[beir.ChunkRow], vectors: np.ndarray, n: int, seed: int = 0
) -> tuple[list[beir.ChunkRow], np.ndarray, int]:
    """``n`` chunks laid out in documents of 25 chunks (5 a page): the real ones first, then synthetic ones.

    Returns the chunks, their vectors and how many are real.
    """
    rng = np.random.default_rng(seed)
    real = min(n, len(base))
    texts = [c.text for c in base[:real]]
    out_vecs = np.empty((n, vectors.shape[1]), dtype=np.float32)
    out_vecs[:real] = vectors[:real]
    if n > real:
        split = [_sentences(c.text) for c in base]
        pairs = rng.integers(0, len(base), size=(n - real, 2))
        for j, (a, b) in enumerate(pairs):
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


# -- the benchmark -------------------------------------------------------------------------------------------


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


def bench(
    n_chunks: int,
    *,
    queries: int = 200,
    corpus: Path | None = None,
    with_ingest: bool = True,
    ingest_queries: int = 50,
    cache_dir: Path | None = None,
    settings: Settings | None = None,
    embedder: OnnxEmbedder | None = None,
    progress: beir.ProgressFn | None = None,
    query_lane: bool = True,
    ef_search: int | None = None,
    store: Path | None = None,
    database_url: str | None = None,
) -> dict[str, Any]:
    settings = settings or Settings.load()
    embedder = embedder or load_embedder(settings.embedding_model_dir or None)
    say = (lambda label: progress(Progress(label))) if progress else (lambda label: None)
    built = build_corpus(n_chunks, corpus, embedder, settings, cache_dir, progress)
    ds, query_texts, base = built.dataset, built.queries, built.base
    chunks, vecs, real, docs, n_docs = built.chunks, built.vectors, built.real, built.docs, len(built.docs)
    tuning = Tuning.from_settings(settings)
    if ef_search:
        tuning.ef_search = int(ef_search)
    report: dict[str, Any] = {
        "chunks": len(chunks),
        "real_chunks": real,
        "synthetic_chunks": len(chunks) - real,
        "documents": n_docs,
        "corpus": ds.name,
        "model": embedder.name,
        "ef_search": tuning.ef_search,
        "depth": tuning.depth,
        "queries": queries,
        "machine": machine(),
    }
    spec = {"chunks": len(chunks), "corpus": ds.name, "model": embedder.name}
    if database_url:
        opened = beir.server_store(database_url)
        report["store"] = "server by URL"
    else:
        opened = beir.kept_store(store) if store else beir.throwaway_store()
        report["store"] = "embedded (Unix socket)"
    kept = bool(store or database_url)
    with opened as conninfo, db.connect(conninfo) as conn:
        if kept and _loaded(conn, spec):
            say(f"reusing the store in {db.mask_password(database_url) if database_url else store}")
        else:
            t = time.monotonic()
            say(f"loading {len(chunks)} chunks")
            load_chunks(conn, docs, chunks, vecs, embedder, progress)
            report["load_s"] = round(time.monotonic() - t, 1)
            say(f"  loaded and indexed in {report['load_s']} s")
            if kept:
                conn.execute("CREATE TABLE bench_spec (spec jsonb)")
                conn.execute("INSERT INTO bench_spec VALUES (%s)", (json.dumps(spec),))
        sizes = db.one(
            conn.execute(
                "SELECT pg_size_pretty(pg_database_size(current_database())), "
                "pg_size_pretty(pg_total_relation_size('bm25_postings'))"
            )
        )
        report["database_size"], report["postings_size"] = sizes
        conn.commit()

        report["ef_search_used"] = vector.scaled_ef_search(conn, tuning.ef_search)
        conn.commit()
        waited = _wait_for_restored_buffers(conn, say)
        if waited:
            report["buffers_restored_s"] = waited
        # Queries are embedded as in the app: a one-thread session of their own (``EmbeddingService`` query
        # lane), which leaves the other core to the BM25 leg running beside it.
        query_embedder = embedder.sibling(threads=1)
        handle = beir.StoreHandle(conninfo, query_embedder, settings)
        rng = np.random.default_rng(1)
        ordered = [query_texts[i] for i in rng.permutation(len(query_texts))]
        recall_texts = ordered[
            :queries
        ]  # recall does not depend on what is in memory: always the same queries
        if kept:  # a kept store runs out of the dataset's queries: its documents' titles are asked next
            titles = list(dict.fromkeys(t for _, t, _ in ds.corpus if len(t.split()) >= 4))
            ordered += [titles[i] for i in rng.permutation(len(titles))]
        fresh, seen = _split_seen(conn, ordered)
        hot_texts = fresh[:queries] + seen[: max(0, queries - len(fresh))]
        filtered_texts = (fresh[queries:] + seen)[:queries]
        warm_texts = (seen + fresh[2 * queries :])[:WARM_QUERIES]
        report["fresh_queries"] = len(set(hot_texts) & set(fresh))
        report["title_queries"] = len(set(hot_texts) - set(query_texts))
        # Scoring every posting reads much of the store: done first, so that its pages are not what the
        # measured queries find in memory (the answers are kept in the store and read back on later runs).
        say("BM25 scoring every posting, for recall")
        exact_bm25 = _exact_bm25(conn, recall_texts, tuning)
        for text in warm_texts:  # warm the caches (a fresh server reads a large store from disk)
            retrieve(handle, text, k=settings.k, tuning=tuning)
        say(f"hot path: {queries} queries ({report['fresh_queries']} never asked of this store before)")
        hot = _measure(handle, hot_texts, tuning, settings.k)
        report["hot_path_ms"], report["stages_ms"] = hot["total"], hot["stages"]
        say(f"  hot path ms {hot['total']}, stages {hot['stages']}")
        say("filtered queries")
        filt = _measure(
            beir.StoreHandle(conninfo, query_embedder, settings),
            filtered_texts,
            tuning,
            settings.k,
            doc_types=["markdown"],
        )
        report["filtered_ms"] = filt["total"]
        say(f"  filtered ms {filt['total']}")
        # A question that names a document searches it alone (``routing``): each of these is limited to the
        # document of its best BM25 passage.
        routed_texts = (fresh[queries:] + seen)[queries : 2 * queries] or filtered_texts
        say("routed queries (limited to one document)")
        docs_of = _best_documents(conn, routed_texts, tuning)
        routed = _measure(
            beir.StoreHandle(conninfo, query_embedder, settings),
            [t for t in routed_texts if t in docs_of],
            tuning,
            settings.k,
            doc_for=docs_of,
        )
        report["routed_ms"], report["routed_stages_ms"] = routed["total"], routed["stages"]
        say(f"  routed ms {routed['total']}, stages {routed['stages']}")
        _mark_seen(conn, hot_texts + filtered_texts + routed_texts)
        say("HNSW recall against exact search")
        report["hnsw_recall@10"] = _recall(handle, conn, vecs, recall_texts, tuning, embedder)
        say(f"  recall@10 {report['hnsw_recall@10']}")
        say("BM25 against scoring every posting")
        report["bm25_recall@10"] = _bm25_recall(conn, exact_bm25, tuning)
        say(f"  recall@10 {report['bm25_recall@10']}")
        if with_ingest:
            say("hot path during an ingest")
            texts = (fresh[2 * queries + WARM_QUERIES :] + seen[WARM_QUERIES:])[:ingest_queries] or hot_texts
            try:
                report["while_ingesting"] = _during_ingest(
                    conninfo, conn, embedder, settings, tuning, base, texts, n_docs, query_lane
                )
            finally:
                if kept:  # the next run finds the store as loaded
                    conn.rollback()
                    extra = [r[0] for r in conn.execute("SELECT id FROM documents WHERE id > %s", (n_docs,))]
                    bm25.unindex_documents(conn, extra)
                    conn.execute("DELETE FROM documents WHERE id = ANY(%s)", (extra,))
                    conn.commit()
    report["machine"]["load_average_after"] = machine()["load_average"]
    return report


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


def _best_documents(conn: Any, texts: Sequence[str], tuning: Tuning) -> dict[str, int]:
    """The document of each text's best BM25 passage (texts with no passage are left out)."""
    found: dict[str, int] = {}
    for text in texts:
        hits = bm25.search(conn, text, n=1, k1=tuning.bm25_k1, b=tuning.bm25_b)
        if hits:
            row = conn.execute("SELECT doc_id FROM document_chunks WHERE id = %s", (hits[0][0],)).fetchone()
            found[text] = int(row[0])
    conn.commit()
    return found


def _measure(
    handle: beir.StoreHandle,
    texts: Sequence[str],
    tuning: Tuning,
    k: int,
    pause_s: float = 0.0,
    doc_for: dict[str, int] | None = None,
    **filters: Any,
) -> dict[str, Any]:
    """Latency percentiles of ``texts`` asked in turn; ``doc_for``: each text limited to that document (a
    routed question)."""
    totals: list[float] = []
    stages: dict[str, list[float]] = {"embed": [], "vector": [], "bm25": [], "fuse+fetch+merge": []}
    for text in texts:
        time.sleep(pause_s)
        if doc_for is not None:
            filters = {"doc_ids": [doc_for[text]]}
        t = time.perf_counter()
        resp = retrieve(
            handle, text, k=k, tuning=tuning, **filters
        )  # connections from the pool, as in the app
        totals.append((time.perf_counter() - t) * 1000)
        if resp.reason:
            raise KnownError(f"retrieval failed during the benchmark: {resp.error or resp.reason}")
        tm = resp.timings
        for stage in ("embed", "vector", "bm25"):
            stages[stage].append(tm.get(stage, 0.0))
        stages["fuse+fetch+merge"].append(tm.get("fuse", 0) + tm.get("fetch", 0) + tm.get("merge", 0))
    return {
        "total": metrics.percentiles(totals),
        "stages": {s: metrics.percentiles(v) for s, v in stages.items()},
    }


def _recall(
    handle: beir.StoreHandle,
    conn: Any,
    vecs: np.ndarray,
    texts: Sequence[str],
    tuning: Tuning,
    embedder: OnnxEmbedder,
) -> float:
    hits = 0
    for text in texts:
        q = handle.embed_query(text)
        exact = np.argpartition(-(vecs @ q), 10)[:10] + 1  # chunk ids are row numbers + 1
        with conn.transaction():
            got = vector.search(
                conn,
                q,
                model=embedder.name,
                dimension=embedder.dimension,
                n=tuning.depth,
                filters=Filters(),
                ef_search=tuning.ef_search,
            )
        conn.commit()
        hits += len(set(exact.tolist()) & {cid for cid, _ in got[:10]})
    return round(hits / (10 * max(1, len(texts))), 4)


def _exact_bm25(conn: Any, texts: Sequence[str], tuning: Tuning) -> dict[str, list[int]]:
    """The exact BM25 top 10 of each text (every posting scored).

    At 1M chunks that reads gigabytes and leaves the server's buffers (saved and restored with a kept store)
    full of pages the app never reads; the answers are therefore kept in the store and computed once per
    query.
    """
    conn.execute(
        "CREATE TABLE IF NOT EXISTS bench_bm25_exact (query text, k1 float8, b float8, "
        "chunk_ids bigint[], PRIMARY KEY (query, k1, b))"
    )
    conn.commit()
    k1, b = float(tuning.bm25_k1), float(tuning.bm25_b)
    out: dict[str, list[int]] = {}
    for text in texts:
        with conn.transaction():
            row = conn.execute(
                "SELECT chunk_ids FROM bench_bm25_exact WHERE query = %s AND k1 = %s AND b = %s",
                (text, k1, b),
            ).fetchone()
            if row is None:
                ids = [c for c, _ in bm25.search(conn, text, n=10, exact=True, k1=k1, b=b)]
                conn.execute("INSERT INTO bench_bm25_exact VALUES (%s, %s, %s, %s)", (text, k1, b, ids))
            else:
                ids = list(row[0])
        out[text] = ids
    return out


def _bm25_recall(conn: Any, exact: dict[str, list[int]], tuning: Tuning) -> float:
    """How many of the exact BM25 top 10 the search's own top 10 holds."""
    hits = total = 0
    for text, ids in exact.items():
        with conn.transaction():
            got = bm25.search(conn, text, n=tuning.depth, k1=tuning.bm25_k1, b=tuning.bm25_b)
        hits += len(set(ids) & {c for c, _ in got[:10]})
        total += len(ids)
    return round(hits / max(1, total), 4)


def _split_seen(conn: Any, texts: Sequence[str]) -> tuple[list[str], list[str]]:
    """``texts`` split into those never measured on this store and those that were, each in order.

    A kept store remembers its measured queries: asked again, a query finds its pages already read, which a
    new question does not."""
    conn.execute("CREATE TABLE IF NOT EXISTS bench_queries_seen (query text PRIMARY KEY)")
    seen = {r[0] for r in conn.execute("SELECT query FROM bench_queries_seen")}
    conn.commit()
    return [t for t in texts if t not in seen], [t for t in texts if t in seen]


def _mark_seen(conn: Any, texts: Sequence[str]) -> None:
    with conn.transaction():
        conn.cursor().executemany(
            "INSERT INTO bench_queries_seen VALUES (%s) ON CONFLICT DO NOTHING", [(t,) for t in texts]
        )


def _wait_for_restored_buffers(conn: Any, say: Any, appear_s: float = 15.0, limit_s: float = 900.0) -> float:
    """Wait while the server reads back the buffers it saved when it last stopped (``pg_prewarm``), so that
    the hot path is not measured against that background read. Returns the seconds waited (0 when nothing is
    read)."""
    try:
        row = conn.execute("SELECT current_setting('data_directory')").fetchone()
    except psycopg.errors.InsufficientPrivilege:  # a least-privilege role on a server: nothing to see
        conn.rollback()
        return 0.0
    conn.commit()
    if not row or not (Path(row[0]) / "autoprewarm.blocks").exists():
        return 0.0
    started = time.monotonic()
    seen = False
    while time.monotonic() - started < limit_s:
        busy = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autoprewarm worker'"
        ).fetchone()[0]
        conn.commit()
        if busy and not seen:
            say("waiting for the server to read back its saved buffers")
        seen = seen or bool(busy)
        if not busy and (seen or time.monotonic() - started > appear_s):
            break
        time.sleep(0.5)
    return round(time.monotonic() - started, 1) if seen else 0.0


def _loaded(conn: Any, spec: dict[str, Any]) -> bool:
    """Whether a kept store holds what ``spec`` describes (else it is loaded afresh)."""
    row = conn.execute("SELECT to_regclass('bench_spec') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return False
    found = conn.execute("SELECT spec FROM bench_spec").fetchone()
    conn.commit()
    if found and found[0] == spec:
        return True
    raise KnownError(
        f"The kept store (--store or --database-url) holds another benchmark "
        f"({found[0] if found else 'unknown'}); use another folder or database, or empty this one."
    )


def _during_ingest(
    conninfo: str,
    conn: Any,
    embedder: OnnxEmbedder,
    settings: Settings,
    tuning: Tuning,
    base: Sequence[beir.ChunkRow],
    texts: Sequence[str],
    first_doc: int,
    query_lane: bool = True,
) -> dict[str, Any]:
    """Queries through the one embedding service while another thread ingests through it, as the app does."""
    service = EmbeddingService(lambda: embedder, query_lane=query_lane)
    worker = threading.Thread(target=service.run, name="embedding", daemon=True)
    worker.start()
    stop = threading.Event()
    ingested = [0]
    errors: list[BaseException] = []

    def ingest() -> None:
        try:
            with db.connect(conninfo) as c:
                doc = first_doc
                pos = 0
                while not stop.is_set():
                    batch = [base[(pos + i) % len(base)] for i in range(INGEST_BATCH)]
                    pos += INGEST_BATCH
                    vectors = service.embed_batch([b.text for b in batch])
                    doc += 1
                    _write_doc(c, doc, batch, vectors, embedder.name)
                    ingested[0] += len(batch)
        except BaseException as exc:  # reported by the caller
            errors.append(exc)

    class _ServiceHandle(beir.StoreHandle):
        def embed_query(self, text: str) -> np.ndarray:
            return service.embed_query(text)

    writer = threading.Thread(target=ingest, name="ingest", daemon=True)
    writer.start()
    try:
        while ingested[0] == 0 and not errors:  # the ingest is under way: one batch went through
            time.sleep(0.05)
        # Questions come a while apart, as a person asks them, so that they fall at every point of the
        # ingest's batch cycle and the ingest rate is taken over several batches.
        started, before = time.monotonic(), ingested[0]
        result = _measure(
            _ServiceHandle(conninfo, embedder, settings),
            texts,
            tuning,
            settings.k,
            pause_s=INGEST_QUERY_PAUSE_S,
        )
        rate = (ingested[0] - before) / max(1e-6, time.monotonic() - started)
    finally:
        stop.set()
        writer.join(120)
        service.stop()
        worker.join(60)
    if errors:
        raise errors[0]
    return {
        "hot_path_ms": result["total"],
        "stages_ms": result["stages"],
        "ingest_chunks_per_s": round(rate, 1),
        "ingest_batch": INGEST_BATCH,
        "query_pause_s": INGEST_QUERY_PAUSE_S,
        "query_lane": service.lane_open,
    }


def _write_doc(conn: Any, doc: int, batch: Sequence[beir.ChunkRow], vectors: np.ndarray, model: str) -> None:
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
