"""The source viewer: the cited page rendered with the passage highlighted, and the passage in its context.

A citation points at a span of one page's text (``char_start``..``char_end`` of the page text the loader
extracted). For a PDF the page is rendered with pypdfium2 and the span's characters are outlined on it; for
every format the dialog shows the indexed text around the span with the span highlighted, read back from the
store. The file work and the database query run off the UI thread (``load_source_view``); the dialog only
paints.
"""

from __future__ import annotations

import ctypes
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psycopg

from localrag.core.errors import StoreUnavailable, as_known
from localrag.core.library import Library
from localrag.core.pdfium_lock import PDFIUM_LOCK
from localrag.core.store import files
from localrag.core.text import reading
from localrag.gui.qt import QtCore, QtGui, QtWidgets, Signal
from localrag.gui.tasks import Op
from localrag.gui.views.source_ref import SourceRef

log = logging.getLogger("localrag.gui.sources")

PAGE_SCALE = 2.0  # 144 dpi, shown scaled to the pane's width: sharp, and a page renders in ~0.2 s
CONTEXT_CHUNKS = 2  # chunks shown before and after the cited ones in the passage pane
HIGHLIGHT = QtGui.QColor(255, 214, 0, 110)
HIGHLIGHT_EDGE = QtGui.QColor(214, 160, 0)
CELL_EDGE = QtGui.QColor(200, 70, 0)

# pdfium is not thread-safe: no two pdfium calls may run at once, even on different documents.


@dataclass
class PageImage:
    """A rendered page (RGB pixels) and the highlight rectangles on it, in pixels ``(x, y, w, h)``."""

    pixels: np.ndarray
    rects: list[tuple[float, float, float, float]]
    exact: bool  # the span was found at its recorded offsets (not by searching for its words)
    # The outlined cells (``SourceRef.marks``), one rectangle list per cell.
    marks: list[list[tuple[float, float, float, float]]] = field(default_factory=list)


@dataclass
class Passage:
    """The indexed text around a citation; ``start``..``end`` is the cited span within ``text``; ``marks``
    the cells to outline within it (``SourceRef.marks``, as offsets in ``text``)."""

    text: str
    start: int
    end: int
    marks: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class SourceView:
    """Everything the dialog shows; ``page_error`` says why there is no page image (a moved file...)."""

    passage: Passage
    page: PageImage | None = None
    page_error: str = ""
    note: str = ""  # e.g. that the page comes from the copy kept in the library


# -- reading (any thread, no widgets) ------------------------------------------------------------------------


def cleaned_with_map(raw: str) -> tuple[str, list[int]]:
    """The page text with one character for each of the loader's, and for each of them pdfium's character
    index (pdfium counts a character beyond the Basic Multilingual Plane twice).

    The loader's page text (``core/text/reading.py``) has one character for each of pdfium's: its offsets are
    pdfium's. Only the characters of a word mended across a line end and blanked ones (footnote markers,
    running heads) differ from pdfium's text, so the recorded span is checked by its letters.
    """
    return reading.plain(raw), reading.utf16_index(raw)


def _squash(text: str) -> str:
    return " ".join(text.split())


def _letters(text: str) -> str:
    return "".join(ch for ch in text if ch.isalpha())


def _locate(cleaned: str, start: int, end: int, passage: str) -> tuple[int, int, bool]:
    """The span of ``passage`` in ``cleaned``: at the recorded offsets when they hold it, else by search."""
    probe = _squash(passage)[:80]
    letters = _letters(passage)[:30]
    if 0 <= start < end <= len(cleaned) and _letters(cleaned[start:end]).startswith(letters):
        return start, end, True
    if probe:
        words = probe.split()[:10]
        pattern = re.compile(r"\s*".join(re.escape(w) for w in words))
        match = pattern.search(cleaned)
        if match:
            return match.start(), min(len(cleaned), match.start() + max(len(passage), end - start)), False
    return -1, -1, False


