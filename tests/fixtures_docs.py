"""Documents written at test time: real PDFs (with outlines, encrypted, scanned, damaged), DOCX files (with
heading styles, a ZIP bomb), PNG images, and text in assorted encodings. Nothing binary is kept in the
repository.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg
from pypdf import PdfWriter
from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject, NumberObject

LOREM = (
    "Local search keeps every document on this machine. The index is rebuilt when a file changes. "
    "Answers cite the page they come from, so a reader can check them. "
)


def _pdf_escape(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _font(writer: PdfWriter, name: str = "Helvetica") -> object:
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject(f"/{name}"),
            NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
        }
    )
    return writer._add_object(font)


def _image(writer: PdfWriter, size: int = 16) -> object:
    image = DecodedStreamObject()
    image.set_data(bytes((x * 7 + y * 13) % 256 for y in range(size) for x in range(size)))
    image.update(
        {
            NameObject("/Type"): NameObject("/XObject"),
            NameObject("/Subtype"): NameObject("/Image"),
            NameObject("/Width"): NumberObject(size),
            NameObject("/Height"): NumberObject(size),
            NameObject("/ColorSpace"): NameObject("/DeviceGray"),
            NameObject("/BitsPerComponent"): NumberObject(8),
        }
    )
    return writer._add_object(image)


def write_pdf(
    path: Path,
    pages: Sequence[Sequence[str] | None],
    *,
    outline: Sequence[tuple[str, int, str | None]] = (),
    title: str | None = None,
    password: str | None = None,
) -> Path:
    """A PDF with one page per entry of ``pages``: its lines of text, or ``None`` for a scanned page (an image
    and no text layer). ``outline`` holds ``(title, page_index, parent_title)`` bookmarks."""
    writer = PdfWriter()
    font = _font(writer)
    image = None
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        if lines is None:
            image = image or _image(writer)
            resources = {NameObject("/XObject"): DictionaryObject({NameObject("/Im1"): image})}
            content = "q 400 0 0 400 100 200 cm /Im1 Do Q"
        else:
            resources = {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
            ops = (
                ["BT /F1 11 Tf 14 TL 72 740 Td"] + [f"({_pdf_escape(line)}) Tj T*" for line in lines] + ["ET"]
            )
            content = "\n".join(ops)
        page[NameObject("/Resources")] = DictionaryObject(resources)
        stream = DecodedStreamObject()
        stream.set_data(content.encode("cp1252"))
        page[NameObject("/Contents")] = writer._add_object(stream)
    items: dict[str, object] = {}
    for heading, page_index, parent in outline:
        items[heading] = writer.add_outline_item(
            title=heading, page_number=page_index, parent=items.get(parent or "")
        )
    if title:
        writer.add_metadata({"/Title": title})
    if password:
        writer.encrypt(user_password=password, algorithm="RC4-128")
    with open(path, "wb") as f:
        writer.write(f)
    return path


def write_content_pdf(path: Path, pages: Sequence[Sequence[str]], *, f2: str = "") -> Path:
    """A PDF whose pages draw text in Helvetica (``/F1``), and in a font named ``f2`` (``/F2``) when given,
    with these content-stream operators. Neither font has a ToUnicode map: a code that WinAnsi leaves
    unnamed (a control character) comes out of pdfium as itself, as TeX's ligatures do."""
    writer = PdfWriter()
    fonts = {NameObject("/F1"): _font(writer)}
    if f2:
        fonts[NameObject("/F2")] = _font(writer, f2)
    for ops in pages:
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject(fonts)})
        stream = DecodedStreamObject()
        stream.set_data("\n".join(ops).encode("cp1252"))
        page[NameObject("/Contents")] = writer._add_object(stream)
    with open(path, "wb") as f:
        writer.write(f)
    return path


def write_blank_pdf(path: Path, pages: int = 2) -> Path:
    """Pages with nothing on them at all."""
    writer = PdfWriter()
    for _ in range(pages):
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Resources")] = DictionaryObject()
        page[NameObject("/Contents")] = writer._add_object(DecodedStreamObject())
        page[NameObject("/MediaBox")] = ArrayObject(
            [NumberObject(0), NumberObject(0), NumberObject(612), NumberObject(792)]
        )
    with open(path, "wb") as f:
        writer.write(f)
    return path


def manual_pdf(path: Path) -> Path:
    """Three pages, an outline two levels deep, a title in the metadata."""
    return write_pdf(
        path,
        [
            ["Chapter 1", "Getting started with the manual.", LOREM[:90]],
            [
                "Chapter 2",
                "Installing",
                "Installing on Linux takes one command.",
                "Run the installer as a user.",
            ],
            ["The installer writes a log file.", "Appendix", "Reference tables follow."],
        ],
        outline=[
            ("Chapter 1", 0, None),
            ("Chapter 2", 1, None),
            ("Installing", 1, "Chapter 2"),
            ("Appendix", 2, None),
        ],
        title="Fixture Manual",
    )


def truncate(path: Path, fraction: float = 0.6) -> Path:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * fraction)])
    return path


