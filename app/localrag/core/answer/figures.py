"""Figures computed in the open: a ratio, a change, a percentage, a growth rate, a sum or an average of
figures the documents hold, each operand shown with the cell it came from.

A question that asks for such a quantity ("what was the percentage change in wholesale sales from 2022 to
2023?") is read for its operation and its operands: each operand is a measure in the question's own words
("wholesale sales") and a column ("2022"). The tables of the pages the answer's sources are on are read as
cells (``text.tables``: a row's label, the column heading, the value, and where each stands on the page); an
operand is the cell whose row label the measure's words name and whose column heading the column names.
Nothing here knows a measure: a domain pack may add words that mean the same (``hooks.measure_synonyms``).

The answer then shows the computation — the formula with the values, the result and its unit, and each
operand with its source ``[n]``, page and place (the viewer outlines the cell and its heading). When an
operand is not found, or two cells with different values fit it equally well, nothing is computed: the
answer says which operand, and lists the cells that came closest, rather than guess.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import PurePath
from typing import Any

from localrag.core import hooks
from localrag.core.answer.citations import page_phrase
from localrag.core.answer.figures_asked import YEAR, Operation, Wanted, detect
from localrag.core.text import spans as sp
from localrag.core.text.tables import TableCell, page_cells

log = logging.getLogger("localrag.chat")

COMPUTED, MISSING, AMBIGUOUS = "computed", "missing", "ambiguous"
# A row label the measure's words name at least this well is a candidate (the label's words named, mostly).
MIN_MATCH = 0.5
# Below ``WHOLE_MATCH``, candidates within this of the best one fit as well.
LOOSE_TIE = 0.15
# A label and a measure that each have words the other lacks match only this well or better.
WHOLE_MATCH = 0.8
# Candidates within this of the best one fit as well: if their values differ, the operand is ambiguous.
TIE = 0.05
# How many of the closest cells a missing or ambiguous operand lists; how many cells the developer pane gets.
SHOWN_CANDIDATES = 4
KEEP_CONSIDERED = 24

# -- operands ------------------------------------------------------------------------------------------------


@dataclass
class Operand:
    """One operand: what the question names (``role``, ``measure``, ``column``) and the cell found for it
    (``label``…``marks``; empty when ``problem`` says it was not found or is ambiguous). ``number`` is the
    answer's source ``[n]`` whose page holds the cell."""

    role: str
    measure: str
    column: str
    label: str = ""
    heading: str = ""
    value: str = ""
    amount: float | None = None
    unit: str = ""
    number: int = 0
    doc_id: int = 0
    title: str = ""
    path: str = ""
    page_number: int = 0
    page_label: str = ""
    row: tuple[int, int] = (-1, -1)
    marks: list[tuple[int, int]] = field(default_factory=list)
    score: float = 0.0
    problem: str = ""  # "", MISSING or AMBIGUOUS

    @property
    def cited(self) -> bool:
        """Whether the operand has a place to show: its source, page and cell."""
        return self.number > 0 and self.page_number > 0 and bool(self.marks) and self.row[0] >= 0

    def named(self) -> str:
        """What the question names: "“wholesale sales”, 2022"."""
        return f"“{self.measure}”" + (f", {self.column}" if self.column else "")

    def where(self) -> str:
        return page_phrase(self.page_number, self.page_label)

    def shown(self) -> str:
        """ "Wholesale, 2023 (£): 330,700 [1] (p. 1)"."""
        return f"{self.label}, {self.heading}: {self.value} [{self.number}] ({self.where()})"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["row"], d["marks"], d["score"] = list(self.row), [list(m) for m in self.marks], round(self.score, 3)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Operand:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        known["row"] = tuple(known.get("row") or (-1, -1))
        known["marks"] = [tuple(m) for m in known.get("marks") or []]
        return cls(**known)


