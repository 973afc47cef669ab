"""The answer taken from the sources: the sentences of the retrieved passages that best answer the question.

A small language model cannot be trusted to restate a passage; the passage itself can be. For each grounded
question the sentences of the best passages are scored and the best one to three are shown as the answer, each
with its source number, page and character offsets (so the viewer highlights exactly that sentence).

A sentence's score combines, with weights chosen on the answer benchmark (docs/benchmarks.md, "Answers"):

- ``semantic``: the embedding model's cosine similarity of the sentence and the question;
- ``lexical``: the share of the question's content words the sentence holds, each weighted by how rare it is
  among the candidate sentences (a word every candidate shares says little);
- ``passage``: how highly retrieval ranked its passage;
- ``kind``: what the question asks for — a "which variable / option / command" question wants an identifier,
  a "how many / how big / what is the default" question a number;
- ``context``: a sentence right after a heading or a question (an FAQ's entry) that matches the question
  inherits part of that match, and headings, questions and fragments themselves are marked down.

When even the best sentence scores under ``MIN_SCORE`` the documents do not seem to answer the question:
nothing is quoted as an answer, and the closest passages are listed instead.
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from localrag.core import hooks
from localrag.core.text import spans as sp
from localrag.core.text.cells import (
    Cells,
    cells_of,
    is_column_headings,
    is_figures_row,
    split_row,
)

# How many of the best passages are read for sentences.
PASSAGES = 5
# At most this many sentences are scored by the embedding model (the best by the cheap features first).
EMBED_CANDIDATES = 16
# Score weights (tuned on the answer benchmark's questions).
W_SEMANTIC = 0.40
W_LEXICAL = 0.25
W_PASSAGE = 0.15
# The lexical match counts the sentence's own words, and in part those of its heading and the sentence before
# ("The default is 79 by 24." answers a question about the dumb terminal its heading names).
CONTEXT_WORDS = 0.4
KIND_BONUS = 0.08
# A row of figures holding a line a measure the question names is computed from: the answer's figures, though
# it shares no word with the question ("capital expenditure" → "Purchases of property, plant and equipment
# (1,577)"). Not when the question asks why (what drove a change is said in words).
MEASURE_BONUS = 0.16
_EXPLAINS = re.compile(r"\b(?:why|drove|drives|driven|drivers?|explain\w*|reasons?|caus\w+)\b", re.IGNORECASE)
HEADING_PENALTY = 0.20
QUESTION_PENALTY = 0.15
FRAGMENT_PENALTY = 0.10
CONTEXT_SHARE = 0.25
# The best sentence must reach this score to be quoted as the answer.
MIN_SCORE = 0.30
# A further sentence is quoted when it scores at least this share of the best one.
SECOND_SHARE = 0.90
MAX_SPANS = 2
# A best sentence holding this share of the question's words (weighted) is quoted alone.
WHOLE_ANSWER = 1.0
# A sentence longer than this (characters) is cut at a clause boundary for display; its offsets shrink with
# it.
MAX_SPAN_CHARS = 420

ANSWERED, NOT_FOUND = "answered", "not_found"
NOT_FOUND_TEXT = "Your documents do not seem to answer this. The closest passages are listed below."

_IDENTIFIER_Q = re.compile(
    r"\b(which|what)\b.{0,40}\b(variable|option|setting|command|function|flag|file|directory|folder|path|"
    r"argument|parameter|key|field|package|module|library|keyword|macro|name|program|tool|environment)s?\b"
    r"|\bwhat (?:do|should) i (?:type|run|call|use|set)\b|\bhow do i (?:call|invoke|run)\b",
    re.IGNORECASE,
)
_NUMBER_Q = re.compile(
    r"\bhow (?:many|much|big|large|long|old|often|far|wide|high|small)\b|\bwhat (?:is|are) the "
    r"(?:default|maximum|minimum|max|min|limit|size|number|version|value|year|range|length|width)\b|"
    r"\b(?:default|maximum|minimum|limit)\b.{0,30}\?$|\bwhat (?:year|version|percentage|number)\b",
    re.IGNORECASE,
)


@dataclass
class EvidenceSpan:
    """One quoted sentence: its text, the source ``[number]`` it is from, where it is, and why it was chosen.

    ``char_start``/``char_end`` are offsets in the page text (like a chunk's), ``-1`` when the passage it came
    from was not an exact slice of the page (a join of chunks that did not overlap exactly)."""

    text: str
    number: int
    doc_id: int
    title: str
    path: str
    page_number: int
    char_start: int
    char_end: int
    score: float
    features: dict[str, float] = field(default_factory=dict)
    # Quoted rows of figures read as cells under their columns' headings (``cells.Cells.to_dict``, a row
    # each), else empty.
    cells: list[dict[str, Any]] = field(default_factory=list)
    domain: str = ""  # the domain pack acting on its document (``core/hooks.py``)

    @property
    def rows(self) -> list[Cells]:
        return [row for row in map(Cells.from_dict, self.cells) if row is not None]

    @property
    def shown(self) -> str:
        """The sentence as a person reads it; rows of figures as their labels and each value in its column."""
        rows = self.rows
        return "; ".join(row.text() for row in rows) if rows else display(self.text)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["score"] = round(self.score, 4)
        d["features"] = {k: round(v, 4) for k, v in self.features.items()}
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvidenceSpan:
        known = {f: data[f] for f in cls.__dataclass_fields__ if f in data}
        known.setdefault("features", {})
        known.setdefault("cells", [])
        for name, default in (
            ("text", ""),
            ("number", 0),
            ("doc_id", 0),
            ("title", ""),
            ("path", ""),
            ("page_number", 1),
            ("char_start", -1),
            ("char_end", -1),
            ("score", 0.0),
        ):
            known.setdefault(name, default)
        return cls(**known)


@dataclass
class Evidence:
    """What the sources answer: ``status`` is ``answered`` (``spans`` hold the answer) or ``not_found``
    (``closest`` are the numbers of the passages to read instead). ``kind`` is the question's kind
    (``identifier``, ``number`` or ``""``); ``candidates`` are the best-scored sentences, for the developer
    pane."""

    status: str
    spans: list[EvidenceSpan] = field(default_factory=list)
    closest: list[int] = field(default_factory=list)
    kind: str = ""
    candidates: list[EvidenceSpan] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def answered(self) -> bool:
        return self.status == ANSWERED

    def text(self) -> str:
        """The answer as a person reads it: each sentence on one line with its ``[n]``."""
        if not self.answered:
            return NOT_FOUND_TEXT
        return "\n".join(f"{s.shown} [{s.number}]" for s in self.spans)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "kind": self.kind,
            "spans": [s.to_dict() for s in self.spans],
            "closest": list(self.closest),
            "candidates": [s.to_dict() for s in self.candidates],
            "seconds": round(self.seconds, 4),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Evidence | None:
        if not data:
            return None
        return cls(
            status=str(data.get("status") or NOT_FOUND),
            spans=[EvidenceSpan.from_dict(s) for s in data.get("spans") or []],
            closest=[int(n) for n in data.get("closest") or []],
            kind=str(data.get("kind") or ""),
            candidates=[EvidenceSpan.from_dict(s) for s in data.get("candidates") or []],
            seconds=float(data.get("seconds") or 0.0),
        )


def display(text: str) -> str:
    """A sentence as shown: on one line, unless it is several lines of code or a table."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) > 1 and all(sp.is_code_line(ln) or len(ln) < 40 for ln in lines):
        return (
            "`" + "` `".join(lines) + "`" if all(sp.is_code_line(ln) for ln in lines) else " · ".join(lines)
        )
    flat = sp.flat(text)
    return f"`{flat}`" if sp.is_code_line(flat) else flat


def question_kind(question: str) -> str:
    if _IDENTIFIER_Q.search(question):
        return "identifier"
    if _NUMBER_Q.search(question.strip()):
        return "number"
    return ""


@dataclass
class _Candidate:
    span: sp.Span
    source: Any  # a packed source (``Result``): text, doc_id, title, path, page_number, char_start…
    number: int
    rank: int
    index: int  # the sentence's position in its passage
    terms: set[str]
    heading: bool
    context_terms: set[str] = field(default_factory=set)  # its heading's and the previous sentence's
    features: dict[str, float] = field(default_factory=dict)
    score: float = 0.0


def find_evidence(
    question: str,
    sources: Sequence[Any],
    embed: Callable[[list[str]], np.ndarray] | None,
    *,
    question_vector: np.ndarray | None = None,
    keep: int = 8,
    pages: dict[tuple[int, int], str] | None = None,
) -> Evidence:
    """The sentences of ``sources`` (numbered from 1, best first) that best answer ``question``.

    A question in two parts ("why …, and how should I …?") gets the best sentence for each part as well.

    Args:
        embed: the embedding model (a list of texts → unit vectors); ``None`` scores by words alone.
        question_vector: the question's vector when already at hand (retrieval computed it).
        keep: how many of the best-scored sentences ``Evidence.candidates`` keeps (the developer pane).
        pages: the text of the sources' pages by ``(doc_id, page_number)``: a quoted row of figures is read as
            cells under the column headings above it (``cells``).
    """
    started = time.monotonic()
    kind = question_kind(question)
    candidates = _candidates(sources[:PASSAGES])
    parts = question_parts(question)
    if not candidates or (not _terms(question) and embed is None):
        return Evidence(NOT_FOUND, closest=_closest(sources), kind=kind, seconds=time.monotonic() - started)
    for c in candidates:
        c.features["passage"] = 1.0 / (1.0 + 0.5 * c.rank)
    _lexical(question, candidates)
    # Features the domain pack acting on a candidate's document adds (``hooks.evidence_features``): a row of
    # the lines a measure the question names is computed from, though it shares no word with it.
    figures = not _EXPLAINS.search(question)
    needed = {id(c) for c in candidates if _pack_features(question, c).get("measure_row")}
    # The embedding model reads the most promising sentences only (its cost grows with their number).
    candidates.sort(
        key=lambda c: (id(c) in needed, c.features["lexical"], c.features["passage"]), reverse=True
    )
    scored = candidates[:EMBED_CANDIDATES]
    part_sims: list[np.ndarray] = []
    if embed is not None:
        asks = ([] if question_vector is not None else [question]) + (parts if len(parts) > 1 else [])
        vectors = embed(asks + [sp.flat(c.span.text) for c in scored])
        qv = question_vector if question_vector is not None else vectors[0]
        sentences = vectors[len(asks) :]
        for c, sim in zip(scored, sentences @ np.asarray(qv, dtype=np.float32), strict=True):
            c.features["semantic"] = float(sim)
        part_sims = (
            [sentences @ v for v in vectors[len(asks) - len(parts) : len(asks)]] if len(parts) > 1 else []
        )
    asked = asked_for(question)
    named = frozenset(sp.content_terms(question))
    for c in scored:
        _score(c, kind, asked, named, measure_row=id(c) in needed, figures=figures)
    _carry_context(scored)
    chosen = _choose(scored)
    for i, part in enumerate(parts if len(parts) > 1 else []):
        chosen = _choose_for_part(part, i, scored, part_sims, kind, chosen)
    scored.sort(key=lambda c: c.score, reverse=True)
    top = [_span(c) for c in scored[:keep]]
    if not chosen:
        return Evidence(
            NOT_FOUND,
            closest=_closest(sources),
            kind=kind,
            candidates=top,
            seconds=time.monotonic() - started,
        )
    order = sorted(chosen, key=lambda c: (c.number, c.span.start))
    spans = [_span(c) for c in order]
    for span in spans:
        span.cells = _cells(span, question, pages or {})
    return Evidence(
        ANSWERED,
        spans=spans,
        kind=kind,
        candidates=top,
        seconds=time.monotonic() - started,
    )


_PARTS = re.compile(
    r",?\s+(?:and|but)\s+(?=(?:how|what|which|why|when|where|who|is|are|do|does|can|should|could|would|will)\b)",
    re.IGNORECASE,
)


def question_parts(question: str) -> list[str]:
    """A question asking two things ("why …, and how …?") as its parts; otherwise the question alone."""
    parts = [p.strip() for p in _PARTS.split(question) if len(p.split()) >= 3]
    return parts if len(parts) > 1 else [question]


def _terms(text: str) -> list[str]:
    return [t for t in sp.content_terms(text) if t not in sp.QUESTION_WORDS]


def _lexical(question: str, candidates: list[_Candidate], key: str = "lexical") -> None:
    weights = _term_weights(_terms(question), candidates)
    total = sum(weights.values()) or 1.0
    for c in candidates:
        own = sum(w for t, w in weights.items() if t in c.terms) / total
        around = sum(w for t, w in weights.items() if t in c.context_terms) / total
        c.features[key] = (1 - CONTEXT_WORDS) * own + CONTEXT_WORDS * around
        if key == "lexical":
            c.features["covered"] = own


def _choose(scored: list[_Candidate]) -> list[_Candidate]:
    """The best sentence if it is good enough, the ones nearly as good, and the line a colon announces."""
    ranked = sorted(scored, key=lambda c: c.score, reverse=True)
    if not ranked or ranked[0].score < MIN_SCORE:
        return []
    best = ranked[0]
    chosen = [best]
    for c in ranked[1:]:
        if best.features.get("covered", 0.0) >= WHOLE_ANSWER:  # it holds every word asked about
            break
        if len(chosen) >= MAX_SPANS or c.score < SECOND_SHARE * best.score:
            break
        if c.heading or any(_overlaps(c, o) for o in chosen):
            continue
        if best.features.get("kind") == MEASURE_BONUS and c.features.get("kind") != MEASURE_BONUS:
            continue  # the figures a measure is computed from answer it; a sentence beside them does not
        chosen.append(c)
    return chosen + _continuation(best, scored, chosen)


def _choose_for_part(
    part: str, i: int, scored: list[_Candidate], sims: list[np.ndarray], kind: str, chosen: list[_Candidate]
) -> list[_Candidate]:
    """Adds the best sentence for one part of a two-part question when the answer lacks one."""
    key = f"lexical_{i}"
    _lexical(part, scored, key)
    part_kind = question_kind(part) or kind

    def part_score(j: int, c: _Candidate) -> float:
        semantic = float(sims[i][j]) if sims else 0.0
        bonus = c.features.get("kind", 0.0) if part_kind == kind else 0.0
        return (
            _weighted(semantic, c.features[key], c.features["passage"])
            + bonus
            + c.features.get("penalty", 0.0)
            + c.features.get("context", 0.0)
        )

    j, best = max(enumerate(scored), key=lambda jc: part_score(*jc))
    if best in chosen or part_score(j, best) < MIN_SCORE or len(chosen) >= MAX_SPANS + 1:
        return chosen
    if any(_overlaps(best, o) for o in chosen):
        return chosen
    return [*chosen, best]


def _candidates(sources: Sequence[Any]) -> list[_Candidate]:
    out = []
    for rank, src in enumerate(sources):
        text = str(getattr(src, "text", "") or "")
        heading_terms = set(sp.content_terms(str(getattr(src, "heading_path", "") or "").split(" > ")[-1]))
        spans = with_terms(split_long(sp.split_spans(text)), text)
        previous: set[str] = set()
        for index, span in enumerate(spans):
            terms = set(sp.content_terms(span.text))
            if not terms:
                continue
            # A table's column headings count as a heading: the rows under them inherit their match.
            domain = str(getattr(src, "domain", "") or "")
            heading = _looks_like_heading(span, heading_terms, domain) or is_column_headings(span.text)
            out.append(
                _Candidate(span, src, rank + 1, rank, index, terms, heading, terms | heading_terms | previous)
            )
            previous = terms
    return out


def with_terms(spans: list[sp.Span], text: str) -> list[sp.Span]:
    """A definition list's entries whole: a term on its own line ("nocheck", "-p", "‘uninstall’") joined to
    the sentence that describes it, which alone would not say what it describes."""
    out: list[sp.Span] = []
    for s in spans:
        prev = out[-1] if out else None
        if (
            prev is not None
            and _is_term(prev.text)
            and s.text[:1].isupper()
            and text[prev.end : s.start].count("\n") <= 1
        ):
            out[-1] = sp.Span(prev.start, s.end, text[prev.start : s.end])
        else:
            out.append(s)
    return out


def _is_term(line: str) -> bool:
    line = line.strip()
    if "\n" in line or len(line.split()) > 3 or line[-1:] in ".:;!?,":
        return False
    return line[:1] in "-‘'\"`" or line[:1].islower() or sp.has_identifier(line)


def split_long(spans: list[sp.Span]) -> list[sp.Span]:
    """Sentences longer than ``MAX_SPAN_CHARS`` cut at their clauses (after a semicolon or colon, or before a
    conjunction that follows a comma)."""
    out = []
    for s in spans:
        if len(s.text) <= MAX_SPAN_CHARS:
            out.append(s)
            continue
        cuts = [0]
        for m in re.finditer(r"(?<=[;:])\s+|(?<=,)\s+(?=(?:and|but|or|which|so|while|because)\b)", s.text):
            if m.start() - cuts[-1] >= MAX_SPAN_CHARS // 3:
                cuts.append(m.end())
        cuts.append(len(s.text))
        for a, b in itertools.pairwise(cuts):
            out.extend(sp.Span(s.start + x.start, s.start + x.end, x.text) for x in sp.trimmed(s.text, a, b))
    return out


def _pack_features(question: str, c: _Candidate) -> dict[str, float]:
    return hooks.evidence_features(question, c.span.text, str(getattr(c.source, "domain", "") or ""))


def _looks_like_heading(span: sp.Span, heading_terms: set[str], domain: str = "") -> bool:
    text = sp.flat(span.text)
    if text.startswith("#"):  # a Markdown heading
        return True
    if re.match(
        r"^(?:chapter|section|appendix|part)?\s*\d+(?:\.\d+)*\.?\s+\S", text, re.IGNORECASE
    ) and not text.endswith("."):
        return True
    if hooks.is_title(text, domain):
        return True
    terms = set(sp.content_terms(text))
    return bool(heading_terms) and terms <= heading_terms and not text.endswith(".")


def _term_weights(q_terms: list[str], candidates: list[_Candidate]) -> dict[str, float]:
    n = len(candidates)
    df = Counter(t for c in candidates for t in set(q_terms) & c.terms)
    return {t: math.log(1.0 + (n + 1) / (df[t] + 0.5)) for t in set(q_terms)}


def _score(
    c: _Candidate,
    kind: str,
    asked: frozenset[str] = frozenset(),
    named: frozenset[str] = frozenset(),
    *,
    measure_row: bool = False,
    figures: bool = False,
) -> None:
    """``asked``: the identifiers and numbers of the question (lower case); the kind bonus is for a sentence
    that holds one the question did not name — the answer, not the question's own words. ``named``: the
    question's content words; a row of figures whose label they name ("net sales" → "Net sales 14,544
    14,694") gets the kind bonus too: its figures are what was asked; so does a ``measure_row``, a row of a
    statement line a measure the question names is computed from (``statements``: capital expenditure →
    "Purchases of property, plant and equipment"), and ``MEASURE_BONUS`` when the question asks for the
    ``figures`` (not why they changed)."""
    f = c.features
    f.setdefault("semantic", 0.0)
    f["kind"] = 0.0
    text = c.span.text
    if kind == "identifier" and (_new(sp.identifiers(text), asked) or _defined_term(text)):
        f["kind"] = KIND_BONUS
    elif kind == "number" and _new(sp.numbers(text), asked):
        f["kind"] = KIND_BONUS
    elif measure_row:
        f["kind"] = MEASURE_BONUS if figures else KIND_BONUS
    elif named and _row_named(text, named):
        f["kind"] = KIND_BONUS
    penalty = 0.0
    if c.heading:
        penalty += HEADING_PENALTY
    if c.span.ends_with_question:
        penalty += QUESTION_PENALTY
    if len(c.terms) < 3:
        penalty += FRAGMENT_PENALTY
    f["penalty"] = -penalty
    c.score = _weighted(f["semantic"], f["lexical"], f["passage"]) + f["kind"] - penalty


def _row_named(text: str, named: frozenset[str], lines: str = "") -> bool:
    """Whether ``text`` holds a row of figures whose label's words the question all names, or whose label
    matches ``lines`` (a regular expression)."""
    for line in text.split("\n"):
        row = split_row(line) if is_figures_row(line) else None
        if row is None:
            continue
        label = set(sp.content_terms(row[0]))
        if (label and label <= named) or (lines and re.search(lines, row[0], re.IGNORECASE)):
            return True
    return False


def _weighted(semantic: float, lexical: float, passage: float) -> float:
    """A sentence's score before its bonuses and penalties: meaning, shared words, and its passage's rank."""
    return W_SEMANTIC * semantic + W_LEXICAL * lexical + W_PASSAGE * passage


def _new(found: list[str], asked: frozenset[str]) -> bool:
    return any(x.lower() not in asked for x in found)


def _defined_term(text: str) -> bool:
    """Whether ``text`` is a definition list's entry (a term line, then what it means)."""
    lines = text.splitlines()
    return len(lines) > 1 and _is_term(lines[0])


def asked_for(question: str) -> frozenset[str]:
    return frozenset(x.lower() for x in sp.identifiers(question) + sp.numbers(question))


def _carry_context(scored: list[_Candidate]) -> None:
    """A sentence right after a matching heading or question inherits part of its match (an FAQ's answer)."""
    by_place = {(c.number, c.index): c for c in scored}
    for c in scored:
        prev = by_place.get((c.number, c.index - 1))
        if prev is not None and (prev.heading or prev.span.ends_with_question):
            lift = CONTEXT_SHARE * max(0.0, _raw(prev) - _raw(c))
            c.features["context"] = lift
            c.score += lift


def _raw(c: _Candidate) -> float:
    f = c.features
    return W_SEMANTIC * f.get("semantic", 0.0) + W_LEXICAL * f.get("lexical", 0.0)


def _continuation(
    best: _Candidate, candidates: list[_Candidate], chosen: list[_Candidate]
) -> list[_Candidate]:
    """The line after a sentence that ends with a colon ("Use the following command:") belongs to it."""
    if not best.span.text.rstrip().endswith(":"):
        return []
    nxt = [c for c in candidates if c.number == best.number and c.index == best.index + 1]
    return [c for c in nxt if c not in chosen]


def _overlaps(a: _Candidate, b: _Candidate) -> bool:
    if a.source is b.source:
        return a.span.start < b.span.end and b.span.start < a.span.end
    return sp.flat(a.span.text) == sp.flat(b.span.text)


def _span(c: _Candidate) -> EvidenceSpan:
    src = c.source
    start = int(getattr(src, "char_start", 0) or 0)
    end = int(getattr(src, "char_end", 0) or 0)
    text = str(getattr(src, "text", "") or "")
    # A whole passage (``pages.WholePassage``) carries ``before``/``after`` characters from the pages around.
    before, after = int(getattr(src, "before", 0)), int(getattr(src, "after", 0))
    exact = (
        end - start >= len(text) - before - after
    )  # a passage cut to its leading sentences starts where it did
    base = start - before
    return EvidenceSpan(
        text=c.span.text,
        number=c.number,
        doc_id=int(getattr(src, "doc_id", 0) or 0),
        title=str(getattr(src, "title", "") or ""),
        path=str(getattr(src, "path", "") or ""),
        page_number=int(getattr(src, "page_number", 1) or 1),
        char_start=min(max(base + c.span.start, start), end) if exact else -1,
        char_end=min(max(base + c.span.end, start), end) if exact else -1,
        score=c.score,
        features=dict(c.features),
        domain=str(getattr(src, "domain", "") or ""),
    )


def _cells(span: EvidenceSpan, question: str, pages: dict[tuple[int, int], str]) -> list[dict[str, Any]]:
    """Quoted rows of figures as cells under the column headings found above them on their page (all the
    span's lines, or none)."""
    page = pages.get((span.doc_id, span.page_number), "")
    lines = [(m.start(), m.group(0)) for m in re.finditer(r"[^\n]+", span.text) if m.group(0).strip()]
    if not page or not lines or not all(is_figures_row(line) for _, line in lines):
        return []
    rows = []
    for offset, line in lines:
        exact = span.char_start >= 0 and page[span.char_start + offset :].startswith(line)
        start = span.char_start + offset if exact else page.find(line)
        headings = hooks.column_headings(span.domain)
        found = cells_of(line, page, start, question, headings) if start >= 0 else None
        if found is None:
            return []
        rows.append(found.to_dict())
    return rows


def _closest(sources: Sequence[Any]) -> list[int]:
    return list(range(1, min(3, len(sources)) + 1))
