"""Word documents (.docx): paragraphs and tables in reading order as one page, "Heading N" styles as headings.

The ZIP container is read through ``archive.inflate``, which counts the bytes that really come out of each
member and stops at a limit whatever the archive declares (a zip bomb that lies about its size is refused
after at most ``MAX_XML_BYTES`` inflated, never held in memory). ``word/document.xml`` is parsed as a stream
(lxml's pull parser with python-docx's element classes): each paragraph or table is read and dropped in turn,
and the text is handed on in windows of bounded size.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from localrag.core.errors import BadDocument
from localrag.core.ingest.loaders import archive
from localrag.core.ingest.loaders._common import clean_title, display_name, read_head, strip_controls
from localrag.core.ingest.loaders.streams import WINDOW_CHARS, windows
from localrag.core.ingest.types import DocumentStream, Page

MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
# Real documents are far below this once unpacked (images included); a bomb is far above.
MAX_UNPACKED_BYTES = 512 * 1024 * 1024
MAX_XML_BYTES = 128 * 1024 * 1024
MAX_SMALL_PART_BYTES = 16 * 1024 * 1024  # styles and document properties
MAX_MEMBERS = 10_000
_HEADING_STYLE = re.compile(r"^(?:heading|überschrift|titre|título|titolo|kop)\s*([1-9])$", re.IGNORECASE)
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_DOCUMENT = "word/document.xml"


def _check_container(path: Path) -> dict[str, Any]:
    """The members that matter, by name, after the checks that need no inflating."""
    name = display_name(path)
    head = read_head(path, 8)
    if head.startswith(_OLE_MAGIC):
        if _is_encrypted_ooxml(path):
            raise BadDocument(f"{name} is password-protected; save an unprotected copy.", code="encrypted")
        raise BadDocument(
            f"{name} is an old-format Word file (.doc) with a .docx name; save it as .docx.", code="corrupt"
        )
    members = archive.members(path)
    by_name = {m.filename: m for m in members}
    if _DOCUMENT not in by_name:
        raise BadDocument(f"{name} is not a Word document (no word/document.xml).", code="corrupt")
    total = sum(m.file_size for m in members)
    largest_xml = max((m.file_size for m in members if m.filename.endswith((".xml", ".rels"))), default=0)
    if len(members) > MAX_MEMBERS or total > MAX_UNPACKED_BYTES or largest_xml > MAX_XML_BYTES:
        raise BadDocument(
            f"{name} would unpack to {total / 2**20:,.0f} MiB; refusing it as unsafe (a ZIP bomb?).",
            code="too_large",
        )
    return by_name


def _is_encrypted_ooxml(path: Path) -> bool:
    """An encrypted Office document is an OLE file holding an ``EncryptedPackage`` stream."""
    marker = "EncryptedPackage".encode("utf-16-le")
    with open(path, "rb") as f:
        data = f.read(4 * 1024 * 1024)
    return marker in data


def _pull_parser() -> Any:
    from docx.oxml.parser import element_class_lookup
    from lxml import etree

    parser = etree.XMLPullParser(
        events=("end",), resolve_entities=False, no_network=True, remove_blank_text=False
    )
    parser.set_element_class_lookup(element_class_lookup)
    return parser


def _small_part(path: Path, info: Any) -> Any:
    """A small XML part (styles, properties) parsed whole, after a counted inflation; ``None`` if damaged."""
    from lxml import etree

    data = b"".join(archive.inflate(path, info, MAX_SMALL_PART_BYTES))
    try:
        return etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True))
    except etree.XMLSyntaxError:
        return None


def _styles(path: Path, by_name: dict[str, Any]) -> dict[str, int]:
    """Heading level of each paragraph style id (0 for a title style), following ``basedOn``."""
    info = by_name.get("word/styles.xml")
    root = _small_part(path, info) if info is not None else None
    if root is None:
        return {}
    styles: dict[str, tuple[str, str]] = {}
    for style in root.iter(f"{_W}style"):
        style_id = style.get(f"{_W}styleId") or ""
        name = style.find(f"{_W}name")
        based = style.find(f"{_W}basedOn")
        styles[style_id] = (
            (name.get(f"{_W}val") or "") if name is not None else "",
            (based.get(f"{_W}val") or "") if based is not None else "",
        )
    levels: dict[str, int] = {}
    for style_id in styles:
        seen: set[str] = set()
        current = style_id
        while current in styles and current not in seen:
            seen.add(current)
            name, based = styles[current]
            if name.strip().lower() == "title":
                levels[style_id] = 0
                break
            match = _HEADING_STYLE.match(name.strip()) or _HEADING_STYLE.match(current)
            if match:
                levels[style_id] = int(match.group(1))
                break
            current = based
    return levels


def _core_title(path: Path, by_name: dict[str, Any]) -> str:
    info = by_name.get("docProps/core.xml")
    try:
        root = _small_part(path, info) if info is not None else None
    except BadDocument:  # a damaged docProps/core.xml should not lose the body
        return ""
    found = root.find("{http://purl.org/dc/elements/1.1/}title") if root is not None else None
    return (found.text or "") if found is not None else ""


def _table_text(table: Any) -> str:
    rows = []
    for row in table.iterchildren(f"{_W}tr"):
        cells: list[str] = []
        for cell in row.iterchildren(f"{_W}tc"):
            text = " ".join("\n".join(p.text for p in cell.iterchildren(f"{_W}p")).split())
            if not cells or cells[-1] != text:  # merged cells repeat
                cells.append(text)
        if any(cells):
            rows.append("\t".join(cells))
    return "\n".join(rows)


def _blocks(path: Path, info: Any) -> Iterator[tuple[str, str | None]]:
    """``(text, style id)`` of each top-level paragraph (style ``None`` for a table), read as a stream."""
    from lxml import etree

    # A first counted pass without parsing: a member that lies about its size stops at the limit here.
    for _ in archive.inflate(path, info, MAX_XML_BYTES):
        pass
    parser = _pull_parser()
    body = f"{_W}body"
    try:
        for data in archive.inflate(path, info, MAX_XML_BYTES):
            parser.feed(data)
            for _event, element in parser.read_events():
                parent = element.getparent()
                if parent is None or parent.tag != body:
                    continue
                if element.tag == f"{_W}p":
                    yield element.text, element.style
                elif element.tag == f"{_W}tbl":
                    yield _table_text(element), None
                element.clear()
                while element.getprevious() is not None:  # what was read is dropped
                    del parent[0]
        parser.close()
    except etree.XMLSyntaxError as exc:
        raise BadDocument(
            f"{display_name(path)} is damaged and cannot be read (XMLSyntaxError).", code="corrupt"
        ) from exc


def open_stream(path: Path) -> DocumentStream:
    """The body as page 1, in windows of bounded size; the title is final once the pages are read."""
    by_name = _check_container(path)
    stream = DocumentStream("docx", clean_title("", path), MIME, 1, iter(()))
    stream.pages = _pages(path, by_name, stream)
    return stream


def _pages(path: Path, by_name: dict[str, Any], stream: DocumentStream) -> Iterator[Page]:
    levels = _styles(path, by_name)
    core_title = _core_title(path, by_name)
    parts: list[str] = []
    length = 0  # characters in ``parts`` with their separators
    offset = 0  # where the window being built starts in the page
    stack: list[tuple[int, str]] = []
    headings: list[tuple[int, str]] = []
    title = first_heading = ""
    seen_text = False

    def window() -> Page:
        nonlocal parts, length, offset, headings
        carried = " > ".join(t for _, t in stack)
        page = Page(number=1, text="\n\n".join(parts), headings=headings, offset=offset)
        offset += length + 2  # the blank line between two windows belongs to neither
        parts, length = [], 0
        headings = [(0, carried)] if carried else []
        stream.title = clean_title(core_title or title or first_heading, path)
        return page

    for raw, style in _blocks(path, by_name[_DOCUMENT]):
        text = strip_controls(raw).strip()
        if not text:
            continue
        seen_text = True
        if len(text) > WINDOW_CHARS:  # one huge paragraph: windows of its own
            if parts:
                yield window()
            for at, piece in windows([text]):
                yield Page(number=1, text=piece, headings=list(headings), offset=offset + at)
            offset += len(text) + 2
            continue
        start = length + (2 if parts else 0)
        level = levels.get(style or "") if style is not None else None
        if level == 0 and not title:
            title = " ".join(text.split())
        elif level:
            words = " ".join(text.replace(">", "›").split())[:200]
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, words))
            if headings and headings[-1][0] == start:  # replaces the path carried over to this window
                headings.pop()
            headings.append((start, " > ".join(t for _, t in stack)))
            first_heading = first_heading or words
        parts.append(text)
        length = start + len(text)
        if length >= WINDOW_CHARS:
            yield window()
    if parts:
        yield window()
    stream.title = clean_title(core_title or title or first_heading, path)
    if not seen_text:
        raise BadDocument(f"{display_name(path)} has no text.", code="empty")