@dataclass
class Computation:
    """A computation the question asks for: ``status`` is ``computed`` (``result`` with its ``unit``, the
    ``formula`` with the values), ``missing`` or ``ambiguous`` (``message`` says which operand; each such
    operand's ``candidates`` are the closest cells). ``considered``: every cell weighed (developer pane)."""

    kind: str
    subject: str
    status: str
    operands: list[Operand]
    formula: str = ""
    result: float | None = None
    result_text: str = ""
    unit: str = ""
    message: str = ""
    note: str = ""  # how the values were read, when it matters ("amounts in brackets taken as their size")
    candidates: dict[str, list[Operand]] = field(default_factory=dict)
    considered: list[Operand] = field(default_factory=list)

    @property
    def computed(self) -> bool:
        return self.status == COMPUTED

    def text(self) -> str:
        """The computation as the answer's text: the formula and result, then each operand with its ``[n]``
        and page; or which operand is missing or ambiguous, and the closest cells."""
        if self.computed:
            lines = [f"{self.subject}: {self.formula} = {self.result_text}{self.note}"]
            lines += [f"  {op.shown()}" for op in self.operands]
            return "\n".join(lines)
        lines = [f"{self.subject}: not computed. {self.message}"]
        for o in self.operands:
            cells = self.candidates.get(o.role) or []
            if cells:
                lines.append(f"  Closest to {o.named()}: " + "; ".join(c.shown() for c in cells))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "subject": self.subject,
            "status": self.status,
            "operands": [o.to_dict() for o in self.operands],
            "formula": self.formula,
            "result": self.result,
            "result_text": self.result_text,
            "unit": self.unit,
            "message": self.message,
            "note": self.note,
            "candidates": {k: [o.to_dict() for o in v] for k, v in self.candidates.items()},
            "considered": [o.to_dict() for o in self.considered],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Computation | None:
        if not data:
            return None
        return cls(
            kind=str(data.get("kind") or ""),
            subject=str(data.get("subject") or ""),
            status=str(data.get("status") or MISSING),
            operands=[Operand.from_dict(o) for o in data.get("operands") or []],
            formula=str(data.get("formula") or ""),
            result=data.get("result"),
            result_text=str(data.get("result_text") or ""),
            unit=str(data.get("unit") or ""),
            message=str(data.get("message") or ""),
            note=str(data.get("note") or ""),
            candidates={
                str(k): [Operand.from_dict(o) for o in v] for k, v in (data.get("candidates") or {}).items()
            },
            considered=[Operand.from_dict(o) for o in data.get("considered") or []],
        )


@dataclass(frozen=True)
class _Placed:
    """A table cell of a source's page."""

    cell: TableCell
    number: int  # the source [n] on that page
    doc_id: int
    title: str
    path: str
    page_number: int
    page_label: str
    domain: str


# Words that name no row: a measure "of the society" and a row "of the year" differ in no way that counts.
_FUNCTION_WORDS = frozenset("a an the of and or in on at for to from by with its their our his her".split())


def _words(text: str) -> list[str]:
    """The stems of ``text``'s words that tell rows apart: unlike a search's content words, "other", "net"
    and "total" count ("Total other current assets" is not "Total current assets")."""
    return [sp.stem(w) for w in re.findall(r"[a-z0-9&]+", text.lower()) if w not in _FUNCTION_WORDS]


def _label_terms(label: str) -> set[str]:
    """A row label's words, without what it says in brackets ("Fixed assets (ovens, van…)")."""
    return set(_words(re.sub(r"\([^)]*\)", " ", label))) or set(_words(label))


def _measure_forms(measure: str, domain: str) -> list[set[str]]:
    """The measure's words, and those of each phrase a domain pack says means the same."""
    own = " ".join(_words(measure))
    forms = [set(own.split())]
    for group in hooks.measure_synonyms(domain):
        stems = [" ".join(_words(p)) for p in group]
        if own in stems:  # the whole measure is one of the names: each other name is a form of it
            forms += [set(other.split()) for other in stems if other != own]
    return [f for f in forms if f]


