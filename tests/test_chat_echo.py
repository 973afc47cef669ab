"""The worked example is never passed off as an answer: copies of its sentences are dropped from the
stream."""

from __future__ import annotations

import re

from localrag.core.answer import prompts
from localrag.core.answer.echo import EchoFilter


def _stream(text: str) -> tuple[list[str], EchoFilter]:
    f = EchoFilter(prompts.example_phrases())
    out = [f.feed(piece) for piece in re.findall(r"\s*\S+|\s+", text)]
    out.append(f.flush())
    return out, f


def test_a_copied_example_is_dropped_with_its_citation():
    out, f = _stream(
        "The night train to Vienna leaves at 22:10 from platform 4 [1]. Copy the data folder [1]."
    )
    assert "".join(out) == "Copy the data folder [1]." == f.text
    assert len(f.dropped) == 1


def test_a_copy_in_the_middle_and_at_the_end_is_dropped():
    out, _ = _stream(
        "Six hours [1]. Children under six travel free [2].\nWater twice a week [1]. The night train to "
        "Vienna leaves at 22:10 from platform 4"
    )
    assert "".join(out) == "Six hours [1]. Water twice a week [1]. "


def test_other_text_passes_unchanged_and_is_held_back_at_most_briefly():
    text = "The night shift starts at 22:00. Version 3.10 or newer is needed [2]."
    out, f = _stream(text)
    assert "".join(out) == text and not f.dropped
    # "The" and "The night" could begin the example; " shift" shows they do not.
    assert out[0] == "" and out[2].startswith("The night shift")


def test_the_real_tokens_of_a_copy_are_dropped():
    pieces = [
        "The",
        " night",
        " train",
        " to",
        " Vienna",
        " leaves",
        " at",
        " ",
        "2",
        "2",
        ":",
        "1",
        "0",
        " from",
        " platform",
        " ",
        "4",
        ".",
        " The",
        " app",
        " needs",
        " Python",
        " ",
        "3",
        ".",
        "x",
        ".",
    ]
    f = EchoFilter(prompts.example_phrases())
    shown = "".join(f.feed(p) for p in pieces) + f.flush()
    assert shown == "The app needs Python 3.x."


def test_a_model_repeating_itself_is_cut_short_and_told_to_stop():
    """Lines the answer already holds are dropped (never half shown), and three repeats mean a loop."""
    loop = "Ice and snow are both made of water.\n### Ice and snow\n"
    out, f = _stream("Two tides a day come from the Moon [1].\n" + loop * 4)
    shown = "".join(out)
    assert shown == "Two tides a day come from the Moon [1].\n" + loop == f.text
    assert f.looping and len(f.dropped) == 6
    # A short line may come back ("Yes.", a table rule); an answer that says a thing once is left alone.
    out, f = _stream("Yes.\nIt works offline [2].\nYes.\n|---|\n|---|\n")
    assert (
        "".join(out) == "Yes.\nIt works offline [2].\nYes.\n|---|\n|---|\n"
        and not f.dropped
        and not f.looping
    )
