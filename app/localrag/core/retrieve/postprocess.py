"""After fusion: the relevance floor, merging adjacent chunks into spans, and dropping repeated text."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from localrag.core.retrieve.results import Result


def passes_floor(result: Result, floor: float) -> bool:
    """Whether a candidate is relevant enough to return.

    RRF scores are rank-based (a first place is worth ``1 / (rrf_k + 1)`` whatever the query), so a floor on
    them says nothing about relevance. The floor is on the cosine similarity, which is absolute, and any chunk
    the BM25 leg found passes: it shares a query term, which is evidence of its own (an error code, a name, a
    number that the embedding does not capture).
    """
    return result.scores.get("bm25_rank") is not None or result.similarity >= floor


def merge_and_dedupe(ranked: Iterable[Result], k: int) -> list[Result]:
    """The best ``k`` passages from candidates that passed the floor, best first.

    Candidates are taken in rank order. One whose text repeats an earlier one (same ``text_hash``) is skipped.
    One that continues a passage already taken (same document and page, the next or previous chunk index)
    joins it, and joins two passages it bridges; it does not count toward ``k``. The scan stops at the first
    candidate that would start a passage beyond ``k``.
    """
    groups: list[list[Result]] = []
    seen: set[str] = set()
    for r in ranked:
        if r.text_hash:
            if r.text_hash in seen:
                continue
            seen.add(r.text_hash)
        touching = [g for g in groups if _adjacent(g, r)]
        if touching:
            first = touching[0]
            first.append(r)
            for other in touching[1:]:
                first.extend(other)
                groups.remove(other)
        elif len(groups) < k:
            groups.append([r])
        else:
            break
    return [merge(g) for g in groups]


def _adjacent(group: list[Result], r: Result) -> bool:
    head = group[0]
    if head.doc_id != r.doc_id or head.page_number != r.page_number:
        return False
    indexes = [m.chunk_index for m in group]
    return r.chunk_index in (min(indexes) - 1, max(indexes) + 1)


def merge(members: list[Result]) -> Result:
    """One passage from chunks of one page: text joined in reading order without repeating their overlap."""
    if len(members) == 1:
        return members[0]
    best = max(members, key=lambda m: m.scores.get("fused", 0.0))
    parts = sorted(members, key=lambda m: m.chunk_index)
    text, end = parts[0].text, parts[0].char_end
    exact = _offsets_exact(parts[0])
    for m in parts[1:]:
        if exact and _offsets_exact(m) and m.char_start < end:
            text += m.text[end - m.char_start :]
        elif exact and _offsets_exact(m) and m.char_start == end:
            text += m.text
        else:
            text += "\n" + m.text
        end = max(end, m.char_end)
    scores = dict(best.scores)
    for key in ("vector", "bm25", "fused"):
        values = [m.scores[key] for m in members if m.scores.get(key) is not None]
        scores[key] = max(values) if values else None
    for key in ("vector_rank", "bm25_rank"):
        ranks = [m.scores[key] for m in members if m.scores.get(key) is not None]
        scores[key] = min(ranks) if ranks else None
    return Result(
        chunk_ids=[cid for m in parts for cid in m.chunk_ids],
        doc_id=best.doc_id,
        doc_type=best.doc_type,
        title=best.title,
        path=best.path,
        page_number=best.page_number,
        heading_path=next((m.heading_path for m in parts if m.heading_path), ""),
        text=text,
        similarity=max(m.similarity for m in members),
        char_start=min(m.char_start for m in parts),
        char_end=max(m.char_end for m in parts),
        passed_floor=all(m.passed_floor for m in members),
        scores=scores,
        chunk_index=parts[0].chunk_index,
        text_hash=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        context=best.context,
        domain=best.domain,
        page_label=best.page_label,
        keywords_only=all(m.keywords_only for m in members),
    )


def _offsets_exact(r: Result) -> bool:
    return r.char_end - r.char_start == len(r.text)