def _label_match(measure_forms: list[set[str]], label: str) -> float:
    """How well a row label is what the measure names: mostly the share of the label's words the measure
    holds, partly the share of the measure's words the label holds; halved when each has words the other
    lacks, unless it is still ``WHOLE_MATCH``."""
    terms = _label_terms(label)
    if not terms:
        return 0.0
    best = 0.0
    for words in measure_forms:
        shared = len(terms & words)
        if not shared:
            continue
        score = 0.7 * shared / len(terms) + 0.3 * shared / len(words)
        if shared < len(terms) and shared < len(words) and score < WHOLE_MATCH:
            score /= 2  # each has words the other lacks ("parish council grant", "lease paid to the council")
        best = max(best, score)
    return best


def _column_match(column: str, heading: str) -> bool:
    """Whether a column heading is the column the question names ("2022", "fiscal 2022", "Station Road")."""
    years = YEAR.findall(column)
    heading_years = YEAR.findall(heading)
    if years:
        if not heading_years or years[0] != heading_years[0]:
            return False
        extra = set(sp.content_terms(YEAR.sub(" ", column))) - {"fiscal", "year", "fy", "calendar"}
        marks = set(sp.content_terms(YEAR.sub(" ", heading)))
        return not (marks & {"q1", "q2", "q3", "q4"}) or bool(extra & marks)
    words, named = set(sp.content_terms(column)), set(sp.content_terms(heading))
    return bool(words) and bool(named) and len(words & named) / len(named) >= 0.5


def _operand(w: Wanted, p: _Placed, score: float) -> Operand:
    c = p.cell
    marks = [m for m in (c.heading, c.place) if m[0] >= 0]
    return Operand(
        w.role,
        w.measure,
        w.column,
        label=c.label,
        heading=c.column,
        value=c.value,
        amount=c.number,
        unit=c.unit,
        number=p.number,
        doc_id=p.doc_id,
        title=p.title,
        path=p.path,
        page_number=p.page_number,
        page_label=p.page_label,
        row=c.row,
        marks=marks,
        score=score,
    )


def _resolve(w: Wanted, cells: list[_Placed]) -> tuple[Operand, list[Operand], list[Operand]]:
    """The cell for one operand, or the operand with its ``problem``; and the closest cells (candidates) and
    every cell weighed."""
    forms: dict[str, list[set[str]]] = {}
    scored = []
    for p in cells:
        if p.domain not in forms:
            forms[p.domain] = _measure_forms(w.measure, p.domain)
        scored.append((p, _label_match(forms[p.domain], p.cell.label)))
    rows = [(p, s) for p, s in scored if s >= MIN_MATCH]
    fits = [(p, s) for p, s in rows if not w.column or _column_match(w.column, p.cell.column)]
    considered = [_operand(w, p, s) for p, s in sorted(rows, key=lambda x: -x[1])[:KEEP_CONSIDERED]]
    if not w.column:  # no column named: the cells with a figure (one value, or ambiguous)
        fits = [(p, s) for p, s in fits if p.cell.number is not None]
    best = max((s for _, s in fits), default=0.0)
    # A label named only in part ties with more of its neighbours: another row may as well be the one meant.
    top = [(p, s) for p, s in fits if s >= best - (TIE if best >= WHOLE_MATCH else LOOSE_TIE)]
    values = {p.cell.number for p, _ in top}
    if top and len(values) == 1 and None not in values:
        p, s = min(top, key=lambda x: x[0].number)  # the same figure: from the best-ranked source
        return _operand(w, p, s), [], considered
    problem = AMBIGUOUS if len(values) > 1 else MISSING
    in_column = [
        (p, s) for p, s in scored if s > 0 and (not w.column or _column_match(w.column, p.cell.column))
    ]
    pool = top if top else sorted(in_column or scored, key=lambda x: -x[1])
    closest = [_operand(w, p, s) for p, s in pool if s > 0][:SHOWN_CANDIDATES]
    return Operand(w.role, w.measure, w.column, problem=problem), closest, considered


def _resolve_all(
    op: Operation, cells: list[_Placed]
) -> tuple[list[Operand], dict[str, list[Operand]], list[Operand]]:
    """Each operand of ``op`` among ``cells``; the closest cells of those not found; every cell weighed."""
    operands, candidates, considered = [], {}, []
    for w in op.wanted:
        found, closest, weighed = _resolve(w, cells)
        operands.append(found)
        if found.problem:
            candidates[w.role] = closest
        considered += weighed
    return operands, candidates, considered


