"""Sentences of a passage with their offsets, and the words, numbers and identifiers they carry.

Shared by the evidence picker (``evidence``) and the check of generated sentences (``support``). Passages come
from PDFs as often as from Markdown: lines are wrapped in the middle of sentences, so a line break alone does
not end a sentence — but a short line (a heading, a line of code, a table row) stands on its own, and so does
a list item.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from localrag.core.text.glyphs import letters
from localrag.core.text.reading import keep_hyphen

# The end of a sentence: . ! ? (and closing quotes or brackets) followed by white space and something that can
# start a sentence; a paragraph break; a line break before a list item.
_END = re.compile(
    r"(?<=[.!?])[\"'”’)\]]*(?=\s+(?:[\"'“‘(\[]?[A-Z0-9`$.<>/\\#*_-]|$)|[ \t]*\n)|\n\s*\n"
    r"|\n(?=\s*(?:[-*•◦▪]|\d{1,2}[.)]|#{1,6})\s)"
)
_LINE = re.compile(r"[^\n]*\n?")
# A list's item: a bullet, a number or a letter, then its text.
LIST_ITEM = re.compile(r"^\s*(?:[-•*·▪◦–]|\(?\d{1,2}[.)]|\(?[a-z][.)])\s+\S")
# A line this much shorter than the passage's longest line is taken as ending where it ends.
SHORT_LINE = 0.62
MIN_SPAN_CHARS = 3

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
    during each either else etc few for from further get gets got had hadn't has hasn't have haven't having he
    her here hers herself him himself his how however i i'd i'm i've if in into is isn't it it's its itself
    just let's like may me might more most much must mustn't my myself need no nor not now of off on once one
    only or other ought our ours ourselves out over own please same shall shan't she should shouldn't so some
    such than that that's the their theirs them themselves then there there's these they they're this those
    through thus to too under until up upon us use used using very via want was wasn't we we're were weren't
    what what's when where which while who whom whose why will with within without won't would wouldn't yes
    you your yours yourself yourselves tell know way ways thing things something anything there kind sort e.g
    i.e""".split()
)
# Words of a question that say what kind of answer it wants rather than what it is about.
QUESTION_WORDS = frozenset(
    """what which how why when where who whom whose does do did can could should would is are was were
    will""".split()
)

_WORDS = re.compile(r"[^\W_][\w'’.$-]*[^\W_]|[^\W_]", re.UNICODE)
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+)%?")
# An identifier: snake_case, ALLCAPS (3+), dotted or $ names, calls, options, paths, CamelCase.
_IDENTIFIER = re.compile(
    r"(?<![\w$.])(?:"
    r"--?[A-Za-z][\w-]*"  # --option, -v
    r"|/[\w.+-]+(?:/[\w.+-]*)+"  # /usr/local/bin
    r"|\.?[A-Za-z_][\w]*(?:[.$][A-Za-z_]\w*)+(?:\(\))?"  # all.equal, .Machine$double.eps, os.path
    r"|[A-Za-z]\w*\(\)"  # library()
    r"|[A-Za-z]*_[\w]*"  # R_LIBS_USER, n_ctx
    r"|[A-Z][A-Z0-9]{2,}"  # CRAN, PATH
    r"|[a-z]+[A-Z]\w*"  # camelCase
    r")(?![\w$])"
)


@dataclass(frozen=True)
class Span:
    """A sentence (or line, list item) of ``text[start:end]``."""

    start: int
    end: int
    text: str

    @property
    def ends_with_question(self) -> bool:
        return self.text.rstrip(" \"'”’)").endswith("?")


