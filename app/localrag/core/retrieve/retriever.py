"""``retrieve``: query → (embed → vector top-N) ∥ BM25 top-N → RRF → floor → merge → dedupe → top k."""

from __future__ import annotations

import contextlib
import itertools
import logging
import re
import time
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import psycopg

from localrag.core import hooks
from localrag.core.embed.sizing import fit_to_input
from localrag.core.errors import KnownError, StoreBusy, as_known
from localrag.core.progress import CancelToken
from localrag.core.retrieve import bm25, fuse, postprocess, rescore, routing, vector
from localrag.core.retrieve.filters import DateLike, Filters, searchable
from localrag.core.retrieve.results import ERROR, MODEL_MISMATCH, PAGE_LABEL, Result, RetrievalResponse
from localrag.core.store.db import SHOWN_TITLE

if TYPE_CHECKING:
    from collections.abc import Iterable

    from localrag.core.config import Settings
    from localrag.core.embed.onnx_embedder import OnnxEmbedder
    from localrag.core.store.db import ConnectionPool

log = logging.getLogger("localrag.retrieve")


class Searchable(Protocol):
    """What ``retrieve`` needs of a ``Library`` (the evaluation's ``StoreHandle`` is the other one)."""

    @property
    def settings(self) -> Settings: ...
    @property
    def pool(self) -> ConnectionPool: ...
    @property
    def embedder(self) -> OnnxEmbedder: ...
    def embed_query(self, text: str) -> np.ndarray: ...
    def stand_in(self, conn: psycopg.Connection[Any]) -> OnnxEmbedder | None: ...


MODES = ("hybrid", "vector", "keyword")
# Chunks each leg contributes to fusion (at least k).
DEFAULT_DEPTH = 50
# A query shorter than this many letters or digits returns nothing at once.
MIN_QUERY_CHARS = 2
# How long a hybrid query's BM25 leg waits for a second connection before running on the first one.
LEG_WAIT_S = 0.05
# A retrieval that waits on a stuck store gives up rather than hang the chat.
STATEMENT_TIMEOUT_MS = 15_000


@dataclass
class Tuning:
    """The knobs of one retrieval, from ``Settings`` (eval and bench vary them directly)."""

    k: int = 8
    mode: str = "hybrid"
    floor: float = 0.25
    rrf_k: float = 10.0
    vector_weight: float = 1.0
    bm25_weight: float = 1.0
    ef_search: int = 100
    depth: int = DEFAULT_DEPTH
    bm25_k1: float = bm25.DEFAULT_K1
    bm25_b: float = bm25.DEFAULT_B
    route: bool = True
    rescore_top: int = 30
    # How much a chunk's best piece (a few of its sentences, ``core/ingest/pieces.py``) counts beside the
    # chunk's own cosine in the vector leg; 0 ranks chunks by their own vectors only.
    pieces: float = 0.5
    # Whether the domain packs acting on the best passages' documents may put pages first (``core/hooks.py``).
    packs: bool = True
    # Chosen on near-identical reports and the manuals (docs/benchmarks.md): the heading, the verbatim numbers
    # and rows of figures for a question asking for a quantity moved the first places; the others did not.
    rescore: rescore.Weights = field(
        default_factory=lambda: rescore.Weights(heading=0.3, exact=0.2, table=0.5)
    )

    @classmethod
    def from_settings(cls, settings: Settings) -> Tuning:
        return cls(
            k=int(settings.k),
            mode=str(settings.mode),
            floor=float(settings.floor),
            rrf_k=float(settings.rrf_k),
            vector_weight=float(settings.vector_weight),
            bm25_weight=float(settings.bm25_weight),
            ef_search=int(settings.ef_search),
            depth=int(settings.retrieval_depth),
            bm25_k1=float(settings.bm25_k1),
            bm25_b=float(settings.bm25_b),
            route=bool(getattr(settings, "routing", True)),
            pieces=float(getattr(settings, "piece_weight", 0.5)),
            packs=bool(getattr(settings, "domain_packs", True)),
        )


