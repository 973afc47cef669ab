"""Dropping sentences a small model copies from the worked example, or from its own answer, instead of
answering.

The grounded prompt shows one example exchange (``prompts.EXAMPLE_*``); the default 135M model then cites far
more often, but now and then it repeats the example's answer ("The night train to Vienna leaves at 22:10 …
[1]"), and its "[1]" would then point at a real source that says nothing of the kind. ``EchoFilter`` sits on
the token stream: a sentence that begins like one of the example's sentences is held back (usually for one
token) until it either turns out different, and is shown, or is a copy, and is dropped with its citation.

A small model also falls into loops, writing the same lines over and over until its token limit. A sentence or
line it already wrote in this answer is dropped too, and ``looping`` tells the caller to stop the generation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# A sentence ends at . ! ? followed by white space (a citation may sit before the stop), or at a line break.
_SENTENCE = re.compile(r".*?(?P<end>[.!?](?:\s*\[[\d,\s-]*\])?[.!?]?\s+|\n+|$)", re.DOTALL)


# Repeats dropped before the answer counts as a loop and is stopped.
LOOP_REPEATS = 3


def _canon(text: str) -> str:
    return " ".join(text.lower().split())


def _repeatable(body: str) -> bool:
    """Whether a sentence is long enough that writing it twice is a repeat, not chance ("Yes.", a table
    rule)."""
    return len(re.findall(r"[^\W\d_]{2,}", body)) >= 3


class EchoFilter:
    """Feed streamed pieces, get back what to show; ``flush`` at the end.

    Args:
        phrases: sentences that must not be repeated (the example's answer and passages, without citations).
    """

    def __init__(self, phrases: Iterable[str]) -> None:
        self.phrases = [p for p in (_canon(x).rstrip(".!? ") for x in phrases) if len(p) >= 12]
        self.raw = ""
        self.dropped: list[str] = []
        self.repeats = 0
        self._shown = ""

    def feed(self, piece: str) -> str:
        self.raw += piece
        return self._emit(*self._clean(at_end=False))

    def flush(self) -> str:
        return self._emit(*self._clean(at_end=True))

    def _emit(self, clean: str, final: int) -> str:
        # Shown text only ever grows: a sentence is shown once it can no longer become a copy.
        if not clean.startswith(self._shown) or final <= len(self._shown):
            return ""
        out = clean[len(self._shown) : final]
        self._shown += out
        return out

    @property
    def looping(self) -> bool:
        """Whether the model keeps writing what it already wrote (stop it)."""
        return self.repeats >= LOOP_REPEATS

    @property
    def text(self) -> str:
        """The whole answer as shown."""
        return self._clean(at_end=True)[0]

    def _clean(self, *, at_end: bool) -> tuple[str, int]:
        """The text without copied sentences, and how much of it can no longer change."""
        kept: list[str] = []
        dropped: list[str] = []
        said: set[str] = set()
        repeats = 0
        final = None
        matches = [m for m in _SENTENCE.finditer(self.raw) if m.group(0)]
        for m in matches:
            sentence = m.group(0)
            complete = at_end or bool(m.group("end"))
            body = _canon(sentence)
            if any(body.startswith(p) for p in self.phrases):
                if complete:
                    dropped.append(sentence)
                    continue
                final = len("".join(kept))  # a copy in the making: hold it back
                break
            said_body = body.rstrip(".!? ")
            if not complete and (
                any(p.startswith(body) for p in self.phrases) or any(x.startswith(said_body) for x in said)
            ):
                final = len("".join(kept))  # may still become a copy or a repeat
                break
            if complete and said_body in said and _repeatable(said_body):
                dropped.append(sentence)
                repeats += 1
                continue
            said.add(said_body)
            kept.append(sentence)
        self.dropped = dropped
        self.repeats = repeats
        clean = "".join(kept)
        return clean, len(clean) if final is None else final
