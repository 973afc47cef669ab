"""Reciprocal rank fusion of the vector and BM25 lists.

``fused = vector_weight / (rrf_k + vector_rank) + bm25_weight / (rrf_k + bm25_rank)``, a term only for the
lists a chunk is in (Cormack et al., 2009). Ranks, not scores, are fused: cosine similarities and BM25 scores
live on scales that do not compare.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class Candidate:
    chunk_id: int
    fused: float = 0.0
    vector: float | None = None
    vector_rank: int | None = None
    bm25: float | None = None
    bm25_rank: int | None = None

    @property
    def best_rank(self) -> int:
        return min(r for r in (self.vector_rank, self.bm25_rank, 1 << 30) if r is not None)


def rrf(
    vector_hits: Sequence[tuple[int, float]],
    bm25_hits: Sequence[tuple[int, float]],
    *,
    rrf_k: float = 60,
    vector_weight: float = 1.0,
    bm25_weight: float = 1.0,
) -> list[Candidate]:
    """Every chunk of either list with its fused score, best first (ties: better single rank, then id)."""
    by_id: dict[int, Candidate] = {}
    for rank, (cid, sim) in enumerate(vector_hits, 1):
        c = by_id.setdefault(cid, Candidate(cid))
        c.vector, c.vector_rank = sim, rank
        c.fused += vector_weight / (rrf_k + rank)
    for rank, (cid, score) in enumerate(bm25_hits, 1):
        c = by_id.setdefault(cid, Candidate(cid))
        c.bm25, c.bm25_rank = score, rank
        c.fused += bm25_weight / (rrf_k + rank)
    return sorted(by_id.values(), key=lambda c: (-c.fused, c.best_rank, c.chunk_id))
