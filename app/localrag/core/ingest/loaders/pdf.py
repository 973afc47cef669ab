"""PDF: text page by page with pypdfium2 (pypdf as the fallback), heading paths from the outline.

``open_pdf`` streams pages so that memory stays bounded on a book of thousands of pages: each pdfium page and
text page is closed as soon as its text is out, and a page is handed on once the two after it are read (a
running head is told from a line of the page by the pages around it). Each page's text is the one a person
reads (``core/text/reading.py``): one character for each of pdfium's, so offsets into it are pdfium's
character indices; ligatures whose glyphs came out as font codes are put back first, one character for one
(``core/text/glyphs.py``). Pages without a text layer are read by OCR when ``rapidocr`` is installed and are
otherwise flagged ``needs_ocr``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from localrag.core.errors import BadDocument
from localrag.core.ingest.loaders import image as image_loader
from localrag.core.ingest.loaders._common import clean_title, display_name, read_head, strip_controls
from localrag.core.ingest.types import LoadedDocument, Page
from localrag.core.pdfium_lock import PDFIUM_LOCK
from localrag.core.progress import CancelToken
from localrag.core.text import glyphs, reading, titles

log = logging.getLogger("localrag.ingest.pdf")

MIME = "application/pdf"
# What a page's text is (a document indexed with an older one is read again where it would read differently,
# ``pdf_versions``): 7 = as 6, a logo's word inside an e-mail or web address not taken for a title holding it;
# 6 = as 5, a wrapped clause of prose ending with ";" read as prose, not code; 5 = as 4, a
# one-word logo not taken for the title; 4 = as 3, T1's lost dashes put back and the title printed on the
# first page when the metadata names none; 3 = the reading text with lost ligatures put back; 2 = the reading
# text, one character per pdfium character; 1 = pdfium's text, line breaks and hyphens taken out.
EXTRACTION_VERSION = 7
# Pages read either side of a page to find its running heads and footers (book layouts alternate two).
NEIGHBOURS = 2
MAX_OUTLINE_ENTRIES = 20_000
OCR_DPI = 200  # enough for body text; 300 dpi costs twice the time for little gain
OCR_MAX_SIDE = 3000  # pixels: a poster-sized page is rendered smaller
_PDFIUM_PASSWORD_ERROR = 4
_NUMBERING = re.compile(
    r"(?:(?:chapter|section|part|appendix)\s+)?(?:\d{1,3}|[A-Z])(?:\.\d{1,3})*\.?", re.IGNORECASE
)


@dataclass
class _OutlineEntry:
    page_index: int
    path: str
    title: str


@dataclass
class PdfStream:
    """An open PDF whose pages are read as ``pages`` is iterated.

    ``warnings`` is complete once ``pages`` is exhausted. Iterating raises ``BadDocument`` at the end when no
    page had any text (``needs_ocr`` or ``empty``), after yielding every page.
    """

    title: str
    page_count: int
    pages: Iterator[Page]
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Layout:
    """What pdfium tells of a page's text besides its characters: each one's font size, each line's place."""

    sizes: list[float]
    lines: list[reading.Line]


@dataclass
class _Read:
    """One page as read, before its reading text is made."""

    index: int
    text: str
    layout: _Layout | None
    needs_ocr: bool = False


def _layout(textpage: Any, text: str) -> _Layout | None:
    """Font sizes and line places from pdfium (under the pdfium lock), or None when its characters do not
    match the text one for one. Sizes are read where the reading rules look at them (a few characters of
    each line, possible footnote markers and the characters around them); the others stay 0."""
    from pypdfium2 import raw

    index = reading.utf16_index(text)
    if text and index[-1] + (2 if ord(text[-1]) > 0xFFFF else 1) != textpage.count_chars():
        return None
    sizes = [0.0] * len(text)
    for k in reading.marker_positions(text):
        sizes[k] = raw.FPDFText_GetFontSize(textpage, index[k])
    lines = reading.lines_of(text)
    for line in lines:
        sampled = reading.samples(text, line)
        if not sampled:
            continue
        for k in sampled:
            sizes[k] = sizes[k] or raw.FPDFText_GetFontSize(textpage, index[k])
        left, _, _, top = textpage.get_charbox(index[sampled[0]])
        _, _, right, _ = textpage.get_charbox(index[sampled[-1]])
        line.left, line.right, line.top = left, right, top
        line.size = reading.line_size(sizes, line, text)
    return _Layout(sizes, lines)