def compute(op: Operation, cells: list[_Placed]) -> Computation:
    """Find ``op``'s operands among ``cells`` — in the document of the best source that holds them all (of
    those whose title or file name names whose figures the question asks for, when one does) — and compute
    it; else report what the first document with any of them lacks."""
    named = [p for p in cells if _names_owner(p, op.owners)]
    cells = named or cells
    documents = list(dict.fromkeys(p.doc_id for p in sorted(cells, key=lambda p: p.number)))
    first: tuple[list[Operand], dict[str, list[Operand]], list[Operand]] | None = None
    # A later document answers only with rows named as well as an earlier one's (a row named in full whose
    # figure is missing is not replaced by another document's row that shares a word with it).
    earlier = {w.role: 0.0 for w in op.wanted}
    for doc_id in documents:
        own = [p for p in cells if p.doc_id == doc_id]
        operands, candidates, considered = _resolve_all(op, own)
        if any(o.problem == AMBIGUOUS for o in operands):
            operands = _one_table(op, own, considered) or operands
        if all(not o.problem and o.cited and o.score >= earlier[o.role] - TIE for o in operands):
            return _computed(op, operands, considered)
        if first is None and any(not o.problem or candidates.get(o.role) for o in operands):
            first = (operands, candidates, considered)
        for o in considered:
            earlier[o.role] = max(earlier[o.role], o.score)
    if first is None:
        first = ([Operand(w.role, w.measure, w.column, problem=MISSING) for w in op.wanted], {}, [])
    return _unresolved(op, *first)


def _one_table(op: Operation, cells: list[_Placed], considered: list[Operand]) -> list[Operand] | None:
    """The operands from the one page of a document that holds them all, each named as well as anywhere in
    it: an operand several tables of the document hold is the one beside the others (a statement's row,
    not a summary's). None when no page, or more than one giving other figures, holds them all."""
    best = {w.role: max((o.score for o in considered if o.role == w.role), default=0.0) for w in op.wanted}
    found: list[list[Operand]] = []
    for page in dict.fromkeys(p.page_number for p in sorted(cells, key=lambda p: p.number)):
        operands = _resolve_all(op, [p for p in cells if p.page_number == page])[0]
        if all(not o.problem and o.score >= best[o.role] - TIE for o in operands):
            found.append(operands)
    if len({tuple(o.amount for o in operands) for operands in found}) != 1:
        return None
    return found[0]


def _names_owner(p: _Placed, owners: Sequence[str]) -> bool:
    """Whether a cell's document is named by one of ``owners`` (its title's or file name's words)."""
    if not owners:
        return False
    words = set(re.findall(r"[a-z0-9&]+", f"{p.title} {PurePath(p.path).stem}".lower().replace("_", " ")))
    return any(o.lower() in words for o in owners)


# -- the computation -----------------------------------------------------------------------------------------


def _bare(name: str) -> str:
    """A heading or label without what it says in brackets ("2023 (£)" → "2023")."""
    return re.sub(r"\s*\([^)]*\)", "", name).strip() or name


def _decimals(values: Sequence[str]) -> int:
    return max((len(m.group(1)) for v in values if (m := re.search(r"\.(\d+)", v))), default=0)


def _amount(value: float, decimals: int) -> str:
    return f"{value:,.{decimals}f}".replace("-", "−")


def _with_unit(text: str, unit: str) -> str:
    """ "£162,700", "$150 million", "18.4%", "3 percentage points"."""
    if not unit:
        return text
    if unit == "%":
        return f"{text}%"
    if unit[0] in "$€£¥":
        negative = text.startswith("−")
        body = f"{unit[0]}{text.lstrip('−')}" + (f" {unit[1:].strip()}" if unit[1:].strip() else "")
        return f"−{body}" if negative else body
    return f"{text} {unit}"


