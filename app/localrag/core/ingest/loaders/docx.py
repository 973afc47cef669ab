"""Word documents (.docx): paragraphs and tables in reading order as one page, "Heading N" styles as headings,
a list's items with their bullet or number ("• ", "2. ", "b) ": Word keeps them out of the text).

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


def _styles(path: Path, by_name: dict[str, Any]) -> tuple[dict[str, int], dict[str, tuple[str, int]]]:
    """Heading level of each paragraph style id (0 for a title style), and the list a style's paragraphs are
    items of (``(numId, level)``, "List Bullet" and the like), each following ``basedOn``."""
    info = by_name.get("word/styles.xml")
    root = _small_part(path, info) if info is not None else None
    if root is None:
        return {}, {}
    styles: dict[str, tuple[str, str]] = {}
    own_lists: dict[str, tuple[str, int]] = {}
    for style in root.iter(f"{_W}style"):
        style_id = style.get(f"{_W}styleId") or ""
        name = style.find(f"{_W}name")
        based = style.find(f"{_W}basedOn")
        styles[style_id] = (
            (name.get(f"{_W}val") or "") if name is not None else "",
            (based.get(f"{_W}val") or "") if based is not None else "",
        )
        numbered = _list_of(style)
        if numbered is not None:
            own_lists[style_id] = numbered
    lists: dict[str, tuple[str, int]] = {}
    for style_id in styles:
        chain: set[str] = set()
        current = style_id
        while current in styles and current not in chain:
            chain.add(current)
            if current in own_lists:
                lists[style_id] = own_lists[current]
                break
            current = styles[current][1]
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
    return levels, lists


def _list_of(element: Any) -> tuple[str, int] | None:
    """``(numId, level)`` of a paragraph's or a style's ``numPr``; ``None`` without one (or numId 0: none)."""
    num = element.find(f"{_W}pPr/{_W}numPr")
    if num is None:
        return None
    num_id = num.find(f"{_W}numId")
    level = num.find(f"{_W}ilvl")
    value = (num_id.get(f"{_W}val") or "") if num_id is not None else ""
    try:
        depth = int(level.get(f"{_W}val") or 0) if level is not None else 0
    except ValueError:
        depth = 0
    return (value, min(max(depth, 0), 8)) if value and value != "0" else None


def _item(
    style: str | None, own: tuple[str, int] | None, style_lists: dict[str, tuple[str, int]]
) -> tuple[str, int] | None:
    """The list a paragraph is an item of: its own ``numPr``, else its style's."""
    return own or (style_lists.get(style) if style is not None else None)


def _numbering(path: Path, by_name: dict[str, Any]) -> dict[tuple[str, int], str]:
    """The number format (``bullet``, ``decimal``, ``lowerLetter`` …) of each list's level, by ``(numId,
    level)``, from ``word/numbering.xml``."""
    info = by_name.get("word/numbering.xml")
    try:
        root = _small_part(path, info) if info is not None else None
    except BadDocument:  # a damaged numbering part loses the markers, not the text
        return {}
    if root is None:
        return {}
    abstract: dict[str, dict[int, str]] = {}
    for a in root.iter(f"{_W}abstractNum"):
        formats: dict[int, str] = {}
        for lvl in a.iterchildren(f"{_W}lvl"):
            fmt = lvl.find(f"{_W}numFmt")
            try:
                formats[int(lvl.get(f"{_W}ilvl") or 0)] = (
                    (fmt.get(f"{_W}val") or "") if fmt is not None else ""
                )
            except ValueError:
                continue
        abstract[a.get(f"{_W}abstractNumId") or ""] = formats
    out: dict[tuple[str, int], str] = {}
    for num in root.iter(f"{_W}num"):
        ref = num.find(f"{_W}abstractNumId")
        formats = abstract.get((ref.get(f"{_W}val") or "") if ref is not None else "", {})
        for level, fmt in formats.items():
            out[(num.get(f"{_W}numId") or "", level)] = fmt
    return out


class _Markers:
    """The bullet or number Word draws before each item of its lists, counted per list and level (a level's
    count starts again under each item of the level above)."""

    def __init__(self, formats: dict[tuple[str, int], str]) -> None:
        self.formats = formats
        self.counts: dict[tuple[str, int], int] = {}

    def marker(self, item: tuple[str, int]) -> str:
        num_id, level = item
        fmt = self.formats.get(item, "bullet")
        for key in [k for k in self.counts if k[0] == num_id and k[1] > level]:
            del self.counts[key]
        n = self.counts[item] = self.counts.get(item, 0) + 1
        indent = "  " * level
        if fmt in ("decimal", "decimalZero"):
            return f"{indent}{n}. "
        if fmt in ("lowerLetter", "upperLetter") and n <= 26:
            letter = chr(ord("a") + n - 1)
            return f"{indent}{letter.upper() if fmt == 'upperLetter' else letter}) "
        if fmt in ("lowerRoman", "upperRoman"):
            roman = _roman(n)
            return f"{indent}{roman.upper() if fmt == 'upperRoman' else roman}. "
        if fmt == "none":
            return indent
        return f"{indent}• "


def _roman(n: int) -> str:
    out = ""
    for value, digits in (
        (1000, "m"),
        (900, "cm"),
        (500, "d"),
        (400, "cd"),
        (100, "c"),
        (90, "xc"),
        (50, "l"),
        (40, "xl"),
        (10, "x"),
        (9, "ix"),
        (5, "v"),
        (4, "iv"),
        (1, "i"),
    ):
        while n >= value:
            out, n = out + digits, n - value
    return out


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


def _blocks(path: Path, info: Any) -> Iterator[tuple[str, str | None, tuple[str, int] | None]]:
    """``(text, style id, its own list)`` of each top-level paragraph (style ``None`` for a table; the list
    ``(numId, level)`` when the paragraph itself says it is an item), read as a stream."""
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
                    yield element.text, element.style, _list_of(element)
                elif element.tag == f"{_W}tbl":
                    yield _table_text(element), None, None
                element.clear()
                while element.getprevious() is not None:  # what was read is dropped
                    del parent[0]
        parser.close()
    except etree.XMLSyntaxError as exc:
        raise BadDocument(
            f"{display_name(path)} is damaged and cannot be read (XMLSyntaxError).", code="corrupt"
        ) from exc


def holds_lists(path: Path) -> bool:
    """Whether the document has a list's items (read without their markers before extraction version 2). One
    that cannot be read counts as holding them: reading it again says what is wrong."""
    try:
        by_name = _check_container(path)
        _levels, style_lists = _styles(path, by_name)
        return any(_item(style, own, style_lists) for _text, style, own in _blocks(path, by_name[_DOCUMENT]))
    except (BadDocument, OSError):
        return True


def open_stream(path: Path) -> DocumentStream:
    """The body as page 1, in windows of bounded size; the title is final once the pages are read."""
    by_name = _check_container(path)
    stream = DocumentStream("docx", clean_title("", path), MIME, 1, iter(()))
    stream.pages = _pages(path, by_name, stream)
    return stream


def _pages(path: Path, by_name: dict[str, Any], stream: DocumentStream) -> Iterator[Page]:
    levels, style_lists = _styles(path, by_name)
    markers = _Markers(_numbering(path, by_name))
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

    for raw, style, own_list in _blocks(path, by_name[_DOCUMENT]):
        text = strip_controls(raw).strip()
        if not text:
            continue
        item = _item(style, own_list, style_lists)
        if item is not None and not levels.get(style or ""):  # a numbered heading keeps its own words
            text = markers.marker(item) + text
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
