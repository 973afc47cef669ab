"""The generation worker: one language model for the process, questions answered one at a time on a QThread.

``ChatWorker`` owns the thread and the ``ChatEngine`` with its model; the thread runs the answering line every
front end runs (``host/answer_line.py``). The UI calls ``warm_up()`` once (the models load on the worker
thread) and ``ask(request)`` per question; the worker iterates ``ChatEngine.ask`` and turns its events into
signals, which Qt delivers on the main thread in the order they were emitted. Esc calls ``cancel()``; the
window calls ``shutdown()`` before it closes the Library.

A question asked while the models are still loading waits in the queue behind the load (the worker says so
with ``waiting``). When the model cannot be loaded the engine still searches: ``retrieved`` brings the
sources, then ``failed`` says why there is no answer.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from localrag.core.answer import events as chat
from localrag.core.answer.delivery import EventSink, deliver
from localrag.core.answer.request import AskRequest
from localrag.core.errors import describe
from localrag.core.library import Library
from localrag.core.progress import Cancelled, CancelToken
from localrag.gui.qt import QObject, Signal
from localrag.gui.tasks import STOP_WAIT_MS, WorkerThread
from localrag.host.answer_line import AnswerLine

log = logging.getLogger("localrag.gui.chat")

# Model states (``ChatWorker.model_state``).
IDLE, LOADING, READY, FAILED = "idle", "loading", "ready", "failed"


@dataclass
class PromptView:
    """The exact prompt of one answer: the engine's ``Prompt`` (messages, tokens, budget accounting) and
    ``rendered``, the prompt text exactly as the model reads it (chat template and special tokens
    included)."""

    prompt: Any
    rendered: str


class ChatWorker(QObject):
    """Answers questions on its own QThread with the process's one language model.

    Args:
        library: the facade (retrieval and chat history go through it).
        loader: loads the model from the settings, on the worker thread (default: ``core.llm.llm.load_llm``).

    Public:
        warm_up(): start the thread; load the embedding model and the language model there.
        ask(request) -> bool: queue a question (False while another one is in hand).
        prepare(request) -> bool: evaluate the prompt of a question still being typed, in the background, so
        that
            its answer starts at once when it is sent; cancelled by the next draft, by typing, or by a
            question.
        cancel_draft(): stop preparing (the text changed).
        cancel(): stop the answer in hand (Esc); the engine keeps and saves what was generated.
        shutdown(timeout_ms) -> bool: cancel, end the thread and wait for it.
        model_state: ``"idle" | "loading" | "ready" | "failed"``; ``model_error`` says why it failed.
        busy: a question is queued or in hand.
        engine: the ``ChatEngine`` (built on the worker thread at warm-up).

    Signals:
        model_loading(): the model started loading.
        model_ready(): the model is loaded.
        model_failed(str): the model cannot be loaded (questions then get their sources only).
        waiting(): a question is waiting for the model to finish loading.
        searching(): retrieval started.
        retrieved(Retrieved): the engine's event (``query``, ``response``, ``packed``, ``sources``,
            ``notice``; see ``core.answer.engine``).
        evidence(EvidenceReady): the engine's event: the sentences quoted from the sources and what
            leads the answer (``lead``), right after ``retrieved`` and before the model runs.
        prompt(PromptView): the exact prompt sent to the model.
        token(str): the next piece of the answer, in order.
        checked(Checked): the engine's event: one generated sentence checked against the sources
            (``sentence``, a ``CheckedSentence``, and ``shown``: whether the answer keeps it).
        done(Done): the engine's event (chat id, message id, answer, citations, sources, timings,
            notice, cancelled, and the answer's parts: ``lead``, ``evidence``, ``generated``).
        failed(str, bool): the answer failed; the message says why, the flag whether it is a known
            (environment) problem rather than a bug.
        request_finished(): the question is over (always, after ``done`` or ``failed``).
        prepared(int): a draft's prompt was evaluated (its length in tokens; 0: nothing was prepared).
    """

    model_loading = Signal()
    model_ready = Signal()
    model_failed = Signal(str)
    waiting = Signal()
    searching = Signal()
    retrieved = Signal(chat.Retrieved)
    evidence = Signal(chat.EvidenceReady)
    prompt = Signal(PromptView)
    token = Signal(str)
    checked = Signal(chat.Checked)
    done = Signal(chat.Done)
    failed = Signal(str, bool)
    request_finished = Signal()
    prepared = Signal(int)

    def __init__(
        self, library: Library, *, loader: Callable[[Any], Any] | None = None, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.library = library
        self._loader = loader
        self._line = AnswerLine()
        self._thread: WorkerThread | None = None
        self._lock = threading.Lock()
        self._current: AskRequest | None = None
        self._draft: AskRequest | None = None
        self._pending = 0
        self._warm_cancel = CancelToken()
        self.engine: Any = None
        self.model_state = IDLE
        self.model_error = ""

    # -- main thread ----------------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        with self._lock:
            return self._pending > 0

    def _ensure_thread(self) -> None:
        if self._thread is None:
            self._line = AnswerLine()  # a line stopped with an earlier thread runs nothing more
            self._thread = WorkerThread("generation", self._line.run, self._line.stop, self)
            self._thread.start()

    def warm_up(self) -> None:
        """Load the models in the background (once); questions asked meanwhile wait for them."""
        if self.model_state != IDLE:
            return
        self.model_state = LOADING
        self._ensure_thread()
        self._line.submit(self._warm_up)
        self.model_loading.emit()

    def ask(self, request: AskRequest) -> bool:
        """Queue ``request``; returns False (and does nothing) while another question is in hand."""
        with self._lock:
            if self._pending:
                return False
            self._pending = 1
            self._current = request
            self._cancel_draft()
        if self.model_state == IDLE:
            self.warm_up()
        if self.model_state == LOADING:
            self.waiting.emit()
        self._ensure_thread()
        self._line.submit(lambda: self._ask(request))
        return True

    def prepare(self, request: AskRequest) -> bool:
        """Queue the draft ``request`` (see the class); False while a question is in hand or the model is not
        loaded yet."""
        with self._lock:
            if self._pending or self.model_state != READY or self._thread is None:
                return False
            self._cancel_draft()
            self._draft = request
        self._line.submit(lambda: self._prepare(request))
        return True

    def cancel_draft(self) -> None:
        with self._lock:
            self._cancel_draft()

    def _cancel_draft(self) -> None:  # with ``_lock`` held
        if self._draft is not None:
            self._draft.cancel.cancel()
            self._draft = None

    def cancel(self) -> None:
        """Stop the question in hand (Esc). Safe to call when nothing runs."""
        with self._lock:
            if self._current is not None:
                self._current.cancel.cancel()

    def request_stop(self) -> None:
        """Cancel the question in hand and any model load, and ask the thread to end (returns at once)."""
        self.cancel()
        self.cancel_draft()
        self._warm_cancel.cancel()
        if self._thread is not None:
            self._thread.request_stop()

    def shutdown(self, timeout_ms: int = STOP_WAIT_MS) -> bool:
        """Cancel the question in hand, end the thread and wait for it; True if it ended in time.

        Call it before the Library closes: a QThread destroyed while running aborts the process.
        """
        self.request_stop()
        thread = self._thread
        if thread is None:
            return True
        ended = thread.stop(timeout_ms)
        if not ended:
            log.error("the generation thread did not stop in time")
            return False
        self._thread = None
        self.engine = None
        return True

    # -- worker thread --------------------------------------------------------------------------------------

    def _ask(self, request: AskRequest) -> None:
        try:
            if self.engine is None:
                self._warm_up()
            self._answer(request)
        finally:
            with self._lock:
                self._pending = 0
                self._current = None
            self.request_finished.emit()

    def _on_provider(self, state: Any) -> None:
        """The model's load state changed (called on the thread that changed it)."""
        if state.status == "ready" and self.model_state != READY:
            self.model_state = READY
            self.model_ready.emit()
        elif state.status == "failed" and self.model_state != FAILED:
            self.model_error = state.error
            self.model_state = FAILED
            self.model_failed.emit(state.error)

    def _warm_up(self) -> None:
        if self.engine is not None:
            return
        from localrag.core.answer.engine import ChatEngine
        from localrag.core.llm.provider import LLMProvider

        settings = self.library.settings
        provider = LLMProvider(settings, self._loader) if self._loader else LLMProvider(settings)
        provider.add_listener(self._on_provider)
        self.engine = ChatEngine(self.library, provider)
        try:
            timings = self.engine.warm_up(self._warm_cancel)
            log.info("warm-up: %s", {k: round(v, 2) for k, v in timings.items()})
        except Cancelled:  # shutting down
            pass
        except Exception as exc:  # the engine reports model failures itself; anything else is a bug
            describe(exc, "warming up the models", log)
        self._on_provider(provider.state)
        if self.model_state == LOADING and provider.state.status not in ("ready", "failed"):
            self.model_state = IDLE  # warm-up stopped before the model: the first question loads it

    def _prepare(self, request: AskRequest) -> None:
        n = 0
        if not request.cancel.cancelled and self.engine is not None:
            try:
                n = self.engine.prepare(request)
            except (
                Exception
            ) as exc:  # preparing is an optimisation: a failure shows when the question is asked
                describe(exc, "preparing a question", log)
        with self._lock:
            if self._draft is request:
                self._draft = None
        self.prepared.emit(n)

    def _answer(self, request: AskRequest) -> None:
        if request.cancel.cancelled:
            return
        signals = _Signals(self)
        try:
            for event in self.engine.ask(request):
                deliver(event, signals)
        except (
            Exception
        ) as exc:  # an environment problem: its message; a bug: logged, an internal error shown
            self.failed.emit(*describe(exc, "answering", log))

    def _prompt_view(self, prompt: Any) -> PromptView:
        """The prompt with its exact text, detokenized with the special tokens (on this thread: the
        model's)."""
        llm = self.engine.provider.llm if self.engine is not None and self.engine.provider else None
        rendered = prompt.text
        if llm is not None:
            try:
                rendered = llm.llama.detokenize(list(prompt.tokens), special=True).decode("utf-8", "replace")
            except Exception:  # an older llama-cpp-python without ``special``: the text without them
                rendered = llm.detokenize(prompt.tokens)
        return PromptView(prompt, rendered)


class _Signals(EventSink[None]):
    """The engine's events as the worker's signals (emitted on the worker thread, delivered in order on the
    main thread)."""

    def __init__(self, worker: ChatWorker) -> None:
        self.worker = worker

    def on_searching(self, event: chat.Searching) -> None:
        self.worker.searching.emit()

    def on_warming_up(self, event: chat.WarmingUp) -> None:
        self.worker.waiting.emit()

    def on_retrieved(self, event: chat.Retrieved) -> None:
        self.worker.retrieved.emit(event)
        if event.prompt is not None:
            self.worker.prompt.emit(self.worker._prompt_view(event.prompt))

    def on_evidence(self, event: chat.EvidenceReady) -> None:
        self.worker.evidence.emit(event)

    def on_prompt(self, event: Any) -> None:
        self.worker.prompt.emit(self.worker._prompt_view(event))

    def on_token(self, event: chat.Token) -> None:
        self.worker.token.emit(event.text)

    def on_checked(self, event: chat.Checked) -> None:
        self.worker.checked.emit(event)

    def on_done(self, event: chat.Done) -> None:
        self.worker.done.emit(event)

    def on_failed(self, event: chat.Failed) -> None:
        self.worker.failed.emit(event.message, event.known)
