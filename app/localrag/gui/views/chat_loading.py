"""The chat panel's chats: a new one, a kept one opened (its messages, title and collection loaded in the
background), one deleted elsewhere forgotten (``ChatPanel`` mixes this in)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from localrag.gui.qt import QtCore
from localrag.gui.tasks import Op
from localrag.gui.views.transcript import turns_from_messages


class ChatLoading:
    """Opening and starting chats; the panel's state it reads and sets is declared here for the checker."""

    chat_id: int | None
    turns: list[Any]
    generating: bool
    _load_seq: int
    _after_request: list[Any]
    library: Any
    title_label: Any
    status_label: Any
    scope: Any
    question: Any
    chat_opened: Any
    history_loaded: Any
    collection_loaded: Any

    if TYPE_CHECKING:  # the panel's own (a stub here would hide it)

        def _render(self, *, scroll_to_end: bool = False) -> None: ...

        def _update_scope_label(self) -> None: ...

        def stop(self) -> None: ...

    def _owner(self) -> QtCore.QObject:
        return cast("QtCore.QObject", self)

    # -- chats ---------------------------------------------------------------------------------------------

    def _when_idle(self, callback: Any) -> None:
        if self.generating:
            self._after_request = [callback]
            self.stop()
        else:
            callback()

    def new_chat(self) -> None:
        """Show an empty chat; it is created in the store by its first question."""

        def go() -> None:
            self._load_seq += 1
            self.chat_id = None
            self.turns = []
            self.title_label.setText("New chat")
            self._render()
            self.chat_opened.emit(None)
            self.question.setFocus()

        self._when_idle(go)

    def forget_chat(self, chat_id: int) -> None:
        """The chat was deleted: clear the view if it showed it."""
        if chat_id == self.chat_id:
            self.new_chat()

    def open_chat(self, chat_id: int) -> None:
        """Show a kept chat: its messages, sources and title are loaded in the background."""
        if chat_id == self.chat_id and not self.generating and self.turns:
            return
        self._when_idle(lambda: self._load_chat(int(chat_id)))

    def _load_chat(self, chat_id: int) -> None:
        from localrag.core.answer import history

        self._load_seq += 1
        seq = self._load_seq
        self.chat_id = chat_id
        self.turns = []
        self._render()
        self.status_label.setText("Loading the chat…")

        def work() -> tuple[history.Chat | None, list[history.Message]]:
            with self.library.connect() as conn:
                return history.get_chat(conn, chat_id), list(history.load_messages(conn, chat_id))

        def done(result: tuple[history.Chat | None, list[history.Message]]) -> None:
            if seq != self._load_seq:
                return
            chat, messages = result
            self.turns = turns_from_messages(messages)
            self.title_label.setText((chat.title if chat is not None else "") or "Chat")
            self.status_label.setText("")
            if chat is not None:
                self.scope.set(chat.collection_id, chat.collection_name, chat.scope_note)
                self._update_scope_label()
                self.collection_loaded.emit(chat.collection_id)
            self._render(scroll_to_end=True)
            self.chat_opened.emit(chat_id)
            self.history_loaded.emit(chat_id)

        def failed(message: str, _known: bool) -> None:
            if seq == self._load_seq:
                self.status_label.setText(f"The chat cannot be loaded: {message}")

        Op(work, owner=self._owner()).success(done).failure(failed).run_in_background()

    def _refresh_title(self) -> None:
        from localrag.core.answer import history

        chat_id = self.chat_id
        if chat_id is None:
            return

        def work() -> history.Chat | None:
            with self.library.connect() as conn:
                return history.get_chat(conn, chat_id)

        def done(chat: history.Chat | None) -> None:
            if chat is not None and chat_id == self.chat_id:
                self.title_label.setText(chat.title or "Chat")

        Op(work, owner=self._owner()).success(done).failure(lambda *_: None).run_in_background()