def split_spans(text: str) -> list[Span]:
    """The sentences of ``text`` with their offsets in it, trimmed of surrounding white space."""
    lines = [m for m in _LINE.finditer(text) if m.group(0)]
    longest = max((len(m.group(0).rstrip()) for m in lines), default=0)
    cuts = {
        m.end()
        for m in _END.finditer(text)
        if not _abbreviation(text, m.start())
        and not _numbering(text, m.start())
        and not _in_parentheses(text, m.start())
        and not _SPACED_ELLIPSIS.match(text, m.end())
    }
    for i, m in enumerate(lines):
        line = m.group(0).rstrip()
        stripped = line.strip()
        if not stripped or not m.group(0).endswith("\n"):
            continue
        following = lines[i + 1].group(0).strip() if i + 1 < len(lines) else ""
        short = len(line) < SHORT_LINE * longest and not _goes_on(stripped, following)
        if (short and not stripped.endswith(("-", ","))) or stripped.endswith(":") or is_code_line(stripped):
            cuts.add(m.end())
    spans = []
    start = 0
    for cut in [*sorted(cuts), len(text)]:
        if cut <= start:
            continue
        spans.extend(trimmed(text, start, cut))
        start = cut
    return spans


# A line that ends with one of these words goes on in the next, however short it is.
DANGLING = frozenset(
    """a an the of to in on at by for with from into onto than as is are was were be been being and or but
    nor that which whose whom if when where while because although since unless whether its their his her our
    your this these those such each every any some can could may might must shall should will would do does
    has have had very more most less per via""".split()
)


# Verbs that announce the command or value a sentence goes on with ("Finally, run", "… you can type").
_ANNOUNCING = frozenset("run type use using enter execute call invoke try say set".split())


def unfinished(text: str) -> bool:
    """Whether a span stops before its sentence ends: no closing mark, and a last word that needs what
    follows ("… you can return the working tree to its last state with", "Finally, run")."""
    text = text.rstrip()
    if not text or text[-1] in ".!?;:)]}\"'’”":
        return False
    last = text.rsplit(None, 1)[-1].lower()
    return last in DANGLING or last in _ANNOUNCING


def _goes_on(line: str, following: str) -> bool:
    """Whether a short line's sentence goes on in the next line: it ends with a word that cannot end one, or
    it is a line of prose (a capital, six words or more, no code) and the next begins in lower case."""
    last = line.rsplit(None, 1)[-1] if line else ""
    if last in DANGLING:
        return True
    prose = line[:1].isupper() and len(line.split()) >= 6 and not re.search(r"[{}<>;=]", line)
    return prose and following[:1].islower()


_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs cf fig figs no nos dr mr mrs ms st vol pp approx resp sec ch eq".split()
)


_WORD_BEFORE = re.compile(r"[\w.]*$")
_LONGEST_WORD = 40


def _abbreviation(text: str, end: int) -> bool:
    """Whether the full stop before ``end`` closes an initial ("M.") or an abbreviation ("e.g.", "Fig.")."""
    if end == 0 or text[end - 1] != ".":
        return False
    # The word is looked for in the few characters before the stop: searched for in the whole text before it,
    # the pattern was tried from every character of it, for every stop of a passage. A longer word is cut to
    # the window's length, which is no initial or abbreviation either.
    word = _WORD_BEFORE.search(text, max(0, end - 1 - _LONGEST_WORD), end - 1).group(0)  # type: ignore[union-attr]
    return (len(word) == 1 and word.isupper()) or word.lower() in _ABBREVIATIONS


def _in_parentheses(text: str, end: int) -> bool:
    """Whether the stop before ``end`` stands inside parentheses that close a few characters on, on its line:
    "(see Jones, 1990, chap. 2)" is not two sentences."""
    before = text[text.rfind("\n", 0, end) + 1 : end]
    return before.count("(") > before.count(")") and _CLOSES_SOON.match(text, end) is not None


# A full stop followed by another that opens no word (".NET" does): one of the dots of an ellipsis set with
# spaces, as TeX sets it ("the . . . arguments", "x1, . . . , xn"), not the end of a sentence. After its last
# dot a sentence may end ("and so on . . . The next").
_SPACED_ELLIPSIS = re.compile(r"[ \t]+\.(?![\w])")

# What follows a stop inside parentheses that close just after it: "chap. 2)".
_CLOSES_SOON = re.compile(r"[ \t]*[^\s().!?]{1,12}\)")


