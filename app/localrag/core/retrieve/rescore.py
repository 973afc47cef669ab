"""The best passage first: the top fused candidates ranked again by how well they match the question itself.

Fusion ranks by two lists' ranks; among near-identical passages (the same table in this year's and last year's
report, the same paragraph in two manuals) that leaves the first place to chance. The first
``Tuning.rescore_top`` candidates are scored again, without any model, from what a reader would check:

- ``fused``: the fused score, as a share of the best one;
- ``cover``: the question's content words found in the passage and its context, each weighted by how rare
  it is among the candidates (a word every candidate holds, such as the company name, tells none apart);
- ``line``: the same for the passage's best line or sentence (the words of a table row or a sentence
  together, not scattered over the page);
- ``phrase``: pairs of adjacent content words of the question found adjacent in the passage ("capital
  expenditure", "cash flow");
- ``exact``: numbers and identifiers the question writes, found verbatim (``FY2018`` → ``2018``,
  ``R_LIBS_USER``);
- ``heading``: the question's words in the passage's heading path or page head (a question "from the cash
  flow statement" and a page headed "Consolidated Statements of Cash Flows");
- ``table``: for a question that asks for a quantity ("how much", "what is the total …", a ratio, a rate, a
  percentage), the share of the passage's lines that are rows of figures ("Purchases of property, plant and
  equipment (1,577) (1,373) (1,420)"): the figure asked for is in a table more often than in prose.

``score = fused + Σ weight × feature``; the candidates beyond the first ``rescore_top`` keep their order after
them. The features are in each candidate's ``scores`` (``rescore``) for the developer pane.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from localrag.core.retrieve.results import Result
from localrag.core.text import spans as sp
from localrag.core.text.cells import asks_for_quantity, figures_share
from localrag.core.text.glyphs import letters

_LINES = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])|\n+")
_YEARS = re.compile(r"(?:FY|Q[1-4])\s?'?((?:19|20)?\d\d)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Weights:
    cover: float = 0.0
    line: float = 0.0
    phrase: float = 0.0
    exact: float = 0.0
    heading: float = 0.0
    table: float = 0.0

    @property
    def active(self) -> bool:
        return any(w > 0 for w in (self.cover, self.line, self.phrase, self.exact, self.heading, self.table))


def rescore(question: str, candidates: Sequence[Result], weights: Weights, top: int) -> list[Result]:
    """``candidates`` (best first) with the first ``top`` ordered again by ``weights`` (see the module)."""
    if not weights.active or top <= 1 or len(candidates) < 2:
        return list(candidates)
    head, tail = list(candidates[:top]), list(candidates[top:])
    terms = list(dict.fromkeys(stems_of(question)))
    if not terms:
        return list(candidates)
    exact = _exact_tokens(question)
    asks_quantity = weights.table > 0 and asks_for_quantity(question)
    pairs = _pairs(stems_of(question))
    qset = set(terms)
    stems, lines, heads = [], [], []
    for r in head:
        own, parts = _scan(r.text, qset)
        place = r.context.split("\n", 1)[1] if "\n" in r.context else r.heading_path
        place_stems = _scan(place, qset)[0]
        stems.append(_scan(r.context.split("\n", 1)[0], qset)[0] + place_stems + own)
        lines.append(parts)
        heads.append(set(place_stems))
    present = [set(sc) for sc in stems]
    df = Counter(t for p in present for t in set(terms) & p)
    n = len(head)
    idf = {t: math.log(1.0 + (n + 1) / (df[t] + 0.5)) for t in terms}
    total = sum(idf.values()) or 1.0
    best = max((r.scores.get("fused") or 0.0) for r in head) or 1.0
    scored = []
    for r, s, p, parts, in_place in zip(head, stems, present, lines, heads, strict=True):
        cover = sum(idf[t] for t in terms if t in p) / total
        heading = sum(idf[t] for t in terms if t in in_place) / total
        line = max((sum(idf[t] for t in terms if t in part) / total for part in parts), default=0.0)
        adjacent = set(itertools.pairwise(s))
        phrase = sum(1 for pair in pairs if pair in adjacent) / len(pairs) if pairs else 0.0
        body = f"{r.context}\n{r.text}"
        found = sum(1 for tok in exact if tok in body) / len(exact) if exact else 0.0
        table = figures_share(r.text) if asks_quantity else 0.0
        features = {
            "cover": cover,
            "line": line,
            "phrase": phrase,
            "exact": found,
            "heading": heading,
            "table": table,
        }
        score = (r.scores.get("fused") or 0.0) / best + sum(
            getattr(weights, name) * value for name, value in features.items()
        )
        r.scores["rescore"] = round(score, 6)
        scored.append((score, r))
    order = sorted(range(n), key=lambda i: -scored[i][0])
    return [scored[i][1] for i in order] + tail


_SCAN = re.compile(r"[a-z0-9]+(?:[._][a-z0-9]+)*|\n|[.!?;](?=\s)")


def _scan(text: str, wanted: set[str]) -> tuple[list[str], list[set[str]]]:
    """The passage's content stems in order, and per line or sentence the ``wanted`` stems it holds."""
    seq: list[str] = []
    lines: list[set[str]] = [set()]
    stop = sp.STOPWORDS
    for w in _SCAN.findall(letters(text).lower()):
        if w in "\n.!?;":
            if lines[-1]:
                lines.append(set())
            continue
        if w in stop or (len(w) == 1 and not w.isdigit()):
            continue
        stem = _stem(w)
        seq.append(stem)
        if stem in wanted:
            lines[-1].add(stem)
    return seq, lines


_TOKEN = re.compile(r"[a-z0-9]+(?:[._][a-z0-9]+)*")


def stems_of(text: str) -> list[str]:
    """Content words, lower case and lightly stemmed, a ligature read as its letters (a faster
    ``spans.content_terms`` for whole passages)."""
    return [
        _stem(w)
        for w in _TOKEN.findall(letters(text).lower())
        if w not in sp.STOPWORDS and (len(w) > 1 or w.isdigit())
    ]


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return sp.stem(word)


def _pairs(terms: list[str]) -> set[tuple[str, str]]:
    return {(a, b) for a, b in itertools.pairwise(terms) if a != b}


def _exact_tokens(question: str) -> list[str]:
    """Numbers (at least two digits) and identifiers the question writes; ``FY2018`` and ``Q2`` give their
    year."""
    found = [m.group(1) for m in _YEARS.finditer(question) if len(m.group(1)) == 4]
    found += [n for n in sp.numbers(question) if sum(ch.isdigit() for ch in n) >= 2]
    found += [i for i in sp.identifiers(question) if any(ch in i for ch in "_.()/") or i.isupper()]
    return list(dict.fromkeys(found))
