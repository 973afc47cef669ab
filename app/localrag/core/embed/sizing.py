"""The one function that sizes texts to the embedding model's input: every text sent to the model goes through
``fit_to_input`` first (a question, a candidate sentence, a window of a source, a chunk in its context).

A text longer than the model's input (``max_tokens`` word pieces, special tokens included, counted with the
model's own tokenizer) is cut at a word piece, from its start: its vector is the vector of what the model can
read. A PDF line without spaces, a pasted log, a 5,000-character question: each gets a vector, none an error.
Chunks are sized at ingestion so that nothing is cut (``core/ingest/chunking.py``); a chunk that still needs
cutting is logged, since it means the chunker missed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

log = logging.getLogger("localrag.embed.sizing")


def fit_to_input(embedder: Any, texts: Sequence[str], *, expect_fit: bool = False) -> list[str]:
    """``texts`` in their order, each cut (at a word piece) to what ``embedder`` takes.

    Args:
        embedder: the model (``max_tokens`` and its ``tokenizer``, with padding and truncation off); a model
            without either is taken to read anything.
        expect_fit: the texts were sized before (chunks): a cut is logged as a warning.
    """
    texts = [str(t) for t in texts]
    limit = int(getattr(embedder, "max_tokens", 0) or 0)
    tokenizer = getattr(embedder, "tokenizer", None)
    if not limit or tokenizer is None or not texts:
        return texts
    encodings = tokenizer.encode_batch(texts)
    out = list(texts)
    for i, enc in enumerate(encodings):
        if len(enc.ids) > limit:
            out[i] = _cut(tokenizer, texts[i], enc, limit)
            (log.warning if expect_fit else log.debug)(
                "a text of %d word pieces was cut to the embedding model's %d (%d of %d characters kept)",
                len(enc.ids),
                limit,
                len(out[i]),
                len(texts[i]),
            )
    return out


def fits(embedder: Any, text: str) -> bool:
    """Whether ``text`` reaches the model whole."""
    return fit_to_input(embedder, [text])[0] == text


def _cut(tokenizer: Any, text: str, enc: Any, limit: int) -> str:
    """The longest start of ``text`` that ends at a word piece and encodes in at most ``limit`` pieces (a
    word cut in two may take more pieces than it did whole: then fewer are kept)."""
    ends = [
        end for (_, end), special in zip(enc.offsets, enc.special_tokens_mask, strict=True) if not special
    ]
    keep = limit - (len(enc.ids) - len(ends))
    while keep > 0:
        cut = text[: ends[keep - 1]]
        over = len(tokenizer.encode(cut).ids) - limit
        if over <= 0:
            return cut
        keep -= over
    return ""
