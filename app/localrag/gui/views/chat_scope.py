"""The collection a chat is scoped to, as the chat panel holds it (plain data), and saving it with the chat.

A chat is scoped to one collection or to every document; a saved chat keeps its scope
(``chats.collection_id``) and gets it back when it is opened. When its collection is deleted it searches every
document and ``note`` says so until another scope is chosen.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from localrag.gui.tasks import Op

log = logging.getLogger("localrag.gui.chat")


@dataclass
class ChatScope:
    collection_id: int | None = None
    name: str = ""
    note: str = ""

    def set(self, collection_id: int | None, name: str = "", note: str = "") -> bool:
        """Take a new scope; returns whether the collection changed."""
        changed = collection_id != self.collection_id
        self.collection_id, self.name = collection_id, name if collection_id else ""
        if changed or note:  # the same scope picked again keeps its note
            self.note = note
        return changed

    @property
    def label(self) -> str:
        """What the chat's header says of it: ``collection “Reports”``, a fallback after a deletion, or ""."""
        if self.collection_id is not None:
            return f"collection “{self.name}”"
        return "all documents (its collection was deleted)" if self.note else ""


def save_scope(owner: Any, library: Any, chat_id: int, collection_id: int | None) -> None:
    """Keep a saved chat's new scope, in the background (a failure is logged: the next question still uses the
    scope shown)."""
    from localrag.core.answer import history

    def work() -> bool:
        with library.connect() as conn:
            return history.set_chat_collection(conn, chat_id, collection_id)

    def failed(message: str, _known: bool) -> None:
        log.warning("the scope of chat %s was not saved: %s", chat_id, message)

    Op(work, owner=owner).failure(failed).run_in_background()
