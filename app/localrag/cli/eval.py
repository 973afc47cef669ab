"""``local-rag eval DATASET_DIR [--split test|train] [--mode M] [--json]``: retrieval quality on a BEIR folder."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from localrag.core.progress import Progress
from localrag.core.retrieve import MODES


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval", help="measure retrieval (nDCG@10, recall, MRR, latency) on a BEIR folder in a throw-away database"
    )
    p.add_argument("dataset", type=Path, metavar="DATASET_DIR",
                   help="a BEIR folder: corpus.jsonl, queries*.jsonl, qrels/<split>.tsv")
    p.add_argument("--split", default="test", help="which qrels to use (test or train; default test)")
    p.add_argument("--mode", choices=MODES, action="append", dest="modes",
                   help="a mode to measure (repeatable; default: all three)")
    p.add_argument("--cache-dir", type=Path, default=None,
                   help="where corpus vectors are cached (default: the data folder's cache/eval, "
                        "or LOCALRAG_EVAL_CACHE)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from localrag.core.eval.beir import evaluate

    cache = args.cache_dir or (Path(os.environ["LOCALRAG_EVAL_CACHE"]) if os.environ.get("LOCALRAG_EVAL_CACHE")
                               else None)
    report = evaluate(args.dataset, split=args.split, modes=args.modes or MODES, cache_dir=cache,
                      progress=_progress)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{report['dataset']} ({report['split']}): {report['queries']} queries, {report['documents']} documents, "
          f"{report['chunks']} chunks, {report['model']}")
    print(f"{'mode':8} {'nDCG@10':>8} {'R@10':>7} {'R@100':>7} {'MRR@10':>7} {'p50 ms':>8} {'p95 ms':>8}")
    for mode, m in report["modes"].items():
        print(f"{mode:8} {m['ndcg@10']:8.4f} {m['recall@10']:7.4f} {m['recall@100']:7.4f} {m['mrr@10']:7.4f} "
              f"{m['latency_ms']['p50']:8.1f} {m['latency_ms']['p95']:8.1f}")
    q = report["embed_query_ms"]
    print(f"(latency: retrieve with k=100 and the query vector cached; embedding a query: p50 {q['p50']} ms, "
          f"p95 {q['p95']} ms)")
    return 0


def _progress(p: Progress) -> None:
    if p.total:
        print(f"\r{p.label}: {p.done}/{p.total} {p.unit}", end="\n" if p.done >= p.total else "",
              file=sys.stderr, flush=True)
    else:
        print(p.label, file=sys.stderr, flush=True)
