"""Members of a ZIP container (DOCX and other zip-based formats) inflated as streams with a running count.

The sizes an archive declares are only a hint: ``inflate`` counts the bytes that really come out and stops
with ``too_large`` as soon as they pass its limit, whatever the local header or the central directory say,
holding at most one piece of ``PIECE_BYTES`` at a time. A member is never read whole (``ZipFile.read``
inflates all of it into memory before any check can run).
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from localrag.core.errors import BadDocument
from localrag.core.ingest.loaders._common import display_name

PIECE_BYTES = 1 << 20
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, then the name and extra field lengths


def members(path: Path) -> list[zipfile.ZipInfo]:
    """The archive's members as its central directory lists them; ``corrupt`` when it is no ZIP."""
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise BadDocument(
            f"{display_name(path)} is not a valid document (damaged ZIP container).", code="corrupt"
        ) from exc


def inflate(path: Path, info: zipfile.ZipInfo, limit: int) -> Iterator[bytes]:
    """The member's bytes in pieces of at most ``PIECE_BYTES``, checked against its CRC at the end.

    Raises:
        BadDocument: ``too_large`` once more than ``limit`` bytes came out; ``corrupt`` for damaged data, a
            wrong CRC, an encrypted member or a compression method other than stored or deflate.
    """
    name = display_name(path)

    def corrupt(why: str) -> BadDocument:
        return BadDocument(f"{name} is damaged and cannot be read ({why}).", code="corrupt")

    if info.flag_bits & 0x1:
        raise corrupt(f"{info.filename} is encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise corrupt(f"{info.filename} uses an unsupported compression")
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        header = f.read(_LOCAL_HEADER.size)
        if len(header) < _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
            raise corrupt(f"no local header for {info.filename}")
        _, name_len, extra_len = _LOCAL_HEADER.unpack(header)
        f.seek(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len)
        left = info.compress_size
        inflater = zlib.decompressobj(-15) if info.compress_type == zipfile.ZIP_DEFLATED else None
        total, crc = 0, 0
        while True:
            if inflater is not None and inflater.unconsumed_tail:
                data = inflater.unconsumed_tail
            elif left > 0:
                data = f.read(min(PIECE_BYTES, left))
                if not data:
                    raise corrupt(f"{info.filename} is cut short")
                left -= len(data)
            else:
                data = b""
            try:
                out = data if inflater is None else inflater.decompress(data, PIECE_BYTES)
            except zlib.error as exc:
                raise corrupt(f"{info.filename}: {exc}") from exc
            if not out and not data:
                break
            total += len(out)
            if total > limit:
                raise BadDocument(
                    f"{name} unpacks to more than {limit / 2**20:,.0f} MiB ({info.filename}, declared as "
                    f"{info.file_size:,} bytes); refusing it as unsafe (a ZIP bomb?).",
                    code="too_large",
                )
            crc = zlib.crc32(out, crc)
            if out:
                yield out
    if crc != info.CRC or total != info.file_size:
        raise corrupt(f"{info.filename} does not match its checksum or size")
