"""The candidate spans of the best passages, and what is known of them before the reader scores them.

A passage's sentences (made whole, long ones cut at their clauses, a definition list's term joined to what
it describes) are candidates; each holds its words, whether it is a heading, and the words around it. The
embedding model reads only some of them (its cost grows with their number): ``to_read`` picks them by the
question's words and the passage's rank, with a quota per passage. The cheap measures the reader's features
are made of (the question's words a span holds, weighted by rarity; its BM25 among the candidates; its rank by
similarity) are here too.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from localrag.core import hooks
from localrag.core.text import spans as sp
from localrag.core.text.cells import is_column_headings, is_figures_row

# At most this many sentences are read by the embedding model (the best by words and rank first), and the
# sentence after each of the first ``FOLLOWERS`` of them (what a lead-in announces).
EMBED_CANDIDATES = 32
FOLLOWERS = 8
# Of those, each passage's best few by words are read whatever the other passages hold.
PER_PASSAGE = 3
# A line at least this share of whose words are the document title's is the title, not an answer.
TITLE_SHARE = 0.8
# The lexical match counts the sentence's own words, and in part those of its heading and the sentence before.
CONTEXT_WORDS = 0.4
# A sentence longer than this (characters) is cut at a clause boundary for display; its offsets shrink with
# it.
MAX_SPAN_CHARS = 420
# A bibliography's entry (never an answer): a volume's pages ("61:821–856", "pp. 12") or a DOI or URL, and one
# more of its marks — authors' initials and names opening it, a year closing it, or the other of those two.
_AUTHORS = re.compile(
    r"^(?:\[\d{1,3}\]\s*)?(?:(?:[A-Z]\.\s?)+(?:-[A-Z]\.\s?)?[A-Z][\w'’-]+|[A-Z][\w'’-]+,\s(?:[A-Z]\.\s?)+)"
    r"(?:,|\s(?:and|&)\s)"
)
_PAGES = re.compile(r"\b\d{1,4}(?:\(\d{1,3}\))?:\s?(\d{1,5})(?:\s?[–—-]\s?|\s)(\d{1,5})\b")
_PP = re.compile(r"\bpp\.\s?\d")
_YEAR_END = re.compile(r"\b(?:19|20)\d\d[a-z]?\.$")
_LINK = re.compile(r"\bdoi:|\bURL\s+https?://|\bISBN\b", re.IGNORECASE)
# A plot's axis: a line of at least three evenly spaced numbers, rising ("1988 1990 1992", "0.0 0.5 1.0"; a
# table's years, "2021 2020 2019", fall); the lines of words beside it (at most this many, each of at most
# ``LABEL_WORDS`` words, no digit, no code's brackets or signs, no closing mark) are its labels and legend,
# drawn in the figure: never an answer.
_NUMBER = r"[−–-]?\d+(?:\.\d+)?"
_TICKS = re.compile(rf"^\s*{_NUMBER}(?:\s+{_NUMBER}){{2,}}\s*$")
LABEL_LINES = 6
LABEL_WORDS = 6
# A leader of dots between a title and its page in a table of contents or an index.
_LEADER = re.compile(r"(?:\.\s){4,}|\.{5,}")
# BM25 among the candidate sentences.
BM25_K1, BM25_B = 1.2, 0.75


@dataclass
class Candidate:
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
    members: tuple[Candidate, ...] = ()  # the sentences of a run of several; empty for one sentence

    @property
    def last(self) -> int:
        return self.members[-1].index if self.members else self.index


def to_read(candidates: list[Candidate], needed: set[int]) -> list[Candidate]:
    """The sentences the embedding model reads (its cost grows with their number): each passage's most
    promising by words (``PER_PASSAGE``), then the best of the rest by words and rank, and the sentence after
    each of the first of them (what a lead-in announces). A quota per passage keeps an answer worded unlike
    the question in a passage the question's words favour less."""

    def promise(c: Candidate) -> tuple[bool, float]:
        return id(c) in needed, c.features["lexical"] + 0.3 / (1.0 + 0.5 * c.rank)

    ranked = sorted(candidates, key=promise, reverse=True)
    per: Counter[int] = Counter()
    chosen: list[Candidate] = []
    for c in ranked:
        if per[c.number] < PER_PASSAGE:
            chosen.append(c)
            per[c.number] += 1
    taken = {id(c) for c in chosen}
    for c in ranked:
        if len(chosen) >= EMBED_CANDIDATES:
            break
        if id(c) not in taken:
            chosen.append(c)
            taken.add(id(c))
    by_place = {(c.number, c.index): c for c in candidates}
    for c in ranked[:FOLLOWERS]:
        nxt = by_place.get((c.number, c.index + 1))
        if nxt is not None and id(nxt) not in taken:
            chosen.append(nxt)
            taken.add(id(nxt))
    return chosen


