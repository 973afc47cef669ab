"""Whether a PDF indexed by an older version of the PDF loader would read differently now
(``pdf.EXTRACTION_VERSION``): re-embedding reads again only those."""

from __future__ import annotations

from pathlib import Path

from localrag.core.ingest.loaders import pdf
from localrag.core.pdfium_lock import PDFIUM_LOCK
from localrag.core.text import glyphs, reading


def reads_differently(path: Path, version: int) -> bool:
    """Whether reading ``path`` now gives other text than the loader of ``version`` gave: always before 2;
    from 2 to 3 only where a page holds a lost ligature outside a math font (most PDFs have none, and keep
    their text and vectors); from 3 to 4 where the metadata names no title and the first page prints one, or
    a page holds a lost T1 dash; from 4 to 5 where that printed title was a logo; from 5 to 6 where a line
    ending with a semicolon is a clause of prose that goes on from the line before; from 6 to 7 where a logo's
    word was found inside an address and the lines around it taken for the title. A file that cannot be read
    is read again (its own steps say why it fails)."""
    if version < 2:
        return True
    if version >= pdf.EXTRACTION_VERSION:
        return False
    try:
        if version < 4 and (_title_found(path) or _codes_lost(path, dashes_only=version >= 3)):
            return True
        # The printed title as that version read it (before 4, ``_title_found`` above has decided).
        before = {"logos": False} if version == 4 else {"addresses": True}
        if 4 <= version <= 6 and _title_read_otherwise(path, **before):
            return True
        return version <= 5 and _prose_clauses(path)
    except Exception:
        return True


def _title_found(path: Path) -> bool:
    """Whether the title now comes from the first page (the metadata names none, the page prints one)."""
    backend, _ = pdf._open_backend(path)
    try:
        return not pdf.metadata_title(backend.title()) and bool(pdf.printed_title(backend))
    finally:
        backend.close()


def _title_read_otherwise(path: Path, **before: bool) -> bool:
    """Whether the printed title read as an older version did (``before``: ``pdf.printed_title``'s options)
    differs from today's (the metadata naming none): version 4 took a logo for it, versions 5 and 6 took the
    lines around an address that held the logo's word."""
    backend, _ = pdf._open_backend(path)
    try:
        if pdf.metadata_title(backend.title()):
            return False
        return pdf.printed_title(backend, **before) != pdf.printed_title(backend)
    finally:
        backend.close()


def _prose_clauses(path: Path) -> bool:
    """Whether a page reads differently now that a line ending with a semicolon is read as prose when it is a
    clause of prose (``reading.prose_clause``): only pages holding such a line are read both ways."""
    backend, _ = pdf._open_backend(path)
    try:
        for index in range(backend.page_count):
            text, _, _, layout = backend.page(index, False)
            if not any(
                ln.endswith(";") and reading.prose_clause(ln) for ln in map(str.strip, text.splitlines())
            ):
                continue
            lines = layout.lines if layout is not None else reading.lines_of(text)
            sizes = layout.sizes if layout is not None else None
            now = reading.reading_text(text, lines, sizes=sizes)
            if now != reading.reading_text(text, lines, sizes=sizes, prose_semicolons=False):
                return True
    finally:
        backend.close()
    return False


def _codes_lost(path: Path, dashes_only: bool) -> bool:
    """Whether a page holds a lost ligature or dash outside a math font (``dashes_only``: a lost dash)."""
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
                    found = [i for i in glyphs.codes(text) if not dashes_only or glyphs.is_dash_code(text[i])]
                    if found and any(pdf.restored(textpage, text)[i] != text[i] for i in found):
                        return True
                finally:
                    textpage.close()
                    page.close()
    finally:
        with PDFIUM_LOCK:
            document.close()
    return False
