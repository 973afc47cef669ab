"""Citations: [n], [n, m], [n-m] parsed and checked against the sources given; invalid ones never link."""

from __future__ import annotations

from localrag.core.answer.citations import (
    Source,
    apply_citations,
    check_citations,
    find_quotes,
    segments,
    strip_citations,
)


def _sources(n: int) -> list[Source]:
    return [
        Source(
            number=i,
            doc_id=i,
            title=f"Doc {i}",
            path=f"/d/{i}.md",
            doc_type="markdown",
            page_number=i,
            heading_path="",
            chunk_ids=[10 * i, 10 * i + 1],
        )
        for i in range(1, n + 1)
    ]


def test_single_lists_and_ranges():
    check = check_citations("A [1]. B [2, 3]. C [1-3]. D [Source 2]. E [3; 1].", 3)
    assert check.cited == [1, 2, 3]
    assert check.invalid == []
    assert [m.valid for m in check.marks] == [[1], [2, 3], [1, 2, 3], [2], [3, 1]]


def test_numbers_that_name_no_source_are_invalid_and_not_linked():
    answer = "Paris [1]. Lima [4]. Both [1, 9]. Nothing [0]."
    check = check_citations(answer, 2)
    assert check.cited == [1]
    assert check.invalid == [4, 9, 0]
    links = [(text, n) for text, n in segments(answer, check) if n is not None]
    assert links == [("[1]", 1), ("1", 1)]
    assert "".join(text for text, _ in segments(answer, check)) == answer


def test_no_sources_means_every_citation_is_invalid():
    check = check_citations("The capital of Peru is Lima [1].", 0)
    assert check.cited == [] and check.invalid == [1]


def test_absurd_ranges_do_not_expand():
    check = check_citations("See [1-5000].", 3)
    assert check.cited == [1] and check.invalid == [5000]


def test_cited_sources_give_their_chunk_ids_in_citation_order():
    sources = _sources(3)
    check = check_citations("First [3]. Then [1]. Again [3].", 3)
    assert apply_citations(sources, check) == [30, 31, 10, 11]
    assert [s.cited for s in sources] == [True, False, True]


def test_an_answer_without_citations_cites_nothing():
    sources = _sources(2)
    check = check_citations("No brackets here, and [a] is not a citation.", 2)
    assert apply_citations(sources, check) == []
    assert not any(s.cited for s in sources)


def test_source_round_trips_through_json():
    s = _sources(1)[0]
    assert Source.from_dict(s.to_dict()) == s
    assert Source.from_dict({"title": "x"}).chunk_ids == []


def test_strip_citations_for_history():
    assert strip_citations("Paris is in France [1]. It is big [2, 3].") == "Paris is in France. It is big."


def test_a_passage_the_answer_repeats_without_citing_it_is_found():
    """Small models copy a passage's words and leave out its number: the source is named as quoted."""
    sources = _sources(3)
    sources[
        0
    ].text = "Tomatoes need at least six hours of direct sunlight every day. Water them deeply twice a week."
    sources[1].text = (
        "There are two high tides a day because the water bulges on the side of the Earth facing the "
        "Moon and on the opposite side."
    )
    sources[2].text = "The Moon orbits the Earth once a month."
    answer = (
        "The two high tides a day come because the water bulges on the side of the Earth facing the Moon "
        "and on the opposite side. Tomatoes need six hours of sun [1]."
    )
    check = check_citations(answer, 3)
    assert find_quotes(answer, sources, check) == [
        2
    ]  # sentence 2 cites [1]; the Moon passage shares too little
    assert apply_citations(sources, check, answer) == [10, 11, 20, 21]  # cited first, then quoted
    assert [(s.cited, s.quoted) for s in sources] == [(True, False), (False, True), (False, False)]
    # Topical words alone are not a quote, and a sentence that cites is taken at its word.
    assert (
        find_quotes("The Moon and the Earth pull on the water of the seas.", sources, check_citations("", 3))
        == []
    )
    cited = "The water bulges on the side of the Earth facing the Moon [2]."
    assert find_quotes(cited, sources, check_citations(cited, 3)) == []


def test_brackets_in_code_arrays_math_and_program_output_are_not_citations():
    for text in (
        "double[] = [1; 2; 3]",
        "Read the value with `a[1]` here.",
        "Let $x_[1]$ be the first.",
        "x[1] is the first element",
        "a[1][2] values",
        "R> a * a == 2\n[1] FALSE",
        "```\nv = [1, 2]\n```",
    ):
        check = check_citations(text, 3)
        assert check.cited == [] and check.marks == [], text
    assert check_citations("Compare with `all.equal()` instead [2].", 3).cited == [2]
    assert check_citations("Lima[1]. See the manual [1] and [3]", 3).cited == [1, 3]


def test_a_bracket_ending_a_line_of_code_after_a_space_cites_it():
    # An answer led by the sources quotes prose holding code, or a line of code, and numbers it at its end.
    quoted = "If the name has a von part, then \\citet{dRob98} produces “della Robbia (1998)”. [1]"
    assert check_citations(quoted, 3).cited == [1]
    assert check_citations("> legend(1.5, .85, bty='n') [2]\nx <- y[1]", 3).cited == [2]
    assert check_citations("x <- c(1, 2)[1]", 3).cited == []
