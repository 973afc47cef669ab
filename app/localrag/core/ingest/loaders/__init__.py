"""Turn a file into pages of text: one loader per format, chosen by extension and checked against the content.

``load`` reads a whole document; ``open_document`` streams its pages (PDFs page by page; text, Markdown, HTML
and DOCX as one page in windows of bounded size), so memory does not grow with the file. Every problem with
the file itself is a ``BadDocument`` with a one-line message and a code: ``empty``, ``unsupported``,
``too_large``, ``encrypted``, ``corrupt``, ``needs_ocr``, ``unreadable``.
"""

from __future__ import annotations

import logging
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from localrag.core.errors import BadDocument
from localrag.core.ingest.loaders import docx, html, image, markdown, pdf, text
from localrag.core.ingest.loaders._common import display_name, looks_binary, read_head, sniff_magic
from localrag.core.ingest.types import DocumentStream, LoadedDocument, Page
from localrag.core.progress import CancelToken

log = logging.getLogger("localrag.ingest")

DEFAULT_MAX_BYTES = 512 * 1024 * 1024

SUPPORTED_SUFFIXES: dict[str, str] = {
    ".pdf": "pdf",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdown": "markdown",
    ".mkd": "markdown",
    ".txt": "text",
    ".text": "text",
    ".log": "text",
    ".csv": "text",
    ".tsv": "text",
    ".rst": "text",
    ".org": "text",
    ".adoc": "text",
    ".json": "text",
    ".yaml": "text",
    ".yml": "text",
    ".toml": "text",
    ".ini": "text",
    ".cfg": "text",
    ".tex": "text",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".docx": "docx",
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".tif": "image",
    ".tiff": "image",
    ".bmp": "image",
    ".webp": "image",
}

_TEXTUAL = frozenset({"markdown", "text", "html"})
_LEGACY_HINTS = {
    ".doc": "an old Word file (save it as .docx)",
    ".ppt": "a PowerPoint file",
    ".pptx": "a PowerPoint file",
    ".xls": "a spreadsheet",
    ".xlsx": "a spreadsheet",
    ".odt": "an OpenDocument file (save it as .docx)",
    ".rtf": "an RTF file (save it as .docx)",
    ".epub": "an e-book",
    ".gif": "a GIF image",
}

OnPage = Callable[[int, int], None]

# What each loader's text is, where it changed since the first: a document indexed with an older one is
# indexed again (``metadata.outdated_extractions``).
# Markdown: 2 = its links as their words, its images and layout tags blanked out (``markdown.mask_inline``).
# Text: 2 = a reStructuredText file read with its headings and without its markup (``rst``); other text files
# read the same as at 1.
# HTML: 2 = chrome by ARIA role and headings' permalinks dropped; 3 = a definition list's description on the
# line after its term (only pages with a definition list read differently); 4 = a permalink known by its
# title or the class "permalink" dropped too (only pages holding one read differently); 5 = a list's items
# with their bullet or number (only pages holding a list item read differently).
# Word: 2 = a list's items with their bullet or number (only documents holding a list read differently).
EXTRACTION_VERSIONS: dict[str, int] = {
    "pdf": pdf.EXTRACTION_VERSION,
    "markdown": 2,
    "text": 2,
    "html": 5,
    "docx": 2,
}


def extraction_version(doc_type: str) -> int:
    return EXTRACTION_VERSIONS.get(doc_type, 1)


def reads_differently(doc_type: str, path: Path, version: int) -> bool:
    """Whether the loader of ``doc_type`` reads ``path`` differently now than at extraction ``version``."""
    if doc_type == "pdf":
        from localrag.core.ingest.loaders import pdf_versions

        return pdf_versions.reads_differently(path, version)
    if doc_type == "text" and path.suffix.lower() != ".rst":
        return False
    if doc_type == "html" and version in (2, 3, 4):
        return _html_changed_since(path, version)
    if doc_type == "docx" and version == 1:
        return docx.holds_lists(path)
    return version < extraction_version(doc_type)


def _html_changed_since(path: Path, version: int) -> bool:
    """Whether an HTML page read at ``version`` 2, 3 or 4 holds what later versions read differently: a
    definition list's description (``<dd``, since 3), a permalink known by its title or class (since 4) or
    a list's item (``<li``, since 5). A page that cannot be read counts as changed."""
    try:
        data = path.read_bytes()
    except OSError:
        return True
    lower = data.lower()
    return (
        b"<li" in lower or (version == 2 and b"<dd" in lower) or (version < 4 and html.holds_permalink(data))
    )


def detect_type(path: Path) -> str | None:
    """The loader for ``path`` (``'pdf'``, ``'markdown'``, ``'text'``, ``'html'``, ``'docx'``, ``'image'``).

    The extension picks the loader; the first bytes must not contradict it (a PNG named ``.txt`` is ``None``).
    A damaged file of a supported type still gets its type: ``load`` says what is wrong with it.
    """
    doc_type = SUPPORTED_SUFFIXES.get(Path(path).suffix.lower())
    if doc_type is None:
        return None
    try:
        head = read_head(Path(path))
    except OSError:
        return doc_type
    if doc_type in _TEXTUAL and looks_binary(head):
        return None
    if doc_type == "image":
        what = sniff_magic(head)
        if what is not None and not what.endswith("image"):
            return None
    return doc_type