def _computed(op: Operation, operands: list[Operand], considered: list[Operand]) -> Computation:
    values = [o.amount for o in operands]
    assert all(v is not None for v in values)
    nums = [float(v) for v in values if v is not None]
    shown = [o.value for o in operands]
    units = {o.unit for o in operands}
    unit = units.pop() if len(units) == 1 else ""
    note = ""
    if op.kind in ("pct_change", "change", "cagr", "average") and all(v < 0 for v in nums):
        nums = [abs(v) for v in nums]  # amounts shown in brackets (costs deducted): their size changes
        shown = [_amount(v, _decimals(shown)) for v in nums]
        note = " (amounts in brackets, taken as their size)"
    decimals = _decimals([o.value for o in operands])
    over_columns = op.kind in ("pct_change", "change", "cagr", "average")
    names = [_bare(o.heading) if over_columns else _bare(o.label) for o in operands]
    result: float
    divisor = {"pct_change": 0, "cagr": 0, "ratio": 1, "share": 1}.get(op.kind)
    if divisor is not None and nums[divisor] == 0:
        why = f"the {operands[divisor].role} is 0: nothing to divide by."
        return _unresolved(op, operands, {}, considered, why)
    if op.kind == "pct_change":
        a, b = nums
        result = (b - a) / abs(a) * 100
        symbolic = f"({names[1]} − {names[0]}) ÷ {names[0]} × 100"
        numeric = f"({shown[1]} − {shown[0]}) ÷ {shown[0]} × 100"
        text, out_unit = _amount(result, 1), "%"
    elif op.kind == "cagr":
        a, b = nums
        years = [int(y) for o in operands for y in YEAR.findall(o.heading)[:1]]
        span = years[1] - years[0] if len(years) == 2 and years[1] > years[0] else 0
        if span == 0 or a <= 0 or b <= 0:
            return _unresolved(op, operands, {}, considered, "the years apart or the signs do not allow it.")
        result = ((b / a) ** (1 / span) - 1) * 100
        symbolic = f"({names[1]} ÷ {names[0]})^(1/{span}) − 1"
        numeric = f"({shown[1]} ÷ {shown[0]})^(1/{span}) − 1"
        text, out_unit = _amount(result, 1), "%"
    elif op.kind == "change":
        result = nums[1] - nums[0]
        symbolic, numeric = f"{names[1]} − {names[0]}", f"{shown[1]} − {shown[0]}"
        out_unit = "percentage points" if unit == "%" else unit
        text = _amount(result, decimals)
    elif op.kind == "difference":
        result = nums[0] - nums[1]
        symbolic, numeric = f"{names[0]} − {names[1]}", f"{shown[0]} − {shown[1]}"
        out_unit = "percentage points" if unit == "%" else unit
        text = _amount(result, decimals)
    elif op.kind == "ratio":
        result = nums[0] / nums[1]
        symbolic, numeric = f"{names[0]} ÷ {names[1]}", f"{shown[0]} ÷ {shown[1]}"
        text, out_unit = _amount(result, 2), ""
    elif op.kind == "share":
        result = nums[0] / nums[1] * 100
        symbolic, numeric = f"{names[0]} ÷ {names[1]} × 100", f"{shown[0]} ÷ {shown[1]} × 100"
        text, out_unit = _amount(result, 1), "%"
    elif op.kind == "sum":
        result = sum(nums)
        symbolic, numeric = " + ".join(names), " + ".join(shown)
        text, out_unit = _amount(result, decimals), unit
    else:  # average
        result = sum(nums) / len(nums)
        symbolic = f"({' + '.join(names)}) ÷ {len(nums)}"
        numeric = f"({' + '.join(shown)}) ÷ {len(nums)}"
        text, out_unit = _amount(result, max(decimals, 1)), unit
    return Computation(
        op.kind,
        op.subject,
        COMPUTED,
        operands,
        formula=f"{symbolic} = {numeric}",
        note=note,
        result=round(result, 6),
        result_text=_with_unit(text, out_unit),
        unit=out_unit,
        considered=considered,
    )


