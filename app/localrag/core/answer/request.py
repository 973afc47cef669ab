"""One question and how to answer it: the one argument of ``ChatEngine.ask`` and ``ChatEngine.prepare``, built
the same way by the window, the API and the command line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from localrag.core.answer.prompts import Turn
from localrag.core.progress import CancelToken


@dataclass
class AskRequest:
    """A question, where to look, what came before, how to answer, and its cancel token.

    Attributes:
        question: what the person asked (stripped by the engine).
        chat_id: the chat to add to, or ``None`` for a new chat (created when the answer is saved).
        doc_ids, doc_types: the scope: limit retrieval to these documents / types (``None``: all).
        collection_id: limit retrieval to a collection's documents (a new chat is scoped to it when saved).
        history: the earlier turns of a conversation kept by the caller (an API client's messages), used
            instead of a stored chat's when ``chat_id`` is ``None``.
        grounded: the mode: use the documents ("Use my documents"); ``False`` is plain local chat (no
            retrieval, no sources).
        strict: answer only from the documents; say so plainly when nothing relevant was found.
        max_tokens: the answer's length limit (``None``: ``Settings.max_tokens``).
        persist: save the question and answer (the command line saves only when asked).
        cancel: Esc; the answer then ends with ``Done(cancelled=True)``, a draft is not prepared.
    """

    question: str
    chat_id: int | None = None
    grounded: bool = True
    strict: bool = False
    doc_ids: Sequence[int] | None = None
    doc_types: Sequence[str] | None = None
    collection_id: int | None = None
    history: Sequence[Turn] | None = None
    max_tokens: int | None = None
    persist: bool = True
    cancel: CancelToken = field(default_factory=CancelToken)