def check_file(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """The document type, after the checks that need no parsing: existence, size, extension, sniffing.

    Cheap enough to run before hashing or queueing a file; raises the same ``BadDocument`` as ``load`` would
    for an empty, missing, oversized, unsupported or mislabelled file.
    """
    name = display_name(path)
    try:
        info = path.stat()
    except FileNotFoundError as exc:
        raise BadDocument(f"{name} no longer exists.", code="unreadable") from exc
    except OSError as exc:
        raise BadDocument(f"{name} cannot be read: {exc.strerror or exc}.", code="unreadable") from exc
    if not stat.S_ISREG(info.st_mode):
        raise BadDocument(f"{name} is not a regular file.", code="unsupported")
    if info.st_size == 0:
        raise BadDocument(f"{name} is empty (0 bytes).", code="empty")
    if info.st_size > max_bytes:
        raise BadDocument(
            f"{name} is {info.st_size / 2**20:,.1f} MiB, over the {max_bytes / 2**20:,.0f} MiB limit.",
            code="too_large",
        )
    suffix = path.suffix.lower()
    doc_type = SUPPORTED_SUFFIXES.get(suffix)
    if doc_type is None:
        hint = _LEGACY_HINTS.get(suffix)
        kind = f"'{suffix}'" if suffix else "without an extension"
        raise BadDocument(
            f"{name} is {hint}; this type is not supported."
            if hint
            else f"{name}: files {kind} are not supported.",
            code="unsupported",
        )
    try:
        head = read_head(path)
    except OSError as exc:
        raise BadDocument(f"{name} cannot be read: {exc.strerror or exc}.", code="unreadable") from exc
    if doc_type in _TEXTUAL:
        reason = looks_binary(head)
        if reason:
            raise BadDocument(f"{name} is not a text file: {reason}.", code="unsupported")
    elif doc_type == "image":
        what = sniff_magic(head)
        if what is None or not what.endswith("image"):
            raise BadDocument(f"{name} is not a valid image.", code="corrupt")
    elif doc_type == "pdf" and b"%PDF-" not in head[:1024]:
        raise BadDocument(f"{name} is not a valid PDF (no PDF header).", code="corrupt")
    return doc_type


def open_document(
    path: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    ocr: bool | None = None,
    cancel: CancelToken | None = None,
    on_page: OnPage | None = None,
) -> DocumentStream:
    """Open ``path`` for page-by-page reading. Same arguments and errors as ``load``; what only reading
    shows (``needs_ocr``, ``empty``, ``corrupt``, ``too_large`` for a zip bomb) may be raised while ``pages``
    is read rather than here."""
    path = Path(path)
    doc_type = check_file(path, max_bytes)
    if cancel is not None:
        cancel.raise_if_cancelled()
    try:
        if doc_type == "pdf":
            stream = pdf.open_pdf(path, ocr=ocr, cancel=cancel, on_page=on_page)
            return DocumentStream(
                "pdf", stream.title, pdf.MIME, stream.page_count, stream.pages, stream.warnings
            )
        if doc_type == "image":
            doc = image.load(path, ocr=ocr, cancel=cancel, on_page=on_page)
            return DocumentStream(
                doc.doc_type, doc.title, doc.mime, len(doc.pages), iter(doc.pages), doc.warnings
            )
        opened = _STREAMING[doc_type](path)
    except PermissionError as exc:
        raise BadDocument(
            f"{display_name(path)} cannot be read: permission denied.", code="unreadable"
        ) from exc
    opened.pages = _checked(opened.pages, opened.page_count, cancel, on_page)
    return opened


_STREAMING: dict[str, Callable[[Path], DocumentStream]] = {
    "markdown": markdown.open_stream,
    "text": text.open_stream,
    "html": html.open_stream,
    "docx": docx.open_stream,
}


def _checked(
    pages: Iterator[Page], page_count: int, cancel: CancelToken | None, on_page: OnPage | None
) -> Iterator[Page]:
    """A stream's windows, with cancelling checked between them and the page reported at the end."""
    for page in pages:
        if cancel is not None:
            cancel.raise_if_cancelled()
        yield page
    if on_page is not None:
        on_page(page_count, page_count)


def iter_pages(
    path: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    ocr: bool | None = None,
    cancel: CancelToken | None = None,
    on_page: OnPage | None = None,
) -> Iterator[Page]:
    """The pages of ``path`` one at a time (title and warnings: use ``open_document``)."""
    return open_document(path, max_bytes=max_bytes, ocr=ocr, cancel=cancel, on_page=on_page).pages


def load(
    path: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    ocr: bool | None = None,
    cancel: CancelToken | None = None,
    on_page: OnPage | None = None,
) -> LoadedDocument:
    """Read ``path`` into pages of text.

    Args:
        max_bytes: larger files are refused before any byte is read.
        ocr: ``None`` uses OCR when ``rapidocr`` is installed, ``False`` never does.
        cancel: checked between pages; cancelling raises ``Cancelled``.
        on_page: called with ``(pages_done, pages_total)`` as pages are read.

    Raises:
        BadDocument: the file cannot be indexed; ``code`` says why.
    """
    stream = open_document(path, max_bytes=max_bytes, ocr=ocr, cancel=cancel, on_page=on_page)
    try:
        pages = list(stream.pages)
    except PermissionError as exc:
        raise BadDocument(
            f"{display_name(Path(path))} cannot be read: permission denied.", code="unreadable"
        ) from exc
    return LoadedDocument(stream.doc_type, stream.title, stream.mime, pages, stream.warnings)


__all__ = [
    "DEFAULT_MAX_BYTES",
    "EXTRACTION_VERSIONS",
    "SUPPORTED_SUFFIXES",
    "DocumentStream",
    "check_file",
    "detect_type",
    "extraction_version",
    "iter_pages",
    "load",
    "open_document",
    "reads_differently",
]
