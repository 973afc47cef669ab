"""Text read as a stream: decoded piece by piece and cut into windows of bounded size at whitespace.

Memory does not grow with the file: a one-line text of any size is read ``READ_BYTES`` at a time and handed
on in windows of at most ``WINDOW_CHARS`` characters, cut at a blank line, a line end or a space near the end
of the window (mid-word only when a window holds no whitespace at all). The encoding is chosen from the
file's first ``HEAD_BYTES`` (see ``choose_encoding``); bytes later in the file that do not fit it are
replaced, not fatal.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from localrag.core.errors import BadDocument
from localrag.core.ingest.loaders import _common
from localrag.core.ingest.loaders._common import display_name

READ_BYTES = 1 << 20
HEAD_BYTES = 1 << 20
WINDOW_CHARS = 1 << 20
_CUTS = ("\n\n", "\n", " ", "\t")


def choose_encoding(head: bytes, complete: bool, path: Path, declared: str | None = None) -> tuple[str, int]:
    """The encoding of a file that starts with ``head`` (the whole file when ``complete``), and how many
    bytes of byte-order mark to skip.

    Order: a byte-order mark; the ``declared`` encoding (an HTML meta charset); strict UTF-8; UTF-16 without
    a mark; a Western European 8-bit text; ``charset-normalizer``'s best guess; cp1252 as the last resort.

    Raises:
        BadDocument: ``unsupported`` for binary content.
    """
    bom = _common._bom_encoding(head)
    if bom:
        return bom
    if declared and _decodes(head, declared, complete):
        return declared, 0
    reason = _common.looks_binary(head[: _common._SNIFF_BYTES])
    if reason:
        raise BadDocument(f"{display_name(path)} is not a text file: {reason}.", code="unsupported")
    if _decodes(head, "utf-8", complete):
        return "utf-8", 0
    utf16 = _common._utf16_without_bom(head)
    if utf16:
        return utf16, 0
    if _common._western(head[:262144]) is not None:
        return "cp1252", 0
    from charset_normalizer import from_bytes

    best = from_bytes(head[:262144]).best()
    if best is not None and best.encoding and _known(best.encoding):
        return best.encoding, 0
    return "cp1252", 0


def _known(encoding: str) -> bool:
    try:
        codecs.lookup(encoding)
    except LookupError:
        return False
    return True


def _decodes(data: bytes, encoding: str, complete: bool) -> bool:
    """Whether ``data`` decodes strictly (a character cut at the end of an incomplete head is fine)."""
    try:
        codecs.getincrementaldecoder(encoding)("strict").decode(data, final=complete)
    except (LookupError, UnicodeDecodeError):
        return False
    return True


class ReadPosition:
    """How far a stream has read its file: ``share()`` is 0 before the first read, 1 at the end."""

    def __init__(self) -> None:
        self.done = 0
        self.total = 0

    def share(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0


def iter_text(
    path: Path,
    *,
    declared: str | None = None,
    read_bytes: int = READ_BYTES,
    position: ReadPosition | None = None,
) -> Iterator[str]:
    """The decoded text of ``path`` in pieces of about ``read_bytes``, newlines normalised to ``\\n``;
    ``position`` follows the bytes read.

    Raises:
        BadDocument: ``unsupported`` for binary content, ``unreadable`` when the file cannot be read.
    """
    name = display_name(path)
    try:
        with open(path, "rb") as f:
            if position is not None:
                position.total = os.fstat(f.fileno()).st_size
            for piece in _decode_stream(f, path, declared, read_bytes):
                if position is not None:
                    position.done = f.tell()
                yield piece
    except PermissionError as exc:
        raise BadDocument(f"{name} cannot be read: permission denied.", code="unreadable") from exc
    except OSError as exc:
        raise BadDocument(f"{name} cannot be read: {exc.strerror or exc}.", code="unreadable") from exc


def _decode_stream(f: BinaryIO, path: Path, declared: str | None, read_bytes: int) -> Iterator[str]:
    head = f.read(max(HEAD_BYTES, read_bytes))
    complete = len(head) < max(HEAD_BYTES, read_bytes)
    encoding, skip = choose_encoding(head, complete, path, declared)
    decoder = codecs.getincrementaldecoder(encoding)("replace")
    carry = ""  # a trailing "\r" waits for the next piece: it may be half of "\r\n"
    checked = False
    data = head[skip:]
    while True:
        final = not data
        text = carry + decoder.decode(data, final=final)
        carry = ""
        if text.endswith("\r") and not final:
            text, carry = text[:-1], "\r"
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if not checked and text:
            checked = True
            sample = text[: _common._SNIFF_BYTES]
            if len(_common._CONTROL.findall(sample)) > max(8, len(sample) // 100):
                raise BadDocument(
                    f"{display_name(path)} is not a text file: it contains binary data.", code="unsupported"
                )
        if text:
            yield text
        if final:
            return
        data = f.read(read_bytes)


def windows(pieces: Iterable[str], size: int = WINDOW_CHARS) -> Iterator[tuple[int, str]]:
    """``(offset, text)`` windows of at most ``size`` characters over the concatenated ``pieces``, each cut
    at the strongest break (a blank line, a line end, a space, a tab) in its second half."""
    offset = 0
    buffer = ""
    for piece in pieces:
        buffer += piece
        while len(buffer) > size:
            cut = window_cut(buffer, size)
            yield offset, buffer[:cut]
            offset += cut
            buffer = buffer[cut:]
    if buffer:
        yield offset, buffer


def text_windows(path: Path, position: ReadPosition) -> Iterator[tuple[int, str]]:
    """``windows`` of the file's decoded text; ``BadDocument`` (``empty``) once read when it held only
    whitespace."""
    seen_text = False
    for offset, text in windows(iter_text(path, position=position)):
        seen_text = seen_text or not text.isspace()
        yield offset, text
    if not seen_text:
        raise BadDocument(f"{display_name(path)} has no text.", code="empty")


def window_cut(text: str, size: int) -> int:
    """Where to end a window of at most ``size`` characters at the start of ``text``."""
    for sep in _CUTS:
        at = text.rfind(sep, size // 2, size)
        if at >= 0:
            return at + len(sep)
    return size
