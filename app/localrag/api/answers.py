"""Questions answered one at a time, on the answering thread (``host/answer_line.py``, run on a thread of the
server's ``Host``) that the language model is used from.

``AnswerWorker.events`` hands an ``engine.ask`` to that thread and gives its events back to the event loop
as they come; when the client goes away, the answer is cancelled (it stops within a token). ``sse_events``
is what ``POST /v1/ask`` streams: ``evidence`` (the quoted sentences, and a comparison's table, at once),
``token`` (what the model writes), ``checked`` (each sentence of it checked against the sources),
``sources``, ``timings``, then ``done`` with the same object as the answer without streaming; ``error``
first when the answer failed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

from localrag.api.sse import sse
from localrag.core.answer.answer_json import AnswerJson
from localrag.core.answer.delivery import EventSink, deliver
from localrag.core.answer.engine import ChatEngine
from localrag.core.answer.events import ChatEvent, Checked, Done, EvidenceReady, Failed, Token
from localrag.core.answer.request import AskRequest
from localrag.core.progress import CancelToken
from localrag.host import Host
from localrag.host.answer_line import AnswerLine


class AnswerWorker:
    """The answering line, on a thread of ``host``. ``close`` cancels what runs and ends the line (the host
    joins its thread when it closes)."""

    def __init__(self, engine: ChatEngine, host: Host) -> None:
        self.engine = engine
        self._line = AnswerLine()
        self._lock = threading.Lock()
        self._running: set[CancelToken] = set()
        host.start_task("api-answer", self._line.run, self._line.stop)

    async def events(self, question: str, **options: Any) -> AsyncIterator[ChatEvent]:
        """The events of ``engine.ask(AskRequest(question, **options))``."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[ChatEvent | None] = asyncio.Queue()
        cancel = CancelToken()
        request = AskRequest(question, cancel=cancel, **options)

        def put(item: ChatEvent | None) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the event loop is gone (the server stopped)
                cancel.cancel()

        def work() -> None:
            try:
                if not cancel.cancelled:  # the client may have left while the question waited
                    for event in self.engine.ask(request):
                        put(event)
            finally:
                with self._lock:
                    self._running.discard(cancel)
                put(None)

        with self._lock:
            self._running.add(cancel)
        self._line.submit(work)
        try:
            while (event := await queue.get()) is not None:
                yield event
        finally:
            cancel.cancel()

    def warm_up(self) -> None:
        """Load the models and read the system prompt on the answering thread, before the first question."""
        cancel = CancelToken()

        def work() -> None:
            try:
                self.engine.warm_up(cancel)
            finally:
                with self._lock:
                    self._running.discard(cancel)

        with self._lock:
            self._running.add(cancel)
        self._line.submit(work)

    def close(self) -> None:
        with self._lock:
            for cancel in self._running:
                cancel.cancel()
        self._line.stop()


async def answer_json(worker: AnswerWorker, record: AnswerJson, question: str, **options: Any) -> None:
    """Fill ``record`` with the answer to ``question``."""
    async for event in worker.events(question, **options):
        record.add(event)


async def sse_events(
    worker: AnswerWorker, record: AnswerJson, provider: Any, question: str, **options: Any
) -> AsyncIterator[str]:
    """The answer to ``question`` as server-sent events (see the module docstring)."""
    frames = _SseEvents()
    async for event in worker.events(question, **options):
        record.add(event)
        if frame := deliver(event, frames):
            yield frame
    yield sse("done", record.finish(provider))


class _SseEvents(EventSink[str]):
    """The engine's events as server-sent events (see the module docstring)."""

    def on_evidence(self, event: EvidenceReady) -> str:
        keys = ("text", "number", "path", "page_number", "page_label", "char_start", "char_end", "score")
        spans = [{k: v for k, v in s.to_dict().items() if k in keys} for s in event.evidence.spans]
        table = event.evidence.comparison  # the sides set side by side, each cell a span's index
        return sse("evidence", {"lead": event.lead, "text": event.text, "spans": spans, "comparison": table})

    def on_token(self, event: Token) -> str:
        return sse("token", {"text": event.text})

    def on_checked(self, event: Checked) -> str:
        return sse("checked", {**event.sentence.to_dict(), "shown": event.shown})

    def on_done(self, event: Done) -> str:
        done = event.to_json()
        keys = ("sources", "citations", "notice", "basis", "not_found")
        return sse("sources", {k: done[k] for k in keys}) + sse("timings", done["timings"])

    def on_failed(self, event: Failed) -> str:
        return sse("error", {"error": event.message})
