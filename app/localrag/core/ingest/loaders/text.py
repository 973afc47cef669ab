"""Plain text in any common encoding: one page holding the whole file."""

from __future__ import annotations

from pathlib import Path

from localrag.core.errors import BadDocument
from localrag.core.ingest.loaders._common import clean_title, decode_text, display_name
from localrag.core.ingest.types import LoadedDocument, Page

MIME_BY_SUFFIX = {".csv": "text/csv", ".tsv": "text/tab-separated-values", ".json": "application/json"}


def read_text(path: Path) -> str:
    """The file's text, decoded (see ``decode_text``); ``BadDocument`` for binary content."""
    return decode_text(path.read_bytes(), path)


def load(path: Path) -> LoadedDocument:
    text = read_text(path)
    if not text.strip():
        raise BadDocument(f"{display_name(path)} has no text.", code="empty")
    return LoadedDocument(
        doc_type="text",
        title=clean_title("", path),
        mime=MIME_BY_SUFFIX.get(path.suffix.lower(), "text/plain"),
        pages=[Page(number=1, text=text)],
    )