def restored(textpage: Any, text: str) -> str:
    """``text`` with its lost ligatures put back (``glyphs.restore_lost``), except those drawn in a math or
    symbol font, where the same codes are Greek letters or pieces of delimiters."""
    import ctypes

    from pypdfium2 import raw

    found = glyphs.codes(text)
    if not found:
        return text
    index = reading.utf16_index(text)
    name = ctypes.create_string_buffer(256)
    flags = ctypes.c_int()
    keep = set()
    for k in found:
        got = raw.FPDFText_GetFontInfo(textpage, index[k], name, len(name), ctypes.byref(flags))
        if 0 < got <= len(name) and glyphs.is_math_font(name.value.decode("latin-1")):
            keep.add(k)
    return glyphs.restore_lost(text, keep)


# -- backends ------------------------------------------------------------------------------------------------


class _Pdfium:
    name = "pdfium"

    def __init__(self, file: BinaryIO) -> None:
        import pypdfium2 as pdfium

        with PDFIUM_LOCK:
            self.pdf = pdfium.PdfDocument(file, autoclose=True)
            self.page_count = len(self.pdf)

    def title(self) -> str:
        try:
            with PDFIUM_LOCK:
                return self.pdf.get_metadata_value("Title") or ""
        except Exception:
            return ""

    def outline(self) -> list[tuple[int, str, int | None]]:
        with PDFIUM_LOCK:
            return self._outline()

    def _outline(self) -> list[tuple[int, str, int | None]]:
        from pypdfium2 import raw

        entries: list[tuple[int, str, int | None]] = []
        for bookmark in self.pdf.get_toc(max_depth=16):
            index = None
            dest = bookmark.get_dest()
            if dest is not None:
                index = dest.get_index()
            else:
                action = raw.FPDFBookmark_GetAction(bookmark)
                if action and raw.FPDFAction_GetType(action) == raw.PDFACTION_GOTO:
                    raw_dest = raw.FPDFAction_GetDest(self.pdf, action)
                    if raw_dest:
                        value = raw.FPDFDest_GetDestPageIndex(self.pdf, raw_dest)
                        index = value if value >= 0 else None
            entries.append((bookmark.level, bookmark.get_title(), index))
            if len(entries) >= MAX_OUTLINE_ENTRIES:
                break
        return entries

    def page(self, index: int, want_image: bool) -> tuple[str, bool, Any, _Layout | None]:
        """The page's text, whether it shows images, (when asked and textless) a rendering for OCR, and the
        font size of each character and the place of each line."""
        with PDFIUM_LOCK:
            return self._page(index, want_image)

    def _page(self, index: int, want_image: bool) -> tuple[str, bool, Any, _Layout | None]:
        from pypdfium2 import raw

        page = self.pdf[index]
        try:
            textpage = page.get_textpage()
            try:
                text = restored(textpage, textpage.get_text_range())
                layout = _layout(textpage, text) if text.strip() else None
            finally:
                textpage.close()
            if text.strip():
                return text, False, None, layout
            has_images = any(True for _ in page.get_objects(filter=[raw.FPDF_PAGEOBJ_IMAGE], max_depth=4))
            rendering = None
            if has_images and want_image:
                scale = min(OCR_DPI / 72, OCR_MAX_SIDE / max(page.get_size()))
                bitmap = page.render(scale=scale, rev_byteorder=True)
                try:
                    rendering = bitmap.to_numpy().copy()
                finally:
                    bitmap.close()
            return text, has_images, rendering, None
        finally:
            page.close()

    def close(self) -> None:
        with PDFIUM_LOCK:
            self.pdf.close()


