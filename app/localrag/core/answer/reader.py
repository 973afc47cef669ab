"""The reader: how likely a candidate span of the best passages is to be the answer, by learned weights.

Each candidate (one to three consecutive sentences, a list block or a row of figures) gets features from what
the app already has — the embedding model's similarity to the question and to its parts, the question's words
it holds (weighted by rarity), its BM25 among the candidates, its passage's rank, whether it carries what the
question asks for (a number, an identifier, a list, a yes or no, a reason), and whether it is a heading, a
question, a fragment or a lead-in — and the reader combines them with a logistic model fitted on a tuning set
of questions (``localrag eval reader``; the figures are in docs/benchmarks.md, "Answers"). The model ships as
plain weights in ``resources/reader/reader_model.json``: no learning library is needed to run it.

The same model decides whether the documents answer at all: when the best span's probability is under the
model's ``threshold`` nothing is quoted.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from localrag.core import paths
from localrag.core.text import spans as sp

# What a question asks for, read from its wording.
_IDENTIFIER_Q = re.compile(
    r"\b(which|what)\b.{0,40}\b(variable|option|setting|command|function|flag|file|directory|folder|path|"
    r"argument|parameter|key|field|package|module|library|keyword|macro|name|program|tool|environment)s?\b"
    r"|\bwhat (?:do|should) i (?:type|run|call|use|set|pass|add|put)\b|\bhow do i (?:call|invoke|run)\b",
    re.IGNORECASE,
)
_NUMBER_Q = re.compile(
    r"\bhow (?:many|much|big|large|long|old|often|far|wide|high|small|fast|slow)\b|"
    r"\bwhat (?:is|are|was|were) the (?:default|maximum|minimum|max|min|limit|size|number|version|value|year|"
    r"range|length|width|percentage|rate|amount|total|cost|price)\b|\b(?:default|maximum|minimum|limit)\b.{0,30}\?$|"
    r"\bwhat (?:year|version|percentage|number)\b|\bwhen (?:was|were|did|is)\b",
    re.IGNORECASE,
)
_LIST_Q = re.compile(
    r"\b(?:which|what)\s+(?:\w+\s+){0,3}(?:are|were)\b|\bin (?:what|which) order\b|\blist\b|"
    r"\bname (?:the|all)\b|\bwhat (?:kinds|types|sorts)\b|\bsteps\b|\bwhich ones\b",
    re.IGNORECASE,
)
_YESNO_Q = re.compile(
    r"^\s*(?:is|are|was|were|can|could|do|does|did|should|will|would|must|may|has|have)\b", re.IGNORECASE
)
_WHY_Q = re.compile(r"\bwhy\b|\bwhat (?:causes|caused|is the reason)\b|\bhow come\b", re.IGNORECASE)
_HOW_Q = re.compile(
    r"\bhow (?:do|can|should|to|would)\b|\bwhat (?:do|should) i do\b|\bsteps?\b", re.IGNORECASE
)

# A question that sets two things side by side (often in two documents).
_COMPARE_Q = re.compile(
    r"\b(?:both|compared?|comparing|the same|match(?:es)?|differ(?:s|ent|ence)?|versus|vs\.?|how close)\b",
    re.IGNORECASE,
)

_REASON = re.compile(
    r"\b(?:because|since|so that|due to|in order to|therefore|thus|as a result|otherwise)\b", re.I
)
_NEGATION = re.compile(
    r"\b(?:not|no|never|cannot|can't|won't|don't|doesn't|isn't|aren't|must not|only)\b", re.I
)
_MODAL = re.compile(r"\b(?:must|should|may|can|is required|are required|recommended)\b", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^\s*(?:[-•*·▪◦]|\(?\d{1,2}[.)]|\(?[a-z][.)])\s+\S", re.MULTILINE)
_IMPERATIVE = re.compile(
    r"^\s*(?:use|run|set|add|type|call|install|create|open|select|click|edit|put|change|remove|enter|press|"
    r"make|start|stop|check|see|specify|pass|define|write|copy|move)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Asks:
    """What a question asks for."""

    identifier: bool
    number: bool
    listing: bool
    yesno: bool
    why: bool
    how: bool
    compare: bool = False

    @classmethod
    def of(cls, question: str) -> Asks:
        q = question.strip()
        return cls(
            identifier=bool(_IDENTIFIER_Q.search(q)),
            number=bool(_NUMBER_Q.search(q)),
            listing=bool(_LIST_Q.search(q)),
            yesno=bool(_YESNO_Q.search(q)),
            why=bool(_WHY_Q.search(q)),
            how=bool(_HOW_Q.search(q)),
            compare=bool(_COMPARE_Q.search(q)),
        )

    @property
    def kind(self) -> str:
        """The one-word kind shown in the developer pane."""
        for name in ("identifier", "number", "listing", "yesno", "why", "how"):
            if getattr(self, name):
                return {"listing": "list"}.get(name, name)
        return ""


@dataclass
class SpanFacts:
    """What the reader knows of one candidate span, before it is turned into features."""

    text: str
    sentences: int  # how many sentences it joins
    semantic: float  # the best of its sentences' similarities to the question
    semantic_first: float  # its first sentence's
    semantic_part: float  # the best similarity to one part of a two-part question (the question's else)
    lexical: float  # share of the question's words (weighted by rarity) the span holds
    lexical_context: float  # the same for its heading and the sentence before
    bm25: float  # BM25 of the span for the question's words, among the candidates
    passage_rank: int  # 0 for the best passage
    passage_similarity: float
    position: int  # the first sentence's index in its passage
    heading: bool
    question_sentence: bool
    after_heading_match: float  # the lexical match of the heading or question right before it (0 if none)
    after_lead_in: bool  # the sentence before ends with a colon
    new_identifier: bool  # holds an identifier the question did not name
    new_number: bool  # holds a number the question did not name
    figures_row: bool
    row_named: bool  # a row of figures whose label the question names
    domain: float = 0.0  # what a domain pack adds (``core/hooks``); 0 without one
    semantic_rank: int = 0  # its place among the candidates by ``semantic`` (0: the most similar)
    passage_best: bool = False  # the most similar read sentence of its passage is among its sentences
    novelty: float = 0.0  # the share of its content words the question does not hold (what it adds)
    heading_match: float = 0.0  # the question's words its passage's heading holds, weighted by rarity
    entry: bool = False  # a definition list's entry: its term ("-p", "--quiet") on a line, then what it means
    extra: dict[str, float] = field(default_factory=dict)


def features(asks: Asks, f: SpanFacts, best: dict[str, float]) -> dict[str, float]:
    """The reader's features of one span; ``best`` holds the best ``semantic``, ``lexical`` and ``bm25`` among
    the candidates (a span is judged against its rivals as well as on its own)."""
    text = f.text
    flat = sp.flat(text)
    terms = sp.content_terms(flat)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    items = len(_LIST_ITEM.findall(text))
    listing = items >= 2 or (len(lines) >= 3 and all(len(ln) < 80 for ln in lines)) or flat.count(",") >= 3
    ends_colon = flat.rstrip().endswith(":")
    return {
        "semantic": f.semantic,
        "semantic_first": f.semantic_first,
        "semantic_part": f.semantic_part,
        "semantic_gap": f.semantic - best.get("semantic", 0.0),
        "lexical": f.lexical,
        "lexical_context": f.lexical_context,
        "lexical_gap": f.lexical - best.get("lexical", 0.0),
        "bm25": f.bm25 / best["bm25"] if best.get("bm25") else 0.0,
        "passage": 1.0 / (1.0 + 0.5 * f.passage_rank),
        "passage_similarity": f.passage_similarity,
        "first_in_passage": float(f.position == 0),
        "two_sentences": float(f.sentences == 2),
        "three_sentences": float(f.sentences >= 3),
        "length": math.log1p(len(flat)) / 6.0,
        "short": float(len(terms) < 3),
        "long": float(len(flat) > 300),
        "heading": float(f.heading),
        "question_sentence": float(f.question_sentence),
        "lead_in": float(ends_colon),
        "after_lead_in": float(f.after_lead_in),
        "after_heading_match": f.after_heading_match,
        "code": float(sp.is_code_line(flat)),
        "number_asked": float(asks.number and f.new_number),
        "number_unasked": float(not asks.number and f.new_number),
        "identifier_asked": float(asks.identifier and f.new_identifier),
        "list_asked": float(asks.listing and listing),
        "list_unasked": float(not asks.listing and listing),
        "yesno_asked": float(asks.yesno and bool(_NEGATION.search(flat) or _MODAL.search(flat))),
        "reason_asked": float(asks.why and bool(_REASON.search(flat))),
        "how_asked": float(asks.how and bool(_IMPERATIVE.search(flat) or _MODAL.search(flat))),
        "figures_row": float(f.figures_row),
        "row_named": float(f.row_named),
        "domain": f.domain,
        "semantic_top": float(f.semantic_rank == 0),
        "semantic_rank": 1.0 / (1.0 + f.semantic_rank),
        "passage_best": float(f.passage_best),
        "novelty": f.novelty,
        "semantic_lexical": f.semantic * f.lexical,
        "semantic_novelty": f.semantic * f.novelty,
        "heading_match": f.heading_match,
        "fragment": float(_fragment(flat) and not f.entry),  # an entry's term may start in lower case
        **f.extra,
    }


def _fragment(flat: str) -> bool:
    """Whether a span reads as a piece of a sentence: it starts in lower case or with a joining word, or ends
    without a sentence's closing mark."""
    first = flat[:1]
    ends = flat.rstrip()[-1:]
    return (first.islower() and not sp.has_identifier(flat.split(" ", 1)[0])) or ends not in ".!?:)\"'”’"


