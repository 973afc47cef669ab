"""Whether a PDF indexed by an older version of the PDF loader would read differently now
(``pdf.EXTRACTION_VERSION``): re-embedding reads again only those."""

from __future__ import annotations

from pathlib import Path

from localrag.core.ingest.loaders import pdf
from localrag.core.pdfium_lock import PDFIUM_LOCK
from localrag.core.text import glyphs


def reads_differently(path: Path, version: int) -> bool:
    """Whether reading ``path`` now gives other text than the loader of ``version`` gave: always before 2;
    from 2 to 3 only where a page holds a lost ligature outside a math font (most PDFs have none, and keep
    their text and vectors); from 3 to 4 where the metadata names no title and the first page prints one. A
    file that cannot be read is read again (its own steps say why it fails)."""
    if version < 2:
        return True
    if version >= pdf.EXTRACTION_VERSION:
        return False
    try:
        return _title_found(path) or (version < 3 and _ligatures_lost(path))
    except Exception:
        return True


def _title_found(path: Path) -> bool:
    """Whether the title now comes from the first page (the metadata names none, the page prints one)."""
    backend, _ = pdf._open_backend(path)
    try:
        return not pdf.metadata_title(backend.title()) and bool(pdf.printed_title(backend))
    finally:
        backend.close()


def _ligatures_lost(path: Path) -> bool:
    """Whether a page holds a lost ligature outside a math font."""
    import pypdfium2 as pdfium

    with PDFIUM_LOCK:
        document = pdfium.PdfDocument(str(path))
        pages = len(document)
    try:
        for index in range(pages):
            with PDFIUM_LOCK:  # a page at a time: the viewer is never held up for a whole document
                page = document[index]
                textpage = page.get_textpage()
                try:
                    text = textpage.get_text_range()
                    if glyphs.codes(text) and pdf.restored(textpage, text) != text:
                        return True
                finally:
                    textpage.close()
                    page.close()
    finally:
        with PDFIUM_LOCK:
            document.close()
    return False
