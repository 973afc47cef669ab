"""The list of kept chats: pick one to reopen it, start a new one, rename or delete one.

The list reads and writes chat history through ``core.answer.history`` off the UI thread; it never shows a
chat's messages itself (the chat panel does, when ``chat_selected`` asks it to).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

from localrag.core.answer.history import Chat
from localrag.core.library import Library
from localrag.gui.qt import QtCore, QtGui, QtWidgets, Signal
from localrag.gui.tasks import Op

log = logging.getLogger("localrag.gui.chats")

_ID_ROLE = QtCore.Qt.ItemDataRole.UserRole

# How often a visible list re-reads the chats, to show those saved by ``local-rag ask`` or the API.
WATCH_MS = 10_000


def _when(value: Any) -> str:
    if not isinstance(value, dt.datetime):
        return ""
    now = dt.datetime.now(value.tzinfo)
    if value.date() == now.date():
        return value.strftime("%H:%M")
    if value.year == now.year:
        return value.strftime("%d %b")
    return value.strftime("%d %b %Y")


class ChatsList(QtWidgets.QWidget):
    """The kept chats, newest first, with New / Rename / Delete.

    Wire it to the chat panel: ``chat_selected`` → ``ChatPanel.open_chat``, ``new_chat_requested`` →
    ``ChatPanel.new_chat``, ``chat_deleted`` → ``ChatPanel.forget_chat``, and ``ChatPanel.chat_changed`` →
    ``refresh`` (a first question creates a chat, and the engine titles it).

    Public:
        refresh(select_id=None): reload the list (off the UI thread), then select ``select_id`` if given.
        reload(): re-read quietly for chats saved by other processes (the command line, the API); skipped
            while a read is in hand, a title is being edited or ``paused()`` says so. Nothing changes on
            screen (selection, scroll) unless the chats did.
        watch(interval_ms=WATCH_MS): reload every ``interval_ms`` while the list is visible.
        paused: a callable; while it returns True, ``reload`` does nothing (the window: an answer streaming).
        select(chat_id): highlight a chat without emitting ``chat_selected``.
        rename_chat(chat_id, title), delete_chat(chat_id): do it in the background; the list refreshes.
        current_id(): the highlighted chat, or None.
        list: the ``QListWidget`` (one item per chat; ``item.data(Qt.UserRole)`` is the chat id).

    Signals:
        chat_selected(int): the user picked a chat.
        new_chat_requested(): the New button (the panel's Ctrl+N does the same).
        chat_renamed(int, str): a chat got a new title.
        chat_deleted(int): a chat was deleted.
        refreshed(): the list was reloaded.
        failed(str): reading or changing the history failed (the message says why).
    """

    chat_selected = Signal(int)
    new_chat_requested = Signal()
    chat_renamed = Signal(int, str)
    chat_deleted = Signal(int)
    refreshed = Signal()
    failed = Signal(str)

    def __init__(self, library: Library, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.library = library
        self.setObjectName("chats-list")
        self.setAccessibleName("Chats")
        self._selecting = False
        self._pending_select: int | None = None
        self._in_hand = 0  # reads not back yet
        self._reads = 0  # refreshes started; only the newest one's result is shown
        self._shown: list[tuple[int, str, Any, int]] | None = None
        self.paused: Callable[[], bool] = lambda: False
        self.watch_timer = QtCore.QTimer(self)
        self.watch_timer.setInterval(WATCH_MS)
        self.watch_timer.timeout.connect(self.reload)
        self._watching = False

        title = QtWidgets.QLabel("Chats", self)
        title.setProperty("role", "heading")
        self.new_button = QtWidgets.QToolButton(self)
        self.new_button.setText("New")
        self.new_button.setToolTip("New chat (Ctrl+N)")
        self.new_button.setAccessibleName("New chat")
        self.new_button.clicked.connect(self.new_chat_requested)
        head = QtWidgets.QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.addWidget(title, 1)
        head.addWidget(self.new_button)

        self.list = QtWidgets.QListWidget(self)
        self.list.setAccessibleName("Kept chats")
        self.list.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.EditKeyPressed)  # F2 renames
        self.list.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._context_menu)
        self.list.currentItemChanged.connect(self._on_current_changed)
        self.list.itemChanged.connect(self._on_item_edited)
        self.list.setUniformItemSizes(True)
        self.list.setTextElideMode(QtCore.Qt.TextElideMode.ElideRight)
        self.list.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.empty_label = QtWidgets.QLabel("No chats yet. Ask a question to start one.", self)
        self.empty_label.setWordWrap(True)
        self.empty_label.setProperty("role", "muted")

        self.rename_button = QtWidgets.QToolButton(self)
        self.rename_button.setText("Rename")
        self.rename_button.setAccessibleName("Rename chat")
        self.rename_button.setToolTip("Rename the selected chat (F2)")
        self.rename_button.clicked.connect(self._rename_current)
        self.delete_button = QtWidgets.QToolButton(self)
        self.delete_button.setText("Delete")
        self.delete_button.setAccessibleName("Delete chat")
        self.delete_button.setToolTip("Delete the selected chat")
        self.delete_button.clicked.connect(self._delete_current)
        self.delete_shortcut = QtGui.QShortcut(
            # The Delete key only: X11's "delete" binding also holds Ctrl+D, the developer pane's key.
            QtGui.QKeySequence(QtCore.Qt.Key.Key_Delete),
            self.list,
            self._delete_current,
            context=QtCore.Qt.ShortcutContext.WidgetShortcut,
        )
        foot = QtWidgets.QHBoxLayout()
        foot.setContentsMargins(0, 0, 0, 0)
        foot.addStretch(1)
        foot.addWidget(self.rename_button)
        foot.addWidget(self.delete_button)

        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(head)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.empty_label)
        layout.addLayout(foot)
        self._update_buttons()

    # -- reading -------------------------------------------------------------------------------------------

    def refresh(self, select_id: int | None = None) -> None:
        """Reload the chats in the background; keep (or move) the highlight."""
        self._read(select_id, quiet=False)

    def reload(self) -> None:
        """Re-read the chats for those saved elsewhere, unless busy; the highlight stays where it is."""
        if self._reading() or self.paused():
            return
        if self.list.state() == QtWidgets.QAbstractItemView.State.EditingState:
            return  # a rename under way would lose its editor
        self._read(None, quiet=True)

    def watch(self, interval_ms: int = WATCH_MS) -> None:
        """Reload every ``interval_ms`` while the list is visible (and once each time it is shown again)."""
        self._watching = True
        self.watch_timer.setInterval(interval_ms)
        if self.isVisible():
            self.watch_timer.start()

    def showEvent(self, event: QtGui.QShowEvent) -> None:  # noqa: N802 (Qt override)
        super().showEvent(event)
        if self._watching and not self.watch_timer.isActive():
            self.watch_timer.start()
            self.reload()

    def hideEvent(self, event: QtGui.QHideEvent) -> None:  # noqa: N802 (Qt override)
        super().hideEvent(event)
        self.watch_timer.stop()

    def _reading(self) -> bool:
        return self._in_hand > 0

    def _read(self, select_id: int | None, *, quiet: bool) -> None:
        from localrag.core.answer import history

        self._reads += 1
        ticket = self._reads
        if select_id is not None:
            self._pending_select = select_id  # kept should a newer read overtake this one
        self._in_hand += 1

        def work() -> list[history.Chat]:
            with self.library.connect() as conn:
                return list(history.list_chats(conn))

        def done(chats: list[history.Chat]) -> None:
            self._in_hand -= 1
            if ticket != self._reads:
                return  # a newer read (a chat just asked about, renamed or deleted) decides what is shown
            if quiet and self._rows(chats) == self._shown:
                return  # nothing new: leave the selection and scroll alone
            # The highlight asked for, else as it is now (not as it was when the read started).
            keep = self._pending_select if self._pending_select is not None else self.current_id()
            self._pending_select = None
            self._fill(chats, keep)

        def failed(message: str, known: bool = True) -> None:
            self._in_hand -= 1
            if quiet:
                log.info("chat history (re-read): %s", message)
            else:
                self._on_failed(message, known)

        Op(work, owner=self).success(done).failure(failed).run_in_background()

    @staticmethod
    def _rows(chats: list[Chat]) -> list[tuple[int, str, Any, int]]:
        return [(c.id, c.title, c.updated_at, c.message_count) for c in chats]

    def _fill(self, chats: list[Chat], select_id: int | None) -> None:
        self._shown = self._rows(chats)
        scroll = self.list.verticalScrollBar().value()
        self._selecting = True
        try:
            self.list.blockSignals(True)
            self.list.clear()
            for chat in chats:
                chat_id = chat.id
                title = chat.title or "New chat"
                item = QtWidgets.QListWidgetItem(title)
                item.setData(_ID_ROLE, chat_id)
                item.setFlags(item.flags() | QtCore.Qt.ItemFlag.ItemIsEditable)
                when = _when(chat.updated_at)
                count = chat.message_count
                tip = title + (f"\n{when}" if when else "") + (f" · {count} messages" if count else "")
                item.setToolTip(tip)
                item.setData(QtCore.Qt.ItemDataRole.AccessibleTextRole, title)
                self.list.addItem(item)
            self.list.blockSignals(False)
            self.list.verticalScrollBar().setValue(scroll)
            if select_id is not None:
                self.select(select_id)
        finally:
            self.list.blockSignals(False)
            self._selecting = False
        self.empty_label.setVisible(self.list.count() == 0)
        self._update_buttons()
        self.refreshed.emit()

    def _on_failed(self, message: str, _known: bool = True) -> None:
        log.info("chat history: %s", message)
        self.failed.emit(message)

    # -- selection -----------------------------------------------------------------------------------------

    def current_id(self) -> int | None:
        item = self.list.currentItem()
        return int(item.data(_ID_ROLE)) if item is not None else None

    def item_for(self, chat_id: int) -> QtWidgets.QListWidgetItem | None:
        for row in range(self.list.count()):
            item = self.list.item(row)
            if item.data(_ID_ROLE) == chat_id:
                return item
        return None

    def select(self, chat_id: int | None) -> None:
        """Highlight ``chat_id`` (or nothing) without asking the panel to open it."""
        self._selecting = True
        try:
            item = self.item_for(chat_id) if chat_id is not None else None
            if item is None:
                self.list.setCurrentRow(-1)
                self.list.clearSelection()
            else:
                self.list.setCurrentItem(item)
        finally:
            self._selecting = False
        self._update_buttons()

    def _on_current_changed(self, current: QtWidgets.QListWidgetItem | None, _previous: Any) -> None:
        self._update_buttons()
        if current is not None and not self._selecting:
            self.chat_selected.emit(int(current.data(_ID_ROLE)))

    def _update_buttons(self) -> None:
        has = self.list.currentItem() is not None
        self.rename_button.setEnabled(has)
        self.delete_button.setEnabled(has)

    # -- changing ------------------------------------------------------------------------------------------

    def _context_menu(self, pos: QtCore.QPoint) -> None:
        item = self.list.itemAt(pos)
        menu = QtWidgets.QMenu(self)
        menu.addAction("New chat", self.new_chat_requested.emit)
        if item is not None:
            self.list.setCurrentItem(item)
            menu.addSeparator()
            menu.addAction("Rename", self._rename_current)
            menu.addAction("Delete…", self._delete_current)
        menu.exec(self.list.viewport().mapToGlobal(pos))

    def _rename_current(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self.list.editItem(item)

    def _on_item_edited(self, item: QtWidgets.QListWidgetItem) -> None:
        if self._selecting:
            return
        title = " ".join(item.text().split())
        if title:
            self.rename_chat(int(item.data(_ID_ROLE)), title)
        else:
            self.refresh()

    def rename_chat(self, chat_id: int, title: str) -> None:
        """Give a chat a new title (in the background), then refresh."""
        from localrag.core.answer import history

        title = " ".join(title.split())[:200]

        def work() -> None:
            with self.library.connect() as conn:
                history.rename_chat(conn, chat_id, title)
                conn.commit()

        def done(_: Any) -> None:
            self.chat_renamed.emit(chat_id, title)
            self.refresh(chat_id)

        Op(work, owner=self).success(done).failure(self._on_failed).run_in_background()

    def _delete_current(self) -> None:
        chat_id = self.current_id()
        if chat_id is None:
            return
        item = self.list.currentItem()
        answer = QtWidgets.QMessageBox.question(
            self,
            "Delete chat",
            f"Delete the chat “{item.text()}” and its messages?",
            QtWidgets.QMessageBox.StandardButton.Yes | QtWidgets.QMessageBox.StandardButton.Cancel,
            QtWidgets.QMessageBox.StandardButton.Cancel,
        )
        if answer == QtWidgets.QMessageBox.StandardButton.Yes:
            self.delete_chat(chat_id)

    def delete_chat(self, chat_id: int) -> None:
        """Delete a chat and its messages (in the background, no confirmation), then refresh."""
        from localrag.core.answer import history

        def work() -> None:
            with self.library.connect() as conn:
                history.delete_chat(conn, chat_id)
                conn.commit()

        def done(_: Any) -> None:
            self.chat_deleted.emit(chat_id)
            self.refresh()

        Op(work, owner=self).success(done).failure(self._on_failed).run_in_background()