def retrieve(
    library: Searchable,
    query: str,
    *,
    k: int | None = None,
    doc_ids: Iterable[int] | None = None,
    doc_types: Iterable[str] | str | None = None,
    path_glob: str | None = None,
    added_after: DateLike | None = None,
    added_before: DateLike | None = None,
    collection: int | None = None,
    mode: str | None = None,
    cancel: CancelToken | None = None,
    conn: psycopg.Connection[Any] | None = None,
    tuning: Tuning | None = None,
    route: bool | None = None,
) -> RetrievalResponse:
    """The best ``k`` passages for ``query``; see the package docstring for the contract.

    An environment problem (the store down or out of space, a statement that ran too long) is answered with
    ``reason`` ``error`` and its message: the chat then answers without the documents and says why. Anything
    else is a bug and is raised.

    ``route``: whether a question that names documents of the library searches them first (``routing``;
    default: the ``routing`` setting). A search with a filter is never routed. ``resp.routing`` says what was
    decided and why. ``collection``: only the documents of that collection (its id).

    Raises:
        Cancelled: ``cancel`` was cancelled between two stages.
        ValueError: an unknown ``mode`` (a bug in the caller).
    """
    started = time.perf_counter()
    tuning = tuning or Tuning.from_settings(library.settings)
    k = int(k or tuning.k)
    mode = (mode or tuning.mode).lower()
    if mode not in MODES:
        raise ValueError(f"unknown retrieval mode {mode!r}; use one of {', '.join(MODES)}")
    resp = RetrievalResponse(mode=mode, query=query)
    text = (query or "").strip()
    if sum(ch.isalnum() for ch in text) < MIN_QUERY_CHARS or k <= 0:
        resp.timings["total"] = _ms(started)
        return resp
    filters = Filters.build(doc_ids, doc_types, path_glob, added_after, added_before, collection)
    try:
        decision = _route(library, text, filters, tuning if route is None else route, conn)
        resp.routing = decision.to_dict()
        if decision.doc_ids:
            routed = Filters.build(decision.doc_ids)
            _run(library, text, k, mode, routed, tuning, cancel, conn, resp)

            if len(resp.results) < k and resp.reason is None:
                # Too few passages in the documents named: the rest of the library fills the list.
                rest = RetrievalResponse(mode=mode, query=query)
                _run(library, text, k, mode, filters, tuning, cancel, conn, rest)
                taken = set(decision.doc_ids)
                more = [r for r in rest.results if r.doc_id not in taken][: k - len(resp.results)]
                resp.results += more
                resp.candidates += [r for r in rest.candidates if r.doc_id not in taken]
                resp.routing["filled_from_library"] = len(more)
                for key, value in rest.timings.items():
                    resp.timings[key] = resp.timings.get(key, 0.0) + value
        else:
            _run(library, text, k, mode, filters, tuning, cancel, conn, resp)
        if routing.asks_for_contents(text) and resp.results and resp.reason is None:
            # The documents named, or else the one the best passage is in.
            _contents_first(library, decision.doc_ids or [resp.results[0].doc_id], conn, resp, k)
        elif tuning.packs and resp.results and resp.reason is None:
            docs = list(dict.fromkeys((r.doc_id, r.domain) for r in resp.results))
            if any(domain for _, domain in docs):
                _pages_first(library, docs, text, conn, resp, k)
    except Exception as exc:
        known = as_known(exc)
        if known is None:
            raise  # a bug: the caller logs it with its traceback and says "internal error"
        log.warning("retrieval failed, answering without sources: %s", known.message)
        resp.results, resp.candidates = [], []
        resp.reason, resp.error = ERROR, _one_line(exc)
        resp.busy = isinstance(known, StoreBusy)
    resp.timings["total"] = _ms(started)
    return resp


