"""Retrieval quality on any BEIR-layout folder, measured on a throw-away database.

A BEIR folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (or
``queries_<split>.jsonl``) and ``qrels/<split>.tsv``. Each corpus document becomes one ready document whose
single page is ``title + blank line + text`` with the title as its heading, cut by the ingestion chunker as a
Markdown file would be; the chunks' vectors are cached on disk (keyed by the model and the exact chunk texts),
so a second run does not embed the corpus again. Everything is written with COPY into a fresh embedded
PostgreSQL in a temporary folder, BM25-indexed with the same ``bm25.index_documents`` the ingestion uses, then
queried through ``retrieve`` exactly as the chat queries. A document's rank is the rank of its best passage.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import hashlib
import json
import logging
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from localrag.core import paths
from localrag.core.config import Settings
from localrag.core.embed.onnx_embedder import OnnxEmbedder, load_embedder
from localrag.core.embed.sizing import fit_to_input
from localrag.core.errors import KnownError
from localrag.core.ingest import pieces
from localrag.core.progress import Progress
from localrag.core.retrieve import bm25
from localrag.core.retrieve.retriever import MODES, Tuning, retrieve
from localrag.core.store import db, models
from localrag.core.store.migrate import Migrator
from localrag.core.store.server import EmbeddedServer
from localrag.core.text import identity
from localrag.eval import metrics
from localrag.host import Host

log = logging.getLogger("localrag.eval")

ProgressFn = Callable[[Progress], None]
# Results asked per query: enough passages for Recall@100.
EVAL_K = 100


@dataclass
class BeirDataset:
    name: str
    corpus: list[tuple[str, str, str]]  # (_id, title, text)
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    split: str


@dataclass
class ChunkRow:
    doc: int  # index into the corpus
    chunk_index: int
    page_number: int
    heading_path: str
    text: str
    token_count: int
    char_start: int
    char_end: int
    text_hash: str
    context: str = ""  # what the chunk is searched with besides its text (core/text/identity.py)


def embedding_texts(embedder: OnnxEmbedder, chunks: Sequence[ChunkRow]) -> list[str]:
    """What the embedding model reads for each chunk, as ingestion composes it: context, then text."""
    fit = identity.ContextFitter(embedder)
    return [identity.embedding_text(fit(c.context, c.token_count), c.text) for c in chunks]


@dataclass
class ModeReport:
    metrics: dict[str, float]
    latency_ms: dict[str, float]
    runs: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {**self.metrics, "latency_ms": self.latency_ms}


# -- reading -------------------------------------------------------------------------------------------------


def load_dataset(folder: Path | str, split: str = "test") -> BeirDataset:
    """Read a BEIR folder; only queries judged in ``qrels/<split>.tsv`` are kept.

    Raises:
        KnownError: a file is missing or unreadable.
    """
    folder = Path(folder).expanduser()
    corpus_file = folder / "corpus.jsonl"
    qrels_file = folder / "qrels" / f"{split}.tsv"
    queries_file = folder / f"queries_{split}.jsonl"
    if not queries_file.exists():
        queries_file = folder / "queries.jsonl"
    for needed in (corpus_file, qrels_file, queries_file):
        if not needed.exists():
            raise KnownError(
                f"{folder} is not a BEIR folder with a '{split}' split: {needed.name} is missing."
            )
    corpus = []
    for line in _lines(corpus_file):
        row = json.loads(line)
        corpus.append((str(row["_id"]), str(row.get("title") or ""), str(row.get("text") or "")))
    qrels: dict[str, dict[str, int]] = {}
    with qrels_file.open(encoding="utf-8", newline="") as fh:
        for cells in csv.reader(fh, delimiter="\t"):
            if len(cells) < 3 or not re.fullmatch(r"-?\d+", cells[-1].strip()):
                continue  # the header, or a blank line
            qrels.setdefault(cells[0].strip(), {})[cells[1].strip()] = int(cells[-1])
    queries = {}
    for line in _lines(queries_file):
        row = json.loads(line)
        qid = str(row["_id"])
        if qid in qrels:
            queries[qid] = str(row["text"])
    qrels = {q: rel for q, rel in qrels.items() if q in queries}
    return BeirDataset(folder.resolve().name, corpus, queries, qrels, split)


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield line


# -- chunking and embedding ----------------------------------------------------------------------------------


def page_of(title: str, text: str) -> tuple[str, list[tuple[int, str]]]:
    """A corpus document as one page of text and its headings, as a Markdown file ``# title`` would load."""
    if not title:
        return text, []
    return f"{title}\n\n{text}", [(0, title)]


