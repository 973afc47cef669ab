"""Markdown: the source text as one page (read in windows), with heading paths from ATX (``#``) and setext
headings, and its inline markup blanked out of the prose (``mask_inline``): a link keeps its words, and its
brackets and address become spaces before them; images (badges, screenshots) and layout tags become spaces —
the text keeps its length, so every offset is still the file's (a link's words move right by its markup's
length).

A single linear pass over the lines: headings inside fenced code blocks or front matter are not headings, and
no input (thousands of ``#`` lines, deep nesting, very long lines) makes it slower than reading the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from localrag.core.ingest.loaders._common import clean_title, enter_heading
from localrag.core.ingest.loaders.streams import ReadPosition, text_windows
from localrag.core.ingest.types import DocumentStream, Page

_MAX_HEADING_CHARS = 200
_LINK = re.compile(r"!?\[([^\]\n]{0,500})\]\([^)\n]{0,2000}\)")
_EMPHASIS = re.compile(r"(\*\*|__|`)")
# What ``mask_inline`` blanks: ``![description](address)``, ``[words](address)``, ``[words][label]``; HTML
# tags that only lay out ("<details>", "<img …>"); never inside inline code.
_MARKED = re.compile(r"(!?\[)([^\[\]\n]{0,500})(\]\([^)\n]{0,2000}\)|\]\[[^\]\n]{0,200}\])")
_TAG = re.compile(
    r"</?(?:a|b|br|center|code|details|div|em|h[1-6]|hr|i|img|kbd|li|ol|p|picture|pre|source|span|strong|sub|"
    r"summary|sup|table|tbody|td|th|thead|tr|ul)\b[^<>\n]{0,1000}>",
    re.IGNORECASE,
)
_INLINE_CODE = re.compile(r"(`+)[^`\n].*?\1")


def open_stream(path: Path) -> DocumentStream:
    """The source text as page 1, in windows of bounded size with their headings; the title is final once
    the pages are read."""
    position = ReadPosition()
    stream = DocumentStream("markdown", clean_title("", path), "text/markdown", 1, iter(()))
    stream.pages, stream.read_share = _pages(path, stream, position), position.share
    return stream


def _pages(path: Path, stream: DocumentStream, position: ReadPosition) -> Iterator[Page]:
    parser = HeadingParser()
    for offset, text in text_windows(path, position):
        carried = parser.path
        headings = parser.feed(text)
        text = _masked(text, parser.prose)
        if carried and not (headings and headings[0][0] == 0):
            headings.insert(0, (0, carried))
        parser.next_window()
        stream.title = clean_title(parser.title, path)
        yield Page(number=1, text=text, headings=headings, offset=offset)


def mask_inline(line: str) -> str:
    """``line`` with its links as their words and its images and layout tags as spaces, the same length:
    "see [the guide](https://x.org/g)." → "see                    the guide."."""
    code = [m.span() for m in _INLINE_CODE.finditer(line)]

    def in_code(at: int) -> bool:
        return any(a <= at < b for a, b in code)

    def link(m: re.Match[str]) -> str:
        if in_code(m.start()):
            return m.group()
        if m.group(1) == "![":  # an image (a badge, a screenshot): nothing of it is read
            return " " * len(m.group())
        return " " * (len(m.group(1)) + len(m.group(3))) + m.group(2)  # "manual." stays one word and its stop

    for _ in range(3):  # a badge is an image inside a link: the image first, then the link around it
        masked = _MARKED.sub(link, line)
        if masked == line:
            break
        line = masked
    return _TAG.sub(lambda m: m.group() if in_code(m.start()) else " " * len(m.group()), line)


def _masked(text: str, prose: list[tuple[int, int]]) -> str:
    """``text`` with ``mask_inline`` applied to its prose lines (``(start, length)``)."""
    if not prose:
        return text
    pieces, at = [], 0
    for start, length in prose:
        pieces += [text[at:start], mask_inline(text[start : start + length])]
        at = start + length
    pieces.append(text[at:])
    return "".join(pieces)


def heading_text(raw: str) -> str:
    """A heading's words without Markdown markup (links keep their text)."""
    raw = raw[: _MAX_HEADING_CHARS * 4]
    raw = _LINK.sub(r"\1", raw)
    raw = _EMPHASIS.sub("", raw)
    raw = " ".join(raw.replace(">", "›").split())
    return raw[:_MAX_HEADING_CHARS].strip()


def _atx(line: str) -> tuple[int, str] | None:
    """``(level, text)`` for an ATX heading line (indent already removed), else ``None``."""
    level = len(line) - len(line.lstrip("#"))
    if not 1 <= level <= 6 or (len(line) > level and line[level] not in " \t"):
        return None
    content = line[level:].strip()
    if content.endswith("#"):
        bare = content.rstrip("#")
        if not bare:
            content = ""
        elif bare[-1] in " \t":
            content = bare.rstrip()
    return level, content