# A footnote's first line as the PDF reader leaves it: the marker that opens it (one to three characters and
# the space after them) blanked to spaces (``reading._blank_markers``), so the line starts with two to four
# spaces and then its words. A line set further in (a centred caption) is something else.
_FOOTNOTE_OPENS = re.compile(r"\n {2,4}(?=[^\W\d_])")
# Footnotes sit at the foot of a page: a line so opened in the top quarter is taken as something else.
_FOOTNOTES_BELOW = 0.25


def footnotes_start(page: str) -> int:
    """Where a PDF page's footnotes begin (the first line opened by a blanked marker, below the top quarter of
    the page), or the page's length when it has none: the body's sentence that runs onto the next page ends
    before them, and a footnote does not go on at the top of the next page."""
    for m in _FOOTNOTE_OPENS.finditer(page, int(len(page) * _FOOTNOTES_BELOW)):
        if page[: m.start()].strip():
            return m.start()
    return len(page)


def opens_footnote(text: str, start: int) -> bool:
    """Whether the sentence at ``start`` of a PDF page's ``text`` opens a footnote (its line opened by a
    blanked marker, then words)."""
    opening = text[start : start + 1]
    return opening.isalpha() and re.search(r"\n {2,4}$", text[max(0, start - 40) : start]) is not None


def body(page: str) -> str:
    """The page without its footnotes (``footnotes_start``)."""
    return page[: footnotes_start(page)]


def _numbering(text: str, end: int) -> bool:
    """Whether the full stop before ``end`` closes the number that opens its line: a section's ("4.2.1. Files
    kept between runs") or an item's ("3. Run the tests."), which belongs to what follows."""
    start = text.rfind("\n", 0, end) + 1
    return re.fullmatch(r"[ \t]*\d{1,3}(?:\.\d{1,3})*\.", text[start:end]) is not None


def open_end(spans: list[Span], look: int = 4) -> Span | None:
    """The sentence a page leaves unfinished for the next: the last of its last ``look`` spans (footnotes may
    follow it) that does not end as a sentence ends."""
    for s in reversed(spans[-look:]):
        if not s.text.rstrip("\"'”’)]").endswith((".", "!", "?", ":")):
            return s
    return None


def join_across(first: str, second: str) -> str:
    """A sentence begun at the end of one page (``first``) and finished at the top of the next (``second``):
    a word hyphenated across the break made whole where it is one word."""
    head = re.search(r"([\w'’]+(?:-[\w'’]+)*)-$", first)
    tail = re.match(r"[\w'’]+", second)
    if head and tail:
        return first[:-1] + second if not keep_hyphen(head.group(1), tail.group(0)) else first + second
    return f"{first} {second}"


def trimmed(text: str, start: int, end: int) -> list[Span]:
    piece = text[start:end]
    lead = len(piece) - len(piece.lstrip())
    trail = len(piece.rstrip())
    if trail - lead < MIN_SPAN_CHARS or not re.search(r"\w", piece):
        return []
    return [Span(start + lead, start + trail, piece[lead:trail])]


# A console's or shell's prompt before a command.
CODE_PROMPT = re.compile(r"(?:R>|>>>|\$|#|octave:\d*>|>)\s")


def is_code_line(line: str) -> bool:
    return bool(CODE_PROMPT.match(line)) or line.endswith((";", "{", "}"))


def flat(text: str) -> str:
    """``text`` on one line: line breaks and runs of spaces become one space."""
    return " ".join(text.split())


def stem(word: str) -> str:
    """A light stem, the same on both sides of a comparison: plurals, -ing, -ed and a final e meet
    ("compare", "compares", "compared", "comparing" → "compar")."""
    w = word.lower().strip("'’.-")
    if w.endswith(("'s", "’s")):
        w = w[:-2]
    if len(w) <= 3 or not w.isalpha():
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith(("sses", "xes", "ches", "shes", "zes")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    elif w.endswith("ied") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("ing") and len(w) - 3 >= 3:
        w = w[:-3]
    elif w.endswith("ed") and len(w) - 2 >= 3:
        w = w[:-2]
    elif w.endswith("er") and len(w) >= 7:  # installer -> install, browser -> brows(e)
        w = w[:-2]
    if len(w) > 4 and w[-1] == w[-2] and w[-1] not in "lsz":  # running -> runn -> run
        w = w[:-1]
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]
    return w