def chunk_corpus(dataset: BeirDataset, embedder: OnnxEmbedder, settings: Settings) -> list[ChunkRow]:
    """Chunks of every corpus document, sized by the model's tokenizer with the app's chunk settings."""
    try:
        from localrag.core.ingest.chunking import chunk_pages
        from localrag.core.ingest.types import Page
    except ImportError:  # the ingestion package is optional for evaluation
        chunk_pages = None  # type: ignore[assignment]
    rows: list[ChunkRow] = []
    for i, (_id, title, text) in enumerate(dataset.corpus):
        page_text, headings = page_of(title, text)
        if chunk_pages is not None:
            chunks = chunk_pages(
                [Page(1, page_text, headings)],
                embedder,
                max_tokens=settings.chunk_tokens,
                overlap_tokens=settings.chunk_overlap,
                hard_limit=embedder.max_tokens,
            )
            rows += [
                ChunkRow(
                    i,
                    c.chunk_index,
                    c.page_number,
                    c.heading_path or title,
                    c.text,
                    c.token_count,
                    c.char_start,
                    c.char_end,
                    c.text_hash,
                    identity.chunk_context(identity.document_line(title, {}), c.heading_path or title),
                )
                for c in chunks
            ]
        else:
            rows += _sentence_chunks(i, page_text, title, embedder, settings.chunk_tokens)
    return rows


def _sentence_chunks(
    doc: int, text: str, heading: str, embedder: OnnxEmbedder, budget: int
) -> list[ChunkRow]:
    """Whole sentences packed up to ``budget`` tokens (used only without the ingestion chunker)."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S.*?(?:[.!?](?=\s)|$)", text, flags=re.S)]
    out: list[ChunkRow] = []
    start = end = None
    for a, b in spans:
        if start is not None and embedder.count_tokens(text[start:b]) > budget:
            out.append(_row(doc, len(out), heading, text, start, end, embedder))
            start = None
        if start is None:
            start = a
        end = b
    if start is not None:
        out.append(_row(doc, len(out), heading, text, start, end, embedder))
    return out


def _row(doc: int, index: int, heading: str, text: str, a: int, b: Any, embedder: OnnxEmbedder) -> ChunkRow:
    piece = text[a:b]
    return ChunkRow(
        doc,
        index,
        1,
        heading,
        piece,
        embedder.count_tokens(piece),
        a,
        b,
        hashlib.sha256(piece.encode("utf-8")).hexdigest(),
    )


def embed_cached(
    embedder: OnnxEmbedder,
    texts: Sequence[str],
    cache_dir: Path | None = None,
    progress: ProgressFn | None = None,
    label: str = "embedding",
) -> np.ndarray:
    """Vectors of ``texts``, read from the cache when these exact texts were embedded by this model before.

    The cache holds each list embedded (one file, read at once when the same list comes again) and, per model,
    every text's vector by its hash (``texts-*.npz``): when a change reaches a few chunks of a corpus, only
    those are embedded again."""
    digest = hashlib.sha256(embedder.name.encode())
    for t in texts:
        digest.update(b"\x00" + t.encode("utf-8"))
    cache_dir = cache_dir or paths.data_dir() / "cache" / "eval"
    cache = cache_dir / f"{digest.hexdigest()[:24]}.npy"
    if cache.exists():
        vectors = np.load(cache)
        if vectors.shape[0] == len(texts):
            return vectors
    known = _TextVectors(cache_dir / f"texts-{hashlib.sha256(embedder.name.encode()).hexdigest()[:16]}.npz")
    keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
    out = np.empty((len(texts), embedder.dimension), dtype=np.float32)
    todo = [i for i, k in enumerate(keys) if not known.fill(k, out, i)]
    step = 512
    report = Progress(label, len(texts) - len(todo), len(texts), "chunks")
    if progress and len(todo) < len(texts):
        progress(report)
    for start in range(0, len(todo), step):
        part = todo[start : start + step]
        out[part] = embedder.embed(fit_to_input(embedder, [texts[i] for i in part]))
        report.done = len(texts) - len(todo) + min(len(todo), start + step)
        if progress:
            progress(report)
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(cache.stem + ".tmp.npy")
    np.save(tmp, out)
    tmp.replace(cache)
    if todo:
        known.save(keys, out)
    return out


class _TextVectors:
    """One model's cached vectors by text hash (an ``.npz`` of ``keys`` and ``vectors``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.index: dict[str, int] = {}
        self.vectors = np.zeros((0, 0), dtype=np.float32)
        if path.exists():
            with np.load(path) as data:
                self.vectors = data["vectors"]
                self.index = {str(k): i for i, k in enumerate(data["keys"])}

    def fill(self, key: str, out: np.ndarray, row: int) -> bool:
        at = self.index.get(key)
        if at is None or self.vectors.shape[1] != out.shape[1]:
            return False
        out[row] = self.vectors[at]
        return True

    def save(self, keys: list[str], vectors: np.ndarray) -> None:
        """Add these texts' vectors (replacing none already kept) and write the file."""
        new = {k: i for i, k in enumerate(keys) if k not in self.index}
        if not new:
            return
        all_keys = [*self.index, *new]
        stacked = np.vstack([self.vectors.reshape(-1, vectors.shape[1]), vectors[list(new.values())]])
        tmp = self.path.with_name(self.path.stem + ".tmp.npz")
        np.savez(tmp, keys=np.array(all_keys), vectors=stacked)
        tmp.replace(self.path)


