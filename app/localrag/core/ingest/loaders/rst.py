"""reStructuredText (``.rst``): the source text as one page (read in windows), with heading paths from its
underlined (and overlined) titles, and its markup blanked out of the prose, as for Markdown: a role or an
inline literal keeps its text (":func:`prompt`" reads "prompt"), a link its words, and directive lines
(".. code-block:: python", ".. _label:") and the lines under and over a title become spaces. The text keeps
its length, so every offset is still the file's. Literal blocks (the indented lines after "::" or a
directive) keep their text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from localrag.core.ingest.loaders._common import clean_title, enter_heading
from localrag.core.ingest.loaders.streams import ReadPosition, text_windows
from localrag.core.ingest.types import DocumentStream, Page

MIME = "text/x-rst"
# A title's underline: one punctuation character repeated (reStructuredText's adornments).
_ADORNMENT = re.compile(r"^([=\-~^\"'`:.*+#_])\1{2,}\s*$")
_DIRECTIVE = re.compile(r"^\s*\.\.\s+(?:[\w:-]+::|_[^:]*:|\[[^\]]*\]|\|[^|]*\|)")
# `text <target>`_ and :role:`text <target>` keep "text"; :role:`text`, ``literal`` and `text`_ keep text.
_ROLE_TARGET = re.compile(r"(:[\w:+-]+:`)([^`<\n]*?)(\s*<[^>`\n]*>`)")
_ROLE = re.compile(r"(:[\w:+-]+:`)([^`\n]+)(`)")
_LINK = re.compile(r"(`)([^`<\n]*?)(\s*<[^>`\n]*>`__?)")
_LITERAL = re.compile(r"(``)([^`\n]+)(``)")
_REFERENCE = re.compile(r"(`)([^`\n]+)(`__?)")
_MAX_HEADING_CHARS = 200


def open_stream(path: Path) -> DocumentStream:
    """The file as page 1, in windows, with its headings; the title is its first heading."""
    position = ReadPosition()
    stream = DocumentStream("text", clean_title("", path), MIME, 1, iter(()), read_share=position.share)
    stream.pages = _pages(path, stream, position)
    return stream


def _pages(path: Path, stream: DocumentStream, position: ReadPosition) -> Iterator[Page]:
    reader = RstReader()
    for offset, text in text_windows(path, position):
        masked, headings = reader.feed(text)
        if reader.title:
            stream.title = clean_title(reader.title, path)
        yield Page(number=1, text=masked, headings=headings, offset=offset)


def mask_inline(line: str) -> str:
    """``line`` with its roles, literals and links as their text, the same length (the markup's characters
    become spaces before the text)."""

    def keep(m: re.Match[str]) -> str:
        return " " * (len(m.group(1)) + len(m.group(3))) + m.group(2)

    for pattern in (_ROLE_TARGET, _ROLE, _LINK, _LITERAL, _REFERENCE):
        line = pattern.sub(keep, line)
    if line.rstrip().endswith("::"):  # "the following::" reads "the following:"
        end = len(line.rstrip())
        line = line[: end - 1] + " " + line[end:]
    return line


class RstReader:
    """Reads windows of a reStructuredText file in order: headings, with levels in the order their adornment
    styles first appear, and the text with its markup blanked (``feed``)."""

    def __init__(self) -> None:
        self.styles: list[tuple[str, bool]] = []  # (character, overlined), by level
        self.stack: list[tuple[int, str]] = []
        self.title = ""
        self.literal_indent: int | None = (
            None  # inside a literal block: the indent of the line that opened it
        )

    def feed(self, text: str) -> tuple[str, list[tuple[int, str]]]:
        lines = text.split("\n")
        starts, at = [], 0
        for line in lines:
            starts.append(at)
            at += len(line) + 1
        out = list(lines)
        headings: list[tuple[int, str]] = []
        for i, line in enumerate(lines):
            indent = len(line) - len(line.lstrip())
            if self.literal_indent is not None:
                if not line.strip() or indent > self.literal_indent:
                    continue
                self.literal_indent = None
            if _DIRECTIVE.match(line):
                out[i] = " " * len(line)
                if "::" in line:
                    self.literal_indent = indent
                continue
            if (
                _ADORNMENT.match(line)
                and i > 0
                and lines[i - 1].strip()
                and not _ADORNMENT.match(lines[i - 1])
            ):
                overlined = i > 1 and lines[i - 2].strip() == line.strip()
                self._heading(lines[i - 1], line.strip()[0], overlined, starts[i - 1], headings)
                out[i] = " " * len(line)
                if overlined:
                    out[i - 2] = " " * len(lines[i - 2])
                continue
            if line.strip():
                out[i] = mask_inline(line)
                if line.rstrip().endswith("::"):
                    self.literal_indent = indent
        return "\n".join(out), headings

    def _heading(
        self, raw: str, char: str, overlined: bool, at: int, headings: list[tuple[int, str]]
    ) -> None:
        words = " ".join(mask_inline(raw).split())[:_MAX_HEADING_CHARS]
        if not words:
            return
        style = (char, overlined)
        if style not in self.styles:
            self.styles.append(style)
        level = self.styles.index(style)
        self.title = self.title or words
        headings.append((at, enter_heading(self.stack, level, words)))
