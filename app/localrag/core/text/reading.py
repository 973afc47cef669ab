"""A page's text as a person reads it, with every character where the PDF has it.

PDF text comes one printed line at a time: pdfium ends each line with CR LF, puts U+FFFE where it saw a word
hyphenated at a line's end, and leaves footnote markers glued to the words they follow ("implemented.39").
``reading_text`` turns a page into text a sentence splitter reads right — the lines of a paragraph joined by a
space, hyphenated words made whole, headings, list items and paragraphs kept apart by a blank line, footnote
markers, running heads and page numbers blanked — **without changing its length**: character i of the result
stands for character i of the extracted text (a word made whole moves left by the one to three characters its
hyphen and line break took), so a chunk's offsets are also pdfium's character indices on the page.

What is known of each line (its font size, its place on the page) comes with it when the PDF tells
(``Line``); without it (OCR, the fallback reader) the same rules use character counts.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass

from localrag.core.text.cells import FIGURES_ROW

# A line this much narrower than the page's usual line ends where it ends (unless the next goes on in lower
# case).
SHORT_LINE = 0.85
# Font sizes this far apart (as a share of the larger) belong to different blocks: a heading, a footnote.
SIZE_STEP = 0.12
# A line this much further below the one before than the page's usual line pitch starts a new block.
PARAGRAPH_GAP = 1.35
# A superscript is at most this share of the size of the text it follows.
SUPERSCRIPT = 0.85
# Lines at the top and bottom of a page looked at as possible running heads and footers.
HEAD_LINES = 2
FOOT_LINES = 3

_SOFT_HYPHEN = "\ufffe"  # pdfium: a word hyphenated at the end of a line
_JUNK = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\uffff]")
_BREAK = re.compile(r"\r\n|\r|\n|\ufffe")
_LIST_ITEM = re.compile(r"(?:[-*•◦▪–]|\(?\d{1,2}[.)]|\(?[a-z][.)]|\(?[ivx]{1,4}[.)])\s")
_NUMBERED_HEADING = re.compile(r"(?:\d{1,3}|[A-Z])(?:\.\d{1,3})*\.?\s+\S")
_SECTION_NUMBER = re.compile(r"(?:\d{1,3}|[A-Z])(?:\.\d{1,3})*\.?(?:\s+\S.*)?$")
_PAGE_NUMBER = re.compile(r"(?:page\s+)?(?:\d{1,4}|[ivxlc]{1,7})(?:\s*(?:/|of)\s*\d{1,4})?", re.IGNORECASE)
_MARKER_RUN = re.compile("[0-9*†‡§¶]+")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_INK = re.compile(r"\S")
# Characters of a line whose font size is read: its size is their median.
SIZE_SAMPLES = 7
# A footnote number written after a sentence's end, when font sizes are unknown: "implemented.39 Other".
_MARKER_AFTER_END = re.compile(r"(?<=[a-z]{2}[.,;:])\d{1,2}(?=\s+[A-Z])")
# Words a sentence cannot end with: a short line that ends with one goes on in the next.
_DANGLING = frozenset(
    """a an the of to in on at by for with from into than as is are was were be and or but nor that which
    whose if when where while because its their this these those such each every any can may must shall
    should will would has have had per via""".split()
)


@dataclass
class Line:
    """One printed line: ``text[start:end]``, then its line break up to ``stop``.

    ``size`` is its font size (0 when unknown); ``left``, ``right`` and ``top`` its place on the page in
    points (``None`` when unknown).
    """

    start: int
    end: int
    stop: int
    size: float = 0.0
    left: float | None = None
    right: float | None = None
    top: float | None = None


def utf16_index(text: str) -> list[int]:
    """For each character of ``text``, its index in pdfium's count (which gives characters outside the Basic
    Multilingual Plane two)."""
    if not _ASTRAL.search(text):
        return list(range(len(text)))
    index, at = [], 0
    for ch in text:
        index.append(at)
        at += 2 if ord(ch) > 0xFFFF else 1
    return index


def marker_positions(text: str) -> list[int]:
    """Where the footnote rule reads font sizes: each run of marker characters (digits, asterisks, daggers)
    with the character before it and the first one after it that is not a space."""
    wanted: set[int] = set()
    for m in _MARKER_RUN.finditer(text):
        wanted.update(range(max(0, m.start() - 1), m.end()))
        after = _INK.search(text, m.end())
        if after is not None:
            wanted.add(after.start())
    return sorted(wanted)


def samples(text: str, line: Line) -> list[int]:
    """Up to ``SIZE_SAMPLES`` characters of ``line`` spread along it from its first to its last that is not a
    space (its size is theirs, its place from the first to the last)."""
    piece = text[line.start : line.end]
    first = line.start + len(piece) - len(piece.lstrip())
    last = line.start + len(piece.rstrip()) - 1
    if last < first:
        return []
    step = max(1, (last - first) // max(1, SIZE_SAMPLES - 1))
    picks = [*list(range(first, last + 1, step))[: SIZE_SAMPLES - 1], last]
    return sorted({k for k in picks if not text[k].isspace()})


def plain(text: str) -> str:
    """``text`` with control characters and non-characters as spaces (same length)."""
    return _JUNK.sub(" ", text)


def lines_of(text: str) -> list[Line]:
    """The printed lines of ``text``; a U+FFFE (a hyphenated line end) ends a line as a line break does."""
    lines: list[Line] = []
    start = 0
    for m in _BREAK.finditer(text):
        lines.append(Line(start, m.start(), m.end()))
        start = m.end()
    lines.append(Line(start, len(text), len(text)))
    return lines


def shape(line: str) -> str:
    """What a running head keeps from page to page: its words, with any number standing for every number."""
    return " ".join(re.sub(r"\d+", "#", line.lower()).split())


def edge_lines(text: str, lines: Sequence[Line]) -> list[int]:
    """The indices of the first ``HEAD_LINES`` and last ``FOOT_LINES`` lines that hold text."""
    full = [i for i, line in enumerate(lines) if text[line.start : line.end].strip()]
    return sorted(set(full[:HEAD_LINES] + full[-FOOT_LINES:]))


def running_lines(
    text: str, lines: Sequence[Line], neighbours: Iterable[tuple[str, Sequence[Line]]]
) -> set[int]:
    """The lines of a page that are running heads, footers or page numbers: from its top or bottom edge
    inwards, each a bare page number or the same words (numbers aside) as a line at the top or bottom of a
    page near it — never a sentence or a row of figures, which pages may repeat as body text."""
    near: set[str] = set()
    for other_text, other_lines in neighbours:
        near.update(shape(other_text[o.start : o.end]) for o in _edges(other_text, other_lines))

    def running(i: int) -> bool:
        line = text[lines[i].start : lines[i].end].strip()
        if _PAGE_NUMBER.fullmatch(line):
            return True
        return (
            bool(re.search(r"[^\W\d_]", line))
            and shape(line) in near
            and not _is_sentence(line)
            and not FIGURES_ROW.search(line)
        )

    full = [i for i, line in enumerate(lines) if text[line.start : line.end].strip()]
    out: set[int] = set()
    for edge in (full[:HEAD_LINES], full[::-1][:FOOT_LINES]):
        for i in edge:  # from the edge inwards, while each line is a running one
            if not running(i):
                break
            out.add(i)
    if len(out) == len(full):
        return set()  # every line repeats: the page is all body (a form, a list of pages alike)
    return out


def _is_sentence(line: str) -> bool:
    """A line of prose (eight words or more and a full stop): body text, even when pages repeat it."""
    return len(line.split()) >= 8 and line.rstrip("\"'”’)").endswith((".", "!", "?"))


def _edges(text: str, lines: Sequence[Line]) -> list[Line]:
    return [lines[i] for i in edge_lines(text, lines)]


def reading_text(
    text: str,
    lines: Sequence[Line] | None = None,
    *,
    sizes: Sequence[float] | None = None,
    drop: Container[int] = (),
    words: Container[str] = (),
    prose_semicolons: bool = True,
) -> str:
    """``text`` as a person reads it, the same length (see the module's docstring).

    Args:
        lines: ``lines_of(text)``, with what is known of each line filled in.
        sizes: the font size of each character of ``text``, when known (finds superscript footnote markers).
        drop: indices of ``lines`` to blank (running heads, footers, page numbers).
        words: words seen in the document (lower case): a word hyphenated at a line's end is made whole
            when the whole word is among them, kept hyphenated when the hyphenated one is.
        prose_semicolons: a line ending with a semicolon that is a clause of prose is read as prose, not code
            (``prose_clause``; False: as the PDF text before version 6 read it).
    """
    if lines is None:
        lines = lines_of(text)
    out = list(plain(text))
    for i in range(len(lines)):
        if i in drop:
            line = lines[i]
            out[line.start : line.end] = " " * (line.end - line.start)
    _blank_markers(out, text, lines, sizes)
    ref = _Reference(text, lines, drop, prose_semicolons)
    for i in range(len(lines) - 1):
        a, b = lines[i], lines[i + 1]
        soft = text[a.end : a.stop] == _SOFT_HYPHEN
        hyphen = soft or _hyphen_at_end(text, a, b)
        if hyphen and i not in drop and i + 1 not in drop and _mend_word(out, text, a, b, words):
            continue
        if soft:  # a hyphen with nothing to join on this page (its end): kept for the next page's join
            out[a.end] = "-"
            continue
        hard = i in drop or i + 1 in drop or ref.hard_break(a, b)
        _set_break(out, a, hard)
    return "".join(out)


class _Reference:
    """What a page's usual line looks like: its width (or length in characters), left edge and font size."""

    def __init__(
        self, text: str, lines: Sequence[Line], drop: Container[int], prose_semicolons: bool
    ) -> None:
        self.text = text
        self.prose_semicolons = prose_semicolons
        body = [
            line
            for i, line in enumerate(lines)
            if i not in drop and len(text[line.start : line.end].strip()) >= 20
        ]
        geometry = [ln for ln in body if ln.left is not None and ln.right is not None]
        self.geometry = bool(body) and len(geometry) == len(body)
        self.width = _full_width([(ln.right or 0) - (ln.left or 0) for ln in geometry])
        self.chars = _full_width([len(text[ln.start : ln.end].strip()) for ln in body])
        steps = [
            a.top - b.top
            for a, b in itertools.pairwise(lines)
            if a.top is not None
            and b.top is not None
            and a.size
            and a.size == b.size
            and 0.8 * a.size < a.top - b.top < 3 * a.size
        ]
        self.pitch = statistics.median(steps) if steps else 0.0  # the usual distance from line to line

    def short(self, line: Line, stripped: str) -> bool:
        if self.geometry and line.left is not None and line.right is not None and self.width:
            return line.right - line.left < SHORT_LINE * self.width
        return bool(self.chars) and len(stripped) < SHORT_LINE * self.chars

    def _code(self, line: str, after_short: bool = False) -> bool:
        """Whether a line is code; a clause of prose ending with a semicolon is not, unless it follows a short
        line (a heading's: "Filters", then "the program offers three of them;")."""
        return _is_code(line) or (line.endswith(";") and (after_short or not self.prose_semicolons))

    def hard_break(self, a: Line, b: Line) -> bool:
        """Whether the break after line ``a`` ends a block (a paragraph, heading, list item, row) rather than
        wrap a sentence onto line ``b``."""
        first = self.text[a.start : a.end].strip()
        second = self.text[b.start : b.end].strip()
        if not first or not second:
            return True
        if _same_row(a, b):  # pdfium breaks a line where a superscript or a font change moves the baseline
            return False
        if a.size and b.size and abs(a.size - b.size) > SIZE_STEP * max(a.size, b.size):
            return True
        if _LIST_ITEM.match(second) or self._code(first) or self._code(second, self.short(a, first)):
            return True  # a list item, a line of code
        if FIGURES_ROW.search(first) or FIGURES_ROW.search(second):
            return True  # a row of figures is a line of its own
        gap = a.top - b.top if a.top is not None and b.top is not None else 0.0
        if self.pitch and gap > PARAGRAPH_GAP * self.pitch and not second[:1].islower():
            return True  # more space than between the lines of a paragraph: a new paragraph or table row
        ends = first[-1] in ".!?:;"
        last = first.rsplit(None, 1)[-1].lower()
        if (
            _NUMBERED_HEADING.match(first)
            and not ends
            and len(first.split()) <= 10
            and last not in _DANGLING
            and not second[:1].islower()
        ):
            return True
        if ends and _SECTION_NUMBER.match(second) and self.short(b, second) and second[-1] not in ".,;:":
            return True  # a sentence ends and a numbered heading ("3.2", "4.1 Usage") follows
        if re.search(r"\d$", first) and second[:1].isupper() and last not in _DANGLING:
            return True  # a row that ends in a number (a table of contents, a one-column table)
        if not self.short(a, first):
            return False
        if ends:
            return True
        goes_on = second[:1].islower() or last in _DANGLING or first.endswith((",", "-", "("))
        return not goes_on


def _same_row(a: Line, b: Line) -> bool:
    if a.top is None or b.top is None or a.right is None or b.left is None:
        return False
    return abs(a.top - b.top) < 0.5 * max(a.size, b.size, 1.0) and b.left >= a.right - 1.0


def _full_width(values: list[float]) -> float:
    """What a full line measures: the 90th percentile (a page's full lines outnumber its short ones in prose;
    on a page of table rows, the longest rows)."""
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, (9 * len(values)) // 10)]


def _is_code(line: str) -> bool:
    if re.match(r"(?:R>|>>>|\$|#|>)\s", line) or line.endswith(("{", "}")):
        return True
    return line.endswith(";") and not prose_clause(line)


# What code has and a clause of prose has not: an operator, a brace or bracket, a call ("free(p);").
CODE_SIGNS = re.compile(r"[={}\[\]<>|]|\w\(|\s[+*/%]\s|\$\w|;;")


def prose_clause(line: str) -> bool:
    """Whether a line ending with a semicolon is a clause of prose (a list's item, "… is also accepted);")
    rather than a statement: three words or more, starting with a letter, and nothing of code in it."""
    return len(line.split()) >= 3 and line[:1].isalpha() and not CODE_SIGNS.search(line)


def _set_break(out: list[str], line: Line, hard: bool) -> None:
    """The line break after ``line``: spaces (the sentence wraps on) or a blank line (two line breaks where
    the break took two characters, one where it took one)."""
    n = line.stop - line.end
    if n <= 0:
        return
    if hard:
        out[line.end : line.stop] = "\n" * n
    else:
        out[line.end : line.stop] = " " * n


def _hyphen_at_end(text: str, a: Line, b: Line) -> bool:
    """Whether line ``a`` ends with a word (or number) and a hyphen, and line ``b`` starts with one."""
    end = _inked_end(text, a)
    return (
        end - a.start >= 2
        and text[end - 1] == "-"
        and text[end - 2].isalnum()
        and a.stop > a.end
        and text[b.start : b.start + 1].isalnum()
    )


def _inked_end(text: str, line: Line) -> int:
    return line.start + len(text[line.start : line.end].rstrip())


def _mend_word(out: list[str], text: str, a: Line, b: Line, words: Container[str]) -> bool:
    """Join the word hyphenated across the end of line ``a`` (without the hyphen where the joined word is a
    word, with it otherwise), shifting the rest of it left up to the next space and leaving the freed
    characters as spaces there. False when there is no word to join."""
    soft = text[a.end : a.stop] == _SOFT_HYPHEN
    head_end = a.end if soft else _inked_end(text, a) - 1  # the hyphen
    head = re.search(r"(?:[\w'’]+-)*[\w'’]+$", text[a.start : head_end])
    token = re.match(r"\S+", text[b.start : b.end])
    if head is None or token is None:
        return False
    second = re.match(r"[\w'’]*", token.group(0)).group(0)  # type: ignore[union-attr]
    if not second:
        return False
    first = head.group(0)
    keep = keep_hyphen(first, second, words)
    joined = first + ("-" if keep else "") + token.group(0)
    at = head_end - len(first)
    stop = b.start + len(token.group(0))
    out[at:stop] = joined + " " * (stop - at - len(joined))
    return True


def keep_hyphen(first: str, second: str, words: Container[str] = ()) -> bool:
    """Whether ``first``-``second``, split at a line's end, is a hyphenated word ("built-in", "x86-64",
    "Language-specific") rather than one word broken in two ("struc-tures")."""
    if "-" in first:  # the last part of a compound: "away-from-zero"
        return True
    whole, hyphenated = (first + second).lower(), f"{first}-{second}".lower()
    if hyphenated in words and whole not in words:
        return True
    if whole in words:
        return False
    if any(ch.isdigit() for ch in first + second) or second[:1].isupper():
        return True
    # Hyphenation leaves at least three letters on the next line (two on the first); fewer is a compound.
    return len(second) < 3 or len(first) < 2


def word_set(text: str) -> set[str]:
    """The words of ``text`` in lower case, hyphenated ones both whole and as their parts."""
    found = set()
    for w in re.findall(r"[^\W\d_][\w'’]*(?:-[\w'’]+)*", text):
        w = w.lower()
        found.add(w)
        if "-" in w:
            found.update(w.split("-"))
    return found


def _blank_markers(out: list[str], text: str, lines: Sequence[Line], sizes: Sequence[float] | None) -> None:
    """Blank footnote markers: superscript digits or symbols after a word or a sentence's end, or opening a
    footnote's line (by font size when known, else only a number written right after a sentence's end)."""
    if sizes is None or len(sizes) != len(text):
        for m in _MARKER_AFTER_END.finditer(text):
            out[m.start() : m.end()] = " " * (m.end() - m.start())
        return
    for m in _MARKER_RUN.finditer(text):
        i, j = m.start(), m.end()
        if j - i <= 3 and sizes[i] and _is_marker(text, sizes, i, j):
            out[i:j] = " " * (j - i)


def _is_marker(text: str, sizes: Sequence[float], i: int, j: int) -> bool:
    size = max(sizes[i:j])
    before = text[i - 1] if i else "\n"
    after = text[j] if j < len(text) else " "
    if before in "\r\n":  # opening a footnote: "1 In principle, ..." in smaller type than the body around it
        k = j
        while k < len(text) and text[k].isspace():
            k += 1
        return k < len(text) and text[k].isalpha() and 0 < size < SUPERSCRIPT * (sizes[k] or 0)
    prior = sizes[i - 1] if i else 0.0
    if not (0 < size < SUPERSCRIPT * prior):
        return False
    if not (after.isspace() or after in ".,;:)" or after == "\ufffe"):
        return False
    if before in ".,;:)\"'”’":
        return True
    # After a word of three letters or more (not after a variable such as "R" or "x").
    word = re.search(r"[^\W\d_]+$", text[max(0, i - 20) : i])
    return word is not None and len(word.group(0)) >= 3


def line_size(sizes: Sequence[float], line: Line, text: str) -> float:
    """The median font size of a line's sampled characters (``samples``; 0 when unknown)."""
    values = [sizes[k] for k in samples(text, line) if sizes[k] > 0]
    return statistics.median(values) if values else 0.0