# -- the throw-away store ------------------------------------------------------------------------------------


@contextlib.contextmanager
def throwaway_store(root: Path | None = None) -> Iterator[str]:
    """A fresh, migrated embedded PostgreSQL in a temporary folder; stopped and deleted on exit."""
    folder = Path(tempfile.mkdtemp(prefix="lrag-eval-", dir=root))
    try:
        with kept_store(folder) as conninfo:
            yield conninfo
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def kept_store(folder: Path) -> Iterator[str]:
    """An embedded PostgreSQL in ``folder`` (created if need be, migrated), stopped but kept on exit."""
    folder.mkdir(parents=True, exist_ok=True)
    server = EmbeddedServer(folder / "pg")
    try:
        conninfo = server.start()
        with db.connect(conninfo) as conn:
            Migrator(conn).migrate()
        yield conninfo
    finally:
        server.stop()


@contextlib.contextmanager
def server_store(url: str) -> Iterator[str]:
    """A database on a PostgreSQL server by URL (migrated here); left as it is on exit."""
    with db.connect(url) as conn:
        Migrator(conn).migrate()
    yield url


class StoreHandle:
    """What ``retrieve`` needs of a ``Library``, over a store this module owns, with a plain query-vector
    cache."""

    def __init__(self, conninfo: str, embedder: OnnxEmbedder, settings: Settings) -> None:
        self.conninfo = conninfo
        self.embedder = embedder
        self.settings = settings
        self._vectors: dict[str, np.ndarray] = {}
        self.pool = db.ConnectionPool(lambda: self.conninfo)
        self.executor: Executor | None = None  # set by a ``Host`` (the threads of a search's second leg)

    def connect(self, *, autocommit: bool = False) -> psycopg.Connection[Any]:
        return db.connect(self.conninfo, autocommit=autocommit)

    def stand_in(self, conn: psycopg.Connection[Any]) -> OnnxEmbedder | None:
        return None  # one model only

    def embed_query(self, text: str) -> np.ndarray:
        hit = self._vectors.get(text)
        if hit is None:
            hit = self._vectors[text] = self.embedder.embed(fit_to_input(self.embedder, [text]))[0]
        return hit


