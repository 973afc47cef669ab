"""Helpers the loaders share: content sniffing, encoding clues, names fit for a one-line message."""

from __future__ import annotations

import codecs
import re
import unicodedata
from pathlib import Path

# Leading bytes of formats we can recognise; the value names the format for messages.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "PDF"),
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"II*\x00", "TIFF image"),
    (b"MM\x00*", "TIFF image"),
    (b"BM", "BMP image"),
    (b"PK\x03\x04", "ZIP archive (or an Office document)"),
    (b"PK\x05\x06", "ZIP archive"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "legacy Office (OLE) file"),
    (b"\x7fELF", "program (ELF)"),
    (b"MZ", "Windows program"),
    (b"\x1f\x8b", "gzip archive"),
    (b"BZh", "bzip2 archive"),
    (b"\xfd7zXZ\x00", "xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (b"Rar!\x1a\x07", "RAR archive"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"OggS", "Ogg media file"),
    (b"fLaC", "FLAC audio"),
    (b"ID3", "MP3 audio"),
    (b"\x00\x00\x01\x00", "icon"),
)

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# C0 controls other than tab, newline, vertical tab, form feed, carriage return and escape.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
_SNIFF_BYTES = 8192


def display_name(path: Path) -> str:
    """The file name, made safe for a one-line message (no control characters, undecodable bytes shown)."""
    name = path.name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # surrogate-escaped bytes from a non-UTF-8 file name
        name = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return "".join(ch if unicodedata.category(ch)[0] != "C" else "?" for ch in name)


def clean_title(title: str, fallback: Path) -> str:
    """A title on one line; the file stem when ``title`` is blank."""
    title = " ".join(title.split())
    if not title:
        title = display_name(fallback.with_suffix("")) if fallback.suffix else display_name(fallback)
    return title[:300]


def read_head(path: Path, n: int = _SNIFF_BYTES) -> bytes:
    with open(path, "rb") as f:
        return f.read(n)


def sniff_magic(head: bytes) -> str | None:
    """The format that ``head`` announces, or ``None`` when it starts with no known signature."""
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WebP image"
    if head[:4] == b"RIFF":
        return "RIFF media file"
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return what
    return None


def _bom_encoding(data: bytes) -> tuple[str, int] | None:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding, len(bom)
    return None


def _utf16_without_bom(data: bytes) -> str | None:
    """``utf-16-le``/``-be`` when NUL bytes sit in every other position, as in mostly-ASCII UTF-16 text."""
    sample = data[:_SNIFF_BYTES]
    if len(sample) < 4:
        return None
    even, odd = sample[0::2], sample[1::2]
    if odd.count(0) > 0.6 * len(odd) and even.count(0) < 0.05 * len(even):
        return "utf-16-le"
    if even.count(0) > 0.6 * len(even) and odd.count(0) < 0.05 * len(odd):
        return "utf-16-be"
    return None


def looks_binary(head: bytes) -> str | None:
    """Why ``head`` is not text (a known binary signature, or NUL bytes), or ``None`` if it may be text."""
    if _bom_encoding(head):
        return None
    what = sniff_magic(head)
    if what and what != "PDF":
        return f"it looks like a {what}"
    if what == "PDF":
        return "it looks like a PDF"
    if b"\x00" in head and not _utf16_without_bom(head):
        return "it contains binary data"
    return None


def _western(data: bytes) -> str | None:
    """``data`` as cp1252 when it reads as Western European text: a few accented Latin letters among mostly
    ASCII ones. charset-normalizer often calls such text cp1250/cp1257 ("crčme" for "crème")."""
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None
    letters = [c for c in text if c.isalpha()]
    accented = [c for c in letters if not c.isascii()]
    if not accented or len(accented) > 0.3 * len(letters):
        return None
    return text if all("\u00c0" <= c <= "\u00ff" or c in "ŒœŠšŽžŸƒ" for c in accented) else None


def strip_controls(text: str) -> str:
    """``text`` without C0 control characters (tab and newline kept)."""
    return _CONTROL.sub("", text)


def enter_heading(stack: list[tuple[int, str]], level: int, text: str) -> str:
    """Put a heading of ``level`` on the ``stack`` of the headings in force (those of its level and below
    leave it) and return the heading path now in force ("Install > Linux")."""
    while stack and stack[-1][0] >= level:
        stack.pop()
    stack.append((level, text))
    return " > ".join(t for _, t in stack)
