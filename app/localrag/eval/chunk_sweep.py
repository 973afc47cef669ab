"""Measure chunk size and overlap on a BEIR dataset: embed the corpus chunked each way, rank documents by
their best chunk (max-sim, brute force), report nDCG@10 and recall@100.

Tune on the train split, report on test::

    python -m localrag.eval.chunk_sweep --data path/to/scifact --split train --queries 200 \\
        --configs 200:32,128:32,256:48,200:0 --out sweep.json

Each document is one page, ``title`` + blank line + ``text``, chunked by ``chunk_pages`` exactly as ingestion
does. The queries of the other split can be scored in the same run at almost no cost (``--also test``).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np

from localrag.core.embed.onnx_embedder import load_embedder
from localrag.core.embed.sizing import fit_to_input
from localrag.core.ingest.chunking import chunk_pages
from localrag.core.ingest.types import Page

QUERY_FILES = {"test": "queries.jsonl", "train": "queries_train.jsonl"}


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as f:
        next(f)
        for line in f:
            qid, did, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                qrels.setdefault(qid, {})[did] = int(score)
    return qrels


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int = 100) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


def load_queries(data: Path, split: str, limit: int, seed: int) -> tuple[list[str], list[str], dict]:
    qrels = read_qrels(data / "qrels" / f"{split}.tsv")
    queries = [q for q in read_jsonl(data / QUERY_FILES[split]) if q["_id"] in qrels]
    if limit and len(queries) > limit:
        queries = random.Random(seed).sample(queries, limit)
    return [q["_id"] for q in queries], [q["text"] for q in queries], qrels


def evaluate(
    chunk_vecs: np.ndarray,
    chunk_doc: np.ndarray,
    doc_ids: list[str],
    query_vecs: np.ndarray,
    qids: list[str],
    qrels: dict,
) -> tuple[dict[str, float], list[float]]:
    """Mean nDCG@10 and recall@100, each document scored by its best chunk; and each query's nDCG@10."""
    ndcgs: list[float] = []
    recalls: list[float] = []
    if not qids:
        return {"ndcg@10": float("nan"), "recall@100": float("nan")}, []
    n_docs = len(doc_ids)
    for start in range(0, len(qids), 64):
        sims = query_vecs[start : start + 64] @ chunk_vecs.T  # (q, chunks)
        for row, qid in zip(sims, qids[start : start + 64], strict=True):
            best = np.full(n_docs, -np.inf, dtype=np.float32)
            np.maximum.at(best, chunk_doc, row)
            top = np.argpartition(-best, min(100, n_docs - 1))[:100]
            ranked = [doc_ids[i] for i in top[np.argsort(-best[top])]]
            ndcgs.append(ndcg_at(ranked, qrels[qid]))
            recalls.append(recall_at(ranked, qrels[qid]))
    return {"ndcg@10": float(np.mean(ndcgs)), "recall@100": float(np.mean(recalls))}, ndcgs


def load_cache(path: Path, model: str) -> dict[str, np.ndarray]:
    """Chunk vectors saved by an earlier run with the same model (text -> vector)."""
    if not path.exists():
        return {}
    with np.load(path, allow_pickle=False) as saved:
        if str(saved["model"]) != model:
            return {}
        return dict(zip(saved["texts"].tolist(), saved["vectors"], strict=True))


def save_cache(path: Path, model: str, cache: dict[str, np.ndarray]) -> None:
    texts = list(cache)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(
        tmp, model=np.asarray(model), texts=np.asarray(texts), vectors=np.stack([cache[t] for t in texts])
    )
    tmp.replace(path)


