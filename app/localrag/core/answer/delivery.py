"""The one place an answer's events are told apart: each front end plugs in an ``EventSink`` and hands every
event of ``ChatEngine.ask`` to ``deliver``.

A sink has one method per kind of event (``on_token`` for ``Token``…; the events are in ``events.py``),
each returning what that event becomes in the front end's form, or ``None`` for nothing; the base class does
nothing for every event, so a sink writes only the methods it needs. The sinks:

- the window: Qt signals (``gui/chat_worker.py``, ``_Signals``);
- one JSON object (``answer_json.AnswerJson``: ``ask --json``, ``POST /v1/ask``);
- the answer's text as it comes (``answer_text.AnswerText``: OpenAI chunks);
- server-sent events (``api/answers.py``, ``_SseEvents``);
- OpenAI chunks (``api/openai_chat.py``, ``_Chunks``);
- the terminal (``cli/ask_output.py``, ``Printer``).
"""

from __future__ import annotations

from typing import Generic, TypeVar

from localrag.core.answer.events import (
    ChatEvent,
    Checked,
    Done,
    EvidenceReady,
    Failed,
    Retrieved,
    Searching,
    Token,
    WarmingUp,
)
from localrag.core.answer.prompts import Prompt

T = TypeVar("T")


class EventSink(Generic[T]):
    """One front end's form of an answer's events; every method does nothing unless a sink overrides it."""

    def on_searching(self, event: Searching) -> T | None:
        """Retrieval starts."""
        return None

    def on_warming_up(self, event: WarmingUp) -> T | None:
        """The question waits for the model to load."""
        return None

    def on_retrieved(self, event: Retrieved) -> T | None:
        """What retrieval found: the sources, the notice."""
        return None

    def on_evidence(self, event: EvidenceReady) -> T | None:
        """The sentences quoted from the sources, and what leads the answer."""
        return None

    def on_prompt(self, event: Prompt) -> T | None:
        """The exact prompt the model reads."""
        return None

    def on_token(self, event: Token) -> T | None:
        """The next piece of what the model writes."""
        return None

    def on_checked(self, event: Checked) -> T | None:
        """A sentence the model wrote, checked against the sources."""
        return None

    def on_done(self, event: Done) -> T | None:
        """The answer, complete (or stopped)."""
        return None

    def on_failed(self, event: Failed) -> T | None:
        """No answer: why."""
        return None


_METHODS: dict[type, str] = {
    Searching: "on_searching",
    WarmingUp: "on_warming_up",
    Retrieved: "on_retrieved",
    EvidenceReady: "on_evidence",
    Prompt: "on_prompt",
    Token: "on_token",
    Checked: "on_checked",
    Done: "on_done",
    Failed: "on_failed",
}


def deliver(event: ChatEvent, sink: EventSink[T]) -> T | None:
    """What ``event`` becomes in ``sink``'s form (``None``: nothing)."""
    method: str = _METHODS[type(event)]
    result: T | None = getattr(sink, method)(event)
    return result
