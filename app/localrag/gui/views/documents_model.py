"""What the documents panel shows: one row per document, updated in place by ingest events, and its filter."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from localrag.core.ingest.metadata import shown_title
from localrag.core.ingest.status import (
    CANCELLED,
    EMBEDDING,
    EXTRACTING,
    FAILED,
    QUEUED,
    READY,
    SKIPPED,
    UNFINISHED,
)
from localrag.core.text.identity import document_line
from localrag.gui import theme
from localrag.gui.qt import QtCore, QtGui

# What Qt passes as a model index to the overrides below.
ModelIndex = QtCore.QModelIndex | QtCore.QPersistentModelIndex

TYPE_LABELS = {
    "pdf": "PDF",
    "markdown": "Markdown",
    "text": "Text",
    "html": "HTML",
    "docx": "Word",
    "image": "Image",
    "unknown": "Other",
    "": "—",
}
IN_PROGRESS = UNFINISHED
STATUS_LABELS = {
    QUEUED: "Queued",
    EXTRACTING: "Reading",
    EMBEDDING: "Embedding",
    READY: "Ready",
    FAILED: "Failed",
    CANCELLED: "Cancelled",
    SKIPPED: "Skipped",
    "adding": "Adding…",
}
ERROR_LABELS = {
    "encrypted": "Encrypted",
    "corrupt": "Corrupt",
    "empty": "Empty",
    "unsupported": "Unsupported type",
    "too_large": "Too large",
    "needs_ocr": "Needs OCR",
    "unreadable": "Unreadable",
    "redirect": "Redirect only",
}

ROW_ROLE = QtCore.Qt.ItemDataRole.UserRole + 1
ROW_FLAGS = (
    QtCore.Qt.ItemFlag.ItemIsEnabled
    | QtCore.Qt.ItemFlag.ItemIsSelectable
    | QtCore.Qt.ItemFlag.ItemNeverHasChildren
)
# What a drag of rows carries: the documents' ids, comma-separated (dropped on a collection to add them).
DOC_IDS_MIME = "application/x-localrag-document-ids"


@dataclass
class DocumentRow:
    """What the panel shows of one document (or of a dropped file not yet recorded: ``doc_id`` None)."""

    doc_id: int | None
    path: str
    title: str
    doc_type: str = ""
    status: str = QUEUED
    pages: int = 0
    pages_done: int = 0
    chunks_total: int = 0
    chunks_embedded: int = 0
    eta_s: float | None = None
    error_code: str | None = None
    error: str | None = None
    bytes: int = 0
    identity: str = ""  # what the document is, as found at ingest: organisation · kind · period
    searchable: bool = False  # still being indexed, and found by searches already (by keywords first)

    # ``doc:ID``, or ``path:PATH`` for a file not yet recorded; made with the row (on the worker that lists
    # them): a row is replaced, never re-keyed.
    key: str = field(init=False, repr=False, compare=False)
    # Made once with the row (a row is replaced, never changed), not at every sort or search of 20,000 rows:
    # the short status shown in the table, the title as it sorts, and the text a search looks in.
    status_text: str = field(init=False, repr=False, compare=False)
    sort_title: str = field(init=False, repr=False, compare=False)
    search_text: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.key = f"doc:{self.doc_id}" if self.doc_id is not None else f"path:{self.path}"
        self.status_text = self._status_text()
        self.sort_title = self.title.casefold()
        self.search_text = f"{self.title}\n{self.path}\n{self.error or ''}".lower()

    @property
    def fraction(self) -> float | None:
        if self.status == EXTRACTING and self.pages:
            return 0.25 * min(1.0, self.pages_done / self.pages)
        if self.status == EMBEDDING and self.chunks_total:
            return 0.25 + 0.75 * min(1.0, self.chunks_embedded / self.chunks_total)
        return None

    def _status_text(self) -> str:
        """The short status shown in the table."""
        if self.status == FAILED:
            return ERROR_LABELS.get(self.error_code or "", "Failed")
        if self.status == EXTRACTING:
            reading = f"Reading {self.pages_done}/{self.pages}" if self.pages else "Reading…"
            return f"Searchable · {reading[0].lower()}{reading[1:]}" if self.searchable else reading
        if self.status == EMBEDDING:
            if not self.chunks_total:
                return "Searchable · embedding…" if self.searchable else "Embedding…"
            percent = round(100 * self.chunks_embedded / self.chunks_total)
            return f"Searchable · embedding {percent} %" if self.searchable else f"Embedding {percent}%"
        return STATUS_LABELS.get(self.status, self.status.title())

    @property
    def detail_text(self) -> str:
        """The long status: pages, chunks and time left, or the error."""
        if self.status == FAILED:
            return self.error or "Failed"
        if self.status == EXTRACTING:
            return f"Reading page {self.pages_done} of {self.pages}" if self.pages else "Reading"
        if self.status == EMBEDDING:
            text = f"Embedding chunk {self.chunks_embedded} of {self.chunks_total}"
            text += f", {format_eta(self.eta_s)}" if self.eta_s is not None else ""
            if self.searchable:
                text += ". Searchable now: by keywords, and by meaning as its chunks are embedded"
            return text
        if self.status == READY:
            return f"Ready: {self.pages:,} page{'s' if self.pages != 1 else ''}, {self.chunks_total:,} chunks"
        if self.status == SKIPPED and self.error:
            return f"Not indexed: {self.error}"
        return STATUS_LABELS.get(self.status, self.status.title())

    @classmethod
    def from_info(cls, info: Any) -> DocumentRow:
        return cls(
            doc_id=info.id,
            path=info.path,
            title=shown_title(info.title, getattr(info, "meta", None) or {}),
            doc_type=info.doc_type,
            status=info.status,
            pages=info.pages,
            pages_done=info.pages if info.status in (EMBEDDING, READY) else 0,
            chunks_total=info.chunks_total,
            chunks_embedded=info.chunks_embedded,
            error_code=info.error_code,
            error=info.error if info.status == FAILED else None,
            bytes=info.bytes,
            identity=document_line("", getattr(info, "meta", None) or {}),
            searchable=bool(getattr(info, "searchable", False)),
        )


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{max(1, round(seconds))} s left"
    if seconds < 3600:
        return f"{round(seconds / 60)} min left"
    return f"{seconds / 3600:.1f} h left"


class DocumentsModel(QtCore.QAbstractTableModel):
    """Rows of ``DocumentRow``, newest first, updated in place by ingest events."""

    COLUMNS = ("Title", "Type", "Pages", "Chunks", "Status")
    TITLE, TYPE, PAGES, CHUNKS, STATUS = range(5)

    def __init__(self, parent: QtCore.QObject | None = None) -> None:
        super().__init__(parent)
        self.rows: list[DocumentRow] = []
        self._positions: dict[str, int] | None = {}  # a row's key → its row (None: made when next asked)
        self.sorted_by: tuple[int, QtCore.Qt.SortOrder] | None = None  # None: newest first

    # -- Qt model -----------------------------------------------------------------------------------------

    def flags(self, index: ModelIndex) -> QtCore.Qt.ItemFlag:
        return self.row_flags(index.row()) if index.isValid() else QtCore.Qt.ItemFlag.NoItemFlags

    def row_flags(self, i: int) -> QtCore.Qt.ItemFlag:
        """Every cell of row ``i``: selectable, and dragged onto a collection once it has an id."""
        flags = ROW_FLAGS
        if self.rows[i].doc_id is not None:
            flags |= QtCore.Qt.ItemFlag.ItemIsDragEnabled
        return flags

    def mimeTypes(self) -> list[str]:  # noqa: N802
        return [DOC_IDS_MIME]

    def mimeData(self, indexes: Any) -> QtCore.QMimeData:  # noqa: N802
        ids = sorted({d for i in indexes if i.isValid() and (d := self.rows[i.row()].doc_id) is not None})
        mime = QtCore.QMimeData()
        mime.setData(DOC_IDS_MIME, QtCore.QByteArray(",".join(map(str, ids)).encode()))
        return mime

    def rowCount(self, parent: ModelIndex = QtCore.QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: ModelIndex = QtCore.QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(  # noqa: N802
        self,
        section: int,
        orientation: QtCore.Qt.Orientation,
        role: int = QtCore.Qt.ItemDataRole.DisplayRole,
    ) -> Any:
        if orientation == QtCore.Qt.Orientation.Horizontal and role == QtCore.Qt.ItemDataRole.DisplayRole:
            return self.COLUMNS[section]
        if role == QtCore.Qt.ItemDataRole.TextAlignmentRole and section in (self.PAGES, self.CHUNKS):
            return int(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        return None

    def data(self, index: ModelIndex, role: int = QtCore.Qt.ItemDataRole.DisplayRole) -> Any:
        return self.cell(index.row(), index.column(), role) if index.isValid() else None

    def cell(self, i: int, col: int, role: int) -> Any:
        """What ``data`` gives for row ``i``, column ``col`` (the filter reads it without a model index)."""
        row = self.rows[i]
        if role == ROW_ROLE:
            return row
        if role == QtCore.Qt.ItemDataRole.DisplayRole:
            if col == self.TITLE:
                return row.title
            if col == self.TYPE:
                return TYPE_LABELS.get(row.doc_type, row.doc_type.upper())
            if col == self.PAGES:
                return f"{row.pages:,}" if row.pages else ""
            if col == self.CHUNKS:
                return f"{row.chunks_total:,}" if row.chunks_total else ""
            if col == self.STATUS:
                return row.status_text
        if role == QtCore.Qt.ItemDataRole.ToolTipRole:
            return "\n".join(x for x in (row.title, row.identity, row.path, row.detail_text) if x)
        if role == QtCore.Qt.ItemDataRole.TextAlignmentRole and col in (self.PAGES, self.CHUNKS):
            return int(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        if role == QtCore.Qt.ItemDataRole.ForegroundRole and col == self.STATUS:
            c = theme.colors()
            color = {
                READY: c.success,
                FAILED: c.error,
                CANCELLED: c.muted,
                SKIPPED: c.muted,
                QUEUED: c.muted,
            }.get(row.status)
            return QtGui.QColor(color) if color else None
        if role == QtCore.Qt.ItemDataRole.AccessibleTextRole:
            return f"{row.title}, {TYPE_LABELS.get(row.doc_type, row.doc_type)}, {row.status_text}" + (
                f": {row.error}" if row.error else ""
            )
        return None

    def sort(self, column: int, order: QtCore.Qt.SortOrder = QtCore.Qt.SortOrder.AscendingOrder) -> None:
        """Order the rows by a column (a sort key per row, not a comparison through ``data``: 20,000 rows sort
        in milliseconds); the selection follows its rows. A column < 0 goes back to newest first."""
        if column < 0 or column >= len(self.COLUMNS):
            self.sorted_by = None
            key: Any = lambda r: -(r.doc_id or 1 << 62)  # noqa: E731 (rows being added stay on top)
        else:
            self.sorted_by = (column, order)
            key = _SORT_KEYS[column]
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        keys = [self.rows[i.row()].key for i in persistent]
        self.rows.sort(key=key, reverse=order == QtCore.Qt.SortOrder.DescendingOrder and column >= 0)
        self._reindex()
        moved = [self.index(self._index[k], i.column()) for k, i in zip(keys, persistent, strict=True)]
        self.changePersistentIndexList(persistent, moved)
        self.layoutChanged.emit()

    # -- updates ------------------------------------------------------------------------------------------

    def set_rows(self, rows: list[DocumentRow]) -> None:
        """Replace the listing; rows still being added (no id yet) stay on top."""
        pending = [r for r in self.rows if r.doc_id is None and r.status == "adding"]
        self.beginResetModel()
        self.rows = pending + list(rows)
        if self.sorted_by is not None:
            self.rows.sort(
                key=_SORT_KEYS[self.sorted_by[0]],
                reverse=self.sorted_by[1] == QtCore.Qt.SortOrder.DescendingOrder,
            )
        self._reindex()
        self.endResetModel()

    def upsert(self, row: DocumentRow, replaces_path: bool = True) -> None:
        """Add ``row`` on top, or update the row with its id (or the placeholder for its path)."""
        self.upsert_many([row], replaces_path)

    def upsert_many(self, rows: list[DocumentRow], replaces_path: bool = True) -> None:
        """``upsert`` each of ``rows`` in turn. Rows already shown change in place; new ones go on top in one
        insertion, so a repaint that brings thousands of rows costs one pass over the table, not one per
        row."""
        new: dict[str, DocumentRow] = {}
        for row in rows:
            i = self._index.get(row.key)
            if i is None and replaces_path and row.doc_id is not None:
                i = self._index.pop(f"path:{row.path}", None)
            if i is None:
                new[row.key] = row  # a later row of the same key replaces the earlier one
                continue
            self.rows[i] = row
            self._index[row.key] = i
            self.dataChanged.emit(self.index(i, 0), self.index(i, len(self.COLUMNS) - 1))
        if new:
            self.beginInsertRows(QtCore.QModelIndex(), 0, len(new) - 1)
            self.rows[:0] = reversed(new.values())
            self._reindex()
            self.endInsertRows()

    def remove_key(self, key: str) -> None:
        self.remove_keys([key])

    def remove_keys(self, keys: Iterable[str]) -> None:
        """Remove the rows with these keys (unknown keys are ignored), one block of adjacent rows at a
        time."""
        found = sorted({i for key in keys if (i := self._index.get(key)) is not None})
        while found:
            first = last = found.pop()
            while found and found[-1] == first - 1:
                first = found.pop()
            self.beginRemoveRows(QtCore.QModelIndex(), first, last)
            del self.rows[first : last + 1]
            self._reindex()
            self.endRemoveRows()

    def row_for(self, key: str) -> DocumentRow | None:
        i = self._index.get(key)
        return self.rows[i] if i is not None else None

    def row_position(self, key: str) -> int | None:
        return self._index.get(key)

    @property
    def _index(self) -> dict[str, int]:
        if self._positions is None:
            self._positions = {r.key: i for i, r in enumerate(self.rows)}
        return self._positions

    def _reindex(self) -> None:
        # Made when a row is next looked up by its key (an event, the selection kept), not with every listing
        # or sort of 20,000 rows.
        self._positions = None

    def doc_types(self) -> list[str]:
        return sorted({r.doc_type for r in self.rows if r.doc_type and r.doc_id is not None})


_SORT_KEYS: dict[int, Any] = {
    DocumentsModel.TITLE: lambda r: r.sort_title,
    DocumentsModel.TYPE: lambda r: TYPE_LABELS.get(r.doc_type, r.doc_type.upper()),
    DocumentsModel.PAGES: lambda r: r.pages,
    DocumentsModel.CHUNKS: lambda r: r.chunks_total,
    DocumentsModel.STATUS: lambda r: (r.status_text, r.sort_title),
}


class DocumentsFilter(QtCore.QAbstractProxyModel):
    """The rows of a ``DocumentsModel`` that match a search text (title, path, error), a document type and a
    collection's documents, in the model's order.

    Which rows match is worked out in one pass over the model's rows in Python (milliseconds for 20,000); the
    view then asks only for the rows it shows. (A ``QSortFilterProxyModel`` calls back into Python once per
    row at every change, which stalls the window for seconds with tens of thousands of documents.) A change of
    the model or of the filter keeps the selection on the rows that stay.
    """

    def __init__(self, parent: QtCore.QObject | None = None) -> None:
        super().__init__(parent)
        self.search = ""
        self.doc_type = ""
        self.members: frozenset[int] | None = None  # a collection's documents (None: every document)
        self._rows: list[int] = []  # proxy row → model row
        self._pos: dict[int, int] | None = None  # model row → proxy row (None: every row, in place)
        self._kept: list[str] = []  # the keys of the persistent indexes, across a change of the model

    def _model(self) -> DocumentsModel:
        return cast(DocumentsModel, self.sourceModel())

    def setSourceModel(self, model: QtCore.QAbstractItemModel) -> None:  # noqa: N802 (Qt override)
        self.beginResetModel()
        super().setSourceModel(model)
        for about in (
            model.modelAboutToBeReset,
            model.layoutAboutToBeChanged,
            model.rowsAboutToBeInserted,
            model.rowsAboutToBeRemoved,
        ):
            about.connect(self._before)
        for done in (model.modelReset, model.layoutChanged, model.rowsInserted, model.rowsRemoved):
            done.connect(self._after)
        model.dataChanged.connect(self._data_changed)
        self._refilter()
        self.endResetModel()

    def set_members(self, doc_ids: Iterable[int] | None) -> None:
        self._before()
        self.members = frozenset(doc_ids) if doc_ids is not None else None
        self._after()

    def set_filter(self, search: str, doc_type: str) -> None:
        self._before()
        self.search, self.doc_type = search.strip().lower(), doc_type
        self._after()

    def accepts(self, row: DocumentRow) -> bool:
        if self.members is not None and row.doc_id not in self.members:
            return False
        if self.doc_type and row.doc_type != self.doc_type:
            return False
        if self.search:
            return all(word in row.search_text for word in self.search.split())
        return True

    def _refilter(self) -> None:
        rows = self._model().rows
        if self.search or self.doc_type or self.members is not None:
            self._rows = [i for i, r in enumerate(rows) if self.accepts(r)]
            self._pos = {src: i for i, src in enumerate(self._rows)}
        else:  # nothing filtered: proxy row i is model row i, and no map of 20,000 rows is built
            self._rows = range(len(rows))  # type: ignore[assignment]
            self._pos = None

    def _position(self, src: int) -> int | None:
        """The proxy row showing model row ``src``, if it is shown."""
        if self._pos is None:
            return src if 0 <= src < len(self._rows) else None
        return self._pos.get(src)

    def _before(self, *_: object) -> None:
        self.layoutAboutToBeChanged.emit()
        rows = self._model().rows
        self._kept = [rows[self._rows[i.row()]].key for i in self.persistentIndexList()]

    def _after(self, *_: object) -> None:
        self._refilter()
        model = self._model()
        persistent = self.persistentIndexList()
        moved = []
        for key, index in zip(self._kept, persistent, strict=False):
            src = model.row_position(key)
            pos = self._position(src) if src is not None else None
            moved.append(self.index(pos, index.column()) if pos is not None else QtCore.QModelIndex())
        self.changePersistentIndexList(persistent[: len(moved)], moved)
        self._kept = []
        self.layoutChanged.emit()

    def _data_changed(self, first: QtCore.QModelIndex, last: QtCore.QModelIndex, *_: object) -> None:
        # A row's title, type or error can change: whether it matches is not worked out again until the next
        # change of the filter or of the rows (a row never vanishes under the pointer).
        shown = [p for r in range(first.row(), last.row() + 1) if (p := self._position(r)) is not None]
        if shown:
            self.dataChanged.emit(
                self.index(min(shown), first.column()), self.index(max(shown), last.column())
            )

    # -- Qt proxy -----------------------------------------------------------------------------------------

    def rowCount(self, parent: ModelIndex = QtCore.QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: ModelIndex = QtCore.QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(DocumentsModel.COLUMNS)

    def index(self, row: int, column: int, parent: ModelIndex = QtCore.QModelIndex()) -> QtCore.QModelIndex:  # noqa: B008
        if parent.isValid() or not (0 <= row < len(self._rows)) or not (0 <= column < self.columnCount()):
            return QtCore.QModelIndex()
        return self.createIndex(row, column)

    def parent(self, index: ModelIndex = QtCore.QModelIndex()) -> QtCore.QModelIndex:  # type: ignore[override]  # noqa: B008
        return QtCore.QModelIndex()

    def data(self, index: ModelIndex, role: int = QtCore.Qt.ItemDataRole.DisplayRole) -> Any:
        # Straight to the model's row: the view asks for every role of every cell it paints, and going
        # through mapToSource and the model's index for each costs more than the painting.
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        return self._model().cell(self._rows[index.row()], index.column(), role)

    def flags(self, index: ModelIndex) -> QtCore.Qt.ItemFlag:
        if not index.isValid() or index.row() >= len(self._rows):
            return QtCore.Qt.ItemFlag.NoItemFlags
        return self._model().row_flags(self._rows[index.row()])

    def mapToSource(self, proxy_index: ModelIndex) -> QtCore.QModelIndex:  # noqa: N802 (Qt override)
        if not proxy_index.isValid() or proxy_index.row() >= len(self._rows):
            return QtCore.QModelIndex()
        return self._model().index(self._rows[proxy_index.row()], proxy_index.column())

    def mapFromSource(self, source_index: ModelIndex) -> QtCore.QModelIndex:  # noqa: N802 (Qt override)
        pos = self._position(source_index.row()) if source_index.isValid() else None
        return self.index(pos, source_index.column()) if pos is not None else QtCore.QModelIndex()

    def headerData(  # noqa: N802
        self,
        section: int,
        orientation: QtCore.Qt.Orientation,
        role: int = QtCore.Qt.ItemDataRole.DisplayRole,
    ) -> Any:
        if orientation == QtCore.Qt.Orientation.Horizontal:
            return self._model().headerData(section, orientation, role)
        return None
