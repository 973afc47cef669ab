"""Generated sentences checked against the sources: supported ones get the right [n], invented numbers and
identifiers are caught, sentences are cut from a stream as they complete. Real embedding model."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from localrag.core.answer.support import NOT_FOUND_MARK, SentenceStream, SupportChecker, strip_marks


@dataclass
class Passage:
    text: str
    page_number: int = 1
    char_start: int = 0

    @property
    def char_end(self) -> int:
        return self.char_start + len(self.text)


SOURCES = [
    Passage("Tomatoes need at least six hours of direct sunlight every day. Water them deeply twice a week."),
    Passage(
        "The default value of the environment variable R_LIBS_USER is a directory in the user's home area. "
        "Personal packages are installed there.",
        page_number=29,
        char_start=40,
    ),
]


@pytest.fixture(scope="module")
def checker(embedder):
    return SupportChecker(SOURCES, embedder.embed)


def test_a_supported_sentence_gets_the_number_of_the_source_that_supports_it(checker):
    c = checker.check(
        "Tomatoes need six hours of direct sunlight every day [2]."
    )  # the model cited the wrong one
    assert c.supported and c.number == 1
    assert c.shown() == "Tomatoes need six hours of direct sunlight every day. [1]"
    assert c.page_number == 1 and SOURCES[0].text[c.char_start : c.char_end].startswith("Tomatoes")


def test_an_invented_identifier_is_not_supported_even_when_the_words_match(checker):
    c = checker.check("The environment variable R_LIBRARY_PATH sets the directory for personal packages.")
    assert not c.supported
    assert "R_LIBRARY_PATH" in c.missing
    assert c.shown().endswith(NOT_FOUND_MARK)
    ok = checker.check("The environment variable R_LIBS_USER is a directory in the user's home area.")
    assert ok.supported and ok.number == 2 and ok.missing == []


def test_an_invented_number_is_not_supported(checker):
    c = checker.check("Tomatoes need at least nine hours of direct sunlight, 9 hours every day.")
    assert not c.supported and "9" in c.missing


def test_numbers_in_words_are_checked_like_digits(checker):
    """The sources say "six hours" and "twice a week": "6 hours" and "two times" are the same numbers, "nine
    hours" and "three times" are not, even with every other word matching."""
    same = checker.check("Tomatoes need at least 6 hours of direct sunlight every day.")
    assert same.supported and same.missing == []
    assert checker.check("Water tomatoes deeply two times a week.").missing == []
    wrong = checker.check("Tomatoes need at least nine hours of direct sunlight every day.")
    assert not wrong.supported and wrong.missing == ["nine"]
    assert checker.check("Water tomatoes deeply three times a week.").missing == ["three"]


def test_a_sentence_about_something_else_is_not_supported(checker):
    c = checker.check("The Eiffel Tower was completed in Paris for the World Fair.")
    assert not c.supported


def test_model_citations_are_stripped_but_code_brackets_stay():
    assert strip_marks("Water twice a week [1].") == "Water twice a week."
    assert strip_marks("Use x[1] to read it [2].") == "Use x[1] to read it."


def test_sentences_are_handed_out_as_they_complete_and_short_ones_wait_for_the_next():
    stream = SentenceStream()
    out = []
    for piece in [
        "Yes. ",
        "Tomatoes need six hours of sun",
        " every day. Water them ",
        "deeply twice a week.",
    ]:
        out.extend(stream.feed(piece))
    assert out == ["Yes. Tomatoes need six hours of sun every day."]
    out.extend(stream.flush())
    assert out[-1] == "Water them deeply twice a week."
