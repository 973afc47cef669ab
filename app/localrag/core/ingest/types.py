"""What the loaders produce and the chunker consumes: pages of text, and chunks with exact character
offsets."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field


@dataclass
class Page:
    """One page of extracted text.

    Attributes:
        number: 1-based page number; formats without pages (Markdown, text, HTML, DOCX) are a single page 1.
        text: the page text, exactly what the character offsets of headings and chunks refer to.
        headings: ``(char_offset, heading_path)`` pairs sorted by offset; each path (``"Install > Linux"``)
            is in force from its offset on. A heading carried over from an earlier page appears at offset 0.
        needs_ocr: the page had no text layer and OCR was not available.
        offset: where ``text`` starts in page ``number``. A long page (a book-length text file) arrives as
            consecutive windows of bounded size with the same ``number``; heading offsets are relative to
            the window, the chunks' ``char_start``/``char_end`` to the whole page.
    """

    number: int
    text: str
    headings: list[tuple[int, str]] = field(default_factory=list)
    needs_ocr: bool = False
    offset: int = 0


@dataclass
class LoadedDocument:
    """A document's text, page by page, with what a reader should know about the extraction."""

    doc_type: str  # 'pdf' | 'markdown' | 'text' | 'html' | 'docx' | 'image'
    title: str
    mime: str
    pages: list[Page]
    warnings: list[str] = field(default_factory=list)


@dataclass
class DocumentStream:
    """A document opened for reading page by page (a long page in windows: ``Page.offset``).

    ``title`` and ``warnings`` are final once ``pages`` is exhausted (a Markdown file's first heading may come
    late). ``read_share``, where the format allows, says which share of the file was read so far (0–1; read
    ahead of the pages handed on, so an estimate made from it errs low)."""

    doc_type: str
    title: str
    mime: str
    page_count: int
    pages: Iterator[Page]
    warnings: list[str] = field(default_factory=list)
    read_share: Callable[[], float] | None = None


@dataclass
class Chunk:
    """A piece of one page sized for the embedding model.

    ``text == page.text[char_start:char_end]`` exactly, so a citation can highlight it in the page.
    ``token_count`` is what the embedder counts, special tokens included.
    """

    chunk_index: int
    page_number: int
    heading_path: str
    text: str
    token_count: int
    char_start: int
    char_end: int
    text_hash: str  # sha256 hex of ``text``
    # The headings that begin inside the chunk, after its start: (offset in ``text``, heading path).
    inner_headings: list[tuple[int, str]] = field(default_factory=list)
