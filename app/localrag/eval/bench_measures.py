"""What ``bench retrieval`` measures on its store: the hot path's latency by stage, HNSW and BM25 recall
against exact answers, and the hot path while an ingest runs through the one embedding service; with the
bookkeeping of a kept store (the queries it was measured with, its restored buffers, what it holds)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from localrag.core.config import Settings
from localrag.core.embed.onnx_embedder import OnnxEmbedder
from localrag.core.embed.service import EmbeddingService
from localrag.core.errors import KnownError
from localrag.core.retrieve import bm25, vector
from localrag.core.retrieve.filters import Filters
from localrag.core.retrieve.retriever import Tuning, retrieve
from localrag.core.store import db
from localrag.eval import beir, metrics
from localrag.eval.bench_corpus import write_doc
from localrag.host import Host

INGEST_BATCH = 64  # the ingestion pipeline's chunks per embedding batch
INGEST_QUERY_PAUSE_S = 0.3  # between two questions asked during the ingest


def measure(
    handle: beir.StoreHandle,
    texts: Sequence[str],
    tuning: Tuning,
    k: int,
    pause_s: float = 0.0,
    doc_for: dict[str, int] | None = None,
    **filters: Any,
) -> dict[str, Any]:
    """Latency of ``retrieve`` for each of ``texts``, p50/p95 in total and by stage, hosted as in the app:
    pooled connections, the BM25 leg on the host's executor beside the vector leg. ``doc_for``: each text
    limited to that document (a routed question). ``short``: how many gave fewer than ``k`` passages (a
    routed question then has the rest of the library fill its list, a second search); ``routing``: how many
    were routed each way (``core/retrieve/routing.py``), ``filled``: how many routed ones the library
    filled."""
    totals: list[float] = []
    short = filled = 0
    routes: dict[str, int] = {}
    stages: dict[str, list[float]] = {"embed": [], "vector": [], "bm25": [], "fuse+fetch+merge": []}
    with Host(handle):
        for text in texts:
            time.sleep(pause_s)
            if doc_for is not None:
                filters = {"doc_ids": [doc_for[text]]}
            t = time.perf_counter()
            resp = retrieve(handle, text, k=k, tuning=tuning, **filters)
            totals.append((time.perf_counter() - t) * 1000)
            if resp.reason:
                raise KnownError(f"retrieval failed during the benchmark: {resp.error or resp.reason}")
            short += len(resp.results) < k
            mode = str((resp.routing or {}).get("mode", ""))
            routes[mode] = routes.get(mode, 0) + 1
            filled += "filled_from_library" in (resp.routing or {})
            tm = resp.timings
            for stage in ("embed", "vector", "bm25"):
                stages[stage].append(tm.get(stage, 0.0))
            stages["fuse+fetch+merge"].append(tm.get("fuse", 0) + tm.get("fetch", 0) + tm.get("merge", 0))
    return {
        "total": metrics.percentiles(totals),
        "stages": {s: metrics.percentiles(v) for s, v in stages.items()},
        "short": short,
        "routing": routes,
        "filled": filled,
    }


def best_documents(conn: Any, texts: Sequence[str], tuning: Tuning) -> dict[str, int]:
    """The document of each text's best BM25 passage (texts with no passage are left out)."""
    found: dict[str, int] = {}
    for text in texts:
        hits = bm25.search(conn, text, n=1, k1=tuning.bm25_k1, b=tuning.bm25_b)
        if hits:
            row = conn.execute("SELECT doc_id FROM document_chunks WHERE id = %s", (hits[0][0],)).fetchone()
            found[text] = int(row[0])
    conn.commit()
    return found


def hnsw_recall(
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


def exact_bm25(conn: Any, texts: Sequence[str], tuning: Tuning) -> dict[str, list[int]]:
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


def bm25_recall(conn: Any, exact: dict[str, list[int]], tuning: Tuning) -> float:
    """How many of the exact BM25 top 10 the search's own top 10 holds."""
    hits = total = 0
    for text, ids in exact.items():
        with conn.transaction():
            got = bm25.search(conn, text, n=tuning.depth, k1=tuning.bm25_k1, b=tuning.bm25_b)
        hits += len(set(ids) & {c for c, _ in got[:10]})
        total += len(ids)
    return round(hits / max(1, total), 4)


def split_seen(conn: Any, texts: Sequence[str]) -> tuple[list[str], list[str]]:
    """``texts`` split into those never measured on this store and those that were, each in order.

    A kept store remembers its measured queries: asked again, a query finds its pages already read, which a
    new question does not."""
    conn.execute("CREATE TABLE IF NOT EXISTS bench_queries_seen (query text PRIMARY KEY)")
    seen = {r[0] for r in conn.execute("SELECT query FROM bench_queries_seen")}
    conn.commit()
    return [t for t in texts if t not in seen], [t for t in texts if t in seen]


def mark_seen(conn: Any, texts: Sequence[str]) -> None:
    with conn.transaction():
        conn.cursor().executemany(
            "INSERT INTO bench_queries_seen VALUES (%s) ON CONFLICT DO NOTHING", [(t,) for t in texts]
        )


def wait_for_restored_buffers(conn: Any, say: Any, appear_s: float = 15.0, limit_s: float = 900.0) -> float:
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


def loaded(conn: Any, spec: dict[str, Any]) -> bool:
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


def clear_interrupted_load(conn: Any) -> bool:
    """Empty a kept store whose load was stopped before it finished (rows, and no ``bench_spec`` yet), so
    that loading again starts from nothing; returns whether there was anything to clear."""
    if not db.one(conn.execute("SELECT EXISTS (SELECT 1 FROM documents)")):
        conn.commit()
        return False
    conn.execute(
        "TRUNCATE documents, document_chunks, chunk_embeddings, chunk_piece_embeddings, bm25_postings, "
        "bm25_terms RESTART IDENTITY CASCADE"
    )
    conn.execute("UPDATE bm25_stats SET n_chunks = 0, total_len = 0")
    conn.commit()
    return True


def during_ingest(
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
    # The two loops on threads of their own, as a host runs them (``host/embedding.py``): ingestion batches,
    # and the query lane (which returns at once when ``query_lane`` is off).
    workers = [
        threading.Thread(target=service.run, name="embedding", daemon=True),
        threading.Thread(target=service.serve_queries, name="embed-queries", daemon=True),
    ]
    for worker in workers:
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
                    write_doc(c, doc, batch, vectors, embedder.name)
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
        waited = time.monotonic()
        while query_lane and not service.lane_open and time.monotonic() - waited < 30:
            time.sleep(0.05)
        # Questions come a while apart, as a person asks them, so that they fall at every point of the
        # ingest's batch cycle and the ingest rate is taken over several batches.
        started, before = time.monotonic(), ingested[0]
        result = measure(
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
        for worker in workers:
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
