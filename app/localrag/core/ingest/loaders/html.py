"""HTML: the main text of a page as one page (parsed and handed on in windows), headings h1–h6 as heading
paths.

Built on the standard library's ``html.parser``, which tokenises without recursion, so a page nested 100,000
levels deep costs no more than a flat one. Scripts, styles, navigation, headers, footers and asides are
dropped — so are elements that say they are such by their ARIA role (a documentation generator's
``<div role="navigation">``), and a heading's permalink (``<a class="headerlink">¶</a>``, or a link to a place
on the page titled "Permanent link"); if that leaves
nothing (a page wrapped in an unclosed ``<header>``, say), only scripts and styles are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

from localrag.core.errors import BadDocument
from localrag.core.ingest.loaders._common import clean_title, display_name, enter_heading
from localrag.core.ingest.loaders.streams import WINDOW_CHARS, ReadPosition, iter_text, window_cut
from localrag.core.ingest.types import DocumentStream, Page

_ALWAYS_DROPPED = frozenset({"script", "style", "noscript", "template", "svg", "math", "iframe", "object"})
_CHROME = frozenset({"nav", "header", "footer", "aside", "form", "button", "select", "dialog"})
# Elements that are chrome by their ARIA role, and links that are a heading's permalink by their class.
_CHROME_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
_PERMALINK_CLASSES = frozenset(
    {"headerlink", "anchorjs-link", "header-anchor", "heading-anchor", "permalink"}
)
# A link to a place on its own page whose title says it is a permalink ("Permanent link").
_PERMALINK_WORDS = r"\bperma(?:nent\s*)?link|\blink to this\b"
_PERMALINK_TITLE = re.compile(_PERMALINK_WORDS, re.IGNORECASE)
# The same in a page's markup, read as bytes: such a title, or the class "permalink".
_PERMALINK_MARKUP = re.compile(
    rb"""class\s*=\s*["'][^"']*\bpermalink\b|title\s*=\s*["'][^"']*(?:""" + _PERMALINK_WORDS.encode() + rb")",
    re.IGNORECASE,
)
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
# A page that sends its reader on at once (``<meta http-equiv="refresh" content="0; url=…">``), as a manual's
# generator writes one for every old node name, and that says no more than this: a pointer, not a document.
_REDIRECT = re.compile(
    rb"""<meta(?=[^>]{0,300}?http-equiv\s*=\s*["']?refresh)[^>]{0,300}?content\s*=\s*["']?\s*0*\s*[;,]"""
    rb"""\s*url\s*=\s*["']?([^"'>\s]{1,300})""",
    re.IGNORECASE,
)
_REDIRECT_TEXT_CHARS = 300


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
        self.describing = False  # a definition's description opened, nothing of it emitted yet
        self.lists: list[list[int]] = []  # the open lists, innermost last: [numbered, count]
        self.marker = ""  # an item's bullet or number, owed before its first text
        self.dropped_tag: tuple[str, int] | None = (
            None  # an element dropped by its role or class, its nesting
        )

    # -- structure -------------------------------------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and not self.title and not self.dropped_depth:
            self.title_parts = []
            return
        if tag in self.drop:
            self.dropping[tag] = self.dropping.get(tag, 0) + 1
            self.dropped_depth += 1
            return
        if self.dropped_tag is not None:
            if tag == self.dropped_tag[0]:
                self.dropped_tag = (tag, self.dropped_tag[1] + 1)
        elif "nav" in self.drop and _chrome_by_attributes(tag, attrs):
            self.dropped_tag = (tag, 1)
            self.dropped_depth += 1
            return
        self.describing = tag == "dd" or (self.describing and tag in _PARAGRAPH)
        self._break(tag)
        if tag in ("ul", "ol"):
            self.lists.append([tag == "ol", _start(attrs) - 1 if tag == "ol" else 0])
        elif tag == "li":
            self.marker = self._item_marker()
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
        if self.dropped_tag is not None and tag == self.dropped_tag[0]:
            nesting = self.dropped_tag[1] - 1
            self.dropped_tag = (tag, nesting) if nesting else None
            if not nesting:
                self.dropped_depth -= 1
                return
        if tag in ("ul", "ol") and self.lists:
            self.lists.pop()
        elif tag == "li":
            self.marker = ""
        if tag == "pre" and self.pre_depth:
            self.pre_depth -= 1
        elif tag in _HEADINGS and self.heading is not None:
            self._end_heading()
        self._break(tag)

    def _break(self, tag: str) -> None:
        # A description's first paragraph stays on the line after its term: "AUTO_SAVE (-S)" then
        # "Save the open files every minute." are one entry.
        if tag in _PARAGRAPH and not self.describing:
            self.pending = "\n\n"
        elif (tag in _LINE or tag in _PARAGRAPH) and self.pending != "\n\n":
            self.pending = "\n"
        elif tag in _CELL and not self.pending:
            self.pending = "\t"

    def _item_marker(self) -> str:
        """What an item shows before its text: "• " in a bulleted list, its number in a numbered one,
        indented by its list's depth."""
        if not self.lists:
            return "• "
        numbered = self.lists[-1]
        numbered[1] += 1
        indent = "  " * (len(self.lists) - 1)
        return f"{indent}{numbered[1]}. " if numbered[0] else f"{indent}• "

    def _end_heading(self) -> None:
        assert self.heading is not None
        level, start, words = self.heading
        self.heading = None
        text = " ".join(" ".join(words).replace(">", "›").split())[:_MAX_HEADING_CHARS]
        if not text or start is None:
            return
        self.headings.append((start, enter_heading(self.stack, level, text)))
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
        self.describing = False
        if self.marker and not self.pre_depth and self.heading is None:
            text, self.marker = self.marker + text, ""
        if self.heading is not None:
            level, start, words = self.heading
            self.heading = (level, self.length if start is None else start, words)
            words.append(text)
        self.out.append(text)
        self.length += len(text)

    def text(self) -> str:
        return "".join(self.out)


