"""Grounded chat: a question → retrieval → a budgeted prompt → a streamed answer → checked citations →
history.

``ChatEngine.ask(request)`` takes one ``AskRequest`` (``request.py``: the question, its scope, the earlier
turns, the mode and options, the cancel token) and is a generator of the typed events of ``events.py``;
``prepare(request)`` evaluates the prompt of a question still being typed. The steps of one answer are in
``run.py``; the events and their constants are imported from ``events.py``.

What a front end does: host the engine on one thread of its host (the window's generation worker, the API's
answer worker, the command line's main thread), iterate ``ask`` there and hand each event to its adapter
(``delivery.py``: Qt signals, JSON, server-sent events, OpenAI chunks, text). Esc calls
``request.cancel.cancel()`` — the answer stops within a token (or within one graph node while the prompt is
being processed) and ends with ``Done(cancelled=True)``, keeping what was generated. At start-up call
``warm_up()`` on that thread: it loads the embedding model and the LLM and evaluates the fixed system prompt,
so the first question only pays for its own tokens. A question asked before that just waits (``WarmingUp``)
on the worker thread; the window never blocks. Nothing here imports Qt.

Failures: the store down (``response.reason == "error"``) → the answer is ungrounded and ``notice`` says so
(strict mode answers only that it cannot search); the LLM cannot load → ``Failed(known=True)`` after
``Retrieved``, and ``retrieve_only`` keeps search working.

Timings (seconds, in ``Done.timings`` and stored with the answer): ``retrieval_s``, ``wait_s`` (waiting for
the model to load), ``prompt_s`` (prompt processing until the first token), ``ttft_s`` (question to first
token, without ``wait_s``), ``tokens``, ``tokens_per_s``, ``prompt_tokens``, ``cached_tokens`` (reused from
the previous prompt's KV cache), ``total_s``; and ``llm_setup``, how the model ran here (its CPU kernels and
the tuning measured for this machine, a string).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from types import EllipsisType
from typing import TYPE_CHECKING

import psycopg

from localrag.core.answer import cross, reader
from localrag.core.answer import history as hist
from localrag.core.answer.citations import Source
from localrag.core.answer.events import (
    ChatEvent,
    Failed,
    Retrieved,
)
from localrag.core.answer.model_setup import keep_prefix
from localrag.core.answer.notices import notice_for
from localrag.core.answer.query import relevant, search_for
from localrag.core.answer.request import AskRequest
from localrag.core.answer.run import AnswerRun
from localrag.core.errors import KnownError, ModelMissing, StoreUnavailable, describe
from localrag.core.llm.llm import LocalLLM
from localrag.core.llm.provider import LLMProvider
from localrag.core.progress import Cancelled, CancelToken

if TYPE_CHECKING:
    from localrag.core.library import Library
    from localrag.core.retrieve import Result, RetrievalResponse

log = logging.getLogger("localrag.chat")


class ChatEngine:
    """Answers questions from the library's documents with the local LLM, and keeps the chats.

    Args:
        library: the facade (store, embedding model, settings).
        llm: an ``LLMProvider`` (loading in the background or not yet), a loaded ``LocalLLM``, or ``None``
            when the model could not be loaded (questions then fail after retrieval; ``retrieve_only`` works).
            Default: a provider for ``library.settings``.
    """

    def __init__(
        self,
        library: Library,
        llm: LLMProvider | LocalLLM | EllipsisType | None = ...,
        *,
        llm_error: str = "",
    ) -> None:
        self.library = library
        self.settings = library.settings
        self.llm_error = llm_error
        if llm is ...:
            llm = LLMProvider(library.settings)
        if isinstance(llm, LocalLLM):
            loaded = llm
            provider = LLMProvider(library.settings, loader=lambda _s: loaded)
            provider.load()
            llm = provider
        self.provider: LLMProvider | None = llm
        # How many of the reader's best candidates each answer keeps (the developer pane; the reader's
        # fitting keeps them all).
        self.evidence_keep = 8

    # -- warm-up -------------------------------------------------------------------------------------------

    def warm_up(self, cancel: CancelToken | None = None) -> dict[str, float]:
        """Load the embedding model, the reader's models and the LLM and evaluate the grounded system prompt;
        blocking, for a worker thread. Returns seconds per step. A model that fails to load is reported by
        ``provider.state``."""
        timings: dict[str, float] = {}
        t = time.monotonic()
        try:
            self.library.embed_query("warm up")
        except (
            Exception
        ) as exc:  # a failing embedder (reported by its own worker) must not stop the LLM's load
            log.warning("embedding model warm-up failed: %s", getattr(exc, "message", exc))
        timings["embedder_s"] = time.monotonic() - t
        t = time.monotonic()
        # The reader's weights and its cross-encoder, read at first use otherwise (about 0.1 s of the first
        # question's evidence); a cross-encoder that cannot load leaves the reader's order (``cross.shared``).
        reader.model()
        cross.shared()
        timings["reader_s"] = time.monotonic() - t
        if self.provider is None:
            return timings
        t = time.monotonic()
        try:
            llm = self.provider.get(cancel)
        except (ModelMissing, Cancelled):
            return timings
        timings["llm_load_s"] = time.monotonic() - t
        timings["prime_s"] = llm.prime(keep_prefix(llm))
        return timings

    @property
    def llm_ready(self) -> bool:
        return self.provider is not None and self.provider.ready

    # -- retrieval -----------------------------------------------------------------------------------------

    def retrieve_only(
        self,
        question: str,
        *,
        chat_id: int | None = None,
        doc_ids: Sequence[int] | None = None,
        doc_types: Sequence[str] | None = None,
        cancel: CancelToken | None = None,
        collection_id: int | None = None,
    ) -> Retrieved:
        """Search without answering (no model, or the developer pane); a follow-up in ``chat_id`` is searched
        with the chat's previous question. Packs with the model's tokenizer when loaded, else an estimate."""
        from localrag.core.retrieve import pack_context, retrieve

        earlier = self._earlier_questions(chat_id)

        def search(query: str) -> tuple[RetrievalResponse, list[Result]]:
            resp = retrieve(
                self.library,
                query,
                doc_ids=doc_ids,
                doc_types=doc_types,
                collection=collection_id,
                cancel=cancel,
            )
            return resp, relevant(resp.results) if resp.reason is None else []

        query, resp, results = search_for(question, earlier, search)
        llm = self.provider.llm if self.provider is not None else None
        packed = pack_context(
            results,
            budget_tokens=self.settings.context_tokens,
            count_tokens=llm.count_tokens if llm is not None else None,
        )
        sources = [Source.from_result(i, r) for i, r in enumerate(packed.sources, 1)]
        return Retrieved(query, resp, packed, None, sources, notice_for(resp, results, strict=False))

    # -- asking --------------------------------------------------------------------------------------------

    def ask(self, request: AskRequest) -> Iterator[ChatEvent]:
        """Answer ``request.question`` in chat ``request.chat_id`` (``None``: a new chat, created when the
        answer is saved), within its scope, in its mode; its ``cancel`` (Esc) ends the events with
        ``Done(cancelled=True)``. Never raises: a failure is the last event, ``Failed``."""
        run = AnswerRun(self, request)
        try:
            yield from run.events()
        except Cancelled:
            yield run.finish(cancelled=True)
        except Exception as exc:  # environment problems as such; a bug logged with its traceback, named
            message, known = describe(exc, "answering", log)
            yield Failed(message, known=known)

    def prepare(self, request: AskRequest) -> int:
        """Evaluate now the prompt a question still being typed would get, so that its answer starts at once
        if it is asked as it stands (the model continues from the longest prefix it holds: the system prompt,
        the chat's earlier turns, and the sources when the final question finds the same ones). Nothing is
        shown, saved or generated (``request.persist`` and ``max_tokens`` do not apply).

        Returns the prompt's length in tokens, or 0 when nothing was prepared: the model is not loaded yet,
        the question is empty, strict mode found nothing, or ``request.cancel`` was set (typing went on, or
        the question was sent). Never raises for a store or model problem: the question, when asked, reports
        it.
        """
        provider = self.provider
        llm = provider.llm if provider is not None and provider.ready else None
        if llm is None or not request.question.strip():
            return 0
        cancel = request.cancel
        run = AnswerRun(self, request, max_tokens=self.settings.max_tokens)
        run.persist = False
        try:
            prompt = run.draft_prompt(llm)
            if prompt is None or cancel.cancelled:
                return 0
            llm.prime(prompt.tokens, cancel=cancel)
        except (KnownError, Cancelled, psycopg.OperationalError) as exc:  # a bug is raised to the caller
            log.debug("question not prepared: %s", exc)
            return 0
        return 0 if cancel.cancelled else len(prompt.tokens)

    # -- helpers -------------------------------------------------------------------------------------------

    def _earlier_questions(self, chat_id: int | None) -> list[str]:
        if chat_id is None:
            return []
        try:
            with self.library.pool.connection() as conn:
                return hist.recent_questions(conn, chat_id, 2)
        except (StoreUnavailable, psycopg.OperationalError) as exc:  # the store is down; a bug is raised
            log.warning("cannot read chat %s: %s", chat_id, exc)
            return []
