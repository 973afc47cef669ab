"""Plain text in any common encoding: one page, read in windows of bounded size (``streams``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from localrag.core.errors import BadDocument
from localrag.core.ingest.loaders._common import clean_title, display_name
from localrag.core.ingest.loaders.streams import ReadPosition, iter_text, windows
from localrag.core.ingest.types import DocumentStream, Page

MIME_BY_SUFFIX = {".csv": "text/csv", ".tsv": "text/tab-separated-values", ".json": "application/json"}


def open_stream(path: Path) -> DocumentStream:
    """The file as page 1, in windows; ``BadDocument`` (``unsupported``, ``empty``) as they are read. A
    reStructuredText file (``.rst``) is read with its headings and without its markup (``rst``)."""
    if path.suffix.lower() == ".rst":
        from localrag.core.ingest.loaders import rst

        return rst.open_stream(path)
    position = ReadPosition()
    return DocumentStream(
        doc_type="text",
        title=clean_title("", path),
        mime=MIME_BY_SUFFIX.get(path.suffix.lower(), "text/plain"),
        page_count=1,
        pages=_pages(path, position),
        read_share=position.share,
    )


def _pages(path: Path, position: ReadPosition) -> Iterator[Page]:
    seen_text = False
    for offset, text in windows(iter_text(path, position=position)):
        seen_text = seen_text or not text.isspace()
        yield Page(number=1, text=text, offset=offset)
    if not seen_text:
        raise BadDocument(f"{display_name(path)} has no text.", code="empty")
