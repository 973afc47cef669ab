"""The answer's text as it comes, for a client that only appends text (the OpenAI streaming API).

``ChatEngine.ask`` streams what the model writes, but the answer a person reads is composed from the quoted
sources and the sentences that passed the check (``Done.answer``). ``AnswerText.feed`` turns each event into
the text to append so that, in the end, everything appended is exactly ``Done.answer``: the quoted sources
as soon as they are found, then each checked sentence that the answer keeps, and at ``Done`` whatever the
composition adds (the quotes after a model-led answer). A plain answer (no sources) is the model's own text,
token by token. Whitespace at either end waits for what follows, as the answer is stripped.
"""

from __future__ import annotations

import logging

from localrag.core.answer.delivery import EventSink, deliver
from localrag.core.answer.events import REWORD_LABEL, SOURCES, ChatEvent, Checked, Done, EvidenceReady, Token

log = logging.getLogger("localrag.chat")


class AnswerText(EventSink[str]):
    """Pieces of one answer's text, in order."""

    def __init__(self) -> None:
        self.sent = ""
        self.lead = ""  # set by EvidenceReady: the answer is composed from the sources
        self._pending = ""
        self._reworded = False

    def feed(self, event: ChatEvent) -> str:
        """The text ``event`` appends to the answer (often none)."""
        return deliver(event, self) or ""

    def on_evidence(self, event: EvidenceReady) -> str:
        self.lead = event.lead or SOURCES
        return self._send(event.text) if self.lead == SOURCES else ""

    def on_token(self, event: Token) -> str:
        return "" if self.lead else self._send(event.text)

    def on_checked(self, event: Checked) -> str:
        if not (event.shown and self.lead):
            return ""
        if self.lead == SOURCES:
            prefix = " " if self._reworded else f"\n\n{REWORD_LABEL} "
            self._reworded = True
        else:
            prefix = " " if self.sent else ""
        return self._send(prefix + event.sentence.shown())

    def on_done(self, event: Done) -> str:
        if event.answer.startswith(self.sent):
            rest = event.answer[len(self.sent) :]
            self.sent = event.answer
            return rest
        log.warning("the streamed answer differs from the final one; the rest is not sent")
        return ""

    def _send(self, piece: str) -> str:
        text = self._pending + piece
        if not self.sent:
            text = text.lstrip()
        body = text.rstrip()
        self._pending = text[len(body) :]
        self.sent += body
        return body
