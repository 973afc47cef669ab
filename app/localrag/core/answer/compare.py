"""Comparisons side by side: a question that names two or more documents, collections or periods and asks
how they differ is answered as a table — one column per side, each cell a sentence or figure quoted from
that side with its source ``[n]`` and page, and a line saying what changed when the cells' figures can be
set against each other.

The sides come from the question's own words (``compare_sides``). The evidence step already reads the best
span of each other document a comparison's passages come from (``evidence._other_documents``); here each
side is read on its own: a span the evidence chose from that side's documents is its cell, else the side's
documents are searched for the question and read the same way (``find_evidence``), else the cell says that
nothing was found there. A period's cell is the cell of a computation over that year (``figures``), else the
best sentence read that names the year. Two cells that each hold one figure of the same unit are set
against each other (``figures.change_of``): every figure of the line is a cell's, cited.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable
from typing import Any

from localrag.core.answer import figures
from localrag.core.answer.compare_sides import (
    COLLECTION,
    DOCUMENT,
    PERIOD,
    Side,
    collection_name,
    compares,
    document_name,
    find_sides,
)
from localrag.core.answer.compare_table import Column, Comparison
from localrag.core.answer.quotes import ANSWERED, EvidenceSpan

log = logging.getLogger("localrag.chat")

_FIGURE = re.compile(
    r"(?<![\w.,])(?P<cur>[$€£¥])?\s?(?P<num>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?"
    r"(?:\s?(?P<pct>%|per ?cent\b|p\b))?(?!\w|[,.]\d)"
)
_MONTH = re.compile(
    r"^\s*(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|"
    r"sep|oct|nov|dec)[a-z]*\s*$",
    re.IGNORECASE,
)


# -- figures -------------------------------------------------------------------------------------------------


def figures_in(text: str) -> list[tuple[str, float, str]]:
    """The figures a sentence states, each as printed, its value and its unit ("£", "%", "p" or ""): an
    amount with a unit or in thousands ("1,046,900"); not a year, a day of a month, a version or a count."""
    out = []
    for m in _FIGURE.finditer(text):
        number = m.group("num").replace(",", "") + (m.group("frac") or "")
        unit = m.group("cur") or ("%" if (m.group("pct") or "").startswith(("%", "per")) else m.group("pct"))
        unit = unit or ""
        year = not unit and "," not in m.group("num") and re.fullmatch(r"(?:19|20)\d\d", number)
        day = not unit and (_MONTH.search(text[m.end() : m.end() + 10]) or _MONTH.search(text[: m.start()]))
        if year or day or not (unit or "," in m.group("num")):
            continue  # a bare small number is as likely a version or a count as a figure
        out.append((m.group(0).strip(), float(number), unit))
    return out


def _the_figure(span: EvidenceSpan) -> tuple[str, float, str] | None:
    """The one figure a cell holds (a row of figures: the value in the column the question names)."""
    rows = span.rows
    if rows:
        values = [(v, i) for row in rows for i, (_, v) in enumerate(row.columns) if i in row.asked]
        if len(values) == 1:
            found = figures_in(values[0][0])
            return found[0] if len(found) == 1 else None
        return None
    found = figures_in(span.shown)
    return found[0] if len(found) == 1 else None


def _change(columns: list[Column], spans: list[EvidenceSpan]) -> str:
    """What changed from the first side to the second, when both cells hold one figure of one unit."""
    pair = [c for c in columns if c.figure][:2]
    if len(pair) < 2 or pair[0].unit != pair[1].unit or len(columns) != 2:
        return ""
    operands = []
    for c in pair:
        s = spans[c.span]
        operands.append(
            figures.Operand(
                role=c.side.name,
                measure=c.side.name,
                column=c.side.year,
                label=c.side.name,
                heading=c.side.name,
                value=c.figure,
                amount=c.amount,
                unit=c.unit if c.unit != "p" else "",
                number=s.number,
                doc_id=s.doc_id,
                title=s.title,
                path=s.path,
                page_number=s.page_number,
                page_label=s.page_label,
            )
        )
    first, second = _apart(pair[0].side.name, pair[1].side.name)
    worked = figures.change_of(f"Change, {first} → {second}", operands)
    if not worked.computed:
        return ""
    same = " (the same)" if worked.result == 0 else ""
    cited = " ".join(f"[{o.number}]" for o in operands)
    values = worked.formula.split(" = ", 1)[-1]  # the values, not the names again
    return f"{worked.subject}: {values} = {worked.result_text}{same} {cited}"


def _apart(a: str, b: str) -> tuple[str, str]:
    """What tells two names apart ("2021", "2022" of two reports' titles), or the names whole."""
    wa, wb = a.split(), b.split()
    lead = 0
    while lead < min(len(wa), len(wb)) - 1 and wa[lead] == wb[lead]:
        lead += 1
    tail = 0
    while tail < min(len(wa), len(wb)) - lead - 1 and wa[-1 - tail] == wb[-1 - tail]:
        tail += 1
    da, db = " ".join(wa[lead : len(wa) - tail]), " ".join(wb[lead : len(wb) - tail])
    return (da, db) if da and db and (lead or tail) else (a, b)


def _without_headings(span: EvidenceSpan) -> EvidenceSpan:
    """A cell's sentence without the title or heading lines a passage read in before it ("Finances")."""
    lines = span.text.split("\n")
    cut = 0
    while cut < len(lines) - 1 and _heading_line(lines[cut]):
        cut += 1
    if not cut or span.rows:
        return span
    dropped = sum(len(line) + 1 for line in lines[:cut])
    start = span.char_start + dropped if span.char_start >= 0 else -1
    return dataclasses.replace(span, text=span.text[dropped:], char_start=start)


def _heading_line(line: str) -> bool:
    words = line.split()
    return not words or (len(words) <= 8 and not re.search(r"[.:;!?)]\s*$", line))


def says_something(span: EvidenceSpan) -> bool:
    """Whether a span is more than a title or a heading ("## Membership"): a cell quotes a sentence or row."""
    return bool(span.rows) or not all(_heading_line(line) for line in span.text.split("\n"))


# -- cells ---------------------------------------------------------------------------------------------------


def _doc(span: EvidenceSpan) -> int:
    return span.doc_id


def _period_cell(side: Side, evidence: Any) -> EvidenceSpan | None:
    """A period's cell: the operand of the computation over its year, else the best span read naming it."""
    worked = figures.Computation.from_dict(evidence.figures)
    for o in worked.operands if worked is not None else []:
        if not o.problem and side.year and side.year in (o.column + " " + o.heading):
            return EvidenceSpan.of_operand(o, f"{o.label}, {o.heading}: {o.value}", o.score)
    for s in [*evidence.spans, *evidence.candidates]:
        if side.year and re.search(rf"(?<!\d){side.year}(?!\d)", s.text):
            return s
    return None


def build(
    question: str,
    evidence: Any,
    sides: list[Side],
    considered: list[dict[str, Any]],
    read_side: Callable[[Side, EvidenceSpan | None], EvidenceSpan | None],
) -> Comparison:
    """The comparison of ``sides``, given to ``evidence`` (``evidence.comparison``): each side's cell
    (``read_side`` reads a side's documents on their own and keeps the better of what it finds and the span
    the evidence holds of them, if any), the evidence's spans made the cells (in the sides' order), and the
    change."""
    cells: list[EvidenceSpan | None] = []
    for side in sides:
        if side.kind == PERIOD:
            cells.append(_period_cell(side, evidence))
            continue
        own = [s for s in evidence.spans if _doc(s) in side.doc_ids] if evidence.answered else []
        cells.append(read_side(side, own[0] if own else None))
    spans: list[EvidenceSpan] = []
    columns = []
    for side, cell in zip(sides, cells, strict=True):
        column = Column(side)
        if cell is not None:
            cell = _without_headings(cell)
        if cell is not None and not says_something(cell):
            cell = None  # a heading alone says nothing of the side
        if cell is not None:
            column.span = len(spans)
            spans.append(cell)
            found = _the_figure(cell)
            if found is not None:
                column.figure, column.amount, column.unit = found
        columns.append(column)
    table = Comparison(columns, _change(columns, spans), considered)
    if spans:  # the answer is the table: its cells are what it quotes
        evidence.spans = spans
        evidence.status = ANSWERED
    evidence.comparison = table.to_dict()
    return table


# -- the answer's step ---------------------------------------------------------------------------------------


def names_of(library: Any) -> list[Any]:
    """The library's documents and collections as names a question may call them by (read on one of the
    pool's connections: opening a connection of its own took about as long as the reader)."""
    from localrag.core.store import collections as coll

    with library.pool.connection() as conn:
        rows = conn.execute(
            "SELECT id, path, title FROM documents WHERE status = 'ready' ORDER BY id"
        ).fetchall()
        members = [
            (c.name, coll.document_ids(conn, c.id)) for c in coll.list_collections(conn) if c.documents
        ]
    names = [document_name(int(i), str(p), str(t or "")) for i, p, t in rows]
    names += [collection_name(name, ids) for name, ids in members]
    return names


def side_reader(
    library: Any, embed: Callable[[list[str]], Any] | None
) -> Callable[[str, list[int]], tuple[list[Any], EvidenceSpan | None]]:
    """Reads a side the answer's passages do not hold: its documents searched for the question, and read
    as the evidence step reads (the best span quoted, else the best candidate likely enough for one side of
    a question, ``evidence.PART_SHARE`` of the reader's threshold)."""
    from localrag.core.answer import reader
    from localrag.core.answer.evidence import PART_SHARE, PASSAGES, find_evidence
    from localrag.core.answer.pages import whole_sentences
    from localrag.core.retrieve import retrieve

    def read(question: str, doc_ids: list[int]) -> tuple[list[Any], EvidenceSpan | None]:
        resp = retrieve(library, question, doc_ids=doc_ids)
        results = list(resp.results[:PASSAGES]) if resp.reason is None else []
        if not results:
            return [], None
        whole, pages, sections = whole_sentences(library.pool, results, PASSAGES)
        found = find_evidence(question, whole, embed, pages=pages, sections=sections)
        said = [s for s in found.spans if says_something(s)] if found.answered else []
        if said:
            return results, max(said, key=lambda s: s.score)
        best = next((c for c in found.candidates if says_something(c)), None)
        if best is not None and best.score >= reader.model().threshold * PART_SHARE:
            return results, best
        return results, None

    return read


def attach(
    evidence: Any,
    question: str,
    sources: list[Any],
    library: Any,
    read: Callable[[str, list[int]], tuple[list[Any], EvidenceSpan | None]],
) -> None:
    """Give ``evidence`` (``quotes.Evidence``) the comparison ``question`` asks for (``evidence.comparison``);
    its cells become the evidence's spans. ``sources`` (the answer's, numbered from 1) gains the passages a
    side's own search quotes; ``read(question, doc_ids)`` searches those documents and reads them (the
    passages found and the best span, numbered within them). A store that cannot be read, or a bug (logged),
    leaves the evidence as it was."""
    import psycopg

    from localrag.core.errors import KnownError, StoreUnavailable
    from localrag.core.progress import Cancelled

    if not compares(question):  # the library's names are not read for an ordinary question
        return
    try:
        ranked = list(dict.fromkeys(int(getattr(s, "doc_id", 0) or 0) for s in sources))
        sides, considered = find_sides(question, names_of(library), ranked)
        if not sides or (sides[0].kind == PERIOD and evidence.figures):
            return  # years a computation is worked out over: the computation answers

        def read_side(side: Side, own: EvidenceSpan | None) -> EvidenceSpan | None:
            found, span = read(question, side.doc_ids)
            if span is None or (own is not None and own.score >= span.score):
                return own
            passage = found[span.number - 1]
            numbers = {tuple(getattr(s, "chunk_ids", ())): i for i, s in enumerate(sources, 1)}
            number = numbers.get(tuple(getattr(passage, "chunk_ids", ())))
            if number is None:
                sources.append(passage)
                number = len(sources)
            span.number = number
            return span

        build(question, evidence, sides, considered, read_side)
    except Cancelled:
        raise  # the question was stopped
    except (KnownError, StoreUnavailable, psycopg.OperationalError) as exc:  # the store or the embedder
        log.warning("the sides of a comparison were not read: %s", exc)
        return
    except Exception:  # a bug: logged with its traceback; the answer goes on without the table
        log.error("comparing the sides of a question failed (a bug)", exc_info=True)


__all__ = ["COLLECTION", "DOCUMENT", "PERIOD", "Column", "Comparison", "attach", "build", "figures_in"]