def _unresolved(
    op: Operation,
    operands: list[Operand],
    candidates: dict[str, list[Operand]],
    considered: list[Operand],
    why: str = "",
) -> Computation:
    """Not computed: which operand is missing or ambiguous (``why`` another reason), and the closest cells."""
    said = []
    for o in operands:
        if o.problem == MISSING:
            said.append(f"no figure was found for {o.named()}")
        elif o.problem == AMBIGUOUS:
            said.append(f"several different figures fit {o.named()}")
    message = (why[:1].upper() + why[1:]) if why else ("; ".join(said) + ".")
    message = message[:1].upper() + message[1:]
    status = AMBIGUOUS if any(o.problem == AMBIGUOUS for o in operands) and not why else MISSING
    return Computation(
        op.kind, op.subject, status, operands, message=message, candidates=candidates, considered=considered
    )


# -- from an answer's sources --------------------------------------------------------------------------------


def placed_cells(sources: Sequence[Any], pages: dict[tuple[int, int], str]) -> list[_Placed]:
    """The table cells of the pages the sources (numbered from 1) are on, each with the first source on its
    page."""
    out: list[_Placed] = []
    seen: set[tuple[int, int]] = set()
    for number, src in enumerate(sources, 1):
        key = (int(getattr(src, "doc_id", 0) or 0), int(getattr(src, "page_number", 1) or 1))
        page = pages.get(key, "")
        if key in seen or not page:
            continue
        seen.add(key)
        domain = str(getattr(src, "domain", "") or "")
        for cell in page_cells(page, hooks.column_headings(domain)):
            out.append(
                _Placed(
                    cell,
                    number,
                    key[0],
                    str(getattr(src, "title", "") or ""),
                    str(getattr(src, "path", "") or ""),
                    key[1],
                    str(getattr(src, "page_label", "") or ""),
                    domain,
                )
            )
    return out


def work_out(
    question: str, sources: Sequence[Any], read_pages: Callable[[list[tuple[int, int]]], dict]
) -> Computation | None:
    """The computation ``question`` asks for, worked out from the tables of the sources' pages
    (``read_pages``: the text of (doc_id, page_number) pages); None when it asks for none."""
    op = detect(question)
    if op is None:
        return None
    keys = list(
        dict.fromkeys(
            (int(getattr(s, "doc_id", 0) or 0), int(getattr(s, "page_number", 1) or 1)) for s in sources
        )
    )
    found = compute(op, placed_cells(sources, read_pages(keys)))
    if (
        not found.computed
        and not any(found.candidates.values())
        and not any(YEAR.search(w.column) for w in op.wanted)
    ):
        return (
            None  # "the difference between X and Y", no row of either anywhere and no year: not about figures
        )
    return found


def attach(evidence: Any, question: str, sources: Sequence[Any], library: Any) -> None:
    """Give ``evidence`` (``quotes.Evidence``) the computation ``question`` asks for (``evidence.figures``),
    worked out from the pages of ``sources``; a computation done makes the evidence an answer. A store that
    cannot be read, or a bug (logged), leaves the evidence as it was."""
    import psycopg

    from localrag.core.answer.pages import page_texts
    from localrag.core.errors import StoreUnavailable

    def read(keys: list[tuple[int, int]]) -> dict:
        with library.pool.connection() as conn:
            return page_texts(conn, keys)

    try:
        found = work_out(question, sources, read)
    except (StoreUnavailable, psycopg.OperationalError) as exc:
        log.warning("pages not read for a computation: %s", exc)
        return
    except Exception:  # a bug: logged with its traceback; the answer goes on without the computation
        log.error("working out a computation failed (a bug)", exc_info=True)
        return
    if found is None:
        return
    evidence.figures = found.to_dict()
    if found.computed and not evidence.answered:
        evidence.status = "answered"


def change_of(subject: str, operands: list[Operand]) -> Computation:
    """The change from the first of two found cells to the second (a comparison's figures)."""
    return _computed(Operation("change", (), subject), operands, [])


def checked(computation: Computation) -> bool:
    """Whether every operand of a computation shown is cited (its source, page and cell): a computation
    with an uncited operand is never shown as computed."""
    return not computation.computed or all(o.cited for o in computation.operands)


def nearly(a: float, b: float, rel: float = 0.005, absolute: float = 0.051) -> bool:
    """Whether two results agree within rounding."""
    return math.isclose(a, b, rel_tol=rel, abs_tol=absolute)