def words(text: str) -> list[str]:
    """The words of ``text``, a ligature read as its letters ("eﬀect" is "effect")."""
    return list(_WORDS.findall(letters(text)))


def folded(text: str) -> str:
    """``text`` as its lower-case words joined by single spaces, a ligature read as its letters: two texts
    that differ only in case, spacing and punctuation fold the same."""
    return " ".join(re.findall(r"\w+", letters(text).lower()))


def content_terms(text: str) -> list[str]:
    """The stems of ``text``'s words that carry meaning (no stop words), in order, with repeats."""
    out: list[str] = []
    for w in words(text):
        out.extend(_word_terms(w))
    return out


@functools.lru_cache(maxsize=1 << 16)
def _word_terms(w: str) -> tuple[str, ...]:
    """One word's terms (``content_terms``): its stem, and its parts' when it joins several. Cached: the
    candidate spans of a question share most of their words (a run holds the sentences it joins)."""
    low = w.lower().strip("'’.-")
    if not low or low in STOPWORDS or (len(low) == 1 and not low.isdigit()):
        return ()
    out = [stem(low)]
    if re.search(r"[._$-]", low):  # all.equal also matches "equal", R_LIBS_USER "libs"
        out.extend(stem(p) for p in re.split(r"[._$-]+", low) if len(p) > 1 and p not in STOPWORDS)
    camel = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", w)
    if len(camel) > 1:  # LocalRAG also matches "local" and "rag", colClasses "classes"
        out.extend(stem(p.lower()) for p in camel if len(p) > 1 and p.lower() not in STOPWORDS)
    return tuple(out)


def numbers(text: str) -> list[str]:
    """Numbers written in ``text``, normalised (no thousands separators, no trailing zeros after a point)."""
    out = []
    for m in _NUMBER.finditer(text):
        raw = m.group(0).replace(",", "").rstrip("%").lstrip("+")
        if not any(ch.isdigit() for ch in raw):
            continue
        if "." in raw and "e" not in raw.lower():
            raw = raw.rstrip("0").rstrip(".") or "0"
        out.append(raw)
    return out


_UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split()
)
_TEENS_AND_TENS = {"sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30}
_TENS = {"forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
NUMBER_WORDS: dict[str, int] = {
    **{w: i for i, w in enumerate(_UNITS)},
    **_TEENS_AND_TENS,
    **_TENS,
    "hundred": 100,
    "thousand": 1000,
    "million": 1_000_000,
    "billion": 1_000_000_000,
    "once": 1,
    "twice": 2,
    "thrice": 3,
}
_NUMBER_WORD = re.compile(
    r"\b(?:("
    + "|".join(sorted({**_TEENS_AND_TENS, **_TENS}, key=len, reverse=True))
    + r")-("
    + "|".join(_UNITS[1:10])
    + r")|("
    + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
    + r"))\b",
    re.IGNORECASE,
)


def number_words(text: str) -> list[tuple[str, str]]:
    """Numbers written as words in ``text`` ("two", "twenty-four", "twice"), each as (the word, its value in
    digits as ``numbers`` writes it), so that "two" and "2" are the same number."""
    out = []
    for m in _NUMBER_WORD.finditer(text):
        if m.group(1):
            value = NUMBER_WORDS[m.group(1).lower()] + NUMBER_WORDS[m.group(2).lower()]
        else:
            value = NUMBER_WORDS[m.group(3).lower()]
        out.append((m.group(0), str(value)))
    return out


def identifiers(text: str) -> list[str]:
    """Identifiers written in ``text``: names of variables, functions, options, files and commands."""
    found = []
    for m in _IDENTIFIER.finditer(text):
        ident = m.group(0).rstrip(".")
        if ident.lower() in STOPWORDS or len(ident) < 2:
            continue
        found.append(ident)
    return found


def has_identifier(text: str) -> bool:
    return bool(identifiers(text)) or "`" in text
