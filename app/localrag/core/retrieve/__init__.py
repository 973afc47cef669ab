"""Hybrid retrieval: pgvector nearest neighbours and BM25 inside PostgreSQL, fused by reciprocal rank fusion.

One function serves the chat, the command line and the developer pane::

    from localrag.core.retrieve import retrieve, RetrievalResponse, Result, pack_context, PackedContext

    resp = retrieve(library, query, *, k=None, doc_ids=None, doc_types=None, path_glob=None,
                    added_after=None, added_before=None, mode=None, cancel=None, conn=None)

- ``k`` and ``mode`` (``"hybrid"``, ``"vector"`` or ``"keyword"``) default to ``library.settings``.
- Filters are ANDed; documents are always restricted to searchable ones (``filters.searchable``: ready ones,
  and new ones being indexed, whose passages without a vector yet are marked ``keywords_only``).
  ``path_glob`` is a shell pattern (matched against the file name when it has no slash);
  ``added_after``/``added_before`` take dates, datetimes or ISO strings.
- ``conn``: an open connection the caller owns (used inside a savepoint); else one is opened and closed.
- ``cancel``: a ``CancelToken`` checked between stages; cancelling raises ``Cancelled``.
- An empty or one-character query returns no results at once.
- It never raises for store or model problems: ``resp.reason`` is ``None`` (the results are what matched,
  maybe nothing), ``"model_mismatch"`` (the stored vectors come from another embedding model; results are
  empty until the documents are re-embedded; keyword mode still works) or ``"error"`` (the store or the
  model failed, logged; ``resp.error`` holds a one-line message; results are empty and the caller goes on).

``RetrievalResponse``: ``results`` (at most k ``Result``, best first), ``reason``, ``error``, ``timings``
(milliseconds: ``embed``, ``vector``, ``bm25``, ``fuse``, ``fetch``, ``merge``, ``total``; a stage that did
not run is absent) and ``candidates`` (every fused chunk, best first, with ``passed_floor``; for the developer
pane).

``Result``: ``chunk_ids`` (adjacent chunks of one page merged into one passage, in reading order), ``doc_id``,
``doc_type``, ``title``, ``path``, ``page_number``, ``heading_path``, ``text``, ``similarity`` (cosine, the
best of the merged chunks), ``char_start``, ``char_end``, ``passed_floor``, ``keywords_only`` and ``scores``:
``vector`` (cosine or None), ``bm25`` (score or None), ``vector_rank`` and ``bm25_rank`` (1-based or None),
``fused``.

``pack_context(results, budget_tokens=None, count_tokens=None) -> PackedContext``: numbered blocks
``[1] Title, p. 3 — Heading`` + passage within the budget (default 1,200 tokens, counted by ``count_tokens``,
the LLM's tokenizer when loaded, else characters / 4). ``PackedContext``: ``text``, ``sources`` (``[i]`` is
``sources[i - 1]``), ``used_tokens``, ``dropped`` (``(Result, reason)`` pairs), ``truncated``, ``budget``.

BM25 indexing happens at ingestion: ``bm25.index_document(conn, doc_id)`` and ``bm25.unindex_document``.
"""

from localrag.core.retrieve.filters import Filters
from localrag.core.retrieve.packing import PackedContext, pack_context
from localrag.core.retrieve.results import ERROR, MODEL_MISMATCH, Result, RetrievalResponse
from localrag.core.retrieve.retriever import MODES, Tuning, retrieve

__all__ = [
    "ERROR",
    "MODEL_MISMATCH",
    "MODES",
    "Filters",
    "PackedContext",
    "Result",
    "RetrievalResponse",
    "Tuning",
    "pack_context",
    "retrieve",
]