class _Pypdf:
    name = "pypdf"

    def __init__(self, path: Path) -> None:
        import pypdf

        self.file = open(path, "rb")  # noqa: SIM115 - the reader reads it page by page; close() closes it
        try:
            self.reader = pypdf.PdfReader(self.file, strict=False)
            if self.reader.is_encrypted and not self.reader.decrypt(""):
                raise BadDocument(
                    f"{display_name(path)} is password-protected; save an unprotected copy.", code="encrypted"
                )
            self.page_count = len(self.reader.pages)
        except BaseException:
            self.file.close()
            raise

    def title(self) -> str:
        try:
            meta = self.reader.metadata
            return str(meta.title or "") if meta else ""
        except Exception:
            return ""

    def outline(self) -> list[tuple[int, str, int | None]]:
        entries: list[tuple[int, str, int | None]] = []
        todo: list[tuple[int, Any]] = [(0, item) for item in reversed(self.reader.outline)]
        while todo and len(entries) < MAX_OUTLINE_ENTRIES:
            level, item = todo.pop()
            if isinstance(item, list):
                todo.extend((level + 1, child) for child in reversed(item))
                continue
            try:
                index = self.reader.get_destination_page_number(item)
            except Exception:
                index = None
            entries.append((level, str(item.get("/Title", "")), index))
        return entries

    def page(self, index: int, want_image: bool) -> tuple[str, bool, Any, _Layout | None]:
        page: Any = self.reader.pages[index]
        text = glyphs.restore_lost(page.extract_text() or "")
        if text.strip():
            return text, False, None, None
        try:
            xobjects = page["/Resources"].get_object().get("/XObject", {}).get_object()
            has_images = any(x.get_object().get("/Subtype") == "/Image" for x in xobjects.values())
        except Exception:
            has_images = False
        return text, has_images, None, None

    def close(self) -> None:
        self.file.close()


# -- opening -------------------------------------------------------------------------------------------------


def _looks_truncated(path: Path) -> bool:
    size = path.stat().st_size
    with open(path, "rb") as f:
        f.seek(max(0, size - 2048))
        return b"%%EOF" not in f.read()


def _open_backend(path: Path) -> tuple[Any, list[str]]:
    import pypdfium2 as pdfium

    name = display_name(path)
    if b"%PDF-" not in read_head(path, 1024):
        raise BadDocument(f"{name} is not a valid PDF (no PDF header).", code="corrupt")
    truncated = _looks_truncated(path)
    warnings: list[str] = []
    file = open(path, "rb")  # noqa: SIM115 - the backend reads it page by page and closes it
    try:
        backend: Any = _Pdfium(file)
    except pdfium.PdfiumError as exc:
        file.close()
        if getattr(exc, "err_code", None) == _PDFIUM_PASSWORD_ERROR:
            raise BadDocument(
                f"{name} is password-protected; save an unprotected copy.", code="encrypted"
            ) from exc
        if truncated:
            raise BadDocument(f"{name} is incomplete (the file is cut short).", code="corrupt") from exc
        log.info("pdfium cannot open %s (%s); trying pypdf", name, exc)
        try:
            backend = _Pypdf(path)
        except BadDocument:
            raise
        except Exception as exc2:
            raise BadDocument(f"{name} is damaged and cannot be read.", code="corrupt") from exc2
        warnings.append("read with the fallback PDF reader; word spacing may be off")
    except BaseException:
        file.close()
        raise
    if truncated:
        warnings.append("the file looks cut short; some pages may be missing")
    if backend.page_count < 1:
        backend.close()
        raise BadDocument(f"{name} has no pages.", code="empty")
    return backend, warnings


def _outline_entries(backend: Any, path: Path) -> list[_OutlineEntry]:
    try:
        raw_entries = backend.outline()
    except Exception as exc:
        log.info("outline of %s unreadable with %s: %s", display_name(path), backend.name, exc)
        raw_entries = []
        if backend.name == "pdfium":
            try:
                fallback = _Pypdf(path)
                try:
                    raw_entries = fallback.outline()
                finally:
                    fallback.close()
            except Exception:
                raw_entries = []
    entries: list[_OutlineEntry] = []
    stack: list[tuple[int, str]] = []
    for level, title, index in raw_entries:
        title = " ".join(strip_controls(title).replace(">", "›").split())[:200]
        if not title:
            continue
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        if index is not None and 0 <= index < backend.page_count:
            entries.append(_OutlineEntry(index, " > ".join(t for _, t in stack), title))
    entries.sort(key=lambda e: e.page_index)  # stable: outline order within a page
    return entries


