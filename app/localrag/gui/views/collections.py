"""The collections list on the left: "All documents" and each named set of documents, with their counts.

Picking one filters the documents list and scopes the chat to it. Documents join a collection from the
documents list (drag rows onto it, or its context menu "Add to collection"), or by folder (drop a folder on
it, or "Add folder…"). New (Ctrl+Shift+N), rename (F2) and delete (Delete) act on the collection picked. Every
read and change runs in the background (``Op``); the list shows what came back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from localrag.core.store.collections import Collection
from localrag.gui import theme
from localrag.gui.qt import QtCore, QtGui, QtWidgets, Signal
from localrag.gui.tasks import Op
from localrag.gui.views.documents_model import DOC_IDS_MIME
from localrag.gui.views.drop_overlay import local_paths

log = logging.getLogger("localrag.gui.collections")

ID_ROLE = QtCore.Qt.ItemDataRole.UserRole + 1
ALL_DOCUMENTS = "All documents"


def dropped_ids(mime: QtCore.QMimeData) -> list[int]:
    """The document ids a drag from the documents list carries."""
    raw = bytes(mime.data(DOC_IDS_MIME).data()).decode("ascii", "ignore")
    return [int(x) for x in raw.split(",") if x.strip().isdigit()]


class _DropList(QtWidgets.QListWidget):
    """The list; documents (ids) or files and folders dropped on a collection's row.

    Signals:
        dropped(int, list, list): the collection's id, document ids, local paths.
    """

    dropped = Signal(int, list, list)

    def __init__(self, parent: QtWidgets.QWidget) -> None:
        super().__init__(parent)
        self.setAcceptDrops(True)
        self.viewport().setAcceptDrops(True)
        self._hover: QtWidgets.QListWidgetItem | None = None  # the row a drag is over (shaded, not picked)

    def _shade(self, item: QtWidgets.QListWidgetItem | None) -> None:
        if self._hover is not None and self._hover is not item:
            self._hover.setBackground(QtGui.QBrush())
        if item is not None:
            item.setBackground(self.palette().color(QtGui.QPalette.ColorRole.Highlight).lighter(160))
        self._hover = item

    def _target(self, event: QtGui.QDropEvent) -> int | None:
        item = self.itemAt(event.position().toPoint())
        mime = event.mimeData()
        if item is None or item.data(ID_ROLE) is None:
            return None
        if not mime.hasFormat(DOC_IDS_MIME) and not local_paths(mime):
            return None
        return int(item.data(ID_ROLE))

    def dragEnterEvent(self, event: QtGui.QDragEnterEvent) -> None:  # noqa: N802 (Qt override)
        mime = event.mimeData()
        if mime.hasFormat(DOC_IDS_MIME) or local_paths(mime):
            event.setDropAction(QtCore.Qt.DropAction.CopyAction)
            event.accept()
        else:
            event.ignore()

    def dragMoveEvent(self, event: QtGui.QDragMoveEvent) -> None:  # noqa: N802 (Qt override)
        target = self._target(event)
        self._shade(self.itemAt(event.position().toPoint()) if target is not None else None)
        if target is None:
            event.ignore()
            return
        event.setDropAction(QtCore.Qt.DropAction.CopyAction)
        event.accept()

    def dragLeaveEvent(self, event: QtGui.QDragLeaveEvent) -> None:  # noqa: N802 (Qt override)
        self._shade(None)
        event.accept()

    def dropEvent(self, event: QtGui.QDropEvent) -> None:  # noqa: N802 (Qt override)
        self._shade(None)
        target = self._target(event)
        if target is None:
            event.ignore()
            return
        event.setDropAction(QtCore.Qt.DropAction.CopyAction)
        event.accept()
        mime = event.mimeData()
        self.dropped.emit(
            target, dropped_ids(mime), [] if mime.hasFormat(DOC_IDS_MIME) else local_paths(mime)
        )


class CollectionsPanel(QtWidgets.QWidget):
    """Collections: pick one to scope the chat and filter the documents; make, rename, delete, fill.

    Args:
        library: the facade (``collections``, ``create_collection``… run in ``Op``s).
        selected_documents: returns the ids of the documents selected in the documents list.

    Public:
        refresh(): read the collections again (after the store opens, after documents change).
        select(collection_id): pick a collection (``None``: all documents), as when a chat is opened.
        add_menu(menu, doc_ids): add "Add to collection" entries to a context menu of documents.
        current: the collection picked (None: all documents); collections: the list shown.
        new_action (Ctrl+Shift+N), rename_action (F2), delete_action (Delete), add_folder_action.

    Signals:
        chosen(object, object): the collection picked (a ``Collection``, or None for all documents) and its
            documents' ids (a list, or None); again after its documents change.
        deleted(int, str, list): a collection was deleted: its id, its name, the chats that were scoped to it.
        renamed(int, str): a collection's new name.
        message(str): what to say in the status bar (what was added, why nothing was).
    """

    chosen = Signal(object, object)
    deleted = Signal(int, str, list)
    renamed = Signal(int, str)
    message = Signal(str)

    def __init__(
        self,
        library: Any,
        parent: QtWidgets.QWidget | None = None,
        *,
        selected_documents: Callable[[], list[int]] = list,
    ) -> None:
        super().__init__(parent)
        self.library = library
        self.selected_documents = selected_documents
        self.setObjectName("collections-panel")
        self.setAccessibleName("Collections")
        self.collections: list[Collection] = []
        self.current: Collection | None = None
        self._seq = 0
        self._build()

    # -- layout -------------------------------------------------------------------------------------------

    def _action(self, text: str, slot: Callable[[], None], shortcut: str | None, tip: str) -> QtGui.QAction:
        action = QtGui.QAction(text, self)
        if shortcut:
            action.setShortcut(QtGui.QKeySequence(shortcut))
        action.setStatusTip(tip)
        action.setToolTip(f"{tip} ({shortcut})" if shortcut else tip)
        action.triggered.connect(lambda _checked=False: slot())
        return action

    def _build(self) -> None:
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        header = QtWidgets.QHBoxLayout()
        title = QtWidgets.QLabel("Collections", self)
        title.setProperty("role", "heading")
        header.addWidget(title)
        header.addStretch(1)
        self.new_action = self._action("&New collection…", self.new_dialog, "Ctrl+Shift+N", "New collection")
        # F2 and Delete act on the list only (shortcuts of the list, shown in the menu after a tab).
        self.rename_action = self._action("&Rename…\tF2", self.rename_dialog, None, "Rename the collection")
        self.delete_action = self._action("&Delete\tDel", self.delete_current, None, "Delete the collection")
        self.add_selected_action = self._action(
            "Add the &selected documents",
            self.add_selected,
            None,
            "Put the documents selected in the list in this collection",
        )
        self.add_folder_action = self._action(
            "Add a &folder's documents…", self.add_folder_dialog, None, "Put a folder's documents in it"
        )
        self.remove_selected_action = self._action(
            "Take the selected documents &out",
            self.remove_selected,
            None,
            "Take the selected documents out of this collection (they stay in the library)",
        )
        self.new_action.setShortcutContext(QtCore.Qt.ShortcutContext.WindowShortcut)
        self.addAction(self.new_action)
        self.new_button = QtWidgets.QToolButton(self)
        self.new_button.setDefaultAction(self.new_action)
        self.new_button.setText("New")
        self.new_button.setAccessibleName("New collection")
        self.new_button.setAutoRaise(True)
        self.more_button = QtWidgets.QToolButton(self)
        self.more_button.setText("⋯")
        self.more_button.setToolTip("Rename, delete, add documents")
        self.more_button.setAccessibleName("Collection actions")
        self.more_button.setAutoRaise(True)
        self.more_button.setPopupMode(QtWidgets.QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QtWidgets.QMenu(self.more_button)
        menu.addActions([self.add_selected_action, self.add_folder_action, self.remove_selected_action])
        menu.addSeparator()
        menu.addActions([self.rename_action, self.delete_action])
        self.more_button.setMenu(menu)
        header.addWidget(self.new_button)
        header.addWidget(self.more_button)
        layout.addLayout(header)

        self.list = _DropList(self)
        self.list.setObjectName("collections-list")
        self.list.setMinimumHeight(40)  # the window's smallest height stays as it was
        self.list.setAccessibleName("Collection list")
        self.list.setToolTip(
            "Pick a collection to search only its documents; drop documents or folders on one"
        )
        self.list.currentItemChanged.connect(lambda *_: self._picked())
        self.list.dropped.connect(self._on_dropped)
        self.list.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(
            lambda pos: menu.exec(self.list.viewport().mapToGlobal(pos))
        )
        layout.addWidget(self.list, 1)
        for key, slot in (
            (QtCore.Qt.Key.Key_F2, self.rename_dialog),
            (QtCore.Qt.Key.Key_Delete, self.delete_current),
        ):
            QtGui.QShortcut(
                QtGui.QKeySequence(key), self.list, slot, context=QtCore.Qt.ShortcutContext.WidgetShortcut
            )
        self.error_label = QtWidgets.QLabel(self)
        self.error_label.setWordWrap(True)
        self.error_label.setAccessibleName("Problem with collections")
        self.error_label.hide()
        layout.addWidget(self.error_label)
        self._fill([])

    # -- showing ------------------------------------------------------------------------------------------

    def refresh(self) -> None:
        Op(self.library.collections, owner=self).success(self._fill).failure(self._failed).run_in_background()

    def _fill(self, found: list[Collection]) -> None:
        self.collections = list(found)
        keep = self.current.id if self.current is not None else None
        self.list.blockSignals(True)
        self.list.clear()
        everything = QtWidgets.QListWidgetItem(ALL_DOCUMENTS, self.list)
        everything.setData(ID_ROLE, None)
        for c in self.collections:
            item = QtWidgets.QListWidgetItem(f"{c.name}  ·  {c.documents}", self.list)
            item.setData(ID_ROLE, c.id)
            item.setToolTip(f"{c.name}: {c.documents} document{'s' if c.documents != 1 else ''}")
        self.list.blockSignals(False)
        self._set_row(keep)
        self._sync_actions()

    def _set_row(self, collection_id: int | None) -> None:
        for i in range(self.list.count()):
            if self.list.item(i).data(ID_ROLE) == collection_id:
                if self.list.currentRow() != i:
                    self.list.setCurrentRow(i)  # → _picked
                else:
                    self._picked()
                return
        self.list.setCurrentRow(0)

    def select(self, collection_id: int | None) -> None:
        """Pick this collection (``None`` or one no longer there: all documents)."""
        self._set_row(collection_id)

    def _by_id(self, collection_id: int | None) -> Collection | None:
        return next((c for c in self.collections if c.id == collection_id), None)

    def _picked(self) -> None:
        item = self.list.currentItem()
        collection = self._by_id(item.data(ID_ROLE)) if item is not None else None
        changed = (collection.id if collection else None) != (self.current.id if self.current else None)
        self.current = collection
        self._sync_actions()
        self._seq += 1
        seq = self._seq
        if collection is None:
            if changed:
                self.chosen.emit(None, None)
            return

        def done(ids: list[int]) -> None:
            if seq == self._seq:
                self.chosen.emit(collection, list(ids))

        Op(lambda: self.library.collection_documents(collection.id), owner=self).success(done).failure(
            self._failed
        ).run_in_background()

    def _sync_actions(self) -> None:
        on = self.current is not None
        for a in (
            self.rename_action,
            self.delete_action,
            self.add_selected_action,
            self.add_folder_action,
            self.remove_selected_action,
        ):
            a.setEnabled(on)

    def _failed(self, message: str, _known: bool = True) -> None:
        self.error_label.setText(message)
        self.error_label.setStyleSheet(f"color: {theme.colors().error};")
        self.error_label.show()
        self.message.emit(message)

    def _run(self, work: Callable[[], Any], done: Callable[[Any], None]) -> None:
        """A change in the background; then the error line clears and the list is read again."""

        def ok(result: Any) -> None:
            self.error_label.hide()
            done(result)
            self.refresh()

        Op(work, owner=self).success(ok).failure(self._failed).run_in_background()

    # -- changes ------------------------------------------------------------------------------------------

    def _ask_name(self, title: str, text: str = "") -> str | None:
        name, ok = QtWidgets.QInputDialog.getText(self, title, "Name:", text=text)
        return name if ok else None

    def new_dialog(self, doc_ids: list[int] | None = None) -> None:
        name = self._ask_name("New collection")
        if name is not None:
            self.create_collection(name, doc_ids)

    def create_collection(self, name: str, doc_ids: list[int] | None = None) -> None:
        """Make a collection; with documents, it is picked (an empty one is not: the documents list stays, to
        drag documents onto it)."""

        def work() -> Collection:
            made = self.library.create_collection(name)
            if doc_ids:
                self.library.add_to_collection(made.id, doc_ids)
            return made

        def done(made: Collection) -> None:
            if doc_ids:
                self.current = made  # picked when the list is read again
                self.message.emit(f"Collection “{made.name}” made with {len(doc_ids)} documents.")
            else:
                self.message.emit(
                    f"Collection “{made.name}” made: drag documents onto it, or right-click documents → "
                    "Add to collection."
                )

        self._run(work, done)

    def rename_dialog(self) -> None:
        if self.current is not None:
            name = self._ask_name("Rename collection", self.current.name)
            if name is not None:
                self.rename(self.current.id, name)

    def rename(self, collection_id: int, name: str) -> None:
        def done(c: Collection) -> None:
            self.renamed.emit(c.id, c.name)

        self._run(lambda: self.library.rename_collection(collection_id, name), done)

    def delete_current(self, *, confirm: bool = True) -> None:
        c = self.current
        if c is None:
            return
        if confirm:
            answer = QtWidgets.QMessageBox.question(
                self,
                "Delete collection",
                f"Delete the collection “{c.name}”? Its documents stay in the library; chats scoped to it "
                "will search all documents.",
            )
            if answer != QtWidgets.QMessageBox.StandardButton.Yes:
                return

        self._seq += 1  # what was being read for it is not shown any more

        def done(chats: list[int]) -> None:  # the list, read again, picks "All documents"
            self._seq += 1
            self.deleted.emit(c.id, c.name, list(chats))

        self._run(lambda: self.library.delete_collection(c.id), done)

    def add(self, collection_id: int, doc_ids: list[int], paths: list[str] | None = None) -> None:
        """Put documents (and the library's documents at ``paths``) in a collection."""
        name = (c.name if (c := self._by_id(collection_id)) else "the collection") or ""

        def done(n: int) -> None:
            if n:
                self.message.emit(f"{n} document{'s' if n != 1 else ''} added to “{name}”.")
            elif paths:
                self.message.emit(
                    "None of those files is in the library yet (or they are in the collection already): "
                    "add them to the library first."
                )
            else:
                self.message.emit(f"Those documents are in “{name}” already.")
            if self.current is not None and self.current.id == collection_id:
                self._picked()  # the documents list shows the newcomers

        self._run(lambda: self.library.add_to_collection(collection_id, doc_ids, paths=paths), done)

    def _on_dropped(self, collection_id: int, doc_ids: list[int], paths: list[str]) -> None:
        self.add(collection_id, doc_ids, paths)

    def add_selected(self) -> None:
        ids = self.selected_documents()
        if self.current is None or not ids:
            self.message.emit("Select documents in the list first.")
            return
        self.add(self.current.id, ids)

    def remove_selected(self) -> None:
        ids, c = self.selected_documents(), self.current
        if c is None or not ids:
            return

        def done(n: int) -> None:
            self.message.emit(f"{n} document{'s' if n != 1 else ''} taken out of “{c.name}”.")
            self._picked()

        self._run(lambda: self.library.remove_from_collection(c.id, ids), done)

    def add_folder_dialog(self) -> None:
        if self.current is None:
            return
        title = f"Add a folder's documents to “{self.current.name}”"
        folder = QtWidgets.QFileDialog.getExistingDirectory(self, title)
        if folder:
            self.add(self.current.id, [], [folder])

    def _adder(self, collection_id: int, doc_ids: list[int]) -> Callable[[], None]:
        return lambda: self.add(collection_id, doc_ids)

    def add_menu(self, menu: QtWidgets.QMenu, doc_ids: list[int]) -> None:
        """The "Add to collection" submenu of the documents list's context menu."""
        sub = menu.addMenu("Add to collection")
        for c in self.collections:
            sub.addAction(c.name, self._adder(c.id, doc_ids))
        if self.collections:
            sub.addSeparator()
        sub.addAction("New collection…", lambda: self.new_dialog(doc_ids))
        if self.current is not None:
            menu.addAction(f"Take out of “{self.current.name}”", self.remove_selected)
