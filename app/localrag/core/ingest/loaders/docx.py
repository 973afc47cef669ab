"""Word documents (.docx): paragraphs and tables in reading order as one page, "Heading N" styles as headings.

The ZIP container is checked before ``python-docx`` parses it: declared uncompressed sizes past a limit (a zip
bomb) are refused, and Python's ``zipfile`` never inflates a member past its declared size.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Any

from localrag.core.errors import BadDocument
from localrag.core.ingest.loaders._common import clean_title, display_name, read_head, strip_controls
from localrag.core.ingest.types import LoadedDocument, Page

MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
# Real documents are far below this once unpacked (images included); a bomb is far above.
MAX_UNPACKED_BYTES = 512 * 1024 * 1024
MAX_XML_BYTES = 128 * 1024 * 1024
MAX_MEMBERS = 10_000
_HEADING_STYLE = re.compile(r"^(?:heading|überschrift|titre|título|titolo|kop)\s*([1-9])$", re.IGNORECASE)
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _check_container(path: Path) -> None:
    name = display_name(path)
    head = read_head(path, 8)
    if head.startswith(_OLE_MAGIC):
        if _is_encrypted_ooxml(path):
            raise BadDocument(f"{name} is password-protected; save an unprotected copy.", code="encrypted")
        raise BadDocument(
            f"{name} is an old-format Word file (.doc) with a .docx name; save it as .docx.", code="corrupt"
        )
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise BadDocument(
            f"{name} is not a valid Word document (damaged ZIP container).", code="corrupt"
        ) from exc
    names = {m.filename for m in members}
    if "word/document.xml" not in names:
        raise BadDocument(f"{name} is not a Word document (no word/document.xml).", code="corrupt")
    total = sum(m.file_size for m in members)
    largest_xml = max((m.file_size for m in members if m.filename.endswith((".xml", ".rels"))), default=0)
    if len(members) > MAX_MEMBERS or total > MAX_UNPACKED_BYTES or largest_xml > MAX_XML_BYTES:
        raise BadDocument(
            f"{name} would unpack to {total / 2**20:,.0f} MiB; refusing it as unsafe (a ZIP bomb?).",
            code="too_large",
        )


def _is_encrypted_ooxml(path: Path) -> bool:
    """An encrypted Office document is an OLE file holding an ``EncryptedPackage`` stream."""
    marker = "EncryptedPackage".encode("utf-16-le")
    with open(path, "rb") as f:
        data = f.read(4 * 1024 * 1024)
    return marker in data


def _heading_level(paragraph: Any) -> int | None:
    try:
        style = paragraph.style
    except (KeyError, ValueError, AttributeError):
        return None
    while style is not None:
        name = (style.name or "").strip()
        if name.lower() == "title":
            return 0
        match = _HEADING_STYLE.match(name) or _HEADING_STYLE.match(style.style_id or "")
        if match:
            return int(match.group(1))
        style = style.base_style
    return None


def _table_text(table: Any) -> str:
    rows = []
    for row in table.rows:
        cells: list[str] = []
        for cell in row.cells:
            text = " ".join(cell.text.split())
            if not cells or cells[-1] != text:  # merged cells repeat
                cells.append(text)
        if any(cells):
            rows.append("\t".join(cells))
    return "\n".join(rows)


def load(path: Path) -> LoadedDocument:
    import docx
    from docx.table import Table

    _check_container(path)
    name = display_name(path)
    try:
        with open(path, "rb") as f:
            document = docx.Document(f)
    except BadDocument:
        raise
    except Exception as exc:  # python-docx and lxml raise many kinds on damaged parts
        raise BadDocument(
            f"{name} is damaged and cannot be read ({type(exc).__name__}).", code="corrupt"
        ) from exc

    parts: list[str] = []
    length = 0
    stack: list[tuple[int, str]] = []
    headings: list[tuple[int, str]] = []
    title = ""
    first_heading = ""
    try:
        blocks = list(document.iter_inner_content())
    except Exception as exc:
        raise BadDocument(
            f"{name} is damaged and cannot be read ({type(exc).__name__}).", code="corrupt"
        ) from exc
    for block in blocks:
        is_table = isinstance(block, Table)
        text = _table_text(block) if isinstance(block, Table) else block.text
        text = strip_controls(text).strip()
        if not text:
            continue
        start = length + (2 if parts else 0)
        if not is_table:
            level = _heading_level(block)
            if level == 0 and not title:
                title = " ".join(text.split())
            elif level:
                words = " ".join(text.replace(">", "›").split())[:200]
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, words))
                headings.append((start, " > ".join(t for _, t in stack)))
                first_heading = first_heading or words
        parts.append(text)
        length = start + len(text)
    body = "\n\n".join(parts)
    if not body.strip():
        raise BadDocument(f"{name} has no text.", code="empty")
    core_title = ""
    try:
        core_title = document.core_properties.title or ""
    except Exception:  # a damaged docProps/core.xml should not lose the body
        core_title = ""
    return LoadedDocument(
        doc_type="docx",
        title=clean_title(core_title or title or first_heading, path),
        mime=MIME,
        pages=[Page(number=1, text=body, headings=headings)],
    )
