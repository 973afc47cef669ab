"""The chat a question belongs to, as an ``AnswerRun`` reads and writes it: the earlier turns its prompt
carries, and the exchange (question, answer, sources, timings, parts) saved when the answer is done."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg

from localrag.core.answer import history as hist
from localrag.core.answer.citations import Source
from localrag.core.answer.prompts import Turn
from localrag.core.errors import KnownError, StoreUnavailable

if TYPE_CHECKING:
    from localrag.core.library import Library

log = logging.getLogger("localrag.chat")

# Earlier messages loaded for the prompt (the budget trims further).
HISTORY_MESSAGES = 12


@dataclass
class EarlierTurns:
    """What came before a question: the turns its prompt carries and the person's last two questions (which a
    follow-up's search query borrows from). ``readable`` is False when the store could not be read."""

    turns: list[Turn] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    readable: bool = True


def earlier_turns(library: Library, chat_id: int | None, given: list[Turn] | None) -> EarlierTurns:
    """The turns before a question in chat ``chat_id``, or those ``given`` by the caller of a question that
    belongs to no saved chat. Raises ``KnownError`` when there is no such chat; a store that is down is logged
    and gives no turns (``readable`` False)."""
    if chat_id is None:
        if not given:
            return EarlierTurns()
        turns = given[-HISTORY_MESSAGES:]
        return EarlierTurns(turns, [t.content for t in turns if t.role == "user"][-2:])
    try:
        with library.pool.connection() as conn:
            if hist.get_chat(conn, chat_id) is None:
                raise KnownError(f"There is no chat {chat_id}.")
            messages = hist.load_messages(conn, chat_id, last=HISTORY_MESSAGES)
    except (StoreUnavailable, psycopg.OperationalError) as exc:  # the store is down; a bug is raised
        log.warning("cannot read chat %s: %s", chat_id, exc)
        return EarlierTurns(readable=False)
    return EarlierTurns(
        [Turn(m.role, m.content) for m in messages if m.role in ("user", "assistant")],
        [m.content for m in messages if m.role == "user"][-2:],
    )


@dataclass
class Exchange:
    """A question and its answer as they are saved."""

    question: str
    answer: str
    grounded: bool
    strict: bool
    chunk_ids: list[int]
    sources: list[Source]
    timings: dict[str, Any]
    parts: dict[str, Any] | None


def new_chat(library: Library, question: str, collection_id: int | None) -> int:
    """A new chat for ``question`` (titled from it, in ``collection_id``); its id."""
    with library.connect() as conn:
        return hist.create_chat(conn, hist.title_from(question), collection_id).id


def save_exchange(library: Library, chat_id: int, exchange: Exchange) -> tuple[int, int]:
    """Save ``exchange`` in chat ``chat_id``; the question's and the answer's message ids. A store that is
    down raises ``StoreUnavailable`` or ``psycopg.OperationalError``."""
    with library.connect() as conn:
        return hist.add_exchange(
            conn,
            chat_id,
            exchange.question,
            exchange.answer,
            grounded=exchange.grounded,
            strict=exchange.strict,
            chunk_ids=exchange.chunk_ids,
            sources=exchange.sources,
            timings=exchange.timings,
            parts=exchange.parts,
        )