def semantic_ranks(runs: list[Candidate]) -> dict[int, int]:
    order = sorted(runs, key=lambda c: c.features["semantic"], reverse=True)
    return {id(c): i for i, c in enumerate(order)}


def passage_best(scored: list[Candidate]) -> set[int]:
    """The most similar read sentence of each passage."""
    best: dict[int, Candidate] = {}
    for c in scored:
        if c.heading:
            continue
        if c.number not in best or c.features["semantic"] > best[c.number].features["semantic"]:
            best[c.number] = c
    return {id(c) for c in best.values()}


def novelty(terms: set[str], named: frozenset[str]) -> float:
    return len(terms - named) / len(terms) if terms else 0.0


def heading_match(weights: dict[str, float], c: Candidate) -> float:
    heading = str(getattr(c.source, "heading_path", "") or "")
    terms = set(sp.content_terms(heading))
    total = sum(weights.values()) or 1.0
    return sum(w for t, w in weights.items() if t in terms) / total


def has_figures(c: Candidate) -> bool:
    return any(is_figures_row(line) for line in c.span.text.split("\n"))


def bm25_of(weights: dict[str, float], runs: list[Candidate]) -> dict[int, float]:
    """BM25 of each candidate for the question's words, with the words' rarity among the candidates."""
    counted = {id(r): Counter(sp.content_terms(r.span.text)) for r in runs}
    lengths = {k: max(1, sum(c.values())) for k, c in counted.items()}
    avg = sum(lengths.values()) / max(1, len(lengths))
    out = {}
    for r in runs:
        counts = counted[id(r)]
        norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths[id(r)] / avg)
        out[id(r)] = sum(
            w * counts[t] * (BM25_K1 + 1) / (counts[t] + norm) for t, w in weights.items() if counts[t]
        )
    return out


def question_terms(text: str) -> list[str]:
    return [t for t in sp.content_terms(text) if t not in sp.QUESTION_WORDS]


def lexical(weights: dict[str, float], c: Candidate) -> tuple[float, float]:
    """The share of the question's words (weighted) the sentence holds; and that share counting its heading's
    and the previous sentence's words in part (``CONTEXT_WORDS``)."""
    total = sum(weights.values()) or 1.0
    own = sum(w for t, w in weights.items() if t in c.terms) / total
    around = sum(w for t, w in weights.items() if t in c.context_terms) / total
    return own, (1 - CONTEXT_WORDS) * own + CONTEXT_WORDS * around


def passage_candidates(sources: Sequence[Any]) -> list[Candidate]:
    out = []
    for rank, src in enumerate(sources):
        text = str(getattr(src, "text", "") or "")
        heading_terms = set(sp.content_terms(str(getattr(src, "heading_path", "") or "").split(" > ")[-1]))
        title_terms = set(sp.content_terms(str(getattr(src, "title", "") or "")))
        spans = with_terms(split_long(sp.split_spans(text)), text)
        unquotable = _reference_blocks(text) + figure_text(text) + contents_lines(text)
        previous: set[str] = set()
        for index, span in enumerate(spans):
            terms = set(sp.content_terms(span.text))
            if not terms:
                continue
            # A table's column headings count as a heading: the rows under them inherit their match.
            domain = str(getattr(src, "domain", "") or "")
            heading = (
                looks_like_heading(span, heading_terms, domain)
                or is_column_headings(span.text)
                or is_title_line(span, terms, title_terms)
                or any(a <= span.start < b for a, b in unquotable)
            )
            out.append(
                Candidate(span, src, rank + 1, rank, index, terms, heading, terms | heading_terms | previous)
            )
            previous = terms
    return out


def with_terms(spans: list[sp.Span], text: str) -> list[sp.Span]:
    """A definition list's entries whole: a term on its own line ("-p", "--quiet", "‘uninstall’") joined to
    the sentence that describes it, which alone would not say what it describes — on the next line, or after
    one blank line (a PDF page's text keeps each of its paragraphs apart so)."""
    out: list[sp.Span] = []
    for s in spans:
        prev = out[-1] if out else None
        if (
            prev is not None
            and is_term(prev.text)
            and s.text[:1].isupper()
            and text[prev.end : s.start].count("\n") <= 2
        ):
            out[-1] = sp.Span(prev.start, s.end, text[prev.start : s.end])
        else:
            out.append(s)
    return out


