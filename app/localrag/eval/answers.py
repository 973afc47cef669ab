"""The answer benchmark: the real ``ask`` path over questions with gold answers, per answer mode.

A dataset folder holds ``pdfs/`` (the documents; ``fetch.sh`` gets them) and ``questions/*.jsonl``, one
question a line: ``id``, ``file``, ``page`` (1-based), ``question``, ``answer`` (the gold answer),
``evidence`` (the sentence of that page that answers it, verbatim), ``kind`` (``factual``, ``numeric``,
``procedural``, ``setting``, ``yesno`` or ``document``); a ``document`` question also lists the document's
top-level ``sections`` and their ``section_pages``.

Modes: ``evidence`` (the sources lead, no model), ``generated`` (the model leads; what is scored is its
checked text) and ``default`` (the settings as shipped). For each: token F1 over content words (SQuAD-style)
against the gold answer and against the evidence sentence; the share whose cited or evidence sources include
the gold page; **correct-and-cited** (F1 ≥ 0.4 against the answer or the evidence sentence, and a source on
the gold page); the share of shown sentences no source supports, and of those shown without a mark; time to
the evidence, to the first token and to the whole answer. Document questions are scored on the sections the
answer names and the section pages it cites.
"""

from __future__ import annotations

import json
import re
import statistics
import string
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localrag.core.answer.citations import strip_citations
from localrag.core.answer.support import NOT_FOUND_MARK
from localrag.core.text import spans as sp

MODES = ("evidence", "generated", "default")
CORRECT_F1 = 0.4
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_LABELS = ("In other words:", "From your documents:")


@dataclass
class Question:
    id: str
    file: str
    page: int
    question: str
    answer: str
    evidence: str
    kind: str
    sections: list[str] = field(default_factory=list)
    section_pages: list[int] = field(default_factory=list)


