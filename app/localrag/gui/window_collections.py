"""Collections and chat export in the window: the collections list between the chats and the documents, wired
to the documents list (which it filters) and the chat (which it scopes), and File → Export chat….

A chat keeps its collection: opening it picks that collection in the list; picking another collection while
a saved chat is shown scopes that chat to it. Deleting the collection a chat uses leaves the chat searching
every document, and its header and the status bar say so.
"""

from __future__ import annotations

from typing import Any

from localrag.core.store.collections import Collection
from localrag.gui.qt import QtGui
from localrag.gui.views.collections import CollectionsPanel
from localrag.gui.views.export_chat import export_dialog


def fall_back(chat: Any, say: Any, collection_id: int, name: str, chats: list[int]) -> None:
    """A collection was deleted: the chat shown, if it used it, searches all documents and says why; ``say``
    (the status bar) tells how many chats did."""
    note = f"The collection “{name}” was deleted: this chat now searches all documents."
    if chat.scope.collection_id == collection_id:
        chat.set_collection(None, note=note, save=False)  # the store already says so
    n = len(chats)
    others = (
        f" {n} chat{'s' if n != 1 else ''} scoped to it now search{'' if n != 1 else 'es'} all documents."
    )
    say(f"Collection “{name}” deleted." + (others if chats else ""))


def install(window: Any) -> CollectionsPanel:
    """Build the collections panel into ``window`` (a ``MainWindow``) and add File → Export chat…."""
    documents, chat = window.documents_panel, window.chat_panel

    def selected() -> list[int]:
        return [r.doc_id for r in documents.selected_rows() if r.doc_id is not None]

    panel = CollectionsPanel(window.library, window, selected_documents=selected)
    window.left_splitter.insertWidget(1, panel)
    window.left_splitter.setStretchFactor(1, 1)
    documents.collection_menu = panel.add_menu

    def say(text: str) -> None:
        window.statusBar().showMessage(text, 8000)

    def chosen(collection: Collection | None, ids: list[int] | None) -> None:
        documents.set_collection(collection.name if collection else "", ids)
        chat.set_collection(collection.id if collection else None, collection.name if collection else "")
        window.dev_pane.collection_id = collection.id if collection else None  # its retrieval-only box too

    def renamed(collection_id: int, name: str) -> None:
        if chat.scope.collection_id == collection_id:
            chat.set_collection(collection_id, name)

    panel.chosen.connect(chosen)
    panel.deleted.connect(lambda *args: fall_back(chat, say, *args))
    panel.renamed.connect(renamed)
    panel.message.connect(say)
    chat.collection_loaded.connect(panel.select)
    window.store_ready.connect(panel.refresh)
    window.documents_loaded.connect(lambda _n: panel.refresh())

    action = QtGui.QAction("&Export chat…", window)
    action.setShortcut(QtGui.QKeySequence("Ctrl+Shift+E"))
    action.setStatusTip("Save the chat with its quoted sources, pages and links: Markdown, HTML or PDF")
    action.triggered.connect(
        lambda _checked=False: export_dialog(
            window, window.library, chat.chat_id, chat.title_label.text(), say
        )
    )
    window.addAction(action)
    window.file_menu.insertAction(window.settings_action, action)
    window.file_menu.insertAction(window.settings_action, panel.new_action)
    window.file_menu.insertSeparator(window.settings_action)
    window.export_action = action
    return panel
