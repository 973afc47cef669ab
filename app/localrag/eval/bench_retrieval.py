"""``local-rag bench retrieval --chunks N``: the retrieval hot path at N chunks, HNSW recall, and under
ingest.

The store is a throw-away embedded PostgreSQL filled from a BEIR corpus (SciFact by default):

- its real chunks with their real vectors (the same chunking and cached vectors as ``local-rag eval``);
- beyond those, synthetic chunks: each joins the first half of one real chunk's sentences to the second half
  of another's, and its vector is the normalised length-weighted mean of the two real vectors. The text is
  real prose (so BM25 postings and term statistics are computed by PostgreSQL exactly as for documents), the
  vectors lie where real ones lie; they are not what the model would give for that text, which does not matter
  for latency or for HNSW recall against an exact scan of the same vectors;
- unless ``--no-pieces``, the chunks' pieces (a few sentences each, searched beside the chunks as the setting
  ``piece_weight`` says): a real chunk's own, a synthetic chunk's taken from its two real chunks
  (``load_pieces``).

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
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from localrag.core.config import Settings
from localrag.core.embed.onnx_embedder import OnnxEmbedder, load_embedder
from localrag.core.ingest import pieces
from localrag.core.progress import Progress, print_progress
from localrag.core.retrieve import bm25, vector
from localrag.core.retrieve.retriever import Tuning, retrieve
from localrag.core.store import db, models
from localrag.eval import beir, bench_corpus, machine
from localrag.eval import bench_measures as measures
from localrag.host import Host

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
        "--no-pieces",
        action="store_true",
        help="store no chunk pieces and rank chunks by their own vectors only (piece weight 0); by default "
        "the chunks' pieces are stored and searched as ingestion and the setting piece_weight do",
    )
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
        with_pieces=not args.no_pieces,
    )
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    hot, rec = report["hot_path_ms"], report["hnsw_recall@10"]
    print(
        f"{report['chunks']} chunks ({report['synthetic_chunks']} synthetic), {report['pieces']} pieces, "
        f"{report['documents']} documents; {report['machine']['cpu']} × {report['machine']['cores']}"
    )
    print(f"hot path (embed + search + fuse + merge), k=8 hybrid: p50 {hot['p50']} ms, p95 {hot['p95']} ms")
    for stage, v in report["stages_ms"].items():
        print(f"  {stage:8} p50 {v['p50']:7.2f}  p95 {v['p95']:7.2f}")
    f = report["filtered_ms"]
    print(f"filtered (doc type markdown): p50 {f['p50']} ms, p95 {f['p95']} ms")
    o, r = report["one_document_ms"], report["routed_ms"]
    print(
        f"limited to one document: p50 {o['p50']} ms, p95 {o['p95']} ms; "
        f"{report['one_document_fewer_than_k']} of {report['routed_queries']} gave fewer than k passages"
    )
    print(
        f"routed (naming the document): p50 {r['p50']} ms, p95 {r['p95']} ms; routing "
        f"{report['routing']}, {report['routed_filled_from_library']} filled from the library"
    )
    print(f"HNSW recall@10 vs exact (ef_search {report['ef_search_used']}): {rec}")
    print(f"BM25 recall@10 vs scoring every posting: {report['bm25_recall@10']}")
    if "while_ingesting" in report:
        w = report["while_ingesting"]
        print(
            f"while ingesting ({w['ingest_chunks_per_s']} chunks/s): p50 {w['hot_path_ms']['p50']} ms, "
            f"p95 {w['hot_path_ms']['p95']} ms (embed p95 {w['stages_ms']['embed']['p95']} ms)"
        )
    return 0


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
    with_pieces: bool = True,
) -> dict[str, Any]:
    settings = settings or Settings.load()
    embedder = embedder or load_embedder(settings.embedding_model_dir or None)
    say = (lambda label: progress(Progress(label))) if progress else (lambda label: None)
    built = bench_corpus.build_corpus(n_chunks, corpus, embedder, settings, cache_dir, progress)
    ds, query_texts, base = built.dataset, built.queries, built.base
    chunks, vecs, real, docs, n_docs = built.chunks, built.vectors, built.real, built.docs, len(built.docs)
    tuning = Tuning.from_settings(settings)
    if ef_search:
        tuning.ef_search = int(ef_search)
    if not with_pieces:
        tuning.pieces = 0.0
    report: dict[str, Any] = {
        "chunks": len(chunks),
        "real_chunks": real,
        "synthetic_chunks": len(chunks) - real,
        "documents": n_docs,
        "corpus": ds.name,
        "model": embedder.name,
        "ef_search": tuning.ef_search,
        "depth": tuning.depth,
        "piece_weight": tuning.pieces,
        "queries": queries,
        "machine": machine.machine(),
    }
    spec: dict[str, Any] = {"chunks": len(chunks), "corpus": ds.name, "model": embedder.name}
    if tuning.pieces > 0:
        spec["pieces"] = True
    if database_url:
        opened = beir.server_store(database_url)
        report["store"] = "server by URL"
    else:
        opened = beir.kept_store(store) if store else beir.throwaway_store()
        report["store"] = "embedded (Unix socket)"
    kept = bool(store or database_url)
    with opened as conninfo, db.connect(conninfo) as conn:
        if kept and measures.loaded(conn, spec):
            say(f"reusing the store in {db.mask_password(database_url) if database_url else store}")
        else:
            if kept and measures.clear_interrupted_load(conn):
                say("the kept store held an interrupted load: emptied, loading again")
            t = time.monotonic()
            say(f"loading {len(chunks)} chunks")
            bench_corpus.load_chunks(conn, docs, chunks, vecs, embedder, progress)
            if tuning.pieces > 0:
                load_pieces(conn, built, embedder, cache_dir, progress)
            report["load_s"] = round(time.monotonic() - t, 1)
            say(f"  loaded and indexed in {report['load_s']} s")
            if kept:
                conn.execute("CREATE TABLE bench_spec (spec jsonb)")
                conn.execute("INSERT INTO bench_spec VALUES (%s)", (json.dumps(spec),))
        sizes = db.one(
            conn.execute(
                "SELECT pg_size_pretty(pg_database_size(current_database())), "
                "pg_size_pretty(pg_total_relation_size('bm25_postings')), "
                "(SELECT count(*) FROM chunk_piece_embeddings)"
            )
        )
        report["database_size"], report["postings_size"], report["pieces"] = sizes
        conn.commit()

        report["ef_search_used"] = vector.scaled_ef_search(conn, tuning.ef_search)
        conn.commit()
        waited = measures.wait_for_restored_buffers(conn, say)
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
        fresh, seen = measures.split_seen(conn, ordered)
        hot_texts = fresh[:queries] + seen[: max(0, queries - len(fresh))]
        filtered_texts = (fresh[queries:] + seen)[:queries]
        warm_texts = (seen + fresh[2 * queries :])[:WARM_QUERIES]
        report["fresh_queries"] = len(set(hot_texts) & set(fresh))
        report["title_queries"] = len(set(hot_texts) - set(query_texts))
        # Scoring every posting reads much of the store: done first, so that its pages are not what the
        # measured queries find in memory (the answers are kept in the store and read back on later runs).
        say("BM25 scoring every posting, for recall")
        exact_bm25 = measures.exact_bm25(conn, recall_texts, tuning)
        with Host(handle):
            for text in warm_texts:  # warm the caches (a fresh server reads a large store from disk)
                retrieve(handle, text, k=settings.k, tuning=tuning)
        say(f"hot path: {queries} queries ({report['fresh_queries']} never asked of this store before)")
        hot = measures.measure(handle, hot_texts, tuning, settings.k)
        report["hot_path_ms"], report["stages_ms"] = hot["total"], hot["stages"]
        say(f"  hot path ms {hot['total']}, stages {hot['stages']}")
        say("filtered queries")
        filt = measures.measure(
            beir.StoreHandle(conninfo, query_embedder, settings),
            filtered_texts,
            tuning,
            settings.k,
            doc_types=["markdown"],
        )
        report["filtered_ms"] = filt["total"]
        say(f"  filtered ms {filt['total']}")
        # A question that names a document searches it alone (``routing``), and the rest of the library fills
        # the list when the document gives fewer than k passages. First the search limited to the document of
        # each query's best BM25 passage (as a filter to that document); then the same queries naming that
        # document by its file name ("… (in doc17)"), routed and filled as the app does.
        routed_texts = (fresh[queries:] + seen)[queries : 2 * queries] or filtered_texts
        say("queries limited to one document")
        docs_of = measures.best_documents(conn, routed_texts, tuning)
        one = measures.measure(
            beir.StoreHandle(conninfo, query_embedder, settings),
            [t for t in routed_texts if t in docs_of],
            tuning,
            settings.k,
            doc_for=docs_of,
        )
        report["one_document_ms"], report["one_document_stages_ms"] = one["total"], one["stages"]
        report["one_document_fewer_than_k"] = one["short"]
        say(f"  one document ms {one['total']}, stages {one['stages']}; {one['short']} gave fewer than k")
        say("routed queries (naming their document)")
        paths = dict(
            conn.execute(
                "SELECT id, path FROM documents WHERE id = ANY(%s)", (sorted(set(docs_of.values())),)
            ).fetchall()
        )
        conn.commit()
        named = [f"{t} (in {Path(paths[d]).stem})" for t, d in docs_of.items()]
        routed = measures.measure(
            beir.StoreHandle(conninfo, query_embedder, settings), named, tuning, settings.k
        )
        report["routed_ms"], report["routed_stages_ms"] = routed["total"], routed["stages"]
        report["routed_queries"], report["routing"] = len(named), routed["routing"]
        report["routed_filled_from_library"] = routed["filled"]
        say(f"  routed ms {routed['total']}, stages {routed['stages']}, routing {routed['routing']}")
        measures.mark_seen(conn, hot_texts + filtered_texts + routed_texts)
        say("HNSW recall against exact search")
        report["hnsw_recall@10"] = measures.hnsw_recall(handle, conn, vecs, recall_texts, tuning, embedder)
        say(f"  recall@10 {report['hnsw_recall@10']}")
        say("BM25 against scoring every posting")
        report["bm25_recall@10"] = measures.bm25_recall(conn, exact_bm25, tuning)
        say(f"  recall@10 {report['bm25_recall@10']}")
        if with_ingest:
            say("hot path during an ingest")
            texts = (fresh[2 * queries + WARM_QUERIES :] + seen[WARM_QUERIES:])[:ingest_queries] or hot_texts
            try:
                report["while_ingesting"] = measures.during_ingest(
                    conninfo, conn, embedder, settings, tuning, base, texts, n_docs, query_lane
                )
            finally:
                if kept:  # the next run finds the store as loaded
                    conn.rollback()
                    extra = [r[0] for r in conn.execute("SELECT id FROM documents WHERE id > %s", (n_docs,))]
                    bm25.unindex_documents(conn, extra)
                    conn.execute("DELETE FROM documents WHERE id = ANY(%s)", (extra,))
                    conn.commit()
    report["machine"]["load_average_after"] = machine.machine()["load_average"]
    return report


def load_pieces(
    conn: Any,
    built: bench_corpus.BenchCorpus,
    embedder: OnnxEmbedder,
    cache_dir: Path | None,
    progress: beir.ProgressFn | None,
) -> int:
    """Store the chunks' pieces (``core/ingest/pieces.py``) and build their HNSW index. A real chunk has its
    own pieces, embedded as ingestion embeds them (the same texts as ``local-rag eval``, so the cached
    vectors serve both); a synthetic chunk has the first half of its first source's pieces and the second half
    of its second's, as its text has their sentences. Returns how many were stored."""
    count = pieces.token_counter(embedder)
    per_chunk = [pieces.piece_texts(c.text, count) for c in built.base]
    first = np.cumsum([0] + [len(p) for p in per_chunk])
    flat = [t for texts in per_chunk for t in texts]
    if progress:
        progress(Progress(f"embedding {len(flat)} pieces of {len(built.base)} chunks"))
    vecs = beir.embed_cached(embedder, flat, cache_dir, progress, label="embedding pieces")
    sources = bench_corpus.synthetic_sources(len(built.base), len(built.chunks))

    def rows_of(j: int) -> list[int]:  # rows of ``vecs`` that are chunk ``j``'s pieces
        if j < built.real:
            return list(range(first[j], first[j + 1]))
        a, b = (int(x) for x in sources[j - built.real])
        na, nb = len(per_chunk[a]), len(per_chunk[b])
        return list(range(first[a], first[a] + (na + 1) // 2)) + list(range(first[b] + nb // 2, first[b + 1]))

    model, written = embedder.name, 0
    report = Progress("pieces", 0, len(built.chunks), "chunks")
    with conn.transaction():
        conn.execute(f"DROP INDEX IF EXISTS {models.piece_index_name(model)}")  # built once, after the rows
        with conn.cursor().copy(
            "COPY chunk_piece_embeddings (chunk_id, embedding_model, piece, embedding) FROM STDIN WITH "
            "(FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int8", "text", "int4", "vector"])
            for j in range(len(built.chunks)):
                for n, row in enumerate(rows_of(j)):
                    copy.write_row((j + 1, model, n, vecs[row]))
                    written += 1
                if progress and (j + 1) % 100_000 == 0:
                    report.done = j + 1
                    progress(report)
    if progress:
        progress(Progress(f"indexing {written} pieces"))
    models.register_model(conn, model, embedder.dimension)  # creates the pieces' HNSW index
    conn.commit()
    conn.autocommit = True
    try:
        conn.execute("VACUUM ANALYZE chunk_piece_embeddings")
    finally:
        conn.autocommit = False
    return written