def png_bytes(width: int = 8, height: int = 8) -> bytes:
    """A valid grey PNG, written with the standard library."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + bytes((x * 30) % 256 for x in range(width)) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def write_docx(path: Path, blocks: Sequence[tuple[str, str]], *, table: Sequence[Sequence[str]] = ()) -> Path:
    """A Word document from ``(style, text)`` paragraphs (style ``""`` for body text, ``"Heading 2"``,
    ``"Title"``, ``"List Number/1"`` for an item one level down in its style's list), then a table when
    ``table`` has rows."""
    import docx
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    document = docx.Document()
    for style, text in blocks:
        name, _, level = style.partition("/")
        paragraph = document.add_paragraph(text, style=name or None)
        if level:  # the style's list, at another level: the paragraph's own numPr says so
            style_num = document.styles[name].element.find(qn("w:pPr")).find(qn("w:numPr"))
            num_pr, ilvl, num_id = OxmlElement("w:numPr"), OxmlElement("w:ilvl"), OxmlElement("w:numId")
            ilvl.set(qn("w:val"), level)
            num_id.set(qn("w:val"), style_num.find(qn("w:numId")).get(qn("w:val")))
            num_pr.extend([ilvl, num_id])
            paragraph._p.get_or_add_pPr().append(num_pr)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    document.save(str(path))
    return path


def _zip(members: Sequence[tuple[str, bytes, int, int]]) -> bytes:
    """A ZIP archive from ``(name, deflated_bytes, crc32, uncompressed_size)`` members."""
    out = bytearray()
    central = bytearray()
    for name, data, crc, size in members:
        encoded = name.encode()
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(data), size, len(encoded), 0)
        out += encoded + data
        central += struct.pack(
            "<IHHHHHHIIIHHHHHII",
            0x02014B50,
            20,
            20,
            0,
            8,
            0,
            0,
            crc,
            len(data),
            size,
            len(encoded),
            0,
            0,
            0,
            0,
            0,
            offset,
        )
        central += encoded
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(out), 0)
    return bytes(out + central + end)


def _deflated(data: bytes) -> tuple[str, bytes, int, int]:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return "", c.compress(data) + c.flush(), zlib.crc32(data), len(data)


def write_docx_bomb(path: Path, megabytes: int = 640) -> Path:
    """A .docx whose word/document.xml really inflates to ``megabytes`` MiB of zeros (about 1 MB on disk)."""
    block = b"\0" * (1 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    segment = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    data = segment * megabytes + c.flush(zlib.Z_FINISH)
    crc = 0
    for _ in range(megabytes):
        crc = zlib.crc32(block, crc)
    types = (
        b'<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>'
    )
    members = [
        ("[Content_Types].xml", *_deflated(types)[1:]),
        ("word/document.xml", data, crc, megabytes << 20),
    ]
    path.write_bytes(_zip(members))
    return path


def write_lying_docx_bomb(path: Path, megabytes: int = 1024, declared: int = 5000) -> Path:
    """A .docx (about 1 MB on disk) whose word/document.xml inflates to ``megabytes`` MiB of well-formed
    paragraph text, while the local header and the central directory both declare ``declared`` bytes."""
    namespace = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    prefix = f'<?xml version="1.0"?><w:document xmlns:w="{namespace}"><w:body><w:p><w:r><w:t>'.encode()
    block = b"word " * (1 << 18)  # 1.25 MiB of text in one never-ending paragraph
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(prefix) + c.flush(zlib.Z_FULL_FLUSH)
    segment = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    repeats = (megabytes << 20) // len(block)
    data = head + segment * repeats + c.flush(zlib.Z_FINISH)
    crc = zlib.crc32(prefix)
    for _ in range(repeats):
        crc = zlib.crc32(block, crc)
    types = (
        b'<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>'
    )
    members = [("[Content_Types].xml", *_deflated(types)[1:]), ("word/document.xml", data, crc, declared)]
    path.write_bytes(_zip(members))
    return path


def write_zip_without_document(path: Path) -> Path:
    path.write_bytes(_zip([("hello.txt", *_deflated(b"hello")[1:])]))
    return path


def text_image_png(path: Path, text: str) -> Path:
    """A picture of ``text`` (needs Pillow; used only by the OCR tests)."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (1200, 200), "white")
    draw = ImageDraw.Draw(image)
    try:
        font = ImageFont.load_default(size=48)
    except TypeError:  # Pillow < 10.1
        font = ImageFont.load_default()
    draw.text((40, 60), text, fill="black", font=font)
    image.save(path)
    return path


def empty_store(library: Any, *, watched_folders: bool = False) -> None:
    """Empties the document store, chat history and test questions (the schema and registered models stay)."""
    tables = (
        "documents, document_chunks, chunk_embeddings, bm25_postings, bm25_terms, chats, messages, "
        "document_files, collections, test_questions, check_runs"
    )
    with library.connect() as conn:
        # A connection an earlier test left inside a transaction would block the TRUNCATE for ever: fail
        # instead, naming what holds the lock.
        conn.execute("SET lock_timeout = '60s'")
        try:
            conn.execute(
                f"TRUNCATE {tables}{', watched_folders' if watched_folders else ''} RESTART IDENTITY CASCADE"
            )
        except psycopg.errors.LockNotAvailable:
            conn.rollback()
            holders = conn.execute(
                "SELECT pid, state, left(query, 120) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'"
            ).fetchall()
            raise AssertionError(f"the store is locked by another connection: {holders}") from None
        conn.execute("UPDATE bm25_stats SET n_chunks = 0, total_len = 0")
        conn.commit()
