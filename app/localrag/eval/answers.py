"""The answer benchmark: the real ``ask`` path over questions with gold answers, per answer mode.

A dataset folder holds ``docs/`` (the documents, of any type the app reads) or ``pdfs/`` (PDFs only), which
its ``fetch.sh`` gets, and ``questions/*.jsonl``, one question a line: ``id``, ``file``, ``page`` (1-based; a
file the app reads as one page — HTML, Markdown, Word — has only page 1), ``question``, ``answer`` (the gold
answer), ``evidence`` (the sentence(s) of that page that answer it, verbatim), ``kind`` (``factual``,
``setting``, ``numeric``, ``procedural``, ``yesno``, ``multi``, ``list``, ``compare``, ``document`` or
``none``). A ``document`` question also lists the document's top-level ``sections`` and their
``section_pages``; a ``compare`` question (or any other) may list ``files`` and ``pages``, and citing any of
those pages counts; a ``none`` question has ``answer`` "" and ``page`` 0: the documents do not answer it, and
the right answer says so (nothing quoted, or the engine's "not found" wording) — quoting an answer is wrong.
An optional ``split.json`` (``{"tune": [files], "test": [files]}``) divides the questions by document;
``evaluate(half=...)`` asks only one half's questions, while every document of the folder is indexed, so
retrieval searches the whole pool.

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
from localrag.core.answer.prompts import NO_ANSWER, NO_ANSWER_SOURCES, NOT_FOUND
from localrag.core.answer.quotes import ANSWERED, NOT_FOUND_TEXT
from localrag.core.answer.support import NOT_FOUND_MARK
from localrag.core.text import glyphs
from localrag.core.text import spans as sp

MODES = ("evidence", "generated", "default")
CORRECT_F1 = 0.4
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_LABELS = ("In other words:", "From your documents:")
NONE_KIND = "none"
HALVES = ("tune", "test")
# What an answer that declines says: the engine's own wordings, and a model's usual ones.
_DECLINES = re.compile(
    "|".join(
        [re.escape(t) for t in (NOT_FOUND, NOT_FOUND_TEXT, NO_ANSWER, NO_ANSWER_SOURCES)]
        + [
            r"\b(?:could not|couldn't|cannot|can't|did not|didn't|do not|don't) (?:find|see)\b",
            r"\b(?:do|does) not (?:seem to )?(?:answer|contain|mention|say|cover|include|describe)\b",
            r"\bnot (?:found|mentioned|covered|answered) in (?:the|your) (?:documents|sources)\b",
            r"\bno (?:information|mention) (?:about|of|on)\b",
            r"\bnothing the model wrote could be found\b",
        ]
    ),
    re.IGNORECASE,
)


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
    files: list[str] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)

    def gold_pages(self) -> set[tuple[str, int]]:
        """Where the answer is, as (file, page): ``files``/``pages`` when given, else ``file``/``page``."""
        if self.files and len(self.files) == len(self.pages):
            return set(zip(self.files, self.pages, strict=True))
        return {(self.file, self.page)}

    def documents(self) -> set[str]:
        return {self.file, *self.files}


def load_questions(folder: Path) -> list[Question]:
    return read_questions(folder, Question)


def read_questions(folder: Path, kind: Any) -> list[Any]:
    """Each line of ``folder/questions/*.jsonl`` as a ``kind`` (a dataclass), with the fields it has."""
    out = []
    for path in sorted((folder / "questions").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                d = json.loads(line)
                out.append(kind(**{k: d[k] for k in kind.__dataclass_fields__ if k in d}))
    if not out:
        raise FileNotFoundError(f"no questions in {folder / 'questions'}")
    return out


def half_questions(folder: Path, questions: list[Question], half: str) -> list[Question]:
    """The questions whose documents are all in ``half`` (``tune`` or ``test``) of ``folder/split.json``."""
    files = half_files(folder, half)
    return [q for q in questions if q.documents() <= files]


def half_files(folder: Path, half: str) -> set[str]:
    """The document file names of ``half`` (``tune`` or ``test``) of ``folder/split.json``."""
    if half not in HALVES:
        raise ValueError(f"half is one of {', '.join(HALVES)}, not {half!r}")
    path = folder / "split.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: this dataset has no tune/test split")
    return set(json.loads(path.read_text(encoding="utf-8"))[half])


def dataset_documents(folder: Path) -> list[Path]:
    """A dataset folder's documents: each file the app reads in ``docs/``, else the PDFs in ``pdfs/``."""
    from localrag.core.ingest.loaders import SUPPORTED_SUFFIXES

    if (folder / "docs").is_dir():
        return sorted(
            p for p in (folder / "docs").iterdir() if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES
        )
    return sorted((folder / "pdfs").glob("*.pdf"))


# -- measures ------------------------------------------------------------------------------------------------


def normalize_tokens(text: str) -> list[str]:
    """SQuAD's normalisation (lower case, no punctuation, no articles), then content words only; a ligature
    reads as its letters (a quote "eﬀect" is the word "effect")."""
    text = glyphs.letters(strip_citations(text)).lower()
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


def declined(result: dict[str, Any]) -> bool:
    """Whether the answer says the documents do not answer: it quotes no sentence as the answer, and it
    either shows no sentence of the model's or says in words that it found nothing."""
    if result.get("error"):  # the question failed: it said nothing
        return False
    parts = result.get("parts") or {}
    evidence = parts.get("evidence") or {}
    status = evidence.get("status") or result.get("evidence_status")
    if status == ANSWERED and evidence.get("spans"):
        return False
    shown = [g for g in parts.get("generated") or [] if g.get("shown", g.get("supported"))]
    answer = result.get("answer", "")
    return not shown or not answer.strip() or bool(_DECLINES.search(answer))


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
    on_page = bool(q.gold_pages() & pages)
    shown = result.get("shown_sentences", 0)
    said_none = declined(result)
    out: dict[str, Any] = {
        "id": q.id,
        "kind": q.kind,
        "f1_answer": round(f1_answer, 4),
        "f1_evidence": round(f1_evidence, 4),
        "gold_page_cited": on_page,
        "correct_and_cited": on_page and max(f1_answer, f1_evidence) >= CORRECT_F1,
        "declined": said_none,
        "shown_sentences": shown,
        "unsupported_shown": result.get("unsupported_shown", 0),
        "unsupported_unmarked": result.get("unsupported_unmarked", 0),
        "evidence_s": result.get("timings", {}).get("evidence_at_s"),
        "retrieval_s": result.get("timings", {}).get("retrieval_s"),
        "evidence_after_retrieval_s": result.get("timings", {}).get("evidence_s"),
        # the evidence step apart from the embedding model: reading the passages, the features, the reader
        "reader_s": round(float(evidence["seconds"]) - float(evidence.get("embed_seconds") or 0.0), 4)
        if evidence.get("seconds") is not None
        else None,
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
    if q.kind == NONE_KIND:  # nothing to quote: right when it says so, wrong when it answers anyway
        out.update(f1_answer=0.0, f1_evidence=0.0, gold_page_cited=False, correct_and_cited=said_none)
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
    from localrag.core.answer.events import Done, Failed
    from localrag.core.answer.request import AskRequest

    out: dict[str, Any] = {}
    for event in engine.ask(AskRequest(question, persist=False, **options)):
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

    facts = [r for r in rows if r["kind"] not in ("document", NONE_KIND)]
    docs = [r for r in rows if r["kind"] == "document"]
    nones = [r for r in rows if r["kind"] == NONE_KIND]
    shown = sum(r["shown_sentences"] for r in rows)
    out: dict[str, Any] = {
        "questions": len(rows),
        "correct_and_cited": share("correct_and_cited", rows),
        "correct_and_cited_factual": share("correct_and_cited", facts),
        "gold_page_cited": share("gold_page_cited", facts),
        # of the same questions: the gold page quoted or cited, and the answer not
        "right_page_wrong_sentence": round(
            sum(r["gold_page_cited"] and not r["correct_and_cited"] for r in facts) / len(facts), 4
        )
        if facts
        else 0.0,
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
        "reader_s": {
            "p50": pct([r["reader_s"] for r in rows], 0.5),
            "p95": pct([r["reader_s"] for r in rows], 0.95),
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
    if nones:  # the share of unanswerable questions declined, and of answerable ones declined wrongly
        out["none_declined"] = share("declined", nones)
        out["answerable_declined"] = share("declined", [r for r in rows if r["kind"] != NONE_KIND])
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
    half: str | None = None,
    collection: str | None = None,
    say: Callable[[str], None] = lambda _s: None,
) -> dict[str, Any]:
    """Ingest the folder's documents (``docs/`` or ``pdfs/``) into the library of this data folder (documents
    already indexed are skipped), then ask every question — only those of ``half`` (``tune``/``test``, from
    ``split.json``) when given; all documents are indexed either way — in each mode. Returns the report
    (``modes``: per-mode summary and rows). ``collection``: answer from that collection's documents only."""
    from localrag.core.answer.engine import ChatEngine
    from localrag.core.ingest.pipeline import index_paths
    from localrag.core.library import Library
    from localrag.core.llm.provider import LLMProvider

    questions = load_questions(folder)
    if half:
        questions = half_questions(folder, questions, half)
    if kinds:
        questions = [q for q in questions if q.kind in set(kinds)]
    questions = questions[:limit] if limit else questions
    pdfs = dataset_documents(folder)
    missing = sorted(set().union(*(q.documents() for q in questions)) - {p.name for p in pdfs})
    if missing:
        where = folder / "docs" if (folder / "docs").is_dir() else folder / "pdfs"
        raise FileNotFoundError(f"{', '.join(missing)} not in {where}: run {folder / 'fetch.sh'} first")
    library = Library(owner=True)
    library.open()
    report: dict[str, Any] = {
        "dataset": str(folder),
        "half": half,
        "questions": len(questions),
        "documents_indexed": len(pdfs),
        "modes": {},
    }
    try:
        t = time.monotonic()
        summary = index_paths(library, pdfs)
        report["ingest"] = {"seconds": round(time.monotonic() - t, 1), "indexed": summary.ready}
        say(f"library ready ({summary.ready} newly indexed)")
        scope = {"collection_id": library.collection(collection).id} if collection else {}
        report["collection"] = collection
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
                result = ask_json(engine, q.question, **scope)
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
