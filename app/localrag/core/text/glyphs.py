"""Ligatures a PDF's text layer lost, and ligatures read as their letters.

TeX often embeds fonts whose ligature glyphs have neither a ToUnicode entry nor a glyph name that says which
letters they stand for. pdfium then gives each such glyph as its code in the font, a control character, and
the reading text turns control characters into spaces: "Coe cients", "di erent", "signi cant". Those codes
are the font encoding's: in T1 (Cork) 0x1B ff, 0x1C fi, 0x1D fl, 0x1E ffi, 0x1F ffl and 0x10/0x11 the
double quotes; in the older OT1 the same five ligatures sit at 0x0B–0x0F. ``restore_lost`` puts the ligature
back where a code stands next to a letter, as one character (U+FB00–U+FB04), so that the text keeps one
character per pdfium character and its offsets stay pdfium's character indices.

A code is taken for a ligature only beside a letter: a control character there is a lost glyph, never a
line break or a tab. The two encodings disagree on a few codes (OT1 puts œ ø Æ Œ Ø at 0x1B–0x1F, T1 single
guillemets and accents at 0x0B–0x0F); the ligatures are far the more frequent in running text, and without
this the word is broken in either case. A double-quote code becomes a quote only where it opens a word (a
letter or digit after it, none before) or closes one (a letter, digit or closing punctuation before it, no
letter or digit after): where OT1 puts its dotless i and j, inside a word, it stays a control character. It
becomes the plain '"', not “ or ”: PostgreSQL's text search parser, in the C locale the store runs in, takes
every character beyond ASCII for a letter, and "“response”" would be one word that no search for "response"
finds.
T1 also has its dashes at 0x15 (en) and 0x16 (em), lost the same way: "65\x1585%", "are\x16as". Those codes
are OT1's macron and ring accents, so they become dashes only on a page whose ligature codes say T1
(0x1B–0x1F), and only beside a letter, a digit or a space.
TeX's math fonts put Greek letters and pieces of delimiters on the same codes; the loader leaves the codes of
a font that ``is_math_font`` names as they are (``keep``).

Whatever matches words (BM25, the embedding model's tokenizer, the words the answer checks compare) reads a
ligature as its letters (``letters``), so that "stratiﬁed" matches "stratified".
"""

from __future__ import annotations

import re
from collections.abc import Container

# The Unicode ligatures and the letters they stand for.
LIGATURES: dict[str, str] = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"}

_FF, _FI, _FL, _FFI, _FFL = LIGATURES
_LOST_LIGATURES = {
    # T1 (Cork)
    "\x1b": _FF,
    "\x1c": _FI,
    "\x1d": _FL,
    "\x1e": _FFI,
    "\x1f": _FFL,
    # OT1
    "\x0b": _FF,
    "\x0c": _FI,
    "\x0d": _FL,
    "\x0e": _FFI,
    "\x0f": _FFL,
}
_LETTER = r"[^\W\d_]"
# 0x0D (a carriage return) only before a letter: pdfium ends its lines with "\r\n".
_LIGATURE = re.compile(
    rf"(?<={_LETTER})[\x0b\x0c\x0e\x0f\x1b-\x1f]|[\x0b-\x0f\x1b-\x1f](?={_LETTER})", re.UNICODE
)
_T1 = re.compile(rf"(?<={_LETTER})[\x1b-\x1f]|[\x1b-\x1f](?={_LETTER})", re.UNICODE)
_DASHES = {"\x15": "\u2013", "\x16": "\u2014"}
_DASH = re.compile(r"(?<=[^\W_]| )[\x15\x16]|[\x15\x16](?=[^\W_]| )", re.UNICODE)
_QUOTES = re.compile(r"(?<![^\W_])\x10(?=[^\W_])|(?<=[^\W_]|[.,;:!?)\]])\x11(?![^\W_])", re.UNICODE)
_CODES = re.compile(rf"[\x0b\x0c\x0e-\x11\x15\x16\x1b-\x1f]|\r(?={_LETTER})")
_LETTERS = str.maketrans(LIGATURES)
_SPELLED = re.compile("ffi|ffl|ff|fi|fl", re.IGNORECASE)
_LIGATURE_OF = {spelled: ligature for ligature, spelled in LIGATURES.items()}
# TeX's math and symbol fonts (Computer Modern's, Latin Modern's, the AMS ones), by the name pdfium gives
# (after any subset prefix "ABCDEF+").
_MATH_FONT = re.compile(
    r"(?:^|\+)(?:cm(?:mi|sy|bsy|ex)\d|msam|msbm|eu[frsx]m|rsfs|wasy|stmary)|math|symbol", re.IGNORECASE
)


def codes(text: str) -> list[int]:
    """The offsets of the codes that ``restore_lost`` puts back (for the loader to look at their fonts)."""
    if not _CODES.search(text):
        return []
    return [i for i, (a, b) in enumerate(zip(text, restore_lost(text), strict=True)) if a != b]


def is_math_font(name: str) -> bool:
    """Whether a font's name says it is a math or symbol font, whose low codes are no ligatures."""
    return bool(_MATH_FONT.search(name))


def restore_lost(text: str, keep: Container[int] = ()) -> str:
    """``text`` with the ligatures (and double quotes, and a T1 page's dashes) whose glyphs came out as font
    codes put back, one character for each code: "strati\\x1ced" → "stratiﬁed", "\\x10response\\x11" →
    '"response"', "65\\x1585%" → "65–85%". The codes at the offsets in ``keep`` stay as they are."""
    if not _CODES.search(text):
        return text

    def ligature(m: re.Match[str]) -> str:
        return m.group() if m.start() in keep else _LOST_LIGATURES[m.group()]

    def quote(m: re.Match[str]) -> str:
        return m.group() if m.start() in keep else '"'

    def dash(m: re.Match[str]) -> str:
        return m.group() if m.start() in keep else _DASHES[m.group()]

    out = _QUOTES.sub(quote, _LIGATURE.sub(ligature, text))
    return _DASH.sub(dash, out) if _T1.search(text) else out


def is_dash_code(char: str) -> bool:
    """Whether ``char`` is one of T1's dash codes (which ``restore_lost`` turns into dashes on a T1 page)."""
    return char in _DASHES


def pattern(word: str) -> str:
    """A regular expression for ``word`` as written, or with its letters ff, fi, fl, ffi, ffl as one ligature
    ("Coefficients" also matches "Coeﬃcients"; case as the caller's flags say)."""
    parts, pos = [], 0
    for m in _SPELLED.finditer(word):
        ligature = _LIGATURE_OF[m.group().lower()]
        parts += [re.escape(word[pos : m.start()]), f"(?:{re.escape(m.group())}|{ligature})"]
        pos = m.end()
    return "".join([*parts, re.escape(word[pos:])])


def letters(text: str) -> str:
    """``text`` with each ligature as its letters ("eﬀect" → "effect"), for matching words (the length may
    change: never for offsets)."""
    return text.translate(_LETTERS)
