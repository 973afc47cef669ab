"""What a question searches for, and which passages found are worth giving to the model.

- A follow-up ("and on Windows?", "How often should I do it?") is searched together with the chat's previous
  question, so both the vector and the keyword leg see the topic; the prompt still carries the question as
  asked, after the earlier exchange.
- Passages under a cosine similarity floor are noise to a small model and are left out (a BM25 match lowers
  the bar); strict mode asks for more. Measured on the chat tests' library: unrelated questions scored at most
  0.22 against it, related ones 0.32-0.74 (docs/benchmarks.md, "Chat").
- When one passage matches well, those under half its similarity are left out too: next to a 0.72 passage on
  tides, a 0.27 passage on glaciers only gave the small model something else to write about.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from localrag.core.retrieve import Result

# Passages given to the model must reach this cosine similarity (a BM25 match lowers the bar): below it a
# passage is noise to a small model. Strict mode asks for more. Measured in docs/benchmarks.md, "Chat".
MIN_SIMILARITY = 0.25
MIN_SIMILARITY_KEYWORD = 0.15
STRICT_MIN_SIMILARITY = 0.30
STRICT_MIN_SIMILARITY_KEYWORD = 0.20
# Passages under this fraction of the best passage's similarity are left out as well.
RELATIVE_TO_BEST = 0.5

_ANAPHORA = {
    "it",
    "its",
    "this",
    "that",
    "these",
    "those",
    "they",
    "them",
    "their",
    "there",
    "he",
    "she",
    "his",
    "her",
    "same",
    "one",
    "ones",
    "also",
    "else",
    "former",
    "latter",
    "above",
}
_LEADS = (
    "and ",
    "and?",
    "but ",
    "or ",
    "so ",
    "also",
    "what about",
    "how about",
    "then ",
    "same ",
    "why?",
    "how?",
    "when?",
    "where?",
)
# A question this short (in words) is taken as a follow-up.
SHORT_FOLLOW_UP_WORDS = 4


def is_follow_up(question: str) -> bool:
    """Whether ``question`` leans on the one before: very short, opening with "and"/"what about", or with a
    pronoun that points back ("it", "that", "there")."""
    q = question.strip().lower()
    words = re.findall(r"[a-z0-9']+", q)
    return len(words) <= SHORT_FOLLOW_UP_WORDS or q.startswith(_LEADS) or any(w in _ANAPHORA for w in words)


def follow_up_query(question: str, earlier: Sequence[str]) -> str:
    """What to search for: a follow-up is searched together with the previous question of the chat ("and on
    Windows?" after "How do I install it on Linux?"), so both the vector and the keyword leg see the topic."""
    if earlier and is_follow_up(question):
        return f"{earlier[-1].strip()} {question.strip()}"
    return question


def relevant(results: Sequence[Result], strict: bool = False) -> list[Result]:
    """The passages worth giving to the model (see ``MIN_SIMILARITY`` and ``RELATIVE_TO_BEST``)."""
    floor, keyword_floor = (
        (STRICT_MIN_SIMILARITY, STRICT_MIN_SIMILARITY_KEYWORD)
        if strict
        else (MIN_SIMILARITY, MIN_SIMILARITY_KEYWORD)
    )
    similarities = [_vector(r) for r in results]
    best = max((v for v in similarities if v is not None), default=None)
    keep = []
    for r, vector in zip(results, similarities, strict=True):
        if vector is None:  # keyword mode: a BM25 match is all the evidence there is
            keep.append(r)
        elif (vector >= floor or (r.scores.get("bm25_rank") is not None and vector >= keyword_floor)) and (
            best is None or vector >= RELATIVE_TO_BEST * best
        ):
            keep.append(r)
    return keep


def _vector(r: Result) -> float | None:
    return r.scores.get("vector") if r.scores else r.similarity