def render_pdf_page(
    path: Path,
    page_number: int,
    char_start: int,
    char_end: int,
    passage: str,
    scale: float = PAGE_SCALE,
    marks: list[tuple[int, int]] | None = None,
) -> PageImage:
    """Render one page and the rectangles of the characters ``char_start``..``char_end`` of its cleaned text
    (and of each of ``marks``, other offsets in it, when the span was found where it was recorded).

    Raises:
        OSError: the file is gone or unreadable.
        pypdfium2.PdfiumError: the file is no longer a readable PDF.
        IndexError: the page does not exist (the file changed since it was indexed).
    """
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    with PDFIUM_LOCK:
        pdf = pdfium.PdfDocument(str(path))
        try:
            if not 1 <= page_number <= len(pdf):
                raise IndexError(f"the file has {len(pdf)} pages, not {page_number}")
            page = pdf[page_number - 1]
            try:
                bitmap = page.render(scale=scale, rev_byteorder=True)
                try:
                    pixels = bitmap.to_numpy().copy()
                finally:
                    bitmap.close()
                height, width = pixels.shape[:2]
                textpage = page.get_textpage()
                try:
                    cleaned, index = cleaned_with_map(textpage.get_text_range())
                    start, end, exact = _locate(cleaned, char_start, char_end, passage)
                    dx, dy = ctypes.c_int(), ctypes.c_int()

                    def device(x: float, y: float) -> tuple[int, int]:
                        raw.FPDF_PageToDevice(page, 0, 0, width, height, 0, x, y, dx, dy)
                        return dx.value, dy.value

                    def boxes(a: int, b: int) -> list[tuple[float, float, float, float]]:
                        found: list[tuple[float, float, float, float]] = []
                        if 0 <= a < b <= len(index):
                            first, last = index[a], index[b - 1]
                            for i in range(textpage.count_rects(first, last - first + 1)):
                                left, bottom, right, top = textpage.get_rect(i)
                                x0, y0 = device(left, top)
                                x1, y1 = device(right, bottom)
                                found.append((min(x0, x1), min(y0, y1), abs(x1 - x0), abs(y1 - y0)))
                        return found

                    rects = boxes(start, min(end, len(index))) if start >= 0 and end > start else []
                    cells = [boxes(a, b) for a, b in marks or []] if exact else []
                finally:
                    textpage.close()
            finally:
                page.close()
        finally:
            pdf.close()
    return PageImage(pixels, rects, exact, [c for c in cells if c])


def passage_context(library: Library, ref: SourceRef, context_chunks: int = CONTEXT_CHUNKS) -> Passage:
    """The stored text around the cited span: the page's chunks next to the cited ones, overlaps joined."""
    rows: list[tuple[int, int, str]] = []
    try:
        with library.connect() as conn:
            bounds = (
                conn.execute(
                    "SELECT min(chunk_index), max(chunk_index) FROM document_chunks WHERE id = ANY(%s)",
                    (ref.chunk_ids,),
                ).fetchone()
                if ref.chunk_ids
                else None
            )
            lo, hi = bounds if bounds and bounds[0] is not None else (None, None)
            if lo is None:
                found = conn.execute(
                    "SELECT min(chunk_index), max(chunk_index) FROM document_chunks "
                    "WHERE doc_id = %s AND page_number = %s AND char_start < %s AND char_end > %s",
                    (ref.doc_id, ref.page_number, max(ref.char_end, ref.char_start + 1), ref.char_start),
                ).fetchone()
                lo, hi = found if found and found[0] is not None else (None, None)
            if lo is not None and hi is not None:
                rows = conn.execute(
                    "SELECT char_start, char_end, text FROM document_chunks "
                    "WHERE doc_id = %s AND page_number = %s AND chunk_index BETWEEN %s AND %s "
                    "ORDER BY char_start",
                    (ref.doc_id, ref.page_number, lo - context_chunks, hi + context_chunks),
                ).fetchall()
    except Exception as exc:  # the store is down: the cited text alone still helps; a bug is raised
        if as_known(exc) is None:
            raise
        log.info("passage context unavailable: %s", exc)
    if not rows:
        return Passage(ref.text, 0, len(ref.text))
    # Chunks overlap and are trimmed of surrounding whitespace: stitch them at their page offsets.
    pieces: list[str] = []
    length = 0
    pos: int | None = None
    span_start = span_end = -1
    marks: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    for start, end, text in rows:
        if pos is not None and end <= pos:
            continue
        if pos is not None and start < pos:  # overlap: keep only what is new
            text = text[pos - start :]
            start = pos
        elif pos is not None and start > pos:  # whitespace (or an unindexed stretch) between chunks
            gap = "\n\n" if start - pos >= 2 else " "
            pieces.append(gap)
            length += len(gap)
        shift = length - start  # page offset -> offset in the stitched text, within this piece
        if span_start < 0 and start <= ref.char_start < end:
            span_start = ref.char_start + shift
        if start < ref.char_end <= end:
            span_end = ref.char_end + shift
        for a, b in ref.marks:  # the cells to outline that lie in this piece
            if start <= a and b <= end and (a, b) not in seen:
                seen.add((a, b))
                marks.append((a + shift, b + shift))
        pieces.append(text)
        length += len(text)
        pos = end
    assembled = "".join(pieces)
    if span_start < 0 or span_end <= span_start:
        at = assembled.find(ref.text[:200]) if ref.text else -1
        span_start, span_end = (at, at + len(ref.text)) if at >= 0 else (0, 0)
    return Passage(assembled, span_start, span_end, marks)