_SITE_SUFFIX = re.compile(r"\s+(?:[—–|·-]|::?)\s+\S")


def _start(attrs: list[tuple[str, str | None]]) -> int:
    """The number a numbered list's first item shows (its ``start``, else 1)."""
    value = dict(attrs).get("start") or ""
    return int(value) if value.strip().isdigit() and len(value.strip()) < 6 else 1


def page_title(title: str, first_h1: str) -> str:
    """The page's title: its ``<title>``, without the site's name after it when it starts with the page's
    first h1 ("Sorting HOW TO — Python 3.11 documentation" → "Sorting HOW TO"); the h1 when it has none."""
    starts = bool(title and first_h1) and title.lower().startswith(first_h1.lower())
    if starts and _SITE_SUFFIX.match(title[len(first_h1) :]):
        return title[: len(first_h1)]
    return title or first_h1


def _chrome_by_attributes(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
    """Whether an element is chrome by its ARIA role, or a heading's permalink by its class or title."""
    values = dict(attrs)
    if (values.get("role") or "").strip().lower() in _CHROME_ROLES:
        return True
    if _PERMALINK_CLASSES & set((values.get("class") or "").lower().split()):
        return True
    anchor = tag == "a" and (values.get("href") or "").startswith("#")
    return anchor and _PERMALINK_TITLE.search(values.get("title") or "") is not None


def holds_permalink(markup: bytes) -> bool:
    """Whether a page's markup holds a permalink known by its title or the class "permalink" (what HTML text
    version 4 reads differently)."""
    return _PERMALINK_MARKUP.search(markup) is not None


def open_stream(path: Path) -> DocumentStream:
    """The page's main text as page 1, in windows of bounded size: the markup is decoded and parsed piece by
    piece (``html.parser`` is incremental). The title is final once the pages are read."""
    position = ReadPosition()
    stream = DocumentStream("html", clean_title("", path), "text/html", 1, iter(()))
    stream.pages, stream.read_share = _pages(path, stream, position), position.share
    return stream


def _pages(path: Path, stream: DocumentStream, position: ReadPosition) -> Iterator[Page]:
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as exc:
        raise BadDocument(
            f"{display_name(path)} cannot be read: {exc.strerror or exc}.", code="unreadable"
        ) from exc
    match = _META_CHARSET.search(head)
    declared = match.group(1).decode("ascii") if match else None
    redirect = _REDIRECT.search(head)
    seen_text = False
    for drop in (_ALWAYS_DROPPED | _CHROME, _ALWAYS_DROPPED):  # nothing left without the chrome: keep it
        pages = _parse_windows(path, declared, drop, stream, position)
        if redirect is not None:
            pages = _unless_redirect(pages, path, redirect.group(1).decode("utf-8", "replace"))
        for page in pages:
            seen_text = seen_text or not page.text.isspace()
            yield page
        if seen_text:
            return
    raise BadDocument(f"{display_name(path)} has no visible text.", code="empty")


def _unless_redirect(pages: Iterator[Page], path: Path, target: str) -> Iterator[Page]:
    """``pages``, unless all they say is short: a page that sends its reader on to ``target`` at once."""
    held: list[Page] = []
    for page in pages:
        held.append(page)
        if sum(len(p.text.strip()) for p in held) > _REDIRECT_TEXT_CHARS:
            yield from held
            yield from pages
            return
    raise BadDocument(
        f"{display_name(path)} only sends its reader on to {target}; index that page instead.",
        code="redirect",
    )


def _parse_windows(
    path: Path, declared: str | None, drop: frozenset[str], stream: DocumentStream, position: ReadPosition
) -> Iterator[Page]:
    """Windows of the visible text, each cut at whitespace once the parser has collected ``WINDOW_CHARS``."""
    parser = _MainText(drop)
    taken = 0  # characters of the text handed on in earlier windows
    carried = ""  # the heading path in force at the start of the next window

    def window(final: bool) -> Page | None:
        nonlocal taken, carried
        text = "".join(parser.out)
        if not final and len(text) <= WINDOW_CHARS:
            parser.out = [text]
            return None
        cut = len(text) if final else window_cut(text, WINDOW_CHARS)
        piece, parser.out = text[:cut], [text[cut:]]
        headings = [(max(0, at - taken), h) for at, h in parser.headings if at < taken + cut]
        parser.headings = [(at, h) for at, h in parser.headings if at >= taken + cut]
        if carried and not (headings and headings[0][0] == 0):
            headings.insert(0, (0, carried))
        if headings:
            carried = headings[-1][1]
        page = Page(number=1, text=piece, headings=headings, offset=taken)
        taken += cut
        stream.title = clean_title(page_title(parser.title, parser.first_h1), path)
        return page

    for piece in iter_text(path, declared=declared, position=position):
        parser.feed(piece)
        while (page := window(final=False)) is not None:
            yield page
    parser.close()
    if parser.heading is not None:
        parser._end_heading()
    while (page := window(final=False)) is not None:
        yield page
    last = window(final=True)
    if last is not None and last.text:
        yield last