# A parameter documented with its type ("timeout : float, optional", "names : list of str"), as Python's
# docstrings and the documents made from them write each entry of a definition list.
# The name is an identifier as code writes one (lower case first, or with "_", "." or a digit, or one capital
# letter): "Remarque : voir …", a French label, is not.
_TYPED_TERM = re.compile(
    r"[*•-]?\s*(?:[a-z_][\w.]*|[A-Za-z]\w*[_.\d][\w.]*|[A-Z])\s+:\s+[A-Za-z{][\w\[\]{}()|.,='\"\- ]{0,60}"
)


def is_term(line: str) -> bool:
    line = line.strip()
    if "\n" not in line and _TYPED_TERM.fullmatch(line) and len(line.split()) <= 10:
        return True
    if "\n" in line or len(line.split()) > 3 or line[-1:] in ".:;!?,":
        return False
    return line[:1] in "-‘'\"`" or line[:1].islower() or sp.has_identifier(line)


def split_long(spans: list[sp.Span]) -> list[sp.Span]:
    """Sentences longer than ``MAX_SPAN_CHARS`` cut at their clauses (after a semicolon or colon, or before a
    conjunction that follows a comma); a piece still that long, with no clause to cut at, at its lines (a
    table's rows read as one run of text: "tool -l name list the files of an installed module  tool -s
    …")."""
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
            for c, d in _lines_if_long(s.text, a, b):
                out.extend(
                    sp.Span(s.start + x.start, s.start + x.end, x.text) for x in sp.trimmed(s.text, c, d)
                )
    return out


# Where a line ended in the text a PDF page's reader joined: the two characters of its break, as spaces.
_LINE_END = re.compile(r"(?<=\S)(?:[ \t]{2,}|\n+)(?=\S)")


