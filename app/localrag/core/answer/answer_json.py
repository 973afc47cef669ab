"""One answer as one JSON object: what ``local-rag ask --json`` prints and ``POST /v1/ask`` returns.

``AnswerJson`` is fed the events of ``ChatEngine.ask`` one by one (a front end may also show them as they
come), and ``finish`` gives the object: ``question``, ``grounded``, ``strict``, then what ``Done.to_json``
holds (``answer``, ``lead``, ``evidence``, ``generated``, ``sources``, ``citations``, ``notice``,
``timings``…) without ``parts``, or ``error`` (with the sources found, if any) when the answer failed;
``model`` and ``load_s`` say which language model answered and how long it took to load.
"""

from __future__ import annotations

import time
from typing import Any

from localrag.core.answer.delivery import EventSink, deliver
from localrag.core.answer.events import ChatEvent, Done, Failed, Retrieved


class AnswerJson(EventSink[None]):
    """Collects one question's events into its JSON object."""

    def __init__(
        self, question: str, *, grounded: bool = True, strict: bool = False, started: float | None = None
    ) -> None:
        self.started = time.monotonic() if started is None else started
        self.out: dict[str, Any] = {"question": question, "grounded": grounded, "strict": strict}

    @property
    def failed(self) -> bool:
        return "error" in self.out

    def add(self, event: ChatEvent) -> None:
        deliver(event, self)

    def on_retrieved(self, event: Retrieved) -> None:
        self.out["sources"] = [s.to_dict() for s in event.sources]
        if event.notice:
            self.out["notice"] = event.notice

    def on_done(self, event: Done) -> None:
        done = event.to_json()
        done.pop("parts", None)
        self.out.update(done)

    def on_failed(self, event: Failed) -> None:
        self.out["error"] = event.message

    def finish(self, provider: Any = None) -> dict[str, Any]:
        """The object, with the wall time since it was started and the model ``provider`` holds (if given)."""
        self.out.setdefault("timings", {})["wall_s"] = round(time.monotonic() - self.started, 3)
        if provider is not None:
            self.out["model"] = provider.state.model
            self.out["load_s"] = round(provider.state.load_s, 3)
        return self.out
