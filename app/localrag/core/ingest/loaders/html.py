"""HTML: the main text of a page as one page, headings h1–h6 as heading paths.

Built on the standard library's ``html.parser``, which tokenises without recursion, so a page nested 100,000
levels deep costs no more than a flat one. Scripts, styles, navigation, headers, footers and asides are
dropped; if that leaves nothing (a page wrapped in an unclosed ``<header>``, say), only scripts and styles are
dropped.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from localrag.core.errors import BadDocument
from localrag.core.ingest.loaders._common import clean_title, decode_text, display_name
from localrag.core.ingest.types import LoadedDocument, Page

_ALWAYS_DROPPED = frozenset({"script", "style", "noscript", "template", "svg", "math", "iframe", "object"})
_CHROME = frozenset({"nav", "header", "footer", "aside", "form", "button", "select", "dialog"})
_PARAGRAPH = frozenset(
    {
        "p", "div", "section", "article", "main", "table", "ul", "ol", "dl", "blockquote", "pre", "figure",
        "h1", "h2", "h3", "h4", "h5", "h6", "hr", "address", "details", "summary", "fieldset", "body",
    }
)  # fmt: skip
_LINE = frozenset({"br", "li", "tr", "dt", "dd", "figcaption", "caption", "option"})
_CELL = frozenset({"td", "th"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_META_CHARSET = re.compile(
    rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""", re.IGNORECASE
)
_MAX_HEADING_CHARS = 200


class _MainText(HTMLParser):
    """Collects visible text with paragraph breaks, and the offsets where headings start."""

    def __init__(self, drop: frozenset[str]) -> None:
        super().__init__(convert_charrefs=True)
        self.drop = drop
        self.dropping: dict[str, int] = {}
        self.dropped_depth = 0
        self.pre_depth = 0
        self.out: list[str] = []
        self.length = 0
        self.pending = ""  # separator owed before the next visible text
        self.title_parts: list[str] | None = None
        self.title = ""
        self.heading: tuple[int, int | None, list[str]] | None = None  # level, start offset, words
        self.stack: list[tuple[int, str]] = []
        self.headings: list[tuple[int, str]] = []
        self.first_h1 = ""

    # -- structure -------------------------------------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and not self.title and not self.dropped_depth:
            self.title_parts = []
            return
        if tag in self.drop:
            self.dropping[tag] = self.dropping.get(tag, 0) + 1
            self.dropped_depth += 1
            return
        self._break(tag)
        if tag == "pre":
            self.pre_depth += 1
        elif tag in _HEADINGS and self.heading is None:
            self.heading = (_HEADINGS[tag], None, [])

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.drop:
            self._break(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self.title_parts is not None:
            self.title = " ".join("".join(self.title_parts).split())
            self.title_parts = None
            return
        if tag in self.drop:
            if self.dropping.get(tag, 0) > 0:
                self.dropping[tag] -= 1
                self.dropped_depth -= 1
            return
        if tag == "pre" and self.pre_depth:
            self.pre_depth -= 1
        elif tag in _HEADINGS and self.heading is not None:
            self._end_heading()
        self._break(tag)

    def _break(self, tag: str) -> None:
        if tag in _PARAGRAPH:
            self.pending = "\n\n"
        elif tag in _LINE and self.pending != "\n\n":
            self.pending = "\n"
        elif tag in _CELL and not self.pending:
            self.pending = "\t"

    def _end_heading(self) -> None:
        assert self.heading is not None
        level, start, words = self.heading
        self.heading = None
        text = " ".join(" ".join(words).replace(">", "›").split())[:_MAX_HEADING_CHARS]
        if not text or start is None:
            return
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        self.stack.append((level, text))
        self.headings.append((start, " > ".join(t for _, t in self.stack)))
        if level == 1 and not self.first_h1:
            self.first_h1 = text

    # -- text ------------------------------------------------------------------------------------------------

    def handle_data(self, data: str) -> None:
        if self.title_parts is not None:
            self.title_parts.append(data)
            return
        if self.dropped_depth:
            return
        if self.pre_depth:
            self._emit(data)
            return
        words = data.split()
        if not words:
            if data and self.length and not self.pending:
                self.pending = " "
            return
        if data[0].isspace() and self.length and not self.pending:
            self.pending = " "
        self._emit(" ".join(words))
        if data[-1].isspace():
            self.pending = self.pending or " "

    def _emit(self, text: str) -> None:
        if not text:
            return
        if self.length and self.pending:
            self.out.append(self.pending)
            self.length += len(self.pending)
        self.pending = ""
        if self.heading is not None:
            level, start, words = self.heading
            self.heading = (level, self.length if start is None else start, words)
            words.append(text)
        self.out.append(text)
        self.length += len(text)

    def text(self) -> str:
        return "".join(self.out)


def _extract(markup: str, drop: frozenset[str]) -> _MainText:
    parser = _MainText(drop)
    parser.feed(markup)
    parser.close()
    if parser.heading is not None:
        parser._end_heading()
    return parser


def load(path: Path) -> LoadedDocument:
    data = path.read_bytes()
    declared = _META_CHARSET.search(data[:4096])
    markup = decode_text(data, path, declared=declared.group(1).decode("ascii") if declared else None)
    parsed = _extract(markup, _ALWAYS_DROPPED | _CHROME)
    if not parsed.text().strip():
        parsed = _extract(markup, _ALWAYS_DROPPED)
    text = parsed.text()
    if not text.strip():
        raise BadDocument(f"{display_name(path)} has no visible text.", code="empty")
    return LoadedDocument(
        doc_type="html",
        title=clean_title(parsed.title or parsed.first_h1, path),
        mime="text/html",
        pages=[Page(number=1, text=text, headings=parsed.headings)],
    )