_KEEP_BREAK_AFTER = frozenset(".:;!?")
_SHORT_LINE = 45
_KEEP_BREAK_BEFORE = re.compile(r"\n(?=\s*(?:[-*•◦▪‣–]|\d+[.)]|[A-Z][A-Z0-9 ]{2,}$))", re.M)


def reflow(text: str) -> str:
    """PDF line breaks turned into spaces where they only wrap a paragraph (same length, so offsets hold)."""
    keep = {m.start() for m in _KEEP_BREAK_BEFORE.finditer(text)}
    out = list(text)
    for i, ch in enumerate(text):
        if ch != "\n" or i in keep:
            continue
        before = text[i - 1] if i > 0 else "\n"
        after = text[i + 1] if i + 1 < len(text) else "\n"
        if before in _KEEP_BREAK_AFTER or before == "\n" or after == "\n":
            continue
        line_start = text.rfind("\n", 0, i) + 1
        if i - line_start < _SHORT_LINE:  # a heading or the last line of a paragraph
            continue
        if ". ." in text[line_start:i] or "..." in text[line_start:i]:  # a table of contents line
            continue
        out[i] = " "
    return "".join(out)


def load_source_view(library: Library, ref: SourceRef, scale: float = PAGE_SCALE) -> SourceView:
    """Read what the viewer shows (blocking: call it off the UI thread)."""
    view = SourceView(passage=passage_context(library, ref))
    if ref.doc_type == "pdf":
        view.passage.text = reflow(view.passage.text)
    if ref.doc_type == "pdf":
        try:
            path, is_copy = files.readable_file(library, ref.doc_id, ref.path)
        except (StoreUnavailable, psycopg.Error, OSError, ValueError) as exc:
            log.info("no stored copy of %s: %s", ref.path, exc)
            path, is_copy = None, False
        if path is None:
            view.page_error = f"The file is no longer at {ref.path}; showing the indexed text."
        else:
            if is_copy:
                view.note = f"The file is not at {ref.path} on this computer; showing the library's copy."
            try:
                view.page = render_pdf_page(
                    path, ref.page_number, ref.char_start, ref.char_end, ref.text, scale, ref.marks
                )
            except Exception as exc:  # a changed or damaged file: the text still shows
                log.info("cannot render page %d of %s: %s", ref.page_number, ref.path, exc)
                view.page_error = f"The page cannot be shown ({exc}); showing the indexed text."
    return view


# -- the dialog ----------------------------------------------------------------------------------------------


def page_pixmap(page: PageImage) -> QtGui.QPixmap:
    """The rendered page with its highlight rectangles painted over it."""
    pixels = np.ascontiguousarray(page.pixels)
    height, width = pixels.shape[:2]
    image = QtGui.QImage(
        pixels.data, width, height, pixels.strides[0], QtGui.QImage.Format.Format_RGB888
    ).copy()
    painter = QtGui.QPainter(image)
    try:
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        painter.setCompositionMode(QtGui.QPainter.CompositionMode.CompositionMode_Multiply)
        for x, y, w, h in page.rects:
            painter.fillRect(QtCore.QRectF(x - 1, y - 1, w + 2, h + 2), HIGHLIGHT)
        painter.setCompositionMode(QtGui.QPainter.CompositionMode.CompositionMode_SourceOver)
        if page.rects:  # a bar in the margin so the passage is found at a glance
            top = min(r[1] for r in page.rects)
            bottom = max(r[1] + r[3] for r in page.rects)
            left = max(2.0, min(r[0] for r in page.rects) - 10)
            painter.fillRect(QtCore.QRectF(left, top - 1, 4, bottom - top + 2), HIGHLIGHT_EDGE)
        painter.setPen(QtGui.QPen(CELL_EDGE, 2.5))
        for cell in page.marks:  # the asked column's heading and value, outlined
            x0 = min(r[0] for r in cell)
            y0 = min(r[1] for r in cell)
            x1 = max(r[0] + r[2] for r in cell)
            y1 = max(r[1] + r[3] for r in cell)
            painter.drawRoundedRect(QtCore.QRectF(x0 - 4, y0 - 3, x1 - x0 + 8, y1 - y0 + 6), 3, 3)
    finally:
        painter.end()
    return QtGui.QPixmap.fromImage(image)