def load_questions(folder: Path) -> list[Question]:
    out = []
    for path in sorted((folder / "questions").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                d = json.loads(line)
                out.append(Question(**{k: d[k] for k in Question.__dataclass_fields__ if k in d}))
    if not out:
        raise FileNotFoundError(f"no questions in {folder / 'questions'}")
    return out


# -- measures ------------------------------------------------------------------------------------------------


def normalize_tokens(text: str) -> list[str]:
    """SQuAD's normalisation (lower case, no punctuation, no articles), then content words only."""
    text = strip_citations(text).lower()
    text = "".join(" " if ch in string.punctuation or ch in "“”‘’–—" else ch for ch in text)
    text = _ARTICLES.sub(" ", text)
    return [t for t in text.split() if t not in sp.STOPWORDS]


def token_f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_tokens(prediction), normalize_tokens(gold)
    if not pred or not ref:
        return float(pred == ref)
    common = Counter(pred) & Counter(ref)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def _clean_answer(text: str) -> str:
    for label in _LABELS:
        text = text.replace(label, " ")
    return text.replace(NOT_FOUND_MARK, " ")


def _name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _section_names(answer: str, sections: list[str]) -> float:
    """The share of the gold top-level sections the answer names (their words, numbering aside)."""
    if not sections:
        return 0.0
    flat_answer = " ".join(normalize_tokens(answer))
    named = 0
    for title in sections:
        words = [w for w in normalize_tokens(title) if not re.fullmatch(r"[ivxlc\d]+", w)]
        if words and " ".join(words) in flat_answer:
            named += 1
    return named / len(sections)


def score_answer(q: Question, result: dict[str, Any], mode: str) -> dict[str, Any]:
    """One question's measures from the ``ask --json`` object ``result``."""
    parts = result.get("parts") or {}
    evidence = parts.get("evidence") or {}
    generated = parts.get("generated") or []
    if mode == "generated":
        text = " ".join(g["text"] for g in generated if g.get("shown", g.get("supported")))
        pages = {(_name(s["path"]), s["page_number"]) for s in result.get("sources", []) if s.get("cited")}
    else:
        text = _clean_answer(result.get("answer", ""))
        pages = {(_name(s["path"]), s["page_number"]) for s in evidence.get("spans", [])}
        pages |= {(_name(s["path"]), s["page_number"]) for s in result.get("sources", []) if s.get("cited")}
    f1_answer = token_f1(text, q.answer)
    f1_evidence = token_f1(text, q.evidence)
    on_page = (q.file, q.page) in pages
    shown = result.get("shown_sentences", 0)
    out: dict[str, Any] = {
        "id": q.id,
        "kind": q.kind,
        "f1_answer": round(f1_answer, 4),
        "f1_evidence": round(f1_evidence, 4),
        "gold_page_cited": on_page,
        "correct_and_cited": on_page and max(f1_answer, f1_evidence) >= CORRECT_F1,
        "shown_sentences": shown,
        "unsupported_shown": result.get("unsupported_shown", 0),
        "unsupported_unmarked": result.get("unsupported_unmarked", 0),
        "evidence_s": result.get("timings", {}).get("evidence_at_s"),
        "retrieval_s": result.get("timings", {}).get("retrieval_s"),
        "evidence_after_retrieval_s": result.get("timings", {}).get("evidence_s"),
        "ttft_s": result.get("timings", {}).get("ttft_s"),
        "total_s": result.get("timings", {}).get("total_s"),
        "answer": text[:600],
    }
    if q.kind == "document":
        cited_pages = {p for f, p in pages if f == q.file}
        out["sections_named"] = round(_section_names(text, q.sections), 4)
        out["section_pages_cited"] = round(
            sum(1 for p in q.section_pages if p in cited_pages) / max(1, len(q.section_pages)), 4
        )
        out["correct_and_cited"] = out["sections_named"] >= 0.5 and out["section_pages_cited"] >= 0.5
    return out


def _shown_counts(done: Any) -> tuple[int, int, int]:
    """Sentences shown as the answer, those no source supports, and those of them shown without a mark."""
    evidence = done.evidence
    shown = len(evidence.spans) if evidence is not None and evidence.answered else 0
    unsupported = unmarked = 0
    for g in done.generated:
        kept = g.supported or (done.lead == "model" and NOT_FOUND_MARK in done.answer)
        if not kept:
            continue
        shown += 1
        if not g.supported:
            unsupported += 1
            if g.shown() not in done.answer:
                unmarked += 1
    return shown, unsupported, unmarked


# -- running -------------------------------------------------------------------------------------------------


def ask_json(engine: Any, question: str, **options: Any) -> dict[str, Any]:
    """What ``local-rag ask --json`` prints for ``question``, through the same engine calls."""
    from localrag.core.answer.engine import Done, Failed

    out: dict[str, Any] = {}
    for event in engine.ask(None, question, persist=False, **options):
        if isinstance(event, Done):
            out = event.to_json()
            out["shown_sentences"], out["unsupported_shown"], out["unsupported_unmarked"] = _shown_counts(
                event
            )
        elif isinstance(event, Failed):
            out = {"error": event.message}
    return out


def mode_settings(mode: str) -> dict[str, Any]:
    if mode == "evidence":
        return {"answer_lead": "sources", "reword": False}
    if mode == "generated":
        return {"answer_lead": "model"}
    return {}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def share(key: str, items: Iterable[dict[str, Any]]) -> float:
        items = list(items)
        return round(sum(1 for r in items if r[key]) / len(items), 4) if items else 0.0

    def pct(values: list[float], q: float) -> float | None:
        values = sorted(v for v in values if v is not None)
        if not values:
            return None
        return round(values[min(len(values) - 1, int(q * len(values)))], 3)

    facts = [r for r in rows if r["kind"] != "document"]
    docs = [r for r in rows if r["kind"] == "document"]
    shown = sum(r["shown_sentences"] for r in rows)
    out: dict[str, Any] = {
        "questions": len(rows),
        "correct_and_cited": share("correct_and_cited", rows),
        "correct_and_cited_factual": share("correct_and_cited", facts),
        "gold_page_cited": share("gold_page_cited", facts),
        "f1_answer": round(statistics.fmean(r["f1_answer"] for r in facts), 4) if facts else 0.0,
        "f1_evidence": round(statistics.fmean(r["f1_evidence"] for r in facts), 4) if facts else 0.0,
        "shown_sentences": shown,
        "unsupported_shown_share": round(sum(r["unsupported_shown"] for r in rows) / shown, 4)
        if shown
        else 0.0,
        "unsupported_unmarked": sum(r["unsupported_unmarked"] for r in rows),
        "evidence_s": {
            "p50": pct([r["evidence_s"] for r in rows], 0.5),
            "p95": pct([r["evidence_s"] for r in rows], 0.95),
        },
        "evidence_after_retrieval_s": {
            "p50": pct([r["evidence_after_retrieval_s"] for r in rows], 0.5),
            "p95": pct([r["evidence_after_retrieval_s"] for r in rows], 0.95),
        },
        "retrieval_s": {
            "p50": pct([r["retrieval_s"] for r in rows], 0.5),
            "p95": pct([r["retrieval_s"] for r in rows], 0.95),
        },
        "ttft_s": {
            "p50": pct([r["ttft_s"] for r in rows], 0.5),
            "p95": pct([r["ttft_s"] for r in rows], 0.95),
        },
        "total_s": {
            "p50": pct([r["total_s"] for r in rows], 0.5),
            "p95": pct([r["total_s"] for r in rows], 0.95),
        },
        "by_kind": {
            k: share("correct_and_cited", [r for r in rows if r["kind"] == k])
            for k in sorted({r["kind"] for r in rows})
        },
    }
    if docs:
        out["document_sections_named"] = round(statistics.fmean(r["sections_named"] for r in docs), 4)
        out["document_section_pages_cited"] = round(
            statistics.fmean(r["section_pages_cited"] for r in docs), 4
        )
    return out


def evaluate(
    folder: Path,
    *,
    modes: Iterable[str] = MODES,
    limit: int | None = None,
    kinds: Iterable[str] | None = None,
    say: Callable[[str], None] = lambda _s: None,
) -> dict[str, Any]:
    """Ingest ``folder/pdfs`` into the library of this data folder (documents already indexed are skipped),
    then ask every question in each mode. Returns the report (``modes``: per-mode summary and rows)."""
    from localrag.core.answer.engine import ChatEngine
    from localrag.core.ingest.pipeline import index_paths
    from localrag.core.library import Library
    from localrag.core.llm.llm import LLMProvider

    questions = load_questions(folder)
    if kinds:
        questions = [q for q in questions if q.kind in set(kinds)]
    questions = questions[:limit] if limit else questions
    pdfs = sorted((folder / "pdfs").glob("*.pdf"))
    missing = sorted({q.file for q in questions} - {p.name for p in pdfs})
    if missing:
        raise FileNotFoundError(
            f"{', '.join(missing)} not in {folder / 'pdfs'}: run {folder / 'fetch.sh'} first"
        )
    library = Library(owner=True)
    library.open()
    report: dict[str, Any] = {"dataset": str(folder), "questions": len(questions), "modes": {}}
    try:
        t = time.monotonic()
        summary = index_paths(library, pdfs)
        report["ingest"] = {"seconds": round(time.monotonic() - t, 1), "indexed": summary.ready}
        say(f"library ready ({summary.ready} newly indexed)")
        provider = LLMProvider(library.settings)
        engine = ChatEngine(library, provider)
        engine.warm_up()  # loads the model
        report["model"] = provider.state.model
        defaults = {k: getattr(library.settings, k) for k in ("answer_lead", "reword")}
        for mode in modes:
            for k, v in {**defaults, **mode_settings(mode)}.items():
                setattr(library.settings, k, v)
            rows = []
            for i, q in enumerate(questions, 1):
                result = ask_json(engine, q.question)
                rows.append(score_answer(q, result, mode))
                say(
                    f"{mode} {i}/{len(questions)} {q.id}: "
                    f"{'✓' if rows[-1]['correct_and_cited'] else '✗'} F1 {rows[-1]['f1_evidence']:.2f}"
                )
            report["modes"][mode] = {"summary": summarize(rows), "rows": rows}
        for k, v in defaults.items():
            setattr(library.settings, k, v)
    finally:
        library.close()
    return report
