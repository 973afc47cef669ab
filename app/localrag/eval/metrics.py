"""Ranking metrics as BEIR reports them (trec_eval definitions), and latency percentiles."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np


def ndcg_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k with gain = relevance grade (trec_eval's ``ndcg_cut``); the ideal ranks every judged
    document."""
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    wanted = {d for d, g in relevant.items() if g > 0}
    return len(wanted.intersection(ranked[:k])) / len(wanted) if wanted else 0.0


def mrr_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    for i, doc in enumerate(ranked[:k]):
        if relevant.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def percentiles(values_ms: Sequence[float]) -> dict[str, float]:
    if not len(values_ms):
        return {"p50": 0.0, "p95": 0.0}
    arr = np.asarray(values_ms, dtype=float)
    return {"p50": round(float(np.percentile(arr, 50)), 2), "p95": round(float(np.percentile(arr, 95)), 2)}


def summarize(runs: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
    """Mean nDCG@10, Recall@10, Recall@100 and MRR@10 over the judged queries (a query never run scores 0)."""
    judged = [q for q, rel in qrels.items() if any(g > 0 for g in rel.values())]
    if not judged:
        return {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    sums = {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    for q in judged:
        ranked, rel = runs.get(q, []), qrels[q]
        sums["ndcg@10"] += ndcg_at(ranked, rel, 10)
        sums["recall@10"] += recall_at(ranked, rel, 10)
        sums["recall@100"] += recall_at(ranked, rel, 100)
        sums["mrr@10"] += mrr_at(ranked, rel, 10)
    return {name: round(total / len(judged), 4) for name, total in sums.items()}
