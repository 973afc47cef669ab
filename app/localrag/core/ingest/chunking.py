"""Cut pages into chunks sized in the embedding model's own word pieces.

Each page is tokenised once; the token character offsets say where every possible cut falls, and each cut is
scored by what it separates (a section, a paragraph, a sentence, a line, words, or only word pieces). A chunk
ends at the strongest cut within its budget, the next one starts about ``overlap_tokens`` earlier at a
sentence start where there is one, and no overlap reaches back across a heading.

A slice cut between pre-tokenised words tokenises to exactly its tokens in the page, so most chunks' counts
are known from the offsets alone. Chunks cut inside a word, or close to ``hard_limit``, are tokenised again;
the rare one that comes out too long is cut shorter. Chunks never cross pages, and each is an exact slice of
its page's text so that a citation can highlight it. A page that arrives in windows (``Page.offset``) is
chunked window by window: no chunk crosses a window, and offsets count from the start of the whole page.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from localrag.core.ingest.types import Chunk, Page

# How good a cut before a token is.
NEVER = -1
INSIDE_WORD, WORD, SPACE, LINE, SENTENCE, PARAGRAPH, SECTION = range(7)

_SENTENCE_END = frozenset(map(ord, ".!?…。！？｡;"))
_CLOSERS = frozenset(map(ord, "\"')]}»”’」』"))
_FULL_WIDTH_END = frozenset(map(ord, "。！？｡"))


def _char_table(chars: frozenset[int]) -> np.ndarray:
    """A lookup by code point for the Basic Multilingual Plane (callers clip code points to 0xFFFF)."""
    table = np.zeros(0x10000, dtype=bool)
    table[list(chars)] = True
    return table


_SENTENCE_END_SET = _char_table(_SENTENCE_END)
_CLOSER_SET = _char_table(_CLOSERS)
_FULL_WIDTH_SET = _char_table(_FULL_WIDTH_END)
_BLOCK_CHARS = 100_000  # pages longer than this are tokenised in pieces cut at whitespace
_GROUP_CHARS = 200_000  # pages are tokenised and counted in batches of about this many characters
_FIRST_GROUP_CHARS = 20_000  # but the first pages soon: a new document is searchable as they are chunked
_MIN_SECTION_TOKENS = 8  # a section shorter than this (a bare heading) runs on into the next one


def chunk_pages(
    pages: list[Page],
    tokenizer_counter: Any,
    *,
    max_tokens: int = 200,
    overlap_tokens: int = 32,
    hard_limit: int = 256,
) -> list[Chunk]:
    """Chunks of ``pages`` with ``chunk_index`` 0..n-1 across the document.

    Args:
        pages: the document's pages.
        tokenizer_counter: the ``OnnxEmbedder`` whose tokenizer sizes the chunks.
        max_tokens: the size to aim for, special tokens included.
        overlap_tokens: word pieces repeated from the end of one chunk at the start of the next (same page).
        hard_limit: no chunk exceeds this many tokens as ``count_tokens`` counts them (special tokens too).
    """
    return list(
        iter_chunks(
            pages,
            tokenizer_counter,
            max_tokens=max_tokens,
            overlap_tokens=overlap_tokens,
            hard_limit=hard_limit,
        )
    )


def iter_chunks(
    pages: Iterable[Page],
    tokenizer_counter: Any,
    *,
    max_tokens: int = 200,
    overlap_tokens: int = 32,
    hard_limit: int = 256,
    first_index: int = 0,
) -> Iterator[Chunk]:
    """``chunk_pages`` as a stream, for pages that arrive one at a time (they are read in small groups)."""
    chunker = _Chunker(tokenizer_counter, max_tokens, overlap_tokens, hard_limit)
    index = first_index
    for group in _groups(pages):
        for chunk in chunker.group_chunks(group, index):
            yield chunk
            index += 1


def _groups(pages: Iterable[Page]) -> Iterator[list[Page]]:
    """Pages in groups of about ``_GROUP_CHARS`` characters, to be tokenised together (the first group
    smaller)."""
    group: list[Page] = []
    size, limit = 0, _FIRST_GROUP_CHARS
    for page in pages:
        group.append(page)
        size += len(page.text)
        if size >= limit:
            yield group
            group, size, limit = [], 0, _GROUP_CHARS
    if group:
        yield group


@dataclass
class _Tokens:
    """A page's tokens: character offsets, and whether each token begins a new pre-tokenised word."""

    starts: np.ndarray
    ends: np.ndarray
    new_word: np.ndarray


