"""Context packing: numbered sources within the token budget, whole sentences, and what was left out."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from localrag.core.retrieve import Result, pack_context
from localrag.core.retrieve.packing import estimate_tokens, split_sentences


def _result(
    i: int, text: str, *, title: str = "", page: int = 3, heading: str = "Setup", doc_type: str = "pdf"
):
    return Result(
        chunk_ids=[i],
        doc_id=i,
        doc_type=doc_type,
        title=title or f"Doc {i}",
        path=f"/d/doc{i}.pdf",
        page_number=page,
        heading_path=heading,
        text=text,
        similarity=0.5,
    )


SENTENCES = [f"Sentence number {n} says something useful about topic {n % 7}." for n in range(60)]


def test_numbered_blocks_in_rank_order():
    results = [_result(1, "First passage."), _result(2, "Second passage.", doc_type="markdown", heading="")]
    packed = pack_context(results, 200)
    assert packed.text == "[1] Doc 1, p. 3 — Setup\nFirst passage.\n\n[2] Doc 2\nSecond passage."
    assert packed.sources == results and packed.dropped == [] and packed.truncated == []
    assert packed.used_tokens == estimate_tokens(packed.text) <= packed.budget == 200


def test_default_budget_and_counter():
    packed = pack_context([_result(1, "x" * 10_000)])
    assert packed.budget == 1200 and packed.used_tokens <= 1200


def test_whole_passages_are_preferred_then_whole_sentences():
    long_text = " ".join(SENTENCES[:40])  # far over the budget
    short = [_result(i, SENTENCES[i]) for i in range(2, 5)]
    packed = pack_context([_result(1, long_text), *short], 300)
    # The short passages go in whole; the long one is cut to its leading whole sentences.
    assert [s.chunk_ids[0] for s in packed.sources] == [1, 2, 3, 4]
    assert packed.truncated == [1]
    cut = packed.sources[0].text
    assert long_text.startswith(cut) and cut.endswith(".") and cut in long_text
    assert packed.used_tokens <= 300


def test_dropped_passages_are_reported():
    results = [_result(i, " ".join(SENTENCES[i : i + 3])) for i in range(10)]
    packed = pack_context(results, 120)
    assert packed.dropped and all(reason == "budget" for _, reason in packed.dropped)
    assert len(packed.sources) + len(packed.dropped) == 10
    assert packed.used_tokens <= 120


def test_budget_with_a_real_tokenizer(embedder):
    results = [_result(i, " ".join(SENTENCES[i : i + 5]), title="Ünïcödé title ✓") for i in range(20)]
    for budget in (60, 150, 400, 1200):
        packed = pack_context(results, budget, embedder.count_tokens)
        assert embedder.count_tokens(packed.text) == packed.used_tokens <= budget


def test_sentences_split_on_ends_paragraphs_and_items():
    text = 'He said "stop." Then left! Why? Done\n\nNew paragraph\n- item one\n- item two'
    assert split_sentences(text) == [
        'He said "stop." ',
        "Then left! ",
        "Why? ",
        "Done\n\n",
        "New paragraph\n",
        "- item one\n",
        "- item two",
    ]


_word = st.text(alphabet=st.sampled_from("abcdefghij .!?\n"), min_size=0, max_size=400)


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(_word, min_size=0, max_size=12),
    budget=st.integers(0, 600),
    per_char=st.sampled_from([1, 3, 4]),
)
def test_never_exceeds_the_budget(texts, budget, per_char):
    def count(s: str) -> int:  # a counter that is not additive over joins
        return len(re.findall(r"\S+", s)) + len(s) // (per_char * 4)

    results = [_result(i, t) for i, t in enumerate(texts)]
    packed = pack_context(results, budget, count)
    assert packed.used_tokens == (count(packed.text) if packed.text else 0) <= budget
    assert len(packed.sources) + len(packed.dropped) == len(results)
    # Citations are in rank order.
    ids = [s.chunk_ids[0] for s in packed.sources]
    assert ids == sorted(ids)
    for number, source in enumerate(packed.sources, 1):
        assert f"[{number}] " in packed.text
        assert source.text in results[source.chunk_ids[0]].text
