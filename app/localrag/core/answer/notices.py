"""What an answer says when it cannot rest on the documents: the store down, vectors of another model, nothing
relevant found, nothing checked, the exchange not saved."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from localrag.core.retrieve import Result, RetrievalResponse

STORE_DOWN_NOTICE = "Your documents could not be searched ({why}), so this answer is not based on them."
MISMATCH_NOTICE = (
    "Your documents were indexed with another embedding model; re-embed them to search them. "
    "This answer is not based on them."
)
NOT_ANSWERED_TEXT = "Your documents do not seem to answer this."
STRICT_STORE_DOWN = "I cannot search your documents right now ({why}), so I have no answer from them."
NOT_SAVED_NOTICE = "This answer could not be saved to the chat history ({why})."
NOTHING_CHECKED = "Nothing the model wrote could be found in your documents."


def notice_for(resp: RetrievalResponse, results: Sequence[Result], *, strict: bool) -> str:
    """The notice over an answer after retrieval: the store could not be searched, or holds another model's
    vectors; "" otherwise."""
    from localrag.core.retrieve import ERROR, MODEL_MISMATCH

    if resp.reason == ERROR:
        return STORE_DOWN_NOTICE.format(why=resp.error or "the database is not reachable")
    if resp.reason == MODEL_MISMATCH:
        return MISMATCH_NOTICE
    return ""  # nothing relevant found: the answer itself says the documents do not seem to answer