class SourceViewer(QtWidgets.QDialog):
    """A cited source: the page (PDFs) with the passage highlighted, and the passage in its context.

    Non-modal; open it with ``SourceViewer(library, ref, parent).show()`` (``SourceRef.from_source`` or
    ``from_result`` make a ``ref``).

    Public:
        ref: the ``SourceRef`` shown.
        page_label: the page image (empty for other formats or when the file is gone).
        passage_view: the text pane; the cited span is its selection-free yellow highlight.
        open_button: "Open in system viewer".

    Signals:
        loaded(object): the ``SourceView`` arrived and is painted.
        failed(str): the source could not be read at all.
    """

    loaded = Signal(object)
    failed = Signal(str)

    def __init__(
        self,
        library: Library,
        ref: SourceRef,
        parent: QtWidgets.QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.library = library
        self.ref = ref
        self.view: SourceView | None = None
        self._closed = False
        self.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setObjectName("source-viewer")
        title = self.ref.title or Path(self.ref.path).name or "Source"
        tag = f"[{self.ref.number}] " if self.ref.number else ""
        page = (
            ", " + self.ref.page_phrase("page")
            if self.ref.doc_type == "pdf" or self.ref.page_number > 1
            else ""
        )
        self.setWindowTitle(f"{tag}{title}{page.replace(',', ' —')}")
        self.setAccessibleName(f"Source {tag}{title}{page}")
        self.resize(1100, 760)

        header = QtWidgets.QLabel(self)
        header.setTextFormat(QtCore.Qt.TextFormat.RichText)
        header.setWordWrap(True)
        header.setText(self._header_html())
        self.status = QtWidgets.QLabel("Loading the page…", self)
        self.status.setObjectName("source-status")

        self.page_label = QtWidgets.QLabel(self)
        self.page_label.setAlignment(QtCore.Qt.AlignmentFlag.AlignHCenter | QtCore.Qt.AlignmentFlag.AlignTop)
        self.page_label.setAccessibleName("Page image")
        self.page_scroll = QtWidgets.QScrollArea(self)
        self.page_scroll.setWidget(self.page_label)
        self.page_scroll.setWidgetResizable(True)
        self.page_scroll.setAlignment(QtCore.Qt.AlignmentFlag.AlignHCenter)
        self.page_scroll.setBackgroundRole(QtGui.QPalette.ColorRole.Dark)

        self.passage_view = QtWidgets.QTextBrowser(self)
        self.passage_view.setAccessibleName("Cited passage")
        self.passage_view.setOpenLinks(False)

        self.splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal, self)
        self.splitter.addWidget(self.page_scroll)
        self.splitter.addWidget(self.passage_view)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setChildrenCollapsible(False)
        self._pixmap: QtGui.QPixmap | None = None
        self._highlight_top = 0.0
        self.page_scroll.viewport().installEventFilter(self)

        self.open_button = QtWidgets.QPushButton("Open in system viewer", self)
        self.open_button.setAccessibleName("Open in system viewer")
        self.open_button.setEnabled(bool(self.ref.path))
        self.open_button.clicked.connect(self.open_externally)
        close = QtWidgets.QPushButton("Close", self)
        close.clicked.connect(self.close)
        buttons = QtWidgets.QHBoxLayout()
        buttons.addWidget(self.status, 1)
        buttons.addWidget(self.open_button)
        buttons.addWidget(close)

        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(header)
        layout.addWidget(self.splitter, 1)
        layout.addLayout(buttons)

        if self.ref.doc_type != "pdf":
            self.page_scroll.hide()
        else:
            self.splitter.setSizes([640, 440])
        self._show_passage(Passage(self.ref.text, 0, len(self.ref.text)))
        Op(lambda: load_source_view(self.library, self.ref), owner=self).success(self._on_loaded).failure(
            self._on_failed
        ).run_in_background()

    def _header_html(self) -> str:
        from html import escape

        ref = self.ref
        tag = f"[{ref.number}] " if ref.number else ""
        parts = [f"<b>{tag}{escape(ref.title or Path(ref.path).name)}</b>"]
        if ref.doc_type == "pdf" or ref.page_number > 1:
            parts.append(escape(ref.page_phrase("page")))
        if ref.heading_path:
            parts.append(escape(ref.heading_path.replace(" > ", " › ")))
        if ref.score is not None:
            parts.append(f"score {ref.score:.3f}")
        path = f"<br><span style='color:#666'>{escape(ref.path)}</span>" if ref.path else ""
        return " · ".join(parts) + path

    def _show_passage(self, passage: Passage) -> None:
        doc = QtGui.QTextDocument(self.passage_view)
        doc.setDefaultFont(self.passage_view.font())
        doc.setPlainText(passage.text)
        if 0 <= passage.start < passage.end:
            cursor = QtGui.QTextCursor(doc)
            cursor.setPosition(passage.start)
            cursor.setPosition(min(passage.end, len(passage.text)), QtGui.QTextCursor.MoveMode.KeepAnchor)
            fmt = QtGui.QTextCharFormat()
            fmt.setBackground(QtGui.QColor(255, 228, 92))
            cursor.mergeCharFormat(fmt)
        for a, b in passage.marks:  # the cells asked for (a column's heading and value), set apart
            cursor = QtGui.QTextCursor(doc)
            cursor.setPosition(a)
            cursor.setPosition(min(b, len(passage.text)), QtGui.QTextCursor.MoveMode.KeepAnchor)
            fmt = QtGui.QTextCharFormat()
            fmt.setBackground(QtGui.QColor(255, 160, 40))
            fmt.setFontWeight(QtGui.QFont.Weight.Bold)
            fmt.setFontUnderline(True)
            cursor.mergeCharFormat(fmt)
        self.passage_view.setDocument(doc)
        if 0 <= passage.start < passage.end:
            cursor = QtGui.QTextCursor(doc)
            cursor.setPosition(min(passage.end, len(passage.text)))
            self.passage_view.setTextCursor(cursor)
            self.passage_view.ensureCursorVisible()
            cursor.setPosition(passage.start)
            self.passage_view.setTextCursor(cursor)
            self.passage_view.ensureCursorVisible()

    def _on_loaded(self, view: SourceView) -> None:
        if self._closed:
            return
        self.view = view
        self._show_passage(view.passage)
        if view.page is not None:
            self._pixmap = page_pixmap(view.page)
            self.page_scroll.show()
            self._fit_page()
            if view.page.rects:
                self._highlight_top = min(r[1] for r in view.page.rects) / self._pixmap.height()
                QtCore.QTimer.singleShot(0, self._scroll_to_highlight)
            located = "" if view.page.rects else "The passage could not be located on the page."
            self.status.setText(" ".join(t for t in (view.note, located) if t))
        else:
            self.page_scroll.setVisible(bool(view.page_error))
            if view.page_error:
                self.page_label.setText(view.page_error)
                self.page_label.setWordWrap(True)
            self.status.setText(view.page_error)
        self.loaded.emit(view)

    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802 (Qt override)
        if event.type() == QtCore.QEvent.Type.Resize and self._pixmap is not None:
            self._fit_page()
        return super().eventFilter(obj, event)

    def _fit_page(self) -> None:
        """Show the page at the pane's width (never larger than rendered)."""
        if self._pixmap is None:
            return
        width = max(200, self.page_scroll.viewport().width() - 4)
        pixmap = self._pixmap
        if width < pixmap.width():
            pixmap = pixmap.scaledToWidth(width, QtCore.Qt.TransformationMode.SmoothTransformation)
        self.page_label.setPixmap(pixmap)

    def _scroll_to_highlight(self) -> None:
        if self._closed or self._pixmap is None:
            return
        label = self.page_label.pixmap()
        height = label.height() if label is not None and not label.isNull() else self._pixmap.height()
        self.page_scroll.verticalScrollBar().setValue(max(0, int(self._highlight_top * height) - 60))

    def _on_failed(self, message: str, _known: bool) -> None:
        if self._closed:
            return
        self.status.setText(f"The source cannot be read: {message}")
        self.failed.emit(message)

    def open_externally(self) -> bool:
        """Open the document in the system's viewer for its type: the file on this computer, else the copy
        kept in the library (fetched in the background). Returns whether it was handed to the viewer at
        once."""
        if self.ref.path and Path(self.ref.path).is_file():
            return QtGui.QDesktopServices.openUrl(QtCore.QUrl.fromLocalFile(self.ref.path))
        ref, library = self.ref, self.library
        self.status.setText("Fetching the library's copy of the file…")
        fetch = Op(lambda: files.readable_file(library, ref.doc_id, ref.path), owner=self)
        fetch.success(self._open_copy).failure(
            lambda message, _known: self.status.setText(f"The file cannot be opened: {message}")
        ).run_in_background()
        return False

    def _open_copy(self, found: tuple[Path | None, bool]) -> None:
        path, _is_copy = found
        if path is None:
            self.status.setText(f"The file is no longer at {self.ref.path}, and the library keeps no copy.")
            return
        self.status.setText(f"Opened the library's copy ({path.name}).")
        QtGui.QDesktopServices.openUrl(QtCore.QUrl.fromLocalFile(str(path)))

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:  # noqa: N802 (Qt override)
        self._closed = True
        super().closeEvent(event)
