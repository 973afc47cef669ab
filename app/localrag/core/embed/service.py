"""One embedding worker for the whole process: it owns the model and serves queries ahead of ingestion.

``EmbeddingService`` starts no thread. Its host runs two blocking loops on threads it owns (the GUI on its
``WorkerThread``s; the command line and the API server with ``host.embedding.embedding_service``):
``run``, which loads the model and embeds ingestion batches, and ``serve_queries``, the query lane: a second
session of the same model with one thread, so a question asked during a long ingest is embedded at once
instead of waiting for the batch in hand (p95 1.35 s → see docs/benchmarks.md). Until the lane is open, or
should its session fail to open, queries go through the priority queue: a query (priority 0) is taken before
any queued ingestion batch (priority 1), and an ingestion batch is embedded a slice at a time with waiting
queries served between slices.
``stop`` ends both loops within one slice; ``last_beat`` is the watchdog's ping.

The model's own session looks at the machine's load between slices and reopens with fewer threads, or threads
that do not spin, while other work holds cores (``core/embed/threads.py``); the lane's one thread stays.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from localrag.core.embed.onnx_embedder import OnnxEmbedder
from localrag.core.embed.sizing import fit_to_input
from localrag.core.errors import KnownError

log = logging.getLogger("localrag.embed.service")

QUERY, BATCH = 0, 1
SLICE = 8  # texts of an ingestion batch embedded between two looks for waiting queries


@dataclass(order=True)
class _Request:
    priority: int
    seq: int
    texts: list[str] = field(compare=False)
    future: Future = field(compare=False)


class EmbeddingService:
    """Serve embeddings from one model on one worker thread.

    Args:
        load: returns the model (called on the worker thread, once, and again after ``restart``).
        query_lane: embed queries in a one-thread session of their own, beside the ingestion batches.
    """

    def __init__(self, load: Callable[[], OnnxEmbedder], query_lane: bool = True) -> None:
        self._load = load
        self._queue: queue.PriorityQueue[_Request] = queue.PriorityQueue()
        self._seq = itertools.count()
        self._stop = threading.Event()
        self.embedder: OnnxEmbedder | None = None
        self.last_beat = time.monotonic()
        self.busy_since: float | None = None
        self._lane: queue.Queue[_Request] | None = None  # the query lane's queue, once its session is open
        self._settled = threading.Event()  # the model loaded, or failed to
        self.query_lane = query_lane

    # -- callers (any thread)
    # ---------------------------------------------------------------------------------

    def submit(self, texts: list[str], priority: int = BATCH) -> Future:
        fut: Future = Future()
        if self._stop.is_set():
            fut.set_exception(KnownError("The embedding worker has stopped."))
            return fut
        lane = self._lane
        (lane if lane is not None and priority == QUERY else self._queue).put(
            _Request(priority, next(self._seq), list(texts), fut)
        )
        return fut

    def embed_batch(self, texts: list[str], timeout: float | None = None) -> np.ndarray:
        return self.submit(texts, BATCH).result(timeout)

    def embed_query(self, text: str, timeout: float | None = 60.0) -> np.ndarray:
        return self.submit([text], QUERY).result(timeout)[0]

    def stop(self) -> None:
        """Finish the request in hand, fail the queued ones, and end ``run``."""
        self._stop.set()
        self._queue.put(_Request(-1, -1, [], Future()))  # wake the loops
        lane = self._lane
        if lane is not None:
            lane.put(_Request(-1, -1, [], Future()))

    # -- the worker
    # --------------------------------------------------------------------------------------------

    def run(self) -> None:
        """The worker loop; returns after ``stop``."""
        try:
            if self.embedder is None:
                self.embedder = self._load()
        except Exception as exc:
            log.error("embedding model failed to load: %s", exc)
            self._fail_all(exc)
            raise
        finally:
            self._settled.set()
        while not self._stop.is_set():
            self.last_beat = time.monotonic()
            try:
                request = self._queue.get(timeout=0.5)
            except queue.Empty:
                continue
            if request.priority < 0 or not request.future.set_running_or_notify_cancel():
                continue
            self.busy_since = time.monotonic()
            try:
                if request.priority == QUERY:
                    vectors = _embed(self.embedder, request.texts)
                else:
                    vectors = self._embed_in_slices(request.texts)
                request.future.set_result(vectors)
            except Exception as exc:  # a bad batch fails its caller, not the worker
                request.future.set_exception(exc)
            finally:
                self.busy_since = None
        self._fail_all(KnownError("The embedding worker has stopped."))

    @property
    def lane_open(self) -> bool:
        """Whether queries are embedded in their own session (else between slices of the ingestion
        batches)."""
        return self._lane is not None

    def serve_queries(self) -> None:
        """The query lane's loop, for a thread of its own beside ``run``; returns after ``stop``.

        It waits for ``run`` to load the model, opens a one-thread session of it and embeds queries there.
        When the session cannot open (or ``query_lane`` is off) it returns at once: queries then share
        ``run``'s queue.
        """
        if not self.query_lane:
            return
        while not self._settled.wait(0.2):
            if self._stop.is_set():
                return
        if self.embedder is None or self._stop.is_set():
            return
        try:
            embedder = self.embedder.sibling(threads=1)
        except Exception as exc:  # queries then go through the main queue, ahead of batches
            log.warning("no separate session for queries (%s); they share the ingestion worker", exc)
            return
        lane: queue.Queue[_Request] = queue.Queue()
        self._lane = lane
        while not self._stop.is_set():
            request = lane.get()
            if request.priority < 0 or not request.future.set_running_or_notify_cancel():
                continue
            try:
                request.future.set_result(_embed(embedder, request.texts))
            except Exception as exc:
                request.future.set_exception(exc)
        self._fail_all(KnownError("The embedding worker has stopped."), lane)

    def _embed_in_slices(self, texts: list[str]) -> np.ndarray:
        """An ingestion batch, a few texts at a time, serving any query that arrives in between: a question
        asked during a long ingest waits for one slice, not for the whole batch."""
        assert self.embedder is not None
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad little
        out: np.ndarray | None = None
        for start in range(0, len(order), SLICE):
            if self._stop.is_set():  # shutting down: the caller's batch fails, not the process's exit
                raise KnownError("The embedding worker has stopped.")
            idx = order[start : start + SLICE]
            vecs = _embed(self.embedder, [texts[i] for i in idx], expect_fit=True)
            if out is None:
                out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs
            self.last_beat = time.monotonic()
            self._serve_waiting_queries()
        assert out is not None
        return out

    def _serve_waiting_queries(self) -> None:
        assert self.embedder is not None
        while True:
            try:
                request = self._queue.get_nowait()
            except queue.Empty:
                return
            if request.priority != QUERY:
                self._queue.put(request)  # a batch or the stop marker: its turn comes after the batch in hand
                return
            if not request.future.set_running_or_notify_cancel():
                continue
            try:
                request.future.set_result(_embed(self.embedder, request.texts))
            except Exception as exc:
                request.future.set_exception(exc)

    def _fail_all(self, exc: BaseException, requests: queue.Queue[_Request] | None = None) -> None:
        """Fail every request still waiting in ``requests`` (default: the main queue)."""
        requests = self._queue if requests is None else requests
        while True:
            try:
                request = requests.get_nowait()
            except queue.Empty:
                return
            if request.priority >= 0 and not request.future.done():
                request.future.set_exception(exc)


def _embed(embedder: OnnxEmbedder, texts: list[str], *, expect_fit: bool = False) -> np.ndarray:
    """The vectors of ``texts``, each sized to the model's input first (ingestion batches were sized by the
    chunker: a cut among them is logged)."""
    return embedder.embed(fit_to_input(embedder, texts, expect_fit=expect_fit))
