"""What the documents panel shows: one row per document, updated in place by ingest events, and its filter."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
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
}

ROW_ROLE = QtCore.Qt.ItemDataRole.UserRole + 1
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

    @property
    def key(self) -> str:
        return f"doc:{self.doc_id}" if self.doc_id is not None else f"path:{self.path}"

    @property
    def fraction(self) -> float | None:
        if self.status == EXTRACTING and self.pages:
            return 0.25 * min(1.0, self.pages_done / self.pages)
        if self.status == EMBEDDING and self.chunks_total:
            return 0.25 + 0.75 * min(1.0, self.chunks_embedded / self.chunks_total)
        return None

    @property
    def status_text(self) -> str:
        """The short status shown in the table."""
        if self.status == FAILED:
            return ERROR_LABELS.get(self.error_code or "", "Failed")
        if self.status == EXTRACTING:
            return f"Reading {self.pages_done}/{self.pages}" if self.pages else "Reading…"
        if self.status == EMBEDDING:
            if not self.chunks_total:
                return "Embedding…"
            return f"Embedding {round(100 * self.chunks_embedded / self.chunks_total)}%"
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
            return text + (f", {format_eta(self.eta_s)}" if self.eta_s is not None else "")
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
        self._index: dict[str, int] = {}

    # -- Qt model -----------------------------------------------------------------------------------------

    def flags(self, index: ModelIndex) -> QtCore.Qt.ItemFlag:
        flags = super().flags(index)
        if index.isValid() and self.rows[index.row()].doc_id is not None:
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
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        col = index.column()
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

    # -- updates ------------------------------------------------------------------------------------------

    def set_rows(self, rows: list[DocumentRow]) -> None:
        """Replace the listing; rows still being added (no id yet) stay on top."""
        pending = [r for r in self.rows if r.doc_id is None and r.status == "adding"]
        self.beginResetModel()
        self.rows = pending + list(rows)
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

    def _reindex(self) -> None:
        self._index = {r.key: i for i, r in enumerate(self.rows)}

    def doc_types(self) -> list[str]:
        return sorted({r.doc_type for r in self.rows if r.doc_type and r.doc_id is not None})


class DocumentsFilter(QtCore.QSortFilterProxyModel):
    """Filters by a search text (title, path, error), a document type and a collection's documents."""

    def __init__(self, parent: QtCore.QObject | None = None) -> None:
        super().__init__(parent)
        self.search = ""
        self.doc_type = ""
        self.members: frozenset[int] | None = None  # a collection's documents (None: every document)

    def set_members(self, doc_ids: Iterable[int] | None) -> None:
        self.members = frozenset(doc_ids) if doc_ids is not None else None
        self.invalidateRowsFilter()

    def set_filter(self, search: str, doc_type: str) -> None:
        if hasattr(self, "beginFilterChange"):  # Qt 6.9+
            self.beginFilterChange()
            self.search, self.doc_type = search.strip().lower(), doc_type
            self.endFilterChange(QtCore.QSortFilterProxyModel.Direction.Rows)
        else:
            self.search, self.doc_type = search.strip().lower(), doc_type
            self.invalidateRowsFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: ModelIndex) -> bool:  # noqa: N802
        row = cast(DocumentsModel, self.sourceModel()).rows[source_row]
        if self.members is not None and row.doc_id not in self.members:
            return False
        if self.doc_type and row.doc_type != self.doc_type:
            return False
        if self.search:
            hay = f"{row.title}\n{row.path}\n{row.error or ''}".lower()
            return all(word in hay for word in self.search.split())
        return True
