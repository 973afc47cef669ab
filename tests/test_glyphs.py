"""Ligatures a PDF's text layer lost, put back one character for one, and read as their letters."""

from __future__ import annotations

import pytest

from localrag.core.text import glyphs


@pytest.mark.parametrize(
    ("lost", "restored"),
    [
        # pdfium's text of a TeX document whose fonts (T1) have no ToUnicode for their ligatures
        ("a strati\x1ced random sample", "a stratiﬁed random sample"),
        ("\x1cne", "ﬁne"),
        ("a strong\r\n\x10signi\x1ccant\x11 e\x1bect.", 'a strong\r\n"signiﬁcant" eﬀect.'),
        ("declare a \x10response\x11 for 5%", 'declare a "response" for 5%'),
        ("Coe\x1ecients di\x1berent re\x1dect Kalb\x1deisch su\x1eces o\x1b.", None),
        # T1's dashes, on a page whose ligatures say T1: a range, a dash between words, one set apart
        ("de\x1cned for 65\x1585%, etime1\x15etime7; these are\x16as before \x15 \x1crst", None),
        ("the years 1991\x152001 di\x1ber", "the years 1991–2001 diﬀer"),
        # the older OT1 encoding: ff fi fl ffi ffl at 0x0B-0x0F; 0x0D only before a letter
        ("o\x0ece \x0cnd \x0dow o\x0b", "oﬃce ﬁnd ﬂow oﬀ"),
    ],
)
def test_lost_ligatures_and_quotes_come_back_one_character_for_one(lost: str, restored: str | None) -> None:
    got = glyphs.restore_lost(lost)
    assert len(got) == len(lost)
    if restored is not None:
        assert got == restored
    assert not any(ch < " " and ch not in "\r\n" for ch in got)


@pytest.mark.parametrize(
    "text",
    [
        "line one\r\nline two\r\n",  # pdfium's own line breaks
        "x \x1c y",  # a code beside no letter
        "na\x10ve",  # OT1's dotless i inside a word is no quote
        "the \x10. . . \x11 arguments",  # quotes around no word
        "a\x15b and 65\x1585%",  # OT1's macron: no T1 ligature on the page says these are dashes
    ],
)
def test_codes_that_are_no_lost_ligature_stay(text: str) -> None:
    assert glyphs.restore_lost(text) == text
    assert glyphs.codes(text) == []


def test_codes_in_a_math_font_stay_and_ligatures_read_as_letters() -> None:
    text = "di\x1berent \x10\x0dRX"
    assert glyphs.codes(text) == [2, 9, 10]
    assert glyphs.restore_lost(text, keep={9, 10}) == "diﬀerent \x10\x0dRX"
    assert glyphs.is_math_font("ABCDEF+CMMI10") and glyphs.is_math_font("LMMathExtension10-Regular")
    assert not glyphs.is_math_font("SFRM1000") and not glyphs.is_math_font("LMRoman10-Regular")
    assert glyphs.letters("Coeﬃcients diﬀer, ﬁne, ﬂat, baﬄe") == "Coefficients differ, fine, flat, baffle"
