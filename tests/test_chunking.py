"""The chunker with the real embedding tokenizer: hard limits hold for any text, cuts fall where they
should."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from localrag.core.embed.onnx_embedder import OnnxEmbedder, load_embedder
from localrag.core.ingest.chunking import chunk_pages, iter_chunks
from localrag.core.ingest.loaders.markdown import parse_headings
from localrag.core.ingest.types import Chunk, Page


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    return load_embedder()


def check_invariants(pages: list[Page], chunks: list[Chunk], embedder: OnnxEmbedder, hard_limit: int) -> None:
    """What every chunking must satisfy, whatever the text."""
    by_number = {p.number: p for p in pages}
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        page = by_number[chunk.page_number]
        assert chunk.text == page.text[chunk.char_start : chunk.char_end]
        assert chunk.text.strip() and chunk.text == chunk.text.strip()
        assert chunk.token_count == embedder.count_tokens(chunk.text) <= hard_limit
        offsets = [o for o, _ in page.headings if o <= chunk.char_start]
        expected = [h for o, h in page.headings if o <= chunk.char_start]
        assert chunk.heading_path == (expected[-1] if offsets else "")
    # Chunks follow page order, move forward within a page, and together cover every token of every page.
    order = [p.number for p in pages]
    assert [order.index(c.page_number) for c in chunks] == sorted(order.index(c.page_number) for c in chunks)
    for page in pages:
        own = [c for c in chunks if c.page_number == page.number]
        assert all(
            a.char_start < b.char_start and a.char_end < b.char_end for a, b in itertools.pairwise(own)
        )
        cursor = 0
        for chunk in own:
            if chunk.char_start > cursor:
                gap = page.text[cursor : chunk.char_start]
                assert not embedder.tokenizer.encode(gap, add_special_tokens=False).ids, repr(gap)
            cursor = max(cursor, chunk.char_end)
        assert not embedder.tokenizer.encode(page.text[cursor:], add_special_tokens=False).ids


# -- property tests ------------------------------------------------------------------------------------------

LETTERS = "abcdefghijklmnopqrstuvwxyz"
words = st.one_of(
    st.text(alphabet=LETTERS, min_size=1, max_size=12),
    st.text(alphabet=LETTERS, min_size=40, max_size=400),  # long words without spaces
    st.text(alphabet="日本語中文字漢字かなカナ한국어", min_size=1, max_size=30),  # CJK, no spaces
    st.text(alphabet="😀🎉👍🏽🚀❤️‍🔥", min_size=1, max_size=8),  # emoji, joiners, modifiers
    st.text(alphabet="0123456789.,-", min_size=1, max_size=10),
    st.text(min_size=1, max_size=20),  # any Unicode at all
)
separators = st.sampled_from(
    [" ", " ", " ", "  ", ". ", "! ", "? ", "\n", "\n\n", "\t", "。", " \u00a0", "", ",", " — "]
)
texts = st.lists(st.tuples(words, separators), max_size=250).map(
    lambda parts: "".join(w + s for w, s in parts)
)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(
    page_texts=st.lists(st.one_of(texts, st.text(max_size=300)), min_size=1, max_size=3),
    max_tokens=st.sampled_from([16, 64, 128, 200, 256, 400]),
    overlap=st.sampled_from([0, 8, 32, 48]),
)
def test_chunks_hold_invariants(
    embedder: OnnxEmbedder, page_texts: list[str], max_tokens: int, overlap: int
) -> None:
    pages = []
    for number, text in enumerate(page_texts, start=1):
        cut = len(text) // 2
        pages.append(Page(number=number, text=text, headings=[(0, f"P{number}"), (cut, f"P{number} > half")]))
    chunks = chunk_pages(pages, embedder, max_tokens=max_tokens, overlap_tokens=overlap, hard_limit=256)
    check_invariants(pages, chunks, embedder, 256)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), hard_limit=st.sampled_from([8, 40, 128]))
def test_hard_limit_below_target_on_hostile_text(embedder: OnnxEmbedder, seed: int, hard_limit: int) -> None:
    rng = random.Random(seed)
    alphabet = LETTERS + "é日😀.,;-_/\\"
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(200, 3000)))
    pages = [Page(number=1, text=text)]
    chunks = chunk_pages(pages, embedder, max_tokens=200, overlap_tokens=32, hard_limit=hard_limit)
    check_invariants(pages, chunks, embedder, hard_limit)


# -- where the cuts fall -------------------------------------------------------------------------------------


def sentence(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(["data", "index", "query", "vector", "page", "model", "search", "answer"])
                    for _ in range(n_words)).capitalize() + "."  # fmt: skip


def test_cuts_at_paragraphs_then_sentences(embedder: OnnxEmbedder) -> None:
    rng = random.Random(1)
    paragraphs = [" ".join(sentence(rng, 12) for _ in range(5)) for _ in range(12)]  # ~65 tokens each
    text = "\n\n".join(paragraphs)
    chunks = chunk_pages([Page(1, text)], embedder, max_tokens=200, overlap_tokens=0)
    for chunk in chunks[:-1]:
        assert text[chunk.char_end :].startswith("\n\n"), "chunks end where paragraphs end"
        assert 100 <= chunk.token_count <= 200
    one_paragraph = " ".join(sentence(rng, 10) for _ in range(60))
    chunks = chunk_pages([Page(1, one_paragraph)], embedder, max_tokens=200, overlap_tokens=0)
    assert len(chunks) > 3
    assert all(c.text.endswith(".") and c.text[0].isupper() for c in chunks)


def test_overlap_is_whole_sentences_of_about_the_asked_size(embedder: OnnxEmbedder) -> None:
    rng = random.Random(2)
    text = " ".join(sentence(rng, 7) for _ in range(200))  # 8-token sentences
    chunks = chunk_pages([Page(1, text)], embedder, max_tokens=200, overlap_tokens=32)
    overlaps = []
    for a, b in itertools.pairwise(chunks):
        assert b.char_start < a.char_end
        assert b.text[0].isupper() and text[b.char_start - 2 : b.char_start] == ". "
        overlaps.append(embedder.count_tokens(text[b.char_start : a.char_end]) - 2)
    assert all(16 <= o <= 48 for o in overlaps), overlaps
    assert 24 <= sum(overlaps) / len(overlaps) <= 40


def test_sections_start_chunks_and_overlap_stays_inside(embedder: OnnxEmbedder) -> None:
    rng = random.Random(3)
    body = "\n\n".join(" ".join(sentence(rng, 9) for _ in range(4)) for _ in range(6))
    short = "One short sentence, long enough to stand alone."
    text = f"# Guide\n\n{body}\n\n## Install\n\n{body}\n\n## Use\n\n{short}\n\n## Limits\n\n{body}\n"
    headings, _ = parse_headings(text)
    page = Page(1, text, headings)
    chunks = chunk_pages([page], embedder, max_tokens=200, overlap_tokens=32)
    check_invariants([page], chunks, embedder, 256)
    for offset, path in headings[1:]:
        starting = [c for c in chunks if c.char_start == offset]
        assert len(starting) == 1 and starting[0].heading_path == path, path
        assert not [c for c in chunks if c.char_start < offset < c.char_end], "no chunk straddles a heading"
    tiny = "# Guide\n\n## Install\n\nText of the install section.\n"
    headings, _ = parse_headings(tiny)
    (chunk,) = chunk_pages([Page(1, tiny, headings)], embedder)
    assert chunk.heading_path == "Guide"  # a bare heading runs on into the next section


def test_chunks_never_cross_pages_and_indexes_run_on(embedder: OnnxEmbedder) -> None:
    rng = random.Random(4)
    pages = [
        Page(n, " ".join(sentence(rng, 10) for _ in range(30)), [(0, f"Chapter {n}")]) for n in (1, 2, 3)
    ]
    pages.insert(1, Page(9, "   \n\t  "))
    chunks = chunk_pages(pages, embedder)
    check_invariants(pages, chunks, embedder, 256)
    assert {c.page_number for c in chunks} == {1, 2, 3}
    assert all(c.heading_path == f"Chapter {c.page_number}" for c in chunks)
    streamed = list(iter_chunks(iter(pages), embedder, first_index=10))
    assert [c.chunk_index for c in streamed] == list(range(10, 10 + len(chunks)))
    assert [c.text for c in streamed] == [c.text for c in chunks]


def test_long_word_and_cjk_are_cut_within_the_limit(embedder: OnnxEmbedder) -> None:
    rng = random.Random(5)
    word = "".join(rng.choice(LETTERS) for _ in range(5000))
    cjk = "".join(rng.choice("日本語の文章です中文句子한국어문장") for _ in range(3000)) + "。" * 3
    pages = [Page(1, word), Page(2, cjk), Page(3, "x" * 99 + " " + "y" * 101 + " " + "z" * 10_000)]
    chunks = chunk_pages(pages, embedder, max_tokens=200, overlap_tokens=32, hard_limit=256)
    check_invariants(pages, chunks, embedder, 256)
    assert max(c.token_count for c in chunks) <= 256


def test_trims_whitespace_by_offsets_and_hashes(embedder: OnnxEmbedder) -> None:
    import hashlib

    page = Page(1, "\n\n   Hello there.   \n\n")
    (chunk,) = chunk_pages([page], embedder)
    assert (chunk.text, chunk.char_start, chunk.char_end) == ("Hello there.", 5, 17)
    assert chunk.text_hash == hashlib.sha256(b"Hello there.").hexdigest()
    assert chunk_pages([Page(1, ""), Page(2, " \n ")], embedder) == []


ENGLISH = """the of and to in is that for it as was with be by on not he this are or his from at which
but have an they you were her she there been one all we their has would when if so no will more can out other
into some could them than then its also time only new these two may first any like our over such
even most made after should well system data index search query page document model answer vector
chapter section install server database table file user network memory process thread value result
method function error report measure number large small between under during before through against
without within around among because where while those every each""".split()


class _CallCounter:
    """The real embedder's tokenizer and token counters, counting the calls made to them (every call goes
    through: a spy, not a fake)."""

    def __init__(self, embedder: OnnxEmbedder) -> None:
        self.calls = 0
        self.embedder = embedder
        self.tokenizer = self

    def _counted(self, fn, *args, **kwargs):
        self.calls += 1
        return fn(*args, **kwargs)

    def encode_batch(self, *args, **kwargs):
        return self._counted(self.embedder.tokenizer.encode_batch, *args, **kwargs)

    def count_tokens(self, text: str) -> int:
        return self._counted(self.embedder.count_tokens, text)

    def count_tokens_batch(self, texts: list[str]) -> list[int]:
        return self._counted(self.embedder.count_tokens_batch, texts)


def test_book_of_2400_pages_is_tokenised_in_a_few_batches(embedder: OnnxEmbedder) -> None:
    """A long book costs a handful of tokenizer calls per group of pages, not calls per page or per chunk
    (what made it slow: seconds of Python per call)."""
    from localrag.core.ingest.chunking import _GROUP_CHARS

    rng = random.Random(6)

    def page_text() -> str:
        lines = [" ".join(rng.choice(ENGLISH) for _ in range(rng.randint(8, 14))) for _ in range(30)]
        return "\n".join(line + ("." if rng.random() < 0.4 else "") for line in lines)

    pages = [Page(n, page_text(), [(0, f"Part {n // 100}")]) for n in range(1, 2401)]
    counter = _CallCounter(embedder)
    chunks = chunk_pages(pages, counter)
    assert len(chunks) >= 2400 and max(c.token_count for c in chunks) <= 256
    groups = -(-sum(len(p.text) for p in pages) // _GROUP_CHARS)
    assert counter.calls <= 1 + 2 * groups, (counter.calls, groups)  # one encode and one count per group