@dataclass
class _Piece:
    a: int  # first token
    b: int  # one past the last token
    char_start: int
    char_end: int
    count: int = 0  # tokens with special tokens, once measured


class _Chunker:
    def __init__(self, embedder: Any, max_tokens: int, overlap_tokens: int, hard_limit: int) -> None:
        self.tokenizer = embedder.tokenizer
        self.count_tokens: Callable[[str], int] = embedder.count_tokens
        self.count_tokens_batch: Callable[[list[str]], list[int]] = embedder.count_tokens_batch
        self.special = self.count_tokens("")
        if hard_limit <= self.special:
            raise ValueError(f"hard_limit {hard_limit} leaves no room beside {self.special} special tokens")
        self.hard_limit = hard_limit
        self.budget = max(1, min(max_tokens, hard_limit) - self.special)  # word pieces of text per chunk
        self.overlap = max(0, min(overlap_tokens, self.budget // 3))
        self.margin = max(4, hard_limit // 32)  # chunks this close to the limit are always counted again

    def group_chunks(self, pages: list[Page], first_index: int) -> Iterator[Chunk]:
        """Chunks of a few pages: tokenised in one batch and cut by the token offsets.

        A slice cut between pre-tokenised words tokenises to exactly its tokens in the page, so its count is
        known. Only chunks with a cut inside a word, or near ``hard_limit``, are counted again (in one batch);
        if one comes out too long, its page is cut again, counting each chunk.
        """
        tokens = self._tokens_many([page.text for page in pages])
        plans = [self._plan(page, toks) for page, toks in zip(pages, tokens, strict=True)]
        risky: list[tuple[_Piece, str]] = []
        for page, toks, (_, pieces) in zip(pages, tokens, plans, strict=True):
            n, fresh = len(toks.starts), toks.new_word
            for piece in pieces:
                piece.count = piece.b - piece.a + self.special
                inside_word = (piece.a > 0 and not fresh[piece.a]) or (piece.b < n and not fresh[piece.b])
                if inside_word or piece.count > self.hard_limit - self.margin:
                    risky.append((piece, page.text[piece.char_start : piece.char_end]))
        for (piece, _), count in zip(
            risky, self.count_tokens_batch([t for _, t in risky]) if risky else [], strict=True
        ):
            piece.count = count
        index = first_index
        for page, toks, (strength, pieces) in zip(pages, tokens, plans, strict=True):
            if any(piece.count > self.hard_limit for piece in pieces):
                _, pieces = self._plan(page, toks, strength, measure=self.count_tokens)
            headings = sorted(page.headings)
            offsets = [h[0] for h in headings]
            for piece in pieces:
                text = page.text[piece.char_start : piece.char_end]
                yield Chunk(
                    chunk_index=index,
                    page_number=page.number,
                    heading_path=_heading_at(headings, offsets, piece.char_start),
                    text=text,
                    token_count=piece.count,
                    char_start=page.offset + piece.char_start,
                    char_end=page.offset + piece.char_end,
                    text_hash=hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
                    inner_headings=_headings_inside(headings, offsets, piece.char_start, piece.char_end),
                )
                index += 1

    # -- tokens and cut strengths --------------------------------------------------------------------------

    def _tokens_many(self, texts: list[str]) -> list[_Tokens]:
        """Tokens of each text; long texts are tokenised in blocks cut at whitespace."""
        blocks: list[tuple[int, int, str, bool]] = []  # (text number, offset, block, starts a word)
        for number, text in enumerate(texts):
            pos, clean = 0, True
            while pos < len(text):
                stop, next_clean = _block_end(text, pos)
                blocks.append((number, pos, text[pos:stop], clean))
                pos, clean = stop, next_clean
        encodings = (
            self.tokenizer.encode_batch([b[2] for b in blocks], add_special_tokens=False) if blocks else []
        )
        parts: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in texts]
        for (number, pos, _, clean), enc in zip(blocks, encodings, strict=True):
            if not enc.ids:
                continue
            offsets = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2) + pos
            words = np.fromiter((-1 if w is None else w for w in enc.word_ids), dtype=np.int64)
            fresh = np.ones(len(words), dtype=bool)
            fresh[1:] = words[1:] != words[:-1]
            fresh[0] = clean
            parts[number].append((offsets, fresh))
        out = []
        for pieces in parts:
            if not pieces:
                empty = np.zeros(0, dtype=np.int64)
                out.append(_Tokens(empty, empty, np.zeros(0, dtype=bool)))
                continue
            offsets = np.concatenate([p[0] for p in pieces])
            out.append(_Tokens(offsets[:, 0], offsets[:, 1], np.concatenate([p[1] for p in pieces])))
        return out

    @staticmethod
    def _strengths(text: str, toks: _Tokens, heading_offsets: list[int]) -> np.ndarray:
        """``strength[i]``: how good a cut just before token ``i`` is (``strength[0]`` is the page start)."""
        starts, ends = toks.starts, toks.ends
        n = len(starts)
        strength = np.full(n, INSIDE_WORD, dtype=np.int8)
        strength[0] = SECTION
        if n == 1:
            return strength
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        newlines = np.zeros(len(codes) + 1, dtype=np.int64)
        np.cumsum(codes == 10, out=newlines[1:])
        gap_from, gap_to = ends[:-1], starts[1:]
        gap = gap_to > gap_from
        breaks = newlines[gap_to] - newlines[gap_from]
        bmp = np.minimum(codes, 0xFFFF)  # 0xFFFF is in none of the tables
        last = bmp[np.maximum(gap_from - 1, 0)]
        before_last = bmp[np.maximum(gap_from - 2, 0)]
        ends_sentence = _SENTENCE_END_SET[last] | (_CLOSER_SET[last] & _SENTENCE_END_SET[before_last])
        full_width = _FULL_WIDTH_SET[last]
        s = strength[1:]
        s[toks.new_word[1:]] = WORD
        s[gap] = SPACE
        s[breaks >= 1] = LINE
        s[ends_sentence & (gap | full_width)] = SENTENCE
        s[breaks >= 2] = PARAGRAPH
        s[starts[1:] < ends[:-1]] = NEVER  # tokens of one character (a decomposed Hangul syllable): no cut
        for offset in heading_offsets:
            i = int(np.searchsorted(starts, offset, side="left"))
            if 0 < i < n and strength[i] != NEVER:
                strength[i] = SECTION
        return strength

    # -- cutting -------------------------------------------------------------------------------------------

    def _plan(
        self,
        page: Page,
        toks: _Tokens,
        strength: np.ndarray | None = None,
        measure: Callable[[str], int] | None = None,
    ) -> tuple[np.ndarray, list[_Piece]]:
        """The page's chunks; with ``measure``, every chunk is counted and cut shorter until it fits."""
        text = page.text
        starts, ends = toks.starts, toks.ends
        n = len(starts)
        if n == 0:
            return np.zeros(0, dtype=np.int8), []
        if strength is None:
            strength = self._strengths(text, toks, [h[0] for h in page.headings])
        pieces: list[_Piece] = []
        a, covered = 0, 0  # next chunk's first token; tokens before ``covered`` are already in a chunk
        while covered < n:
            limit = min(n, a + self.budget)
            last_b, last_a = n + 1, -1
            while True:
                b = self._choose_end(strength, a, covered, limit, n)
                char_start, char_end = _trim(text, int(starts[a]), int(ends[b - 1]))
                if measure is None:
                    break
                count = measure(text[char_start:char_end])
                if count <= self.hard_limit or (b >= last_b and a <= last_a):  # fits, or cannot get shorter
                    break
                last_b, last_a = b, a
                if a < covered:  # drop the overlap first, then shorten
                    a = covered
                    limit = min(limit, a + self.budget)
                else:
                    limit = a + max(1, (b - a) * 3 // 4)
            if char_end > char_start:
                pieces.append(_Piece(a, b, char_start, char_end, count if measure is not None else 0))
            covered = b
            if b < n:
                a = self._next_start(strength, a, b)
        return strength, pieces

    def _choose_end(self, strength: np.ndarray, a: int, covered: int, limit: int, n: int) -> int:
        """Where the chunk from token ``a`` ends (exclusive): past ``covered``, at most at ``limit``."""
        low = covered + 1  # every chunk adds text
        min_section = max(low, a + min(_MIN_SECTION_TOKENS, max(1, self.budget // 8)))
        if min_section <= limit:
            sections = np.flatnonzero(strength[min_section : limit + 1 if limit < n else n] == SECTION)
            if len(sections):
                return min_section + int(sections[0])
        if limit >= n and n - a <= self.budget:
            return n
        for level, share in ((PARAGRAPH, 2), (SENTENCE, 2), (LINE, 2), (SPACE, 4), (WORD, 4)):
            lo = max(low, a + self.budget // share)
            if lo > limit:
                continue
            hits = np.flatnonzero(strength[lo : limit + 1] >= level)
            if len(hits):
                return lo + int(hits[-1])
        hits = np.flatnonzero(strength[low : limit + 1] >= INSIDE_WORD)
        if len(hits):
            return low + int(hits[-1])
        later = np.flatnonzero(strength[limit + 1 :] >= INSIDE_WORD)  # one character of many tokens
        return limit + 1 + int(later[0]) if len(later) else n

    def _next_start(self, strength: np.ndarray, a: int, b: int) -> int:
        """Where the chunk after ``[a, b)`` starts: ``overlap`` tokens back, at a sentence if possible."""
        if self.overlap == 0 or strength[b] == SECTION:
            return b
        sections = np.flatnonzero(strength[a + 1 : b] == SECTION)
        floor = a + 1 + int(sections[-1]) if len(sections) else a + 1
        want = b - self.overlap
        lo = max(floor, want - self.overlap // 2)
        hi = min(b - 1, want + self.overlap // 2)
        if lo > hi:  # a heading just before the cut: start there
            return floor if len(sections) else b
        window = strength[lo : hi + 1]
        for level in (SENTENCE, SPACE, INSIDE_WORD):
            hits = np.flatnonzero(window >= level)
            if len(hits):
                return lo + int(hits[np.argmin(np.abs(hits + lo - want))])
        return b


def _block_end(text: str, pos: int) -> tuple[int, bool]:
    """End of the next tokenisation block (the rest, or a whitespace cut near ``_BLOCK_CHARS``), and whether
    it falls between words."""
    if len(text) - pos <= _BLOCK_CHARS:
        return len(text), True
    hard = pos + _BLOCK_CHARS
    for sep in ("\n\n", "\n", " ", "\t"):
        cut = text.rfind(sep, pos + _BLOCK_CHARS // 2, hard)
        if cut > pos:
            return cut + len(sep), True
    return hard, False


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _heading_at(headings: list[tuple[int, str]], offsets: list[int], char_start: int) -> str:
    i = bisect.bisect_right(offsets, char_start) - 1
    return headings[i][1] if i >= 0 else ""


def _headings_inside(
    headings: list[tuple[int, str]], offsets: list[int], start: int, end: int
) -> list[tuple[int, str]]:
    """The headings that begin after ``start`` and before ``end``, at their offsets from ``start``."""
    first, last = bisect.bisect_right(offsets, start), bisect.bisect_left(offsets, end)
    return [(offset - start, path) for offset, path in headings[first:last] if path]
