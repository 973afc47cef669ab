"""The documents panel: every document with its type, pages, chunks, status, progress and error.

The panel only shows and asks: it never reads the database or a file itself. The window feeds it a listing
(``set_documents``) and ingest events (``apply_event``), and acts on its signals.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from localrag.core.ingest.status import EMBEDDING, EXTRACTING, FAILED, READY, REMOVED, SKIPPED
from localrag.gui import theme
from localrag.gui.qt import QtCore, QtGui, QtWidgets, Signal
from localrag.gui.views.documents_model import (
    IN_PROGRESS,
    ROW_ROLE,
    TYPE_LABELS,
    DocumentRow,
    DocumentsFilter,
    DocumentsModel,
    ModelIndex,
    format_eta,
)
from localrag.gui.views.drop_overlay import EmptyLibrary


class _StatusDelegate(QtWidgets.QStyledItemDelegate):
    """Draws a thin progress bar under the status text of a document being indexed."""

    def paint(
        self, painter: QtGui.QPainter, option: QtWidgets.QStyleOptionViewItem, index: ModelIndex
    ) -> None:
        super().paint(painter, option, index)
        row: DocumentRow | None = index.data(ROW_ROLE)
        if row is None or row.status not in IN_PROGRESS:
            return
        rect = option.rect.adjusted(4, option.rect.height() - 6, -6, -3)
        painter.save()
        painter.setPen(QtCore.Qt.PenStyle.NoPen)
        track = option.palette.color(QtGui.QPalette.ColorRole.Mid)
        painter.setBrush(track)
        painter.drawRoundedRect(rect, 1.5, 1.5)
        fraction = row.fraction
        painter.setBrush(QtGui.QColor(theme.colors().progress))
        if fraction is None:  # queued or unknown: a short moving segment
            width = rect.width() // 5
            x = rect.left() + int((time.monotonic() * 120) % max(1, rect.width() - width))
            painter.drawRoundedRect(QtCore.QRect(x, rect.top(), width, rect.height()), 1.5, 1.5)
        else:
            filled = QtCore.QRect(
                rect.left(), rect.top(), max(2, int(rect.width() * fraction)), rect.height()
            )
            painter.drawRoundedRect(filled, 1.5, 1.5)
        painter.restore()


class DocumentsPanel(QtWidgets.QWidget):
    """Documents with search, type filter and actions; selecting documents (or a type) scopes the chat.

    Repaints from ingest events are coalesced: events are held per document and applied at most
    ``repaints_per_s`` times a second.

    Signals:
        add_files_requested(): the user wants to pick files.
        add_folder_requested(): the user wants to pick a folder.
        remove_requested(list): document ids to remove from the library (files on disk stay).
        reindex_requested(list): document ids to index again.
        cancel_requested(list): document ids whose indexing should stop.
        cancel_all_requested(): stop indexing everything queued.
        open_requested(str): a document's file to open with the system's viewer.
        details_requested(int): a document whose details (organisation, kind, period…) to show and edit.
        scope_changed(list, list): the chat's scope as (document ids, document types); both empty: all.

    Public (besides the signals' actions): set_grounding(on): whether the chat uses the documents at all
    ("Use my documents"); off, the line under the list says the chat does not use them.
    set_collection(name, doc_ids): show only a collection's documents (``None``: all); rows drag out as
    document ids (``DOC_IDS_MIME``) to drop on a collection. ``collection_menu(menu, doc_ids)``, when set,
    adds the "Add to collection" entries to the list's context menu.
    """

    add_files_requested = Signal()
    add_folder_requested = Signal()
    remove_requested = Signal(list)
    reindex_requested = Signal(list)
    cancel_requested = Signal(list)
    cancel_all_requested = Signal()
    open_requested = Signal(str)
    details_requested = Signal(int)
    scope_changed = Signal(list, list)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, repaints_per_s: float = 10.0) -> None:
        super().__init__(parent)
        self.setObjectName("documents-panel")
        self.setAccessibleName("Documents")
        self.model = DocumentsModel(self)
        self.proxy = DocumentsFilter(self)
        self.proxy.setSourceModel(self.model)
        self._pending: dict[str, DocumentRow] = {}
        self._removed: set[str] = set()
        self._scope: tuple[list[int], list[str]] = ([], [])
        self._grounding = True
        self._collection = ""
        self.collection_menu: Any = None
        self._flush_timer = QtCore.QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.setInterval(int(1000 / repaints_per_s))
        self._flush_timer.timeout.connect(self.flush)
        self._anim_timer = QtCore.QTimer(self)  # moves the busy segment of queued rows
        self._anim_timer.setInterval(100)
        self._anim_timer.timeout.connect(self._animate)
        self.flush_count = 0
        self._build()

    # -- layout -------------------------------------------------------------------------------------------

    def _build(self) -> None:
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)

        header = QtWidgets.QHBoxLayout()
        title = QtWidgets.QLabel("Documents", self)
        title.setProperty("role", "heading")
        header.addWidget(title)
        header.addStretch(1)
        self.add_button = QtWidgets.QToolButton(self)
        self.add_button.setText("Add")
        self.add_button.setToolTip("Add documents (Ctrl+O)")
        self.add_button.setAccessibleName("Add documents")
        self.add_button.setIcon(
            self.style().standardIcon(QtWidgets.QStyle.StandardPixmap.SP_FileDialogNewFolder)
        )
        self.add_button.setToolButtonStyle(QtCore.Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.add_button.setPopupMode(QtWidgets.QToolButton.ToolButtonPopupMode.MenuButtonPopup)
        add_menu = QtWidgets.QMenu(self.add_button)
        add_menu.addAction("Files…", self.add_files_requested.emit)
        add_menu.addAction("Folder…", self.add_folder_requested.emit)
        self.add_button.setMenu(add_menu)
        self.add_button.clicked.connect(self.add_files_requested.emit)
        header.addWidget(self.add_button)
        layout.addLayout(header)

        filters = QtWidgets.QHBoxLayout()
        self.search = QtWidgets.QLineEdit(self)
        self.search.setPlaceholderText("Search titles and paths")
        self.search.setAccessibleName("Search documents")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._filter_changed)
        self.type_filter = QtWidgets.QComboBox(self)
        self.type_filter.setAccessibleName("Document type")
        self.type_filter.setToolTip("Show (and let the chat search) only documents of this type")
        self.type_filter.addItem("All types", "")
        self.type_filter.currentIndexChanged.connect(self._filter_changed)
        filters.addWidget(self.search, 1)
        filters.addWidget(self.type_filter)
        layout.addLayout(filters)

        self.stack = QtWidgets.QStackedWidget(self)
        self.empty = EmptyLibrary(self)
        self.empty.add_clicked.connect(self.add_files_requested.emit)
        self.table = QtWidgets.QTableView(self)
        self.table.setObjectName("documents-table")
        self.table.setAccessibleName("Document list")
        self.table.setModel(self.proxy)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setShowGrid(False)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(QtCore.Qt.TextElideMode.ElideRight)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(30)
        # Rows of one height: the view places 20,000 of them without asking each for its size.
        self.table.verticalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.Fixed)
        self.table.setSortingEnabled(False)
        self.table.setDragEnabled(True)  # onto a collection
        self.table.setDragDropMode(QtWidgets.QAbstractItemView.DragDropMode.DragOnly)
        self.table.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._context_menu)
        self.table.doubleClicked.connect(lambda _i: self._open_selected())
        self.table.setItemDelegateForColumn(DocumentsModel.STATUS, _StatusDelegate(self.table))
        head = self.table.horizontalHeader()
        head.setSectionResizeMode(DocumentsModel.TITLE, QtWidgets.QHeaderView.ResizeMode.Stretch)
        for col, width in (
            (DocumentsModel.TYPE, 72),
            (DocumentsModel.PAGES, 52),
            (DocumentsModel.CHUNKS, 58),
            (DocumentsModel.STATUS, 188),  # "Searchable · embedding 40 %"
        ):
            head.setSectionResizeMode(col, QtWidgets.QHeaderView.ResizeMode.Interactive)
            self.table.setColumnWidth(col, width)
        head.setHighlightSections(False)
        # A click on a heading sorts by that column (in the model, by a key per row); a third click goes back
        # to newest first.
        head.setSectionsClickable(True)
        head.setSortIndicatorShown(True)
        head.setSortIndicatorClearable(True)
        head.setSortIndicator(-1, QtCore.Qt.SortOrder.AscendingOrder)
        head.sortIndicatorChanged.connect(self.model.sort)
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._selection_changed())
        self.stack.addWidget(self.empty)
        self.stack.addWidget(self.table)
        layout.addWidget(self.stack, 1)

        self.error_label = QtWidgets.QLabel(self)
        self.error_label.setWordWrap(True)
        self.error_label.setAccessibleName("Problem with the selected document")
        self.error_label.hide()
        layout.addWidget(self.error_label)

        actions = QtWidgets.QHBoxLayout()
        self.open_button = self._action_button(
            "Open",
            "Open the file with its usual application",
            QtWidgets.QStyle.StandardPixmap.SP_DialogOpenButton,
            self._open_selected,
        )
        self.reindex_button = self._action_button(
            "Re-index",
            "Index the selected documents again",
            QtWidgets.QStyle.StandardPixmap.SP_BrowserReload,
            lambda: self._emit_selected(self.reindex_requested),
        )
        self.cancel_button = self._action_button(
            "Cancel",
            "Stop indexing the selected documents",
            QtWidgets.QStyle.StandardPixmap.SP_BrowserStop,
            lambda: self._emit_selected(self.cancel_requested, IN_PROGRESS),
        )
        self.remove_button = self._action_button(
            "Remove",
            "Remove from the library (the file stays on disk)",
            QtWidgets.QStyle.StandardPixmap.SP_TrashIcon,
            self._remove_selected,
        )
        for b in (self.open_button, self.reindex_button, self.cancel_button, self.remove_button):
            actions.addWidget(b)
        actions.addStretch(1)
        layout.addLayout(actions)

        self.progress_row = QtWidgets.QWidget(self)
        prow = QtWidgets.QHBoxLayout(self.progress_row)
        prow.setContentsMargins(0, 0, 0, 0)
        self.progress_label = QtWidgets.QLabel(self.progress_row)
        self.progress_label.setAccessibleName("Indexing progress")
        self.progress_bar = QtWidgets.QProgressBar(self.progress_row)
        self.progress_bar.setAccessibleName("Indexing progress bar")
        self.progress_bar.setTextVisible(False)
        self.progress_bar.setMaximumHeight(8)
        self.cancel_all_button = QtWidgets.QPushButton("Cancel all", self.progress_row)
        self.cancel_all_button.setAccessibleName("Cancel all indexing")
        self.cancel_all_button.clicked.connect(self.cancel_all_requested.emit)
        pcol = QtWidgets.QVBoxLayout()
        pcol.addWidget(self.progress_label)
        pcol.addWidget(self.progress_bar)
        prow.addLayout(pcol, 1)
        prow.addWidget(self.cancel_all_button)
        self.progress_row.hide()
        layout.addWidget(self.progress_row)

        self.scope_label = QtWidgets.QLabel(self)
        self.scope_label.setProperty("role", "muted")
        self.scope_label.setAccessibleName("Chat scope")
        self.scope_label.setWordWrap(True)
        self.summary_label = QtWidgets.QLabel(self)
        self.summary_label.setProperty("role", "muted")
        self.summary_label.setAccessibleName("Library summary")
        layout.addWidget(self.scope_label)
        layout.addWidget(self.summary_label)
        self._update_views()
        self._selection_changed()

    def _action_button(
        self, text: str, tip: str, icon: QtWidgets.QStyle.StandardPixmap, slot: Any
    ) -> QtWidgets.QToolButton:
        b = QtWidgets.QToolButton(self)
        b.setText(text)
        b.setToolTip(tip)
        b.setAccessibleName(text)
        b.setIcon(self.style().standardIcon(icon))
        b.setToolButtonStyle(QtCore.Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        b.setAutoRaise(True)
        b.clicked.connect(slot)
        return b

    # -- feeding ------------------------------------------------------------------------------------------

    def set_documents(self, infos: list[Any]) -> None:
        """Show a fresh listing (``DocumentRow``s, or ``DocumentInfo``s from ``list_documents``); the selected
        documents (the chat's scope) stay selected."""
        selected = [r.doc_id for r in self.selected_rows() if r.doc_id is not None]
        self._pending.clear()
        rows = (
            infos
            if infos and isinstance(infos[0], DocumentRow)
            else [DocumentRow.from_info(i) for i in infos]
        )
        self.model.set_rows(rows)
        if selected:
            self.select_documents(selected)
        self._update_views()

    def add_placeholders(self, paths: list[str]) -> None:
        """Show dropped files at once, before the ingest worker has recorded them."""
        rows = []
        for p in paths:  # no file system access here: a folder shows by its name until it is walked
            path = Path(p)
            rows.append(DocumentRow(None, str(path.absolute()), path.name or str(path), status="adding"))
        self.model.upsert_many(rows)
        self._update_views()

    def clear_placeholders(self, paths: list[str]) -> None:
        self.model.remove_keys(f"path:{Path(p).absolute()}" for p in paths)
        self._update_views()

    def apply_event(self, event: Any) -> None:
        """Take an ``IngestEvent``; the table is updated at the next coalesced repaint."""
        if event.status == REMOVED:
            self._pending.pop(f"doc:{event.doc_id}", None)
            self._removed.add(f"doc:{event.doc_id}")
        elif event.status == SKIPPED:
            self._pending[f"path:{event.path}"] = DocumentRow(
                None,
                event.path,
                event.title,
                status=SKIPPED,
                error=event.message,
                error_code=event.error_code,
            )
        else:
            key = f"doc:{event.doc_id}"
            old = self._pending.get(key) or self.model.row_for(key)
            row = DocumentRow(
                event.doc_id,
                event.path,
                event.title or (old.title if old else Path(event.path).name),
                doc_type=event.doc_type or (old.doc_type if old else ""),
                status=event.status,
                pages=event.pages or (old.pages if old else 0),
                pages_done=event.pages_done,
                chunks_total=event.chunks_total or (old.chunks_total if old else 0),
                chunks_embedded=event.chunks_embedded,
                eta_s=event.eta_s,
                error_code=event.error_code,
                error=event.message if event.status == FAILED else None,
                bytes=old.bytes if old else 0,
                searchable=event.searchable,
            )
            self._pending[key] = row
        if not self._flush_timer.isActive():
            self._flush_timer.start()

    def flush(self) -> None:
        """Apply the held events now (at most ``repaints_per_s`` times a second from the timer)."""
        self._flush_timer.stop()
        pending, self._pending = self._pending, {}
        removed, self._removed = self._removed, set()
        # A skipped file (one already in the library, say) needs no row of its own; one left out for what it
        # is (a symlink loop) keeps its row, with the reason.
        skipped = [row.key for row in pending.values() if row.status == SKIPPED and not row.error_code]
        self.model.remove_keys([*removed, *skipped])
        self.model.upsert_many([row for row in pending.values() if row.status != SKIPPED or row.error_code])
        self.flush_count += 1
        self._update_views()
        self._selection_changed()

    # -- views --------------------------------------------------------------------------------------------

    def _update_views(self) -> None:
        rows = self.model.rows
        self.stack.setCurrentWidget(self.table if rows else self.empty)
        self._sync_type_filter()
        ready = failed = chunks = 0
        active = []
        for r in rows:  # one pass: this runs at every listing and repaint of 20,000 rows
            if r.status == READY:
                ready += 1
                chunks += r.chunks_total
            elif r.status == FAILED:
                failed += 1
            elif r.status in IN_PROGRESS or r.status == "adding":
                active.append(r)
        if rows:
            parts = [f"{ready:,} document{'s' if ready != 1 else ''} ready", f"{chunks:,} chunks"]
        else:
            parts = ["No documents yet"]
        if failed:
            parts.append(f"{failed} failed")
        self.summary_label.setText(" · ".join(parts))
        if active:
            total_chunks = sum(r.chunks_total for r in active)
            done_chunks = sum(r.chunks_embedded for r in active)
            parts = [f"Indexing {len(active)} document{'s' if len(active) != 1 else ''}"]
            if total_chunks:
                parts.append(f"{done_chunks:,} of {total_chunks:,} chunks")
            etas = [r.eta_s for r in active if r.status == EMBEDDING and r.eta_s is not None]
            if etas:
                parts.append(format_eta(max(etas)))
            self.progress_label.setText(" · ".join(parts))
            working = [r for r in active if r.status in (EXTRACTING, EMBEDDING)]
            self.progress_label.setToolTip("\n".join(f"{r.title}: {r.detail_text}" for r in working))
            if total_chunks:
                self.progress_bar.setRange(0, total_chunks)
                self.progress_bar.setValue(done_chunks)
            else:
                self.progress_bar.setRange(0, 0)
            self.progress_row.show()
            if not self._anim_timer.isActive():
                self._anim_timer.start()
        else:
            self.progress_row.hide()
            self._anim_timer.stop()

    def _animate(self) -> None:
        # Repaint the status column of the rows in view (the delegate moves the busy segment of queued rows):
        # a signal per queued row would cost the UI thread hundreds of milliseconds with thousands queued.
        col = DocumentsModel.STATUS
        viewport = self.table.viewport()
        x = self.table.columnViewportPosition(col)
        viewport.update(QtCore.QRect(x, 0, self.table.columnWidth(col), viewport.height()))

    def _sync_type_filter(self) -> None:
        types = self.model.doc_types()
        current = self.type_filter.currentData() or ""
        have = [self.type_filter.itemData(i) for i in range(1, self.type_filter.count())]
        if types == have:
            return
        self.type_filter.blockSignals(True)
        while self.type_filter.count() > 1:
            self.type_filter.removeItem(1)
        for t in types:
            self.type_filter.addItem(TYPE_LABELS.get(t, t.upper()), t)
        i = self.type_filter.findData(current)
        self.type_filter.setCurrentIndex(max(0, i))
        self.type_filter.blockSignals(False)
        if (self.type_filter.currentData() or "") != current:
            self._filter_changed()

    def _filter_changed(self, *_: object) -> None:
        self.proxy.set_filter(self.search.text(), self.type_filter.currentData() or "")
        self._selection_changed()

    # -- selection and scope ------------------------------------------------------------------------------

    def selected_rows(self) -> list[DocumentRow]:
        rows = []
        for index in self.table.selectionModel().selectedRows():
            row = self.proxy.data(index, ROW_ROLE)
            if row is not None:
                rows.append(row)
        return rows

    def select_documents(self, doc_ids: list[int]) -> None:
        """Select these documents in the table (the chat's scope follows)."""
        selection = QtCore.QItemSelection()
        for i, r in enumerate(self.model.rows):
            if r.doc_id in doc_ids:
                src = self.model.index(i, 0)
                proxy_index = self.proxy.mapFromSource(src)
                if proxy_index.isValid():
                    selection.select(
                        proxy_index, proxy_index.siblingAtColumn(len(DocumentsModel.COLUMNS) - 1)
                    )
        self.table.selectionModel().select(selection, QtCore.QItemSelectionModel.SelectionFlag.ClearAndSelect)

    def set_type_scope(self, doc_type: str) -> None:
        i = self.type_filter.findData(doc_type)
        self.type_filter.setCurrentIndex(max(0, i))

    def set_collection(self, name: str, doc_ids: list[int] | None) -> None:
        """Show only the documents of the collection ``name`` (``doc_ids``), or every document (``None``)."""
        self._collection = name if doc_ids is not None else ""
        self.proxy.set_members(doc_ids)
        self._selection_changed()

    @property
    def scope(self) -> tuple[list[int], list[str]]:
        return self._scope

    def set_grounding(self, on: bool) -> None:
        """The chat uses the documents (``on``) or not: the line under the list says which."""
        self._grounding = bool(on)
        self._selection_changed()

    def _selection_changed(self) -> None:
        rows = self.selected_rows()
        ids = sorted(r.doc_id for r in rows if r.doc_id is not None and r.status == READY)
        doc_type = self.type_filter.currentData() or ""
        types = [doc_type] if doc_type and not ids else []
        if not self._grounding:
            text = "The chat does not use your documents (“Use my documents” is off)."
        elif ids:
            n = len(ids)
            text = f"The chat searches the {n} selected document{'s' if n != 1 else ''}."
        elif doc_type:
            text = f"The chat searches {TYPE_LABELS.get(doc_type, doc_type)} documents only."
        elif self._collection:
            n = self.proxy.rowCount()
            plural = "s" if n != 1 else ""
            text = f"The chat searches the collection “{self._collection}” ({n} document{plural})."
        else:
            text = "The chat searches all documents. Select some to narrow it."
        self.scope_label.setText(text)
        has = bool(rows)
        self.open_button.setEnabled(has and all(r.path for r in rows))
        self.remove_button.setEnabled(has)
        self.reindex_button.setEnabled(
            any(r.doc_id is not None and r.status not in IN_PROGRESS for r in rows)
        )
        self.cancel_button.setEnabled(any(r.status in IN_PROGRESS for r in rows))
        failed = [r for r in rows if r.error]
        if len(rows) == 1 and failed:
            self.error_label.setText(f"<b>{_escape(failed[0].title)}</b>: {_escape(failed[0].error or '')}")
            self.error_label.setStyleSheet(f"color: {theme.colors().error};")
            self.error_label.show()
        else:
            self.error_label.hide()
        scope = (ids, types)
        if scope != self._scope:
            self._scope = scope
            self.scope_changed.emit(list(ids), list(types))

    # -- actions ------------------------------------------------------------------------------------------

    def _emit_selected(self, signal: Any, statuses: tuple[str, ...] | None = None) -> None:
        ids = [
            r.doc_id
            for r in self.selected_rows()
            if r.doc_id is not None and (statuses is None or r.status in statuses)
        ]
        if ids:
            signal.emit(ids)

    def _remove_selected(self) -> None:
        rows = self.selected_rows()
        for r in rows:
            if r.doc_id is None:  # a skipped file or a placeholder: nothing is stored
                self.model.remove_key(r.key)
        self._emit_selected(self.remove_requested)
        self._update_views()

    def _open_selected(self) -> None:
        for r in self.selected_rows()[:5]:
            if r.path:
                self.open_requested.emit(r.path)

    def _context_menu(self, pos: QtCore.QPoint) -> None:
        if not self.selected_rows():
            return
        menu = QtWidgets.QMenu(self)
        for b in (self.open_button, self.reindex_button, self.cancel_button, self.remove_button):
            action = menu.addAction(b.icon(), b.text(), b.click)
            action.setEnabled(b.isEnabled())
        menu.addSeparator()
        details = menu.addAction("Details…", self.request_details)
        details.setShortcut(QtGui.QKeySequence("Alt+Return"))
        details.setEnabled(self._details_row() is not None)
        ids = [r.doc_id for r in self.selected_rows() if r.doc_id is not None]
        if self.collection_menu is not None and ids:
            self.collection_menu(menu, ids)
        menu.exec(self.table.viewport().mapToGlobal(pos))

    def _details_row(self) -> DocumentRow | None:
        rows = self.selected_rows()
        if len(rows) == 1 and rows[0].doc_id is not None and rows[0].status == READY:
            return rows[0]
        return None

    def request_details(self) -> None:
        """Ask for the selected document's details (one ready document selected)."""
        row = self._details_row()
        if row is not None and row.doc_id is not None:
            self.details_requested.emit(row.doc_id)

    def keyPressEvent(self, event: QtGui.QKeyEvent) -> None:  # noqa: N802 (Qt override)
        if event.key() == QtCore.Qt.Key.Key_Delete and self.table.hasFocus():
            self._remove_selected()
            return
        if (
            event.key() in (QtCore.Qt.Key.Key_Return, QtCore.Qt.Key.Key_Enter)
            and event.modifiers() & QtCore.Qt.KeyboardModifier.AltModifier
            and self.table.hasFocus()
        ):
            self.request_details()
            return
        super().keyPressEvent(event)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