def bulk_load(
    conn: psycopg.Connection[Any],
    docs: Sequence[tuple[str, str, str, str]],
    chunks: Sequence[ChunkRow],
    vectors: np.ndarray,
    model: str,
    dimension: int,
    *,
    index_bm25: bool = True,
    maintenance_work_mem: str = "1GB",
) -> None:
    """Write ready documents (``(path, title, sha256, doc_type)``), their chunks and vectors with COPY, then
    BM25-index them (unless the caller does) and build the model's HNSW index. Document ids are 1..len(docs),
    chunk ids 1..len(chunks)."""
    counts = np.bincount([c.doc for c in chunks], minlength=len(docs))
    now = dt.datetime.now(dt.timezone.utc)
    with conn.transaction():
        conn.execute(
            "INSERT INTO embedding_models (name, dimension) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (model, dimension),
        )
        conn.execute(f"DROP INDEX IF EXISTS {models.index_name(model)}")
        with conn.cursor().copy(
            "COPY documents (id, path, title, doc_type, sha256, status, pages, chunks_total, "
            "chunks_embedded, created_at, indexed_at) FROM STDIN"
        ) as copy:
            for i, (path, title, sha, doc_type) in enumerate(docs):
                copy.write_row(
                    (i + 1, path, title, doc_type, sha, "ready", 1, int(counts[i]), int(counts[i]), now, now)
                )
        with conn.cursor().copy(
            "COPY document_chunks (id, doc_id, chunk_index, page_number, heading_path, text, token_count, "
            "char_start, char_end, text_hash, context) FROM STDIN"
        ) as copy:
            for j, c in enumerate(chunks):
                copy.write_row(
                    (
                        j + 1,
                        c.doc + 1,
                        c.chunk_index,
                        c.page_number,
                        c.heading_path,
                        c.text,
                        c.token_count,
                        c.char_start,
                        c.char_end,
                        c.text_hash,
                        c.context,
                    )
                )
        with conn.cursor().copy(
            "COPY chunk_embeddings (chunk_id, embedding_model, embedding, context_hash) FROM STDIN WITH "
            "(FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int8", "text", "vector", "text"])
            for j in range(len(chunks)):
                copy.write_row((j + 1, model, vectors[j], identity.context_hash(chunks[j].context)))
        conn.execute("SELECT setval('documents_id_seq', greatest(1, %s))", (len(docs),))
        conn.execute("SELECT setval('document_chunks_id_seq', greatest(1, %s))", (len(chunks),))
    if index_bm25:
        bm25.index_documents(conn, range(1, len(docs) + 1))
    conn.commit()
    if not re.fullmatch(r"\d+[kMG]B", maintenance_work_mem):
        raise ValueError(f"not a memory size: {maintenance_work_mem}")
    conn.execute(f"SET maintenance_work_mem = '{maintenance_work_mem}'")
    models.register_model(conn, model, dimension)
    conn.commit()
    conn.autocommit = True
    try:
        for table in ("documents", "document_chunks", "chunk_embeddings", "bm25_postings", "bm25_terms"):
            conn.execute(f"ANALYZE {table}")
    finally:
        conn.autocommit = False


# -- running -------------------------------------------------------------------------------------------------