def _find_heading(text: str, title: str, start: int, after_heading: bool) -> int | None:
    """Where ``title`` appears in ``text`` at or after ``start``, ignoring case, spacing and ligatures (an
    outline's "Coefficients" is the page's "Coeﬃcients"); a section number just before it (``3.2``,
    ``Chapter 4``, on its line or the line above) belongs to the heading, unless that is where the previous
    heading (``after_heading``, at ``start``) begins."""
    at = text.find(title, start)
    if at < 0:
        words = title.split()[:12]
        if not words:
            return None
        match = re.compile(r"\s*".join(glyphs.pattern(w) for w in words), re.IGNORECASE).search(text, start)
        if match is None:
            return None
        at = match.start()
    line_start = text.rfind("\n", 0, at) + 1
    lowest = start + 1 if after_heading else start
    if lowest <= line_start < at and _NUMBERING.fullmatch(text[line_start:at].strip()):
        at = line_start
    if at == line_start and line_start > 0:
        above_end = len(text[:line_start].rstrip())  # the line above, past the blank line between
        above = text.rfind("\n", 0, above_end) + 1
        if above >= lowest and _NUMBERING.fullmatch(text[above:above_end].strip()):
            at = above
    return at


def _page_headings(text: str, carried: str, starting: list[_OutlineEntry]) -> list[tuple[int, str]]:
    headings: list[tuple[int, str]] = []
    if carried:
        headings.append((0, carried))
    cursor = 0
    for number, entry in enumerate(starting):
        found = _find_heading(text, entry.title, cursor, after_heading=number > 0)
        offset = found if found is not None else cursor
        cursor = offset
        if headings and headings[-1][0] == offset:
            headings[-1] = (offset, entry.path)
        else:
            headings.append((offset, entry.path))
    return headings


def _lines(page: _Read) -> list[reading.Line]:
    return page.layout.lines if page.layout else reading.lines_of(page.text)


def _clean(text: str) -> str:
    """Text that did not come from pdfium (OCR, the fallback reader) with its line breaks as pdfium writes
    them."""
    return strip_controls(text.replace("\r\n", "\n").replace("\r", "\n")).replace("\n", "\r\n")


def _pages_phrase(numbers: list[int]) -> str:
    """``"page 3"`` or ``"pages 3–5, 7"``."""
    return f"page {numbers[0]}" if len(numbers) == 1 else f"pages {_ranges(numbers)}"


def _ranges(numbers: list[int]) -> str:
    parts: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], -1]:
        if n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}–{prev}")
        start = prev = n
    return ", ".join(parts)


def open_pdf(
    path: Path,
    *,
    ocr: bool | None = None,
    cancel: CancelToken | None = None,
    on_page: Callable[[int, int], None] | None = None,
) -> PdfStream:
    """Open ``path`` and return its pages as a stream (see ``PdfStream``).

    Raises:
        BadDocument: ``corrupt``, ``encrypted`` or ``empty`` on opening; ``needs_ocr`` or ``empty`` at the end
            of the stream when no page had text.
    """
    backend, warnings = _open_backend(path)
    try:
        meta_title = backend.title()
        entries = _outline_entries(backend, path)
    except BaseException:
        backend.close()
        raise
    title = metadata_title(meta_title) or printed_title(backend)
    stream = PdfStream(title=clean_title(title, path), page_count=backend.page_count, pages=iter(()))
    stream.warnings.extend(warnings)
    stream.pages = _pages(backend, path, entries, stream, ocr=ocr, cancel=cancel, on_page=on_page)
    return stream


def metadata_title(title: str) -> str:
    """The title a PDF's metadata gives, or "" when it names none: blank, "Untitled", or only the file it was
    made from ("Microsoft Word - report.docx")."""
    title = re.sub(r"^Microsoft (Word|PowerPoint) - ", "", " ".join(title.split()))
    if title.lower() in ("untitled", "untitled document", "none") or titles.looks_like_file_name(title):
        return ""
    return title


def printed_title(backend: Any, *, logos: bool = True, addresses: bool = False) -> str:
    """The title printed on the first page in large type ("" when none stands out, or the page is
    unreadable; ``logos``, ``addresses``: see ``titles.first_page_title``)."""
    if not backend.page_count:
        return ""
    try:
        text, _, _, layout = backend.page(0, False)
    except Exception:
        return ""
    if layout is None:
        return ""
    return titles.first_page_title(text, layout.lines, logos=logos, addresses=addresses)