def _lines_if_long(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """``text[a:b]`` whole, or at its lines when it is longer than ``MAX_SPAN_CHARS``."""
    if b - a <= MAX_SPAN_CHARS:
        return [(a, b)]
    ends = [m.end() for m in _LINE_END.finditer(text, a, b)]
    return list(itertools.pairwise([a, *ends, b]))


_NUMBERED = re.compile(r"^(?:chapter|section|appendix|part)?\s*(\d+(?:\.\d+)*)\.?\s+\S", re.IGNORECASE)
# A numbered line of at most this many words, with no dotted number, is a heading rather than an item.
HEADING_WORDS = 12


def looks_like_heading(span: sp.Span, heading_terms: set[str], domain: str = "") -> bool:
    text = sp.flat(span.text)
    if text.startswith("#"):  # a Markdown heading
        return True
    # A numbered heading ("2.5 Search paths", "4.2.1. /data : Files kept", "1. Introduction"), not a
    # numbered list's item ("1. The current directory;", a sentence of a dozen words or more).
    numbered = _NUMBERED.match(text)
    if (
        numbered
        and not text.endswith((".", ";", ",", ":"))
        and ("." in numbered.group(1) or len(text.split()) <= HEADING_WORDS)
    ):
        return True
    if hooks.is_title(text, domain):
        return True
    terms = set(sp.content_terms(text))
    return bool(heading_terms) and terms <= heading_terms and not text.endswith(".")


def is_title_line(span: sp.Span, terms: set[str], title_terms: set[str]) -> bool:
    """Whether the span is the document's title as a line of its text (a Word file's Title paragraph, a
    paper's title on its first page): short, no full stop, and nearly all its words the title's."""
    if not title_terms or len(terms) > 2 * len(title_terms) or sp.flat(span.text).endswith("."):
        return False
    return len(terms & title_terms) >= TITLE_SHARE * len(terms)


def is_reference_entry(text: str) -> bool:
    """Whether a span is an entry of a bibliography ("A. B. Author. Tests for a change of level. Journal of
    Examples, 61:821–856, 1993."): the title of a cited work matches a question's words and answers
    nothing. A sentence that names an author and a year is not enough: pages or a link must be there too."""
    flat = sp.flat(text)
    pages = any(int(a) < int(b) for a, b in _PAGES.findall(flat)) or bool(_PP.search(flat))
    link = bool(_LINK.search(flat))
    others = bool(_AUTHORS.search(flat)) + bool(_YEAR_END.search(flat))
    return (pages or link) and pages + link + others >= 2


def contents_lines(text: str) -> list[tuple[int, int]]:
    """Where a passage holds lines of a table of contents or an index: a title, a leader of dots, a page
    ("7 The parser program . . . . . . 5")."""
    return [m.span() for m in re.finditer(r"[^\n]+", text) if _LEADER.search(m.group())]


def _reference_blocks(text: str) -> list[tuple[int, int]]:
    """Where a passage's paragraphs (blocks between blank lines) are bibliography entries: the sentence
    splitter cuts an entry at its full stops, so an entry is known by its whole block."""
    out, start = [], 0
    for m in [*re.finditer(r"\n\s*\n", text), None]:
        end = m.start() if m else len(text)
        if is_reference_entry(text[start:end]):
            out.append((start, end))
        start = m.end() if m else end
    return out


def figure_text(text: str) -> list[tuple[int, int]]:
    """Where a passage holds a plot's text as the PDF draws it: its axes' numbers (``_TICKS``, evenly spaced)
    and the short lines of words around them (labels, a legend)."""
    lines = [(m.start(), m.end(), m.group()) for m in re.finditer(r"[^\n]+", text)]
    marked: set[int] = set()
    for i, (_, _, line) in enumerate(lines):
        if not _is_axis(line):
            continue
        marked.add(i)
        for step in (-1, 1):
            j = i + step
            while (
                0 <= j < len(lines)
                and abs(j - i) <= LABEL_LINES
                and (_is_label(lines[j][2]) or _is_axis(lines[j][2]))
            ):
                marked.add(j)
                j += step
    return [(lines[i][0], lines[i][1]) for i in sorted(marked)]


def _is_axis(line: str) -> bool:
    if not _TICKS.match(line):
        return False
    values = [float(x.replace("−", "-").replace("–", "-")) for x in line.split()]
    steps = [b - a for a, b in itertools.pairwise(values)]
    return steps[0] > 0 and all(math.isclose(s, steps[0], rel_tol=0.01, abs_tol=1e-9) for s in steps)


def _is_label(line: str) -> bool:
    flat = line.strip()
    return (
        bool(flat)
        and len(flat.split()) <= LABEL_WORDS
        and not re.search(r"[\d()\[\]{}<>=$#/\\]|[.!?:;]$", flat)
    )


def term_weights(q_terms: list[str], candidates: list[Candidate]) -> dict[str, float]:
    n = len(candidates)
    df = Counter(t for c in candidates for t in set(q_terms) & c.terms)
    return {t: math.log(1.0 + (n + 1) / (df[t] + 0.5)) for t in set(q_terms)}


def passage_similarity(c: Candidate) -> float:
    return float(getattr(c.source, "similarity", 0.0) or 0.0)


# A label on a line of its own ("Date of next meeting", "Contact person"): a few words, no figure, no
# sentence's end. Quoted alone it names what the line after it gives.
LABEL = re.compile(r"[A-Za-z][A-Za-z'’&/-]*(?: [A-Za-z][A-Za-z'’&/-]*){0,5}")


def heads(c: Candidate, nxt: Candidate) -> bool:
    """Whether ``c`` is a label on a line of its own ("Reading group") over a sentence of prose: it heads
    what follows, and a run of the two would quote a heading glued to a sentence. (A sentence's start that a
    line of code interrupts, "The fitted model" then "R> fit <- lm(…)", runs on.)"""
    following = nxt.span.text.strip()
    return (
        bool(LABEL.fullmatch(c.span.text.strip()))
        and following[:1].isupper()
        and not sp.is_code_line(following.splitlines()[0])
    )


def joined(order: list[Candidate]) -> list[Candidate]:
    """Quoted spans that follow one another in a passage (a lead-in and its items, two sentences in a row)
    as one quote: the reader reads them as the passage has them, under one citation. A row of figures stays
    a quote of its own (it is read as cells), and so does a label on a line of its own ("Reading group"):
    joined, it would read as a heading glued to the sentence after it."""
    out: list[Candidate] = []
    for c in order:
        prev = out[-1] if out else None
        text = str(getattr(c.source, "text", "") or "")
        if (
            prev is None
            or prev.source is not c.source
            or prev.span.end > c.span.start
            or text[prev.span.end : c.span.start].strip()
            or has_figures(prev)
            or has_figures(c)
            or LABEL.fullmatch(prev.span.text.strip())
        ):
            out.append(c)
            continue
        span = sp.Span(prev.span.start, c.span.end, text[prev.span.start : c.span.end])
        merged = Candidate(
            span,
            prev.source,
            prev.number,
            prev.rank,
            prev.index,
            prev.terms | c.terms,
            False,
            prev.context_terms,
        )
        merged.members = (*(prev.members or (prev,)), *(c.members or (c,)))
        merged.features = dict(max(prev, c, key=lambda x: x.score).features)
        merged.score = max(prev.score, c.score)
        out[-1] = merged
    return out
