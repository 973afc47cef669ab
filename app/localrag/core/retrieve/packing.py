"""Context packing: the retrieved passages as numbered sources that fit a token budget.

Each source is a block ``[i] Title, p. 3 — Heading`` followed by its passage. Passages are taken whole in rank
order while they fit (a contiguous span is worth more than pieces). Then a passage that did not fit whole is
cut to its leading whole sentences if a useful part still fits. The rest is reported as dropped. Sources keep
their rank order, so citation ``[i]`` is ``sources[i - 1]``. The count of the final text never exceeds the
budget.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from localrag.core.retrieve.results import Result, page_phrase

DEFAULT_BUDGET = 1200
# A cut passage shorter than this many tokens is not worth a source.
MIN_PART_TOKENS = 40
SEPARATOR = "\n\n"

_SENTENCE_END = re.compile(r"(?<=[.!?…。])[\"'”’)\]]*\s+|\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)")


@dataclass
class PackedContext:
    """The packed context.

    Attributes:
        text: the numbered source blocks joined by blank lines.
        sources: the passages in the text, in citation order (``[i]`` is ``sources[i - 1]``); a passage that
            was cut carries the cut text.
        used_tokens: the count of ``text``.
        dropped: passages left out, each with why: ``"budget"`` (no useful part fitted).
        truncated: the citation numbers (1-based) of sources that were cut to whole sentences.
        budget: the budget packed to.
    """

    text: str = ""
    sources: list[Result] = field(default_factory=list)
    used_tokens: int = 0
    dropped: list[tuple[Result, str]] = field(default_factory=list)
    truncated: list[int] = field(default_factory=list)
    budget: int = DEFAULT_BUDGET


def estimate_tokens(text: str) -> int:
    """The fallback count when no tokenizer is at hand: four characters a token."""
    return math.ceil(len(text) / 4)


def source_header(number: int, r: Result) -> str:
    """``[3] Title, p. 12 — Chapter > Section`` (the page only for paged formats; "p. 3 (PDF page 5)" when the
    page prints another number)."""
    title = r.title or r.file_name or "Untitled"
    header = f"[{number}] {title}"
    if r.doc_type in ("pdf",) and r.page_number:
        header += ", " + page_phrase(r.page_number, r.page_label)
    if r.heading_path and r.heading_path != r.title:
        header += f" — {r.heading_path}"
    return header


def split_sentences(text: str) -> list[str]:
    """``text`` in sentences (and paragraphs and list items), each keeping its trailing space."""
    pieces, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        pieces.append(text[start : m.end()])
        start = m.end()
    if start < len(text):
        pieces.append(text[start:])
    return [p for p in pieces if p.strip()]


def pack_context(
    results: Sequence[Result],
    budget_tokens: int | None = None,
    count_tokens: Callable[[str], int] | None = None,
) -> PackedContext:
    """Pack ``results`` (best first) into ``budget_tokens`` counted with ``count_tokens``.

    Args:
        budget_tokens: defaults to 1,200 (``Settings.context_tokens``, ``LOCALRAG_RETRIEVAL_CONTEXT_TOKENS``).
        count_tokens: the LLM's token counter when it is loaded; characters / 4 otherwise.
    """
    budget = DEFAULT_BUDGET if budget_tokens is None else max(0, int(budget_tokens))
    count = count_tokens or estimate_tokens
    n = len(results)
    chosen: dict[int, str] = {}  # result index -> passage text used
    sep_cost = count(SEPARATOR) if n > 1 else 0

    def block_cost(i: int, passage: str) -> int:
        # The number is not known yet; a two-digit one is the dearest we will write.
        return count(source_header(max(10, n), results[i]) + "\n" + passage)

    used = 0
    for i, r in enumerate(results):  # whole passages first
        cost = block_cost(i, r.text) + (sep_cost if chosen else 0)
        if used + cost <= budget:
            chosen[i] = r.text
            used += cost
    for i, r in enumerate(results):  # then the leading whole sentences of those that did not fit
        if i in chosen:
            continue
        room = budget - used - (sep_cost if chosen else 0)
        part = _leading_sentences(
            r.text, functools.partial(block_cost, i), room, min(MIN_PART_TOKENS, budget // 4)
        )
        if part is not None:
            chosen[i] = part
            used += block_cost(i, part) + (sep_cost if len(chosen) > 1 else 0)

    packed = _assemble(results, chosen, budget, count)
    # Token counts are not additive across joins: trim from the worst source until the whole text fits.
    while packed.used_tokens > budget and chosen:
        del chosen[max(chosen)]
        packed = _assemble(results, chosen, budget, count)
    return packed


def _leading_sentences(text: str, cost: Callable[[str], int], room: int, least: int) -> str | None:
    best = None
    taken = ""
    for sentence in split_sentences(text):
        candidate = taken + sentence
        if cost(candidate.strip()) > room:
            break
        taken = candidate
        best = taken.strip()
    if best is None or cost(best) - cost("") < least:
        return None
    return best


def _assemble(
    results: Sequence[Result], chosen: dict[int, str], budget: int, count: Callable[[str], int]
) -> PackedContext:
    packed = PackedContext(budget=budget)
    blocks = []
    for i in sorted(chosen):
        r = results[i]
        passage = chosen[i]
        number = len(packed.sources) + 1
        source = r if passage == r.text else dataclasses.replace(r, text=passage)
        if passage != r.text:
            packed.truncated.append(number)
        packed.sources.append(source)
        blocks.append(source_header(number, r) + "\n" + passage)
    packed.dropped = [(r, "budget") for i, r in enumerate(results) if i not in chosen]
    packed.text = SEPARATOR.join(blocks)
    packed.used_tokens = count(packed.text) if packed.text else 0
    return packed