def _pages(
    backend: Any,
    path: Path,
    entries: list[_OutlineEntry],
    stream: PdfStream,
    *,
    ocr: bool | None,
    cancel: CancelToken | None,
    on_page: Callable[[int, int], None] | None,
) -> Iterator[Page]:
    use_ocr = ocr is not False and image_loader.ocr_available()
    total = backend.page_count
    carried = ""
    next_entry = 0
    needs_ocr: list[int] = []
    failed: list[int] = []
    with_text = 0
    fallback: _Pypdf | None = None
    read_pages: dict[int, _Read] = {}  # pages not yet handed on, and up to NEIGHBOURS before them
    words: set[str] = set()  # the document's words so far: which hyphenated words are whole words

    def read(index: int) -> _Read:
        nonlocal fallback
        try:
            text, has_images, rendering, layout = backend.page(index, use_ocr)
        except Exception as exc:  # one bad page should not lose the book
            log.info("page %d of %s unreadable with %s: %s", index + 1, display_name(path), backend.name, exc)
            text, has_images, rendering, layout = "", False, None, None
            try:
                if fallback is None and backend.name == "pdfium":
                    fallback = _Pypdf(path)
                if fallback is not None:
                    text, has_images, _, _ = fallback.page(index, False)
            except Exception:
                failed.append(index + 1)
        if layout is None:
            text = _clean(text)
        page_needs_ocr = False
        if not text.strip() and has_images:
            if rendering is not None:
                text = _clean(image_loader.ocr_array(rendering))
            page_needs_ocr = not text.strip() and rendering is None
            if page_needs_ocr:
                needs_ocr.append(index + 1)
        words.update(reading.word_set(text))
        return _Read(index, text, layout, page_needs_ocr)

    def hand_on(index: int) -> Page:
        nonlocal carried, next_entry, with_text
        page = read_pages[index]
        near = [read_pages[j] for j in range(index - NEIGHBOURS, index + NEIGHBOURS + 1) if j in read_pages]
        lines = _lines(page)
        drop = reading.running_lines(page.text, lines, [(p.text, _lines(p)) for p in near if p is not page])
        text = reading.reading_text(
            page.text, lines, sizes=page.layout.sizes if page.layout else None, drop=drop, words=words
        )
        if text.strip():
            with_text += 1
        starting: list[_OutlineEntry] = []
        while next_entry < len(entries) and entries[next_entry].page_index == page.index:
            starting.append(entries[next_entry])
            next_entry += 1
        headings = _page_headings(text, carried, starting)
        if headings:
            carried = headings[-1][1]
        return Page(number=page.index + 1, text=text, headings=headings, needs_ocr=page.needs_ocr)

    def done(index: int) -> Iterator[Page]:
        if cancel is not None:
            cancel.raise_if_cancelled()
        yield hand_on(index)
        read_pages.pop(index - NEIGHBOURS, None)
        if on_page is not None:
            on_page(index + 1, total)

    try:
        for index in range(total):
            if cancel is not None:
                cancel.raise_if_cancelled()
            read_pages[index] = read(index)
            if index >= NEIGHBOURS:
                yield from done(index - NEIGHBOURS)
        for index in range(max(0, total - NEIGHBOURS), total):
            yield from done(index)
    finally:
        backend.close()
        if fallback is not None:
            fallback.close()
    name = display_name(path)
    if failed:
        stream.warnings.append(f"{_pages_phrase(failed)} could not be read")
    if needs_ocr:
        verb = "needs" if len(needs_ocr) == 1 else "need"
        stream.warnings.append(f"{_pages_phrase(needs_ocr)} {verb} OCR ({image_loader.INSTALL_HINT})")
    if with_text == 0:
        if needs_ocr:
            raise BadDocument(
                f"{name} is a scan with no text layer; to read it, {image_loader.INSTALL_HINT}.",
                code="needs_ocr",
            )
        if failed:
            raise BadDocument(f"{name} is damaged and no page could be read.", code="corrupt")
        raise BadDocument(f"{name} has no extractable text.", code="empty")


def iter_pages(
    path: Path,
    *,
    ocr: bool | None = None,
    cancel: CancelToken | None = None,
    on_page: Callable[[int, int], None] | None = None,
) -> Iterator[Page]:
    """The pages of ``path`` one at a time (see ``open_pdf`` for title and warnings)."""
    return open_pdf(path, ocr=ocr, cancel=cancel, on_page=on_page).pages


def load(
    path: Path,
    *,
    ocr: bool | None = None,
    cancel: CancelToken | None = None,
    on_page: Callable[[int, int], None] | None = None,
) -> LoadedDocument:
    stream = open_pdf(path, ocr=ocr, cancel=cancel, on_page=on_page)
    pages = list(stream.pages)
    return LoadedDocument(
        doc_type="pdf", title=stream.title, mime=MIME, pages=pages, warnings=stream.warnings
    )
