"""Plain text in any common encoding: one page, read in windows of bounded size (``streams``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from localrag.core.ingest.loaders._common import clean_title
from localrag.core.ingest.loaders.streams import ReadPosition, text_windows
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
    for offset, text in text_windows(path, position):
        yield Page(number=1, text=text, offset=offset)