def _fence(line: str) -> tuple[str, int] | None:
    """``(char, length)`` when ``line`` (indent removed) opens a fenced code block."""
    if not line.startswith(("```", "~~~")):
        return None
    char = line[0]
    length = len(line) - len(line.lstrip(char))
    if char == "`" and "`" in line[length:]:
        return None
    return char, length


def _front_matter_end(lines: list[str]) -> tuple[int, str]:
    """Index of the first line after YAML front matter (0 if none) and its ``title:`` value."""
    if not lines or lines[0].rstrip() != "---":
        return 0, ""
    title = ""
    for i, line in enumerate(lines[1:2000], start=1):
        if line.rstrip() in ("---", "..."):
            return i + 1, title
        if line.startswith("title:") and not title:
            title = line[len("title:") :].strip().strip("\"'")
    return 0, ""


def parse_headings(text: str) -> tuple[list[tuple[int, str]], str]:
    """Heading paths with the offsets of their lines, and the document title (front matter or first H1)."""
    parser = HeadingParser()
    headings = parser.feed(text)
    return headings, parser.title


class HeadingParser:
    """Finds headings in a Markdown text fed window by window (``feed``), keeping its state across windows:
    an open code fence, the heading stack, the paragraph a setext underline may close."""

    def __init__(self) -> None:
        self.stack: list[tuple[int, str]] = []
        self.first_h1 = ""
        self.front_title = ""
        self.fence: tuple[str, int] | None = None
        self.para_start: int | None = None
        self.para_text: list[str] = []
        self.started = False
        self.mid_line = False  # the last window ended inside a line
        self.prose: list[
            tuple[int, int]
        ] = []  # the last window's lines of prose and headings: (start, length)

    @property
    def title(self) -> str:
        return self.front_title or self.first_h1

    @property
    def path(self) -> str:
        """The heading path in force at the end of what was fed."""
        return " > ".join(t for _, t in self.stack)

    def feed(self, text: str) -> list[tuple[int, str]]:
        """The headings of the next window, with offsets in ``text``."""
        self.prose = []
        lines = text.split("\n")
        start_line = 0
        if not self.started:
            self.started = True
            start_line, self.front_title = _front_matter_end(lines)
        offset = sum(len(line) + 1 for line in lines[:start_line])
        headings: list[tuple[int, str]] = []
        ends_mid_line = not text.endswith("\n")
        if ends_mid_line:
            lines = lines if lines[-1] else lines[:-1]
        elif lines and not lines[-1]:
            lines = lines[:-1]
        continuing = self.mid_line
        self.mid_line = ends_mid_line
        for i, line in enumerate(lines[start_line:]):
            line_start, offset = offset, offset + len(line) + 1
            if i == 0 and continuing:  # the rest of a line begun in the last window: never a heading
                continue
            self._line(line, line_start, headings)
        return headings

    def _line(self, line: str, line_start: int, headings: list[tuple[int, str]]) -> None:
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        if self.fence is not None:
            fence = self.fence
            if indent <= 3 and body.startswith(fence[0] * fence[1]) and not body.strip().strip(fence[0]):
                self.fence = None
            return
        if not body.strip():
            self.para_start, self.para_text = None, []
            return
        if indent <= 3:
            opened = _fence(body)
            if opened:
                self.fence, self.para_start, self.para_text = opened, None, []
                return
            atx = _atx(body.rstrip())
            self.prose.append((line_start, len(line)))
            if atx:
                self._add(atx[0], atx[1], line_start, headings)
                self.para_start, self.para_text = None, []
                return
            underline = body.rstrip()
            if self.para_text and self.para_start is not None and set(underline) in ({"="}, {"-"}):
                at = self.para_start if self.para_start >= 0 else 0  # a paragraph begun in the last window
                self._add(1 if underline[0] == "=" else 2, " ".join(self.para_text), at, headings)
                self.para_start, self.para_text = None, []
                return
        elif not self.para_text:
            return  # indented code
        else:
            self.prose.append((line_start, len(line)))
        if self.para_start is None:
            self.para_start = line_start
        if len(self.para_text) < 8:
            self.para_text.append(body.strip())

    def _add(self, level: int, raw: str, at: int, headings: list[tuple[int, str]]) -> None:
        words = heading_text(raw)
        if not words:
            return
        headings.append((at, enter_heading(self.stack, level, words)))
        if level == 1 and not self.first_h1:
            self.first_h1 = words

    def next_window(self) -> None:
        """Call between windows: a paragraph still open began before the next window's offset 0."""
        if self.para_start is not None:
            self.para_start = -1