def _run(
    library: Searchable,
    text: str,
    k: int,
    mode: str,
    filters: Filters,
    tuning: Tuning,
    cancel: CancelToken | None,
    conn: psycopg.Connection[Any] | None,
    resp: RetrievalResponse,
) -> None:
    timings = resp.timings
    depth = max(tuning.depth, k)
    # A hybrid query runs its BM25 leg on a second connection, on a thread of the host's executor, while this
    # thread embeds the query and runs the vector leg: the legs take max(BM25, embed + vector) instead of
    # their sum. Without an executor (or one shutting down) BM25 runs after the vector leg, on its connection.
    lexical: Future[list[tuple[int, float]] | None] | None = None
    executor: Executor | None = getattr(library, "executor", None)
    if mode == "hybrid" and executor is not None:
        with contextlib.suppress(RuntimeError):  # the host is closing: BM25 runs on this thread
            lexical = executor.submit(_bm25_leg, library, text, depth, filters, tuning, timings)
    try:
        qvec: np.ndarray | None = None
        model, dim = "", 0
        if mode != "keyword":
            t = time.perf_counter()
            embedder = library.embedder
            model, dim = embedder.name, embedder.dimension
            qvec = library.embed_query(fit_to_input(embedder, [text])[0])
            timings["embed"] = _ms(t)
        if cancel is not None:
            cancel.raise_if_cancelled()
        with contextlib.ExitStack() as stack:
            c = conn if conn is not None else stack.enter_context(library.pool.connection())
            with c.transaction():
                _limit_statement_time(c)
                vector_hits: list[tuple[int, float]] = []
                if qvec is not None:
                    t = time.perf_counter()
                    vector_hits = vector.search(
                        c,
                        qvec,
                        model=model,
                        dimension=dim,
                        n=depth,
                        filters=filters,
                        ef_search=tuning.ef_search,
                    )
                    if tuning.pieces > 0:
                        vector_hits = vector.with_pieces(
                            c,
                            qvec,
                            vector_hits,
                            model=model,
                            dimension=dim,
                            n=depth,
                            filters=filters,
                            weight=tuning.pieces,
                        )
                    timings["vector"] = _ms(t)
                    older = library.stand_in(c)
                    if older is not None:
                        # Re-embedding with a new model: the previous model answers for the chunks that have
                        # no new vector yet (each chunk is found by one model only).
                        t = time.perf_counter()
                        older_hits = vector.search(
                            c,
                            older.embed(fit_to_input(older, [text]))[0],
                            model=older.name,
                            dimension=older.dimension,
                            n=depth,
                            filters=filters,
                            ef_search=tuning.ef_search,
                            lacking=model,
                        )
                        vector_hits = _interleave(vector_hits, older_hits, depth)
                        resp.stand_in = older.name
                        timings["vector_stand_in"] = _ms(t)
                    if not vector_hits and vector.model_mismatch(c, model):
                        resp.reason = MODEL_MISMATCH
                        resp.error = (
                            f"The stored vectors were made by another embedding model than {model}; "
                            "re-embed the documents to search them."
                        )
                        return
                if cancel is not None:
                    cancel.raise_if_cancelled()
                bm25_hits: list[tuple[int, float]] | None = [] if mode == "vector" else None
                if lexical is not None:
                    bm25_hits, lexical = lexical.result(), None
                if bm25_hits is None:
                    t = time.perf_counter()
                    bm25_hits = bm25.search(
                        c, text, n=depth, filters=filters, k1=tuning.bm25_k1, b=tuning.bm25_b
                    )
                    timings["bm25"] = _ms(t)
                t = time.perf_counter()
                fused = fuse.rrf(
                    vector_hits,
                    bm25_hits or [],
                    rrf_k=tuning.rrf_k,
                    vector_weight=tuning.vector_weight if mode != "keyword" else 0.0,
                    bm25_weight=tuning.bm25_weight if mode != "vector" else 0.0,
                )
                timings["fuse"] = _ms(t)
                t = time.perf_counter()
                rows = _fetch(
                    c,
                    [f.chunk_id for f in fused],
                    model,
                    dim,
                    qvec,
                    [f.chunk_id for f in fused if f.vector is None],
                )
                timings["fetch"] = _ms(t)
    finally:
        if lexical is not None:  # never leave the other leg running on a borrowed connection
            with contextlib.suppress(Exception):
                lexical.result()
    t = time.perf_counter()
    candidates = []
    for f in fused:
        row = rows.get(f.chunk_id)
        if row is None:  # its document stopped being searchable since the search
            continue
        r = _result(row, f)
        r.passed_floor = postprocess.passes_floor(r, tuning.floor)
        candidates.append(r)
    candidates = rescore.rescore(text, candidates, tuning.rescore, tuning.rescore_top)
    resp.candidates = candidates
    resp.results = postprocess.merge_and_dedupe((r for r in candidates if r.passed_floor), k)
    timings["merge"] = _ms(t)


def _route(
    library: Searchable,
    text: str,
    filters: Filters,
    setting: Tuning | bool,
    conn: psycopg.Connection[Any] | None,
) -> routing.Route:
    enabled = setting.route if isinstance(setting, Tuning) else bool(setting)
    if filters.active:
        return routing.Route(routing.FILTERED, reason="a filter was given: it decides which documents")
    if not enabled:
        return routing.Route(routing.OFF, reason="routing is off")
    cache = routing.identities_for(library.pool)
    if conn is not None:
        with conn.transaction():
            cache.load(conn)
    else:
        with library.pool.connection() as c, c.transaction():
            cache.load(c)
    return routing.route(cache, text)


# A table of contents: many lines that end in a page number (or dot leaders), in a document's first pages.
_TOC_LINES = r"(\.\s?){3,}\s*\d+|[^\n]\s\d{1,4}[ \t]*(\n|$)"
TOC_MIN_LINES = 3
TOC_PAGES = 20