class EvalSession:
    """A dataset loaded into a throw-away store, ready to be queried in any mode with any tuning."""

    def __init__(
        self,
        dataset: BeirDataset,
        *,
        embedder: OnnxEmbedder | None = None,
        settings: Settings | None = None,
        cache_dir: Path | None = None,
        progress: ProgressFn | None = None,
    ) -> None:
        self.dataset = dataset
        self.settings = settings or Settings.load()
        self.embedder = embedder or load_embedder(self.settings.embedding_model_dir or None)
        self.cache_dir = cache_dir
        self.progress = progress
        self.chunks: list[ChunkRow] = []
        self.embed_ms: list[float] = []
        self._stack = contextlib.ExitStack()
        self.handle: StoreHandle | None = None
        self.conn: psycopg.Connection[Any] | None = None

    def __enter__(self) -> EvalSession:
        try:
            self._load()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _load(self) -> None:
        ds, emb = self.dataset, self.embedder
        self._say(f"chunking {len(ds.corpus)} documents")
        self.chunks = chunk_corpus(ds, emb, self.settings)
        vectors = embed_cached(emb, embedding_texts(emb, self.chunks), self.cache_dir, self.progress)
        conninfo = self._stack.enter_context(throwaway_store())
        self.conn = self._stack.enter_context(db.connect(conninfo))
        self._say(f"loading {len(ds.corpus)} documents, {len(self.chunks)} chunks")
        docs = [
            (
                f"{ds.name}/{_id}",
                title or _id,
                hashlib.sha256(f"{_id}\x00{text}".encode()).hexdigest(),
                "text",
            )
            for _id, title, text in ds.corpus
        ]
        bulk_load(self.conn, docs, self.chunks, vectors, emb.name, emb.dimension)
        if self.settings.piece_weight > 0:
            self._load_pieces()
        self.handle = StoreHandle(conninfo, emb, self.settings)
        self._stack.enter_context(Host(self.handle))
        for text in ds.queries.values():  # query vectors once, timed, so every mode pays the same
            t = time.perf_counter()
            self.handle.embed_query(text)
            self.embed_ms.append((time.perf_counter() - t) * 1000)

    def _load_pieces(self) -> None:
        """The chunks' pieces (``core/ingest/pieces.py``) as ingestion embeds them, their vectors cached."""
        assert self.conn is not None
        emb = self.embedder
        count = pieces.token_counter(emb)
        rows: list[tuple[int, int]] = []
        texts: list[str] = []
        for j, c in enumerate(self.chunks):
            for n, piece in enumerate(pieces.piece_texts(c.text, count)):
                rows.append((j + 1, n))
                texts.append(piece)
        self._say(f"embedding {len(texts)} pieces of {len(self.chunks)} chunks")
        vectors = embed_cached(emb, texts, self.cache_dir, self.progress)
        pieces.write(self.conn, emb.name, rows, vectors)
        self.conn.commit()
        self.conn.autocommit = True
        try:
            self.conn.execute("ANALYZE chunk_piece_embeddings")
        finally:
            self.conn.autocommit = False

    def _say(self, label: str) -> None:
        if self.progress:
            self.progress(Progress(label))

    def run(self, mode: str, tuning: Tuning | None = None, k: int = EVAL_K) -> ModeReport:
        """Every judged query in ``mode``; metrics and the latency of ``retrieve`` (query vectors cached)."""
        assert self.handle is not None and self.conn is not None
        tuning = tuning or Tuning.from_settings(self.settings)
        ids = [c[0] for c in self.dataset.corpus]
        runs: dict[str, list[str]] = {}
        latency = []
        for qid, text in self.dataset.queries.items():
            t = time.perf_counter()
            resp = retrieve(self.handle, text, k=k, mode=mode, conn=self.conn, tuning=tuning)
            latency.append((time.perf_counter() - t) * 1000)
            if resp.reason:
                raise KnownError(f"retrieval failed during evaluation: {resp.error or resp.reason}")
            ranked: list[str] = []
            for r in resp.results:
                doc = ids[r.doc_id - 1]
                if doc not in ranked:
                    ranked.append(doc)
            runs[qid] = ranked
            self.conn.commit()
        return ModeReport(metrics.summarize(runs, self.dataset.qrels), metrics.percentiles(latency), runs)


def evaluate(
    folder: Path | str,
    *,
    split: str = "test",
    modes: Sequence[str] = MODES,
    tuning: Tuning | None = None,
    embedder: OnnxEmbedder | None = None,
    settings: Settings | None = None,
    cache_dir: Path | None = None,
    progress: ProgressFn | None = None,
) -> dict[str, Any]:
    """Index ``folder``'s corpus into a throw-away database, run its ``split`` queries in each mode, and
    report ``{"dataset", "split", "queries", "documents", "chunks", "model", "modes": {mode: {"ndcg@10",
    "recall@10", "recall@100", "mrr@10", "latency_ms": {"p50", "p95"}}}, "embed_query_ms", "tuning"}``."""
    dataset = load_dataset(folder, split)
    with EvalSession(
        dataset, embedder=embedder, settings=settings, cache_dir=cache_dir, progress=progress
    ) as session:
        tuning = tuning or Tuning.from_settings(session.settings)
        reports = {}
        for mode in modes:
            if progress:
                progress(Progress(f"{mode}: {len(dataset.queries)} queries"))
            reports[mode] = session.run(mode, tuning).to_dict()
        return {
            "dataset": dataset.name,
            "split": split,
            "queries": len(dataset.queries),
            "documents": len(dataset.corpus),
            "chunks": len(session.chunks),
            "model": session.embedder.name,
            "modes": reports,
            "embed_query_ms": metrics.percentiles(session.embed_ms),
            "tuning": {k: v for k, v in asdict(tuning).items() if k not in ("k", "mode")},
        }
