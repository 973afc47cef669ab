"""What retrieval returns: passages (``Result``) and the response around them (``RetrievalResponse``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

# Why a response is empty when it is not simply "nothing matched".
MODEL_MISMATCH = "model_mismatch"

# SQL: the label of chunk ``c``'s page in its document ``d`` when it differs from the page's number, else ''.
PAGE_LABEL = "coalesce(d.meta->'page_labels'->>c.page_number::text, '')"
ERROR = "error"


def page_phrase(page_number: int, page_label: str = "", word: str = "p.") -> str:
    """How a person is told a page: "p. 33 (PDF page 39)" when the page prints another number than its place
    in the file (a PDF's page labels), else "p. 39". The viewer opens the page by ``page_number``."""
    if page_label and page_label != str(page_number):
        return f"{word} {page_label} (PDF page {page_number})"
    return f"{word} {page_number}"


@dataclass
class Result:
    """One passage: a chunk, or adjacent chunks of one page merged into a span.

    Attributes:
        chunk_ids: the chunks the passage is made of, in reading order.
        similarity: cosine similarity of the query vector and the passage (the best of its chunks);
            0.0 when no vector was compared (keyword mode).
        passed_floor: whether the passage cleared the relevance floor (see ``postprocess.passes_floor``).
        scores: ``vector`` (cosine similarity or None), ``bm25`` (score or None), ``vector_rank`` and
            ``bm25_rank`` (1-based rank in each list, None when absent from it), ``fused`` (RRF score),
            ``rescore`` (the score the first candidates were ranked again by, ``rescore.py``).
    """

    chunk_ids: list[int]
    doc_id: int
    doc_type: str
    title: str
    path: str
    page_number: int
    heading_path: str
    text: str
    similarity: float
    char_start: int = 0
    char_end: int = 0
    passed_floor: bool = True
    scores: dict[str, Any] = field(default_factory=dict)
    chunk_index: int = 0
    text_hash: str = ""
    context: str = ""  # what the passage was searched with besides its text: its document's line, its heading
    domain: str = ""  # the domain pack that acts on its document ('' for none; ``core/hooks.py``)
    page_label: str = ""  # the number printed on its page when that is not ``page_number`` (a PDF's labels)
    keywords_only: bool = False  # its document is still being embedded and it has no vector yet

    @property
    def file_name(self) -> str:
        return os.path.basename(self.path.replace("\\", "/")) or self.title

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (the CLI's ``--json`` and the developer pane)."""
        return {
            "chunk_ids": list(self.chunk_ids),
            "doc_id": self.doc_id,
            "doc_type": self.doc_type,
            "title": self.title,
            "path": self.path,
            "file_name": self.file_name,
            "page_number": self.page_number,
            "page_label": self.page_label,
            "heading_path": self.heading_path,
            "context": self.context,
            "domain": self.domain,
            "char_start": self.char_start,
            "char_end": self.char_end,
            "similarity": round(self.similarity, 6),
            "passed_floor": self.passed_floor,
            "keywords_only": self.keywords_only,
            "scores": {k: (round(v, 6) if isinstance(v, float) else v) for k, v in self.scores.items()},
            "text": self.text,
        }


@dataclass
class RetrievalResponse:
    """The passages for one query, or why there are none.

    Attributes:
        results: at most k passages, best first.
        reason: ``None`` (the results are what matched, possibly nothing), ``"model_mismatch"`` (the stored
            vectors come from another embedding model: re-embed), or ``"error"`` (the store or the model
            failed; ``error`` says how).
        timings: milliseconds per stage: ``embed``, ``vector``, ``bm25``, ``fuse``, ``fetch``, ``merge``,
            ``total``.
        candidates: every fused candidate chunk, best first, including those under the floor
            (``passed_floor`` says which), for the developer pane.
        routing: which documents were searched first and why (``routing.Route.to_dict``).
        stand_in: the previous embedding model, when its vectors answered for chunks that have none from the
            active model yet (a re-embedding after a switch of models is under way); else "".
        busy: the error is that every connection stayed in use (``StoreBusy``): worth trying again soon.
    """

    results: list[Result] = field(default_factory=list)
    reason: str | None = None
    error: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    candidates: list[Result] = field(default_factory=list)
    mode: str = "hybrid"
    query: str = ""
    routing: dict[str, Any] = field(default_factory=dict)
    stand_in: str = ""
    busy: bool = False

    @property
    def chunk_ids(self) -> list[int]:
        return [cid for r in self.results for cid in r.chunk_ids]

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "reason": self.reason,
            "error": self.error,
            "routing": self.routing,
            "stand_in": self.stand_in,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "results": [r.to_dict() for r in self.results],
        }