def logistic(z: float) -> float:
    """The probability of log-odds ``z`` (clamped, so that no weight can overflow it)."""
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


# What says whether the documents answer at all, read from the question's candidates as a whole.
ANSWERS_SIGNALS = ("top", "margin", "semantic_max", "lexical_max", "coverage", "coverage_first", "similarity")


@dataclass(frozen=True)
class AnswersModel:
    """Whether the passages found answer the question at all: a logistic model over ``ANSWERS_SIGNALS``
    (the best span's probability and its lead over the next, the best similarity and word match of a span,
    the share of the question's words, weighted by rarity, that the passages read hold anywhere and that the
    best passage holds, and the best passage's similarity); under ``threshold`` nothing is quoted."""

    names: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float
    threshold: float

    def probability(self, signals: dict[str, float]) -> float:
        pairs = zip(self.names, self.weights, strict=True)
        z = self.intercept + sum(w * signals.get(n, 0.0) for n, w in pairs)
        return logistic(z)

    def to_json(self) -> dict[str, Any]:
        return {
            "names": list(self.names),
            "weights": [round(w, 6) for w in self.weights],
            "intercept": round(self.intercept, 6),
            "threshold": round(self.threshold, 4),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AnswersModel:
        return cls(
            names=tuple(data["names"]),
            weights=tuple(float(w) for w in data["weights"]),
            intercept=float(data["intercept"]),
            threshold=float(data["threshold"]),
        )


@dataclass(frozen=True)
class ReaderModel:
    """A fitted logistic model: ``p = 1 / (1 + exp(-(b + Σ wᵢ (xᵢ - meanᵢ) / scaleᵢ)))`` over ``names``;
    ``threshold``: the least probability quoted as an answer; ``second``: the share of the best span's
    probability another span needs to be quoted beside it."""

    names: tuple[str, ...]
    weights: tuple[float, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    intercept: float
    threshold: float
    second: float
    fitted_on: str = ""
    answers: AnswersModel | None = None

    def probability(self, feats: dict[str, float]) -> float:
        z = self.intercept
        for name, w, mean, scale in zip(self.names, self.weights, self.means, self.scales, strict=True):
            z += w * (feats.get(name, 0.0) - mean) / scale
        return logistic(z)

    def contributions(self, feats: dict[str, float]) -> list[tuple[str, float]]:
        """What each feature added to the log-odds, largest first."""
        out = [
            (name, w * (feats.get(name, 0.0) - mean) / scale)
            for name, w, mean, scale in zip(self.names, self.weights, self.means, self.scales, strict=True)
        ]
        return sorted(out, key=lambda nw: abs(nw[1]), reverse=True)

    def declines(self, signals: dict[str, float], *, similarities: bool = True) -> bool:
        """Whether the documents do not seem to answer, by the best span's probability or by ``answers``
        (which reads the embedding model's similarities: without them, ``similarities=False``, only the best
        span's probability decides)."""
        if signals.get("top", 0.0) < self.threshold:
            return True
        gate = self.answers if similarities else None
        return gate is not None and gate.probability(signals) < gate.threshold

    def to_json(self) -> dict[str, Any]:
        out = {
            "names": list(self.names),
            "weights": [round(w, 6) for w in self.weights],
            "means": [round(m, 6) for m in self.means],
            "scales": [round(s, 6) for s in self.scales],
            "intercept": round(self.intercept, 6),
            "threshold": round(self.threshold, 4),
            "second": round(self.second, 4),
            "fitted_on": self.fitted_on,
        }
        if self.answers is not None:
            out["answers"] = self.answers.to_json()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReaderModel:
        return cls(
            names=tuple(data["names"]),
            weights=tuple(float(w) for w in data["weights"]),
            means=tuple(float(m) for m in data["means"]),
            scales=tuple(float(s) or 1.0 for s in data["scales"]),
            intercept=float(data["intercept"]),
            threshold=float(data["threshold"]),
            second=float(data["second"]),
            fitted_on=str(data.get("fitted_on", "")),
            answers=AnswersModel.from_json(data["answers"]) if data.get("answers") else None,
        )


@cache
def model() -> ReaderModel:
    """The shipped reader model."""
    return ReaderModel.from_json(json.loads(model_file().read_text(encoding="utf-8")))


def model_file() -> Path:
    return paths.resources_dir() / "reader" / "reader_model.json"
