"""Markdown: the source text as one page, with heading paths from ATX (``#``) and setext headings.

A single linear pass over the lines: headings inside fenced code blocks or front matter are not headings, and
no input (thousands of ``#`` lines, deep nesting, very long lines) makes it slower than reading the file.
"""

from __future__ import annotations

import re
from pathlib import Path

from localrag.core.errors import BadDocument
from localrag.core.ingest.loaders._common import clean_title, display_name
from localrag.core.ingest.loaders.text import read_text
from localrag.core.ingest.types import LoadedDocument, Page

_MAX_HEADING_CHARS = 200
_LINK = re.compile(r"!?\[([^\]\n]{0,500})\]\([^)\n]{0,2000}\)")
_EMPHASIS = re.compile(r"(\*\*|__|`)")


def load(path: Path) -> LoadedDocument:
    text = read_text(path)
    if not text.strip():
        raise BadDocument(f"{display_name(path)} has no text.", code="empty")
    headings, title = parse_headings(text)
    return LoadedDocument(
        doc_type="markdown",
        title=clean_title(title, path),
        mime="text/markdown",
        pages=[Page(number=1, text=text, headings=headings)],
    )


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
    lines = text.split("\n")
    start_line, title = _front_matter_end(lines)
    offset = sum(len(line) + 1 for line in lines[:start_line])
    stack: list[tuple[int, str]] = []
    headings: list[tuple[int, str]] = []
    first_h1 = ""
    fence: tuple[str, int] | None = None
    para_start: int | None = None
    para_text: list[str] = []

    def add(level: int, raw: str, at: int) -> None:
        nonlocal first_h1
        words = heading_text(raw)
        if not words:
            return
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, words))
        headings.append((at, " > ".join(t for _, t in stack)))
        if level == 1 and not first_h1:
            first_h1 = words

    for line in lines[start_line:]:
        line_start, offset = offset, offset + len(line) + 1
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        if fence is not None:
            if indent <= 3 and body.startswith(fence[0] * fence[1]) and not body.strip().strip(fence[0]):
                fence = None
            continue
        if not body.strip():
            para_start, para_text = None, []
            continue
        if indent <= 3:
            opened = _fence(body)
            if opened:
                fence, para_start, para_text = opened, None, []
                continue
            atx = _atx(body.rstrip())
            if atx:
                add(atx[0], atx[1], line_start)
                para_start, para_text = None, []
                continue
            underline = body.rstrip()
            if para_text and para_start is not None and set(underline) in ({"="}, {"-"}):
                add(1 if underline[0] == "=" else 2, " ".join(para_text), para_start)
                para_start, para_text = None, []
                continue
        elif not para_text:
            continue  # indented code
        if para_start is None:
            para_start = line_start
        if len(para_text) < 8:
            para_text.append(body.strip())
    return headings, title or first_h1