def _contents_first(
    library: Searchable,
    doc_ids: list[int],
    conn: psycopg.Connection[Any] | None,
    resp: RetrievalResponse,
    k: int,
) -> None:
    """Put the table of contents of the documents a whole-document question is about first (the first chunk of
    their first pages with at least ``TOC_MIN_LINES`` lines that end in a page number)."""
    with contextlib.ExitStack() as stack:
        c = conn if conn is not None else stack.enter_context(library.pool.connection())
        with c.transaction():
            found = c.execute(
                "SELECT DISTINCT ON (c.doc_id) c.id FROM document_chunks c"
                " WHERE c.doc_id = ANY(%s) AND c.page_number <= %s"
                " AND regexp_count(c.text, %s) >= %s"
                " ORDER BY c.doc_id, c.chunk_index",
                (doc_ids[:3], TOC_PAGES, _TOC_LINES, TOC_MIN_LINES),
            ).fetchall()
            rows = _fetch(c, [int(r[0]) for r in found], "", 0, None)
    firsts = [_result(row, fuse.Candidate(int(cid))) for cid, row in rows.items()]
    if not firsts:
        return
    taken = {cid for r in firsts for cid in r.chunk_ids}
    rest = [r for r in resp.results if not taken.intersection(r.chunk_ids)]
    resp.results = (firsts + rest)[:k]
    resp.routing["contents_first"] = [r.chunk_ids[0] for r in firsts]


def _pages_first(
    library: Searchable,
    documents: list[tuple[int, str]],
    question: str,
    conn: psycopg.Connection[Any] | None,
    resp: RetrievalResponse,
    k: int,
) -> None:
    """Put first the pages the domain packs acting on the best passages' documents (``documents``:
    ``(doc_id, domain)``, best first) say answer the question (``hooks.pages_first``: a company's balance
    sheet for "quick ratio"): of each page, the passage holding most of the lines the pack names, then most
    of the question's words, then the one ranked best. ``resp.routing["pages_first"]`` says which pack put
    which page first, and why."""
    t = time.perf_counter()
    firsts: list[tuple[Result, hooks.PinnedPage]] = []
    qvec, model, dim = None, "", 0
    with contextlib.ExitStack() as stack:
        c = conn if conn is not None else stack.enter_context(library.pool.connection())
        with c.transaction():
            _limit_statement_time(c)
            pinned = hooks.pages_first(c, question, documents)
            if pinned and resp.mode != "keyword":  # the page's passages are shown with their similarity
                embedder = library.embedder
                qvec, model, dim = (
                    library.embed_query(fit_to_input(embedder, [question])[0]),
                    embedder.name,
                    embedder.dimension,
                )
            known = {r.chunk_ids[0]: r for r in resp.candidates}
            rank = {cid: i for i, cid in enumerate(known)}
            terms = set(rescore.stems_of(question))
            for pin in pinned:
                ids = [
                    int(row[0])
                    for row in c.execute(
                        "SELECT id FROM document_chunks WHERE doc_id = %s AND page_number = %s"
                        " ORDER BY chunk_index",
                        (pin.doc_id, pin.page),
                    ).fetchall()
                ]
                rows = _fetch(c, [i for i in ids if i not in known], model, dim, qvec, ids)
                on_page = [
                    known.get(i) or _result(rows[i], fuse.Candidate(i))
                    for i in ids
                    if i in known or i in rows
                ]

                def fit(r: Result, lines: str = pin.lines) -> tuple[int, int, int]:
                    found = sum(1 for _ in re.finditer(lines, r.text, re.IGNORECASE)) if lines else 0
                    words = len(terms.intersection(rescore.stems_of(r.text)))
                    return found, words, -rank.get(r.chunk_ids[0], len(rank))

                if on_page:
                    best = max(on_page, key=fit)
                    best.scores["pinned"] = pin.label
                    firsts.append((best, pin))
            evidence = dict(
                c.execute(
                    "SELECT id, coalesce(meta->'sources'->>'domain', '') FROM documents WHERE id = ANY(%s)",
                    ([r.doc_id for r, _ in firsts],),
                ).fetchall()
            )
    if not firsts:
        return
    taken = {cid for r, _ in firsts for cid in r.chunk_ids}
    rest = [r for r in resp.results if not taken.intersection(r.chunk_ids)]
    resp.results = ([r for r, _ in firsts] + rest)[:k]
    resp.routing["pages_first"] = [
        {
            "pack": pin.pack,
            "label": pin.label,
            "why": pin.why,
            "evidence": evidence.get(r.doc_id, ""),  # why the pack acts on the document (found at ingest)
            "doc_id": r.doc_id,
            "page": r.page_number,
            "chunk": r.chunk_ids[0],
        }
        for r, pin in firsts
    ]
    resp.timings["pages_first"] = _ms(t)


