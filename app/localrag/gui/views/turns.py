"""How a question's ``Turn`` changes while its answer comes in: the chat's ask state machine, as plain
functions.

Each function takes the pending turn and one of the generation worker's events (the engine's dataclasses) and
updates the turn; those that may change what the transcript shows return whether to render it again. No Qt:
``ChatPanel`` calls them and renders, the tests call them directly.
"""

from __future__ import annotations

from enum import Enum

from localrag.core.answer.events import Checked, Done, EvidenceReady, Retrieved
from localrag.gui.views.source_ref import SourceRef
from localrag.gui.views.transcript import OVERVIEW_KINDS, REWORDING, SOURCES, Turn

SEARCHING = "Searching your documents…"
WAITING = "Waiting for the model…"
THINKING = "Thinking…"
STOPPING = "Stopping…"


class TokenShown(Enum):
    """What a streamed token does to the transcript."""

    HIDDEN = "hidden"  # the model rewords the quoted sources: only its checked sentences will show
    RENDER = "render"  # the turn must be rendered again (the first token, or a status to replace)
    APPEND = "append"  # the token goes after the ones before it


def asked(question: str, *, grounded: bool, strict: bool) -> Turn:
    """The turn of a question just sent."""
    return Turn(
        question, grounded=grounded, strict=strict, pending=True, status=SEARCHING if grounded else THINKING
    )


def waiting(turn: Turn) -> bool:
    """The question waits for the model to load."""
    if turn.answer:
        return False
    turn.status = WAITING
    return True


def searching(turn: Turn) -> bool:
    turn.status = SEARCHING
    return True


def retrieved(turn: Turn, event: Retrieved) -> bool:
    """The sources were found: numbered as the answer cites them."""
    turn.sources = [SourceRef.from_source(s, i + 1) for i, s in enumerate(event.sources)]
    turn.notice = event.notice
    n = len(turn.sources)
    turn.status = (
        f"Answering from {n} source{'s' if n != 1 else ''}…" if turn.grounded and n else "Answering…"
    )
    return True


def evidence_ready(turn: Turn, event: EvidenceReady) -> bool:
    """The sentences quoted from the sources: shown at once, before the model says anything."""
    turn.evidence = event.evidence
    turn.lead = str(event.lead or SOURCES)
    if event.evidence.kind in OVERVIEW_KINDS:  # about whole documents: the answer is already written
        turn.answer = str(event.text or "")
    if turn.lead == SOURCES:  # the quotes are the answer; "Rewording…" once the model starts
        turn.status = ""
    return True


def prompt_ready(turn: Turn) -> bool:
    """The model starts reading its prompt."""
    if turn.evidence is not None and turn.lead == SOURCES:
        turn.status = REWORDING
        return True
    return False


def token(turn: Turn, text: str, *, streaming: bool) -> TokenShown:
    """The model wrote ``text``; ``streaming``: the transcript has a place where tokens are being appended."""
    if not turn.streams:
        if turn.status != REWORDING:
            turn.status = REWORDING
            return TokenShown.RENDER
        return TokenShown.HIDDEN
    first = not turn.answer
    turn.answer += text
    if first or turn.status in (SEARCHING, WAITING) or not streaming:
        return TokenShown.RENDER
    return TokenShown.APPEND


def checked(turn: Turn, event: Checked) -> bool:
    """A generated sentence was checked against the sources."""
    turn.generated.append(event.sentence)
    return event.shown and turn.lead == SOURCES and turn.evidence is not None


def done(turn: Turn, event: Done) -> None:
    """The answer is complete (or stopped): the turn takes its final text, sources and parts."""
    turn.answer = str(event.answer)
    turn.sources = [SourceRef.from_source(s, i + 1) for i, s in enumerate(event.sources)]
    turn.evidence = event.evidence
    turn.lead = str(event.lead or "") if turn.evidence is not None else ""
    turn.generated = list(event.generated or [])
    turn.notice = event.notice
    turn.basis = event.basis
    turn.stopped = turn.stopped or event.cancelled
    turn.message_id = event.message_id


def failed(turn: Turn, message: str) -> None:
    """The answer failed; a bug's message says "Internal error" and names the log."""
    turn.error = message


def stopping(turn: Turn) -> None:
    turn.stopped = True
    turn.status = STOPPING


def finished(turn: Turn, error: str = "") -> None:
    """The question is over (after ``done`` or ``failed``, or stopped before it reached the worker)."""
    if error:
        turn.error = error
    turn.pending = False
    turn.status = ""