def paired_difference(a: list[float], b: list[float]) -> tuple[float, float]:
    """Mean of ``b - a`` over the same queries and its standard error."""
    diff = np.asarray(b) - np.asarray(a)
    return float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, required=True, help="BEIR dataset folder (corpus.jsonl, qrels/, ...)"
    )
    parser.add_argument("--split", default="train", choices=sorted(QUERY_FILES))
    parser.add_argument("--also", default="", help="another split to score as well (never tune on it)")
    parser.add_argument(
        "--queries", type=int, default=200, help="random sample of this many --split queries (0: all)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--configs", default="200:32,128:32,256:48,200:0", help="max_tokens:overlap,...")
    parser.add_argument("--docs", type=int, default=0, help="use only the first N documents (0: all)")
    parser.add_argument("--out", type=Path, help="write the figures (and per-query nDCG@10) as JSON here")
    parser.add_argument("--cache", type=Path, help="keep chunk vectors in this .npz file across runs")
    args = parser.parse_args(argv)

    embedder = load_embedder()
    corpus = read_jsonl(args.data / "corpus.jsonl")
    if args.docs:
        corpus = corpus[: args.docs]
    doc_ids = [d["_id"] for d in corpus]
    splits = [args.split] + ([args.also] if args.also and args.also != args.split else [])
    query_sets = {}
    for split in splits:
        limit = args.queries if split == args.split else 0  # the reported split: every query
        qids, questions, qrels = load_queries(args.data, split, limit, args.seed)
        known = set(doc_ids)
        keep = [i for i, q in enumerate(qids) if set(qrels[q]) & known]
        qids, questions = [qids[i] for i in keep], [questions[i] for i in keep]
        query_sets[split] = (qids, embedder.embed(fit_to_input(embedder, questions)), qrels)
        print(f"{split}: {len(qids)} queries", file=sys.stderr)

    results = []
    cache: dict[str, np.ndarray] = load_cache(args.cache, embedder.name) if args.cache else {}
    per_query: dict[tuple[str, str], list[float]] = {}
    for spec in args.configs.split(","):
        max_tokens, overlap = (int(x) for x in spec.split(":"))
        started = time.monotonic()
        texts: list[str] = []
        owners: list[int] = []
        for number, doc in enumerate(corpus):
            page = Page(number=1, text=f"{doc.get('title', '')}\n\n{doc['text']}".strip())
            for chunk in chunk_pages([page], embedder, max_tokens=max_tokens, overlap_tokens=overlap):
                texts.append(chunk.text)
                owners.append(number)
        chunked = time.monotonic() - started
        fresh = list(dict.fromkeys(t for t in texts if t not in cache))  # the same chunk in two configs: once
        if fresh:
            cache.update(zip(fresh, embedder.embed(fit_to_input(embedder, fresh)), strict=True))
        vecs = np.stack([cache[t] for t in texts])
        if args.cache and fresh:
            save_cache(args.cache, embedder.name, cache)
        embedded = time.monotonic() - started - chunked
        row: dict[str, object] = {
            "max_tokens": max_tokens,
            "overlap": overlap,
            "chunks": len(texts),
            "chunks_per_doc": round(len(texts) / len(corpus), 2),
            "chunk_s": round(chunked, 1),
            "embedded": len(fresh),
            "embed_s": round(embedded, 1),
        }
        for split, (qids, qvecs, qrels) in query_sets.items():
            scores, per_query[(spec, split)] = evaluate(vecs, np.asarray(owners), doc_ids, qvecs, qids, qrels)
            row.update({f"{split} {k}": round(v, 4) for k, v in scores.items()})
        results.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)

    keys = list(results[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in results:
        print("| " + " | ".join(str(row[k]) for k in keys) + " |")
    specs = args.configs.split(",")
    for spec in specs[1:]:
        for split in query_sets:
            mean, se = paired_difference(per_query[(specs[0], split)], per_query[(spec, split)])
            print(f"{spec} vs {specs[0]}, {split}: nDCG@10 {mean:+.4f} ± {1.96 * se:.4f} (95% CI, paired)")
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "args": vars(args) | {"data": str(args.data), "out": str(args.out)},
                    "results": results,
                    "per_query_ndcg@10": {f"{spec} {split}": v for (spec, split), v in per_query.items()},
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