def _bm25_leg(
    library: Searchable, text: str, depth: int, filters: Filters, tuning: Tuning, timings: dict[str, float]
) -> list[tuple[int, float]] | None:
    """The BM25 hits on a second connection, or None when none is free at once: the vector leg's connection
    then runs BM25 after it (a search that held one connection while waiting for another could wait for
    ever under load, each holding what another waits for)."""
    t = time.perf_counter()
    try:
        with library.pool.connection(wait_s=LEG_WAIT_S) as c, c.transaction():
            _limit_statement_time(c)
            hits = bm25.search(c, text, n=depth, filters=filters, k1=tuning.bm25_k1, b=tuning.bm25_b)
    except StoreBusy:
        return None
    timings["bm25"] = _ms(t)
    return hits


def _limit_statement_time(conn: psycopg.Connection[Any]) -> None:
    conn.execute("SELECT set_config('statement_timeout', %s, true)", (str(STATEMENT_TIMEOUT_MS),))


def _interleave(
    first: list[tuple[int, float]], second: list[tuple[int, float]], n: int
) -> list[tuple[int, float]]:
    """Two models' nearest chunks as one list, taking turns (their similarities are not comparable)."""
    out: list[tuple[int, float]] = []
    for pair in itertools.zip_longest(first, second):
        out.extend(hit for hit in pair if hit is not None)
    return out[:n]


def _fetch(
    conn: psycopg.Connection[Any],
    ids: list[int],
    model: str,
    dim: int,
    qvec: np.ndarray | None,
    similarity_for: list[int] | None = None,
) -> dict[int, tuple]:
    """The chunks ``ids`` of searchable documents; the query's cosine similarity is computed for
    ``similarity_for`` (the chunks only the BM25 leg found: the vector leg's own come with theirs), so that a
    large library reads the stored vectors of a few chunks only. The last column says whether a chunk of a
    document still being indexed has no vector yet (it can be found by keywords only)."""
    if not ids:
        return {}
    params: dict[str, Any] = {"ids": ids}
    sim = "NULL::float8"
    if qvec is not None and similarity_for:
        sim = (
            f"CASE WHEN c.id = ANY(%(sim_ids)s) THEN (SELECT 1.0 - (e.embedding::vector({int(dim)}) <=>"
            f" %(q)s::vector({int(dim)})) FROM chunk_embeddings e WHERE e.chunk_id = c.id"
            " AND e.embedding_model = %(model)s) END"
        )
        params.update(q=np.asarray(qvec, dtype=np.float32), model=model, sim_ids=similarity_for)
    rows = conn.execute(
        f"SELECT c.id, c.doc_id, d.doc_type, {SHOWN_TITLE}, d.path, c.page_number, c.chunk_index,"
        f" c.heading_path, c.text, c.char_start, c.char_end, c.text_hash, {sim}, c.context,"
        f" coalesce(d.meta->>'domain', ''), {PAGE_LABEL},"
        " d.status <> 'ready' AND NOT EXISTS (SELECT 1 FROM chunk_embeddings e WHERE e.chunk_id = c.id)"
        " FROM document_chunks c"
        " JOIN documents d ON d.id = c.doc_id"
        f" WHERE c.id = ANY(%(ids)s) AND {searchable('d')}",
        params,
    ).fetchall()
    return {int(r[0]): r for r in rows}


def _result(row: tuple, f: fuse.Candidate) -> Result:
    (
        cid,
        doc_id,
        doc_type,
        title,
        path,
        page,
        index,
        heading,
        text,
        start,
        end,
        text_hash,
        sim,
        context,
        domain,
        page_label,
        keywords_only,
    ) = row
    similarity = float(sim) if sim is not None else (f.vector if f.vector is not None else None)
    return Result(
        chunk_ids=[int(cid)],
        doc_id=int(doc_id),
        doc_type=doc_type,
        title=title,
        path=path,
        page_number=int(page),
        heading_path=heading,
        text=text,
        similarity=similarity if similarity is not None else 0.0,
        char_start=int(start),
        char_end=int(end),
        scores={
            "vector": similarity,
            "bm25": f.bm25,
            "vector_rank": f.vector_rank,
            "bm25_rank": f.bm25_rank,
            "fused": f.fused,
        },
        chunk_index=int(index),
        text_hash=text_hash,
        context=context or "",
        domain="" if domain == hooks.NO_DOMAIN else str(domain or ""),
        page_label=str(page_label or ""),
        keywords_only=bool(keywords_only),
    )


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, KnownError):
        return exc.message
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0
