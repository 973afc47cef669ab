"""A document's title as printed on its first page: for PDFs whose metadata names none (most LaTeX and Texinfo
output) or only the file they were made from ("report.docx").

The title is the run of lines set in the page's largest type near its top, when that type is clearly larger
than the page's text: a paper's, a manual's or a report's cover all print it so. A page whose largest type is
not much larger than the rest (a letter, a page that starts with the text) has no title to find.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from localrag.core.text import glyphs
from localrag.core.text.reading import Line

# The title starts among the page's first lines with text.
TOP_LINES = 10
# Its type is at least this much larger than the page's text (the median size, weighted by characters).
LARGER = 1.3
# A line in the title's type: within this share of the largest size.
SAME_SIZE = 0.9
# A page with fewer lines is a cover: its text is compared with its smallest type, not its usual one.
COVER_LINES = 8
# Lines of one title are at most this many times their size apart (top to top).
LINE_PITCH = 1.8
# At most this many lines and characters.
MAX_LINES = 4
MAX_CHARS = 200

# An e-mail or web address: a logo's word inside one ("bugs-widgetlib@example.org", under the authors'
# names) is no title holding it.
_ADDRESS = re.compile(r"\S+@\S+|\b(?:https?://|www\.)\S+", re.IGNORECASE)
_FILE_NAME = re.compile(r"^\S+\.(?:docx?|odt|rtf|pdf|tex|dvi|ps|md|html?|txt|xlsx?|pptx?|indd|pages)$", re.I)
_WORD = re.compile(r"[^\W\d_]{2,}")


def looks_like_file_name(title: str) -> bool:
    """Whether a metadata title only names a file ("report.docx", "main.tex")."""
    return bool(_FILE_NAME.match(title.strip()))


def first_page_title(text: str, lines: Sequence[Line], *, logos: bool = True, addresses: bool = False) -> str:
    """The title printed on a first page (``text`` and its ``lines`` with their font sizes), or "" when its
    type does not stand out. ``logos=False``: as before a logo was told from the title; ``addresses=True``:
    as before a logo's word inside an address was not taken for a title holding it (what a library indexed
    then holds)."""
    sized = [line for line in lines if line.size > 0 and text[line.start : line.end].strip()]
    if not sized:
        return ""
    top = sized[:TOP_LINES]
    largest = max(line.size for line in top)
    body = _body_size(text, sized)
    if largest < LARGER * body:
        return ""
    title = _run(text, top, largest)
    if logos and len(title.split()) == 1:
        # A logo: one word in the page's largest type that a title in large type holds ("raphix", its first
        # letter drawn, under "Graphix: a Language for Diagrams"). The title is that line's run.
        word = title.lower()
        holder = next(
            (
                ln
                for ln in top
                if LARGER * body <= ln.size < SAME_SIZE * largest
                and word in (_line(text, ln) if addresses else _ADDRESS.sub(" ", _line(text, ln))).lower()
            ),
            None,
        )
        if holder is not None:
            title = _run(text, top, holder.size)
    if len(title) > MAX_CHARS or len(_WORD.findall(title)) < 1:
        return ""
    return title


def _run(text: str, top: Sequence[Line], size: float) -> str:
    """The first run of lines of ``top`` set in ``size`` type (or within ``SAME_SIZE`` of it), read as one."""
    first = next(i for i, line in enumerate(top) if SAME_SIZE * size <= line.size <= size / SAME_SIZE)
    picked: list[Line] = []
    for line in top[first : first + MAX_LINES]:
        if not SAME_SIZE * size <= line.size <= size / SAME_SIZE or (picked and _apart(picked[-1], line)):
            break
        picked.append(line)
    return glyphs.letters(" ".join(_line(text, line) for line in picked))


def _line(text: str, line: Line) -> str:
    return " ".join(text[line.start : line.end].split())


def _body_size(text: str, sized: Sequence[Line]) -> float:
    """The size of the page's text: the median over its characters; a cover's smallest type."""
    if len(sized) < COVER_LINES:
        return min(line.size for line in sized)
    weights = sorted((line.size, len(text[line.start : line.end].strip())) for line in sized)
    half, seen = sum(w for _, w in weights) / 2, 0
    for size, weight in weights:
        seen += weight
        if seen >= half:
            return size
    return weights[-1][0]


def _apart(above: Line, below: Line) -> bool:
    """Whether two lines are too far apart to be lines of one title (unknown places are not)."""
    if above.top is None or below.top is None:
        return False
    return above.top - below.top > LINE_PITCH * max(above.size, below.size)
