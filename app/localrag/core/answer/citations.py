"""Citations in an answer: ``[1]``, ``[1, 3]``, ``[2-4]`` checked against the sources the model was given.

The check is strict whatever the model: a number that names no source given with the question is invalid and
is never shown as a link. A citation closes a clause of prose: a bracket inside code (between backticks or in
a fenced block), inside math (``$…$``), in an array or index (``x[1]``, ``= [1; 2; 3]``, ``[1][2]``), at the
start of a line (R prints ``[1] FALSE``) or on a line that reads as code is not one, whatever numbers it
holds — except a bracket that ends such a line after a space: that is how a quote of code, or of prose holding
code (``\\cite{key} prints …``), is cited. ``Source`` is what a message keeps of each source (stored as JSON
with the message).

Small models often repeat a passage's words without writing its number. ``find_quotes`` finds the sources that
an uncited sentence of the answer repeats (most of its three-word runs appear in the passage), so that the
sources list can say which passage the answer took its words from; they are marked ``quoted``, never
``cited``, and no number is added to the answer.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from localrag.core.retrieve.results import page_phrase as page_phrase
from localrag.core.text.glyphs import letters

# A bracket holding numbers separated by commas/semicolons, or ranges with a hyphen or en dash, optionally
# written "[Source 2]" or "[source 1, 3]" (small models do).
_BRACKET = re.compile(
    r"\[\s*(?:sources?\s*)?(\d{1,4}(?:\s*(?:[,;]|[-–]|and)\s*\d{1,4})*)\s*\]", re.IGNORECASE
)
_ITEM = re.compile(r"(\d{1,4})\s*(?:[-–]\s*(\d{1,4}))?")
# A range wider than this is not a citation anyone meant ("[1-2000]"); its numbers count as invalid.
MAX_RANGE = 20
# A sentence quotes a passage when at least this share of its three-word runs (and at least QUOTE_MIN_RUNS of
# them) appear in the passage.
QUOTE_SHARE = 0.5
QUOTE_MIN_RUNS = 3
_WORD = re.compile(r"[^\W_]+")
_SENTENCES = re.compile(r"[^.!?\n]+(?:[.!?]+|\n|$)")
EXCERPT_CHARS = 1200


@dataclass
class Source:
    """One numbered source given to the model (``number`` is its ``[n]``), as kept with the message.

    ``score`` is what the sources list shows: the cosine similarity when there is one, else the fused score;
    ``None`` for a passage that was never scored (one chosen from a document's outline).
    ``text`` is the passage (cut to ``EXCERPT_CHARS``); ``char_start``/``char_end`` locate it in the document.
    """

    number: int
    doc_id: int
    title: str
    path: str
    doc_type: str
    page_number: int
    heading_path: str
    chunk_ids: list[int]
    score: float | None = None
    char_start: int = 0
    char_end: int = 0
    text: str = ""
    cited: bool = False
    quoted: bool = False  # the answer repeats its words in a sentence that cites nothing
    page_label: str = ""  # the number printed on the page when it is not ``page_number`` (``page_phrase``)

    @classmethod
    def from_result(cls, number: int, r: Any) -> Source:
        """From a retrieval ``Result`` (or a packed source)."""
        scores = getattr(r, "scores", {}) or {}
        score = scores.get("vector")
        if score is None:
            score = scores.get("fused", getattr(r, "similarity", None))
        if not scores and not score:  # never scored (a passage of a whole-document answer): no score to show
            score = None
        text = str(getattr(r, "text", "") or "")
        return cls(
            number=number,
            doc_id=int(r.doc_id),
            title=str(r.title or ""),
            path=str(r.path or ""),
            doc_type=str(r.doc_type or ""),
            page_number=int(r.page_number or 1),
            heading_path=str(r.heading_path or ""),
            chunk_ids=[int(c) for c in r.chunk_ids],
            score=None if score is None else round(float(score), 4),
            char_start=int(getattr(r, "char_start", 0) or 0),
            char_end=int(getattr(r, "char_end", 0) or 0),
            text=text[:EXCERPT_CHARS],
            page_label=str(getattr(r, "page_label", "") or ""),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Source:
        known = {f: data[f] for f in cls.__dataclass_fields__ if f in data}
        known.setdefault("number", 0)
        for name in ("doc_id", "title", "path", "doc_type", "heading_path"):
            known.setdefault(name, 0 if name == "doc_id" else "")
        known.setdefault("page_number", 1)
        known["chunk_ids"] = [int(c) for c in known.get("chunk_ids") or []]
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def file_name(self) -> str:
        return self.path.replace("\\", "/").rsplit("/", 1)[-1] or self.title

    def where(self) -> str:
        """Its title (or file name), page and heading, as a sources list shows them."""
        where = self.title or self.file_name
        if self.doc_type == "pdf" or self.page_number > 1:
            where += ", " + page_phrase(self.page_number, self.page_label)
        if self.heading_path and self.heading_path != self.title:
            where += f" — {self.heading_path}"
        return where


def quoted_sections(sources: list[Source], spans: Any) -> list[Source]:
    """``sources`` with each quoted one named by the section its first quoted sentence is in (a passage may
    run from the end of one section into the next, and is otherwise named by the one it starts in)."""
    named: set[int] = set()
    for span in spans:
        section = str(getattr(span, "section", "") or "")
        if section and span.number not in named and 1 <= span.number <= len(sources):
            named.add(span.number)
            sources[span.number - 1].heading_path = section
    return sources


@dataclass
class CitationMark:
    """One bracket in the answer: where it is and which numbers it names."""

    start: int
    end: int
    text: str
    valid: list[int] = field(default_factory=list)  # numbers that name a given source, in order written
    invalid: list[int] = field(default_factory=list)


@dataclass
class CitationCheck:
    """The citations of one answer against its ``n_sources`` sources.

    Attributes:
        marks: every bracket that looks like a citation, in order.
        cited: the valid source numbers, in order of first citation.
        invalid: numbers that name no given source (shown as plain text, never as links).
    """

    n_sources: int
    marks: list[CitationMark] = field(default_factory=list)
    cited: list[int] = field(default_factory=list)
    invalid: list[int] = field(default_factory=list)

    def is_valid(self, number: int) -> bool:
        return 1 <= number <= self.n_sources

    def to_dict(self) -> dict[str, Any]:
        return {
            "cited": list(self.cited),
            "invalid": list(self.invalid),
            "marks": [asdict(m) for m in self.marks],
        }


def _numbers(group: str) -> list[int]:
    numbers: list[int] = []
    for part in re.split(r"\s*(?:[,;]|and)\s*", group):
        m = _ITEM.fullmatch(part.strip())
        if not m:
            continue
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if hi < lo or hi - lo > MAX_RANGE:
            numbers.extend([lo, hi] if hi != lo else [lo])
        else:
            numbers.extend(range(lo, hi + 1))
    return numbers


# Text where a bracket is never a citation: fenced code, inline code, display and inline math.
_NOT_PROSE = re.compile(r"```.*?(?:```|$)|`[^`\n]*`|\$\$.*?(?:\$\$|$)|\$[^$\n]+\$", re.DOTALL)
# A line that reads as code: an assignment, a prompt, braces or a statement's semicolon.
_CODE_LINE = re.compile(
    r"^\s*(?:[>$#]|R>|>>>|octave:\d*>)\s|<-|==|!=|:=|\{|\}|;\s*$|^\s*\w+\s*\([^)]*\)\s*$|\w\[\]|=\s*\["
)
# What may stand right before a citation (after optional spaces): the end of a word, a quote, a closing
# parenthesis or a sentence's punctuation; and right after it: the end, a space or punctuation.
_BEFORE = re.compile(r"[`\w.,;:!?%\"'”’)]\s*$")
_AFTER = re.compile(r"(?:\s|[.,;:!?)\"'”’]|$)")


# A citation that ends a line, after a space.
_LINE_END_MARK = re.compile(r"(?<=\s)\[[^\]\n]*\]\s*$")


def _code_spans(text: str) -> list[tuple[int, int]]:
    spans = [(m.start(), m.end()) for m in _NOT_PROSE.finditer(text)]
    pos = 0
    for line in text.splitlines(keepends=True):
        if _CODE_LINE.search(re.sub(r"`[^`\n]*`", "``", line)):
            mark = _LINE_END_MARK.search(line)
            spans.append((pos, pos + (mark.start() if mark else len(line))))
        pos += len(line)
    return spans


def is_prose_citation(text: str, start: int, end: int, code: list[tuple[int, int]] | None = None) -> bool:
    """Whether the bracket at ``text[start:end]`` closes a clause of prose (see the module docstring)."""
    if code is None:
        code = _code_spans(text)
    if any(a <= start < b for a, b in code):
        return False
    before = text[text.rfind("\n", 0, start) + 1 : start]
    if not before.strip() or not _BEFORE.search(before):
        return False
    if not before[-1].isspace():
        # Written against a word: "Lima[1]." is a citation, "x[1]" or "f(a)[2]" an index.
        word = re.search(r"[\w.$]*$", before).group(0)  # type: ignore[union-attr]
        if not re.fullmatch(r"[^\W\d_]{3,}[.,;:!?]?", word):
            return False
    return _AFTER.match(text, end) is not None and text[end : end + 1] != "["


def check_citations(answer: str, n_sources: int) -> CitationCheck:
    """Find the citations in ``answer`` and check each number against ``n_sources`` sources."""
    check = CitationCheck(n_sources=n_sources)
    code = _code_spans(answer)
    for m in _BRACKET.finditer(answer):
        if not is_prose_citation(answer, m.start(), m.end(), code):
            continue
        mark = CitationMark(m.start(), m.end(), m.group(0))
        for n in _numbers(m.group(1)):
            (mark.valid if check.is_valid(n) else mark.invalid).append(n)
        for n in mark.valid:
            if n not in check.cited:
                check.cited.append(n)
        for n in mark.invalid:
            if n not in check.invalid:
                check.invalid.append(n)
        check.marks.append(mark)
    return check


def apply_citations(sources: list[Source], check: CitationCheck, answer: str = "") -> list[int]:
    """Mark the cited sources (``Source.cited``) and, given the ``answer``, those it repeats without citing
    them (``Source.quoted``, see ``find_quotes``); return the chunk ids of the cited ones in citation order,
    then of the quoted ones, without repeats."""
    for s in sources:
        s.cited = s.number in check.cited
    quoted = [n for n in find_quotes(answer, sources, check) if n not in check.cited] if answer else []
    for s in sources:
        s.quoted = s.number in quoted
    by_number = {s.number: s for s in sources}
    chunk_ids: list[int] = []
    for n in [*check.cited, *quoted]:
        for cid in by_number[n].chunk_ids if n in by_number else []:
            if cid not in chunk_ids:
                chunk_ids.append(cid)
    return chunk_ids


def find_quotes(answer: str, sources: list[Source], check: CitationCheck) -> list[int]:
    """The numbers of the sources that a sentence of ``answer`` citing nothing repeats, in order of first
    quote (for each such sentence, the passage holding most of its three-word runs, if it holds enough)."""
    cited_spans = [(m.start, m.end) for m in check.marks]
    runs_of = {s.number: set(_runs(s.text)) for s in sources if s.text}
    quoted: list[int] = []
    for m in _SENTENCES.finditer(answer):
        if any(start < m.end() and m.start() < end for start, end in cited_spans):
            continue
        runs = _runs(m.group(0))
        if len(runs) < QUOTE_MIN_RUNS:
            continue
        best, best_share = 0, 0.0
        for number, passage in runs_of.items():
            share = sum(1 for r in runs if r in passage) / len(runs)
            if share > best_share:
                best, best_share = number, share
        if best and best_share >= QUOTE_SHARE and best not in quoted:
            quoted.append(best)
    return quoted


def _runs(text: str) -> list[tuple[str, ...]]:
    words = [w.lower() for w in _WORD.findall(letters(text))]
    return [tuple(words[i : i + 3]) for i in range(len(words) - 2)]


def segments(answer: str, check: CitationCheck) -> list[tuple[str, int | None]]:
    """The answer cut into text pieces and links: ``(text, None)`` is plain text, ``(text, n)`` links to
    source ``n``. Invalid numbers stay plain text. For views that build their own rich text."""
    out: list[tuple[str, int | None]] = []
    pos = 0
    for mark in check.marks:
        if mark.start > pos:
            out.append((answer[pos : mark.start], None))
        if len(mark.valid) == 1 and not mark.invalid:
            out.append((mark.text, mark.valid[0]))
        else:
            body = mark.text
            cursor = 0
            for m in re.finditer(r"\d{1,4}", body):
                n = int(m.group(0))
                if m.start() > cursor:
                    out.append((body[cursor : m.start()], None))
                out.append((m.group(0), n if n in mark.valid else None))
                cursor = m.end()
            if cursor < len(body):
                out.append((body[cursor:], None))
        pos = mark.end
    if pos < len(answer):
        out.append((answer[pos:], None))
    return out


def strip_citations(text: str) -> str:
    """``text`` without citation brackets (earlier answers in a prompt: their numbers meant other sources)."""
    return re.sub(r"[ \t]*" + _BRACKET.pattern, "", text, flags=re.IGNORECASE)
