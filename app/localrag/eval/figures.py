"""The figures benchmark: questions asking for a quantity computed from a document's tables.

A dataset folder holds ``docs/`` (its ``fetch.sh`` gathers them), ``questions/*.jsonl`` and ``split.json``
(``{"tune": [files], "test": [files]}``: the questions divided by document). One question a line: ``id``,
``file``, ``question``, ``kind`` (the operation: ``pct_change``, ``change``, ``ratio``, ``share``, ``sum``,
``average``…), ``answer`` (the expected value, in the unit ``unit``), ``operands`` (each cell it is computed
from: ``label``, ``column``, ``value`` as printed, ``page``) and ``pages``; a question whose operand is not in
the document has ``answer`` null and ``expect`` "missing": the right answer computes nothing and says what is
missing.

Each question goes through the real ``ask`` path (the sources lead; no language model is needed), in this data
folder's library (its documents are indexed once and kept). A computation is **right** when its value is the
expected one within rounding and each operand is the expected cell — its value, on its page of the question's
document — and cited (a source ``[n]`` on that page, and the cell's place). Reported: the share right among
the questions whose operands are in the documents, the share of the others answered "missing" (or
"ambiguous"), the computations shown with an operand that is not cited (the target is none), and the wrong
ones shown.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localrag.core.answer.figures import Computation, nearly
from localrag.core.text.tables import parse_number
from localrag.eval.answers import half_files, read_questions


@dataclass
class Question:
    id: str
    file: str
    question: str
    kind: str
    answer: float | None
    unit: str = ""
    operands: list[dict[str, Any]] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)
    expect: str = ""

    @property
    def computable(self) -> bool:
        return self.answer is not None


def load_questions(folder: Path, half: str | None = None) -> list[Question]:
    """The folder's questions (only those of ``half``'s documents when given)."""
    out: list[Question] = read_questions(folder, Question)
    return out if half is None else [q for q in out if q.file in half_files(folder, half)]


def score(q: Question, worked: Computation | None) -> dict[str, Any]:
    """One question's row: what was shown, and whether it is right."""
    row: dict[str, Any] = {
        "id": q.id,
        "question": q.question,
        "expected": q.answer,
        "status": worked.status if worked is not None else "none",
        "result": worked.result if worked is not None else None,
        "shown": worked.text() if worked is not None else "",
    }
    computed = worked is not None and worked.computed
    row["uncited"] = computed and any(not o.cited for o in worked.operands)  # type: ignore[union-attr]
    if not q.computable:
        row["right"] = worked is not None and not worked.computed
        row["wrong_shown"] = computed
        return row
    if not computed or worked is None or worked.result is None:
        row["right"] = row["wrong_shown"] = False
        row["why"] = "not computed" if worked is not None else "no computation detected"
        return row
    value_ok = nearly(worked.result, q.answer)  # type: ignore[arg-type]
    cells_ok = len(worked.operands) == len(q.operands) and all(
        _same_cell(o, gold, q.file) for o, gold in zip(worked.operands, q.operands, strict=True)
    )
    row["right"] = value_ok and cells_ok and not row["uncited"]
    row["wrong_shown"] = not row["right"]
    if not row["right"]:
        row["why"] = "value" if not value_ok else ("operand" if not cells_ok else "uncited")
    return row


def _same_cell(o: Any, gold: dict[str, Any], file: str) -> bool:
    """Whether an operand is the expected cell: the same value, on the expected page of the question's
    document, cited."""
    same_value = o.amount is not None and o.amount == parse_number(str(gold["value"]))
    return same_value and o.page_number == gold["page"] and Path(o.path).name == file and o.cited


def summarize(rows: list[dict[str, Any]], questions: list[Question]) -> dict[str, Any]:
    by_id = {q.id: q for q in questions}
    computable = [r for r in rows if by_id[r["id"]].computable]
    missing = [r for r in rows if not by_id[r["id"]].computable]
    return {
        "questions": len(rows),
        "computable": len(computable),
        "right": sum(r["right"] for r in computable),
        "right_share": round(sum(r["right"] for r in computable) / len(computable), 3)
        if computable
        else None,
        "missing_questions": len(missing),
        "missing_reported": sum(r["right"] for r in missing),
        "uncited_shown": sum(bool(r["uncited"]) for r in rows),
        "wrong_shown": sum(bool(r["wrong_shown"]) for r in rows),
    }


def evaluate(
    folder: Path, *, half: str | None = None, say: Callable[[str], None] = lambda _s: None
) -> dict[str, Any]:
    """Index the folder's documents into this data folder's library (those already there are skipped), then
    ask each question (only ``half``'s, when given) with the sources leading. Returns the report."""
    from localrag.core.answer.engine import ChatEngine
    from localrag.core.answer.events import Done
    from localrag.core.answer.quotes import Evidence
    from localrag.core.answer.request import AskRequest
    from localrag.core.ingest.pipeline import index_paths
    from localrag.core.library import Library
    from localrag.eval.answers import dataset_documents

    questions = load_questions(folder, half)
    docs = dataset_documents(folder)
    missing = sorted({q.file for q in questions} - {p.name for p in docs})
    if missing:
        raise FileNotFoundError(
            f"{', '.join(missing)} not in {folder / 'docs'}: run {folder / 'fetch.sh'} first"
        )
    library = Library(owner=True)
    library.open()
    report: dict[str, Any] = {"dataset": str(folder), "half": half}
    try:
        t = time.monotonic()
        summary = index_paths(library, docs)
        report["ingest"] = {"seconds": round(time.monotonic() - t, 1), "indexed": summary.ready}
        library.settings.answer_lead, library.settings.reword = "sources", False
        engine = ChatEngine(library, None)  # the computation needs no language model
        rows = []
        for i, q in enumerate(questions, 1):
            evidence: Evidence | None = None
            for event in engine.ask(AskRequest(q.question, persist=False)):
                if isinstance(event, Done):
                    evidence = event.evidence
            worked = Computation.from_dict(evidence.figures if evidence is not None else None)
            rows.append(score(q, worked))
            say(f"{i}/{len(questions)} {q.id}: {'✓' if rows[-1]['right'] else '✗'} {rows[-1]['status']}")
        report["summary"] = summarize(rows, questions)
        report["rows"] = rows
    finally:
        library.close()
    return report
