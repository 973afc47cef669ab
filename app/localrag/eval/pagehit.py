"""Page hit@k: does retrieval put a page that holds the answer among its first k passages?

A page-hit dataset is a folder with the documents (``docs/`` or ``pdfs/``) and questions, either one
``questions.jsonl`` or ``questions/*.jsonl``; each question has ``question``, ``file`` (the document's file
name) and ``pages`` (1-based; or one ``page``); a question over several documents lists ``files`` beside its
``pages`` (one page each). A question counts at k when one of the first k passages ``retrieve`` returns is on
one of its pages. A question without a page (one the documents do not answer) is left out.

A question with ``evidence`` (the sentences that answer it, as in ``eval answers``) is also counted for
**span@k**: one of the first k passages is on a gold page and holds one of those sentences (compared on
letters and digits; half of a long sentence, cut by a chunk's end, is enough). It says whether the answer's
words reach what the evidence step reads, which page hit cannot say for a document read as one page (Word,
HTML, Markdown). With a ``split.json`` (``{"tune": [files], "test": [files]}``), ``half`` asks only the
questions of that half; every document is indexed either way.

Two settings: **pooled** (the whole library, as a person asks) and **scoped** (only the question's document,
as if the person had picked it). The documents are ingested into the library of this data folder first
(those already indexed are skipped), so a second run only searches.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from localrag.core.checks.questions import Question, first_hit
from localrag.eval import metrics

KS = (1, 5, 10)
# span@k at these k: 5 is how many passages the evidence step reads.
SPAN_KS = (1, 5, 10)
DOC_SUFFIXES = (".pdf", ".md", ".txt", ".html", ".htm", ".docx")


def is_page_dataset(folder: Path) -> bool:
    """Whether ``folder`` holds page-hit questions (rather than a BEIR corpus)."""
    if (folder / "corpus.jsonl").exists():
        return False
    return (folder / "questions.jsonl").exists() or any((folder / "questions").glob("*.jsonl"))


def load_questions(folder: Path, half: str | None = None) -> list[Question]:
    """The questions that have a gold page; only those of ``half`` of ``split.json`` when given. Each is a
    test question (``core/checks/questions.py``), labelled ``FILE-LINE`` when its line has no ``id``."""
    files = [folder / "questions.jsonl"] if (folder / "questions.jsonl").exists() else []
    files += sorted((folder / "questions").glob("*.jsonl"))
    out = []
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            d = json.loads(line)
            pages = d.get("pages") or ([d["page"]] if d.get("page") else [])
            if not pages:  # the documents do not answer it: no page to find
                continue
            # An answer or evidence that is not text (a number, a list of sentences) is read as its text.
            text = {k: str(d[k]) for k in ("answer", "evidence") if d.get(k) and not isinstance(d[k], str)}
            q = Question.from_json({**d, **text, "pages": [int(p) for p in pages]})
            q.label = q.label or f"{path.stem}-{n}"
            out.append(q)
    if half is not None:
        from localrag.eval.answers import half_files

        allowed = half_files(folder, half)
        out = [q for q in out if q.documents() <= allowed]
    if not out:
        raise FileNotFoundError(f"no questions in {folder}")
    return out


def document_files(folder: Path) -> list[Path]:
    for name in ("docs", "pdfs"):
        if (folder / name).is_dir():
            return sorted(p for p in (folder / name).rglob("*") if p.suffix.lower() in DOC_SUFFIXES)
    return []


_SENTENCE_END = re.compile(r"(?<=[.!?:])\s+")
# A sentence shorter than this (letters and digits) is too common to tell a passage apart.
MIN_SENTENCE_CHARS = 20


def _letters(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def holds_evidence(text: str, evidence: str) -> bool:
    """Whether ``text`` holds one of the sentences of ``evidence``, or half of a long one (compared on letters
    and digits, so line breaks, hyphens and quote styles do not matter)."""
    flat = _letters(text)
    for sentence in _SENTENCE_END.split(evidence):
        s = _letters(sentence)
        if len(s) < MIN_SENTENCE_CHARS:
            continue
        half = len(s) // 2
        if s in flat or (half >= 2 * MIN_SENTENCE_CHARS and (s[:half] in flat or s[half:] in flat)):
            return True
    return False


def first_span(passages: list[tuple[str, int, str]], q: Question) -> int | None:
    """The 1-based rank of the first passage (file, page, text) on a gold page that holds the evidence."""
    if not q.evidence:
        return None
    targets = q.targets()
    for i, (name, page, text) in enumerate(passages, 1):
        if (name, page) in targets and holds_evidence(text, q.evidence):
            return i
    return None


def summarize(
    hits: list[int | None], latencies: list[float], spans: list[int | None] | None = None
) -> dict[str, Any]:
    n = max(1, len(hits))
    out: dict[str, Any] = {f"hit@{k}": round(sum(1 for h in hits if h and h <= k) / n, 4) for k in KS}
    out["mrr@10"] = round(sum(1.0 / h for h in hits if h and h <= 10) / n, 4)
    if spans is not None:
        for k in SPAN_KS:
            out[f"span@{k}"] = round(sum(1 for h in spans if h and h <= k) / max(1, len(spans)), 4)
    if latencies:
        out["latency_ms"] = {**metrics.percentiles(latencies), "mean": round(statistics.fmean(latencies), 2)}
    return out


def evaluate(
    folder: Path,
    *,
    k: int = 10,
    limit: int | None = None,
    settings_names: Iterable[str] = ("pooled", "scoped"),
    route: bool | None = None,
    indexed_only: bool = False,
    collection: str | None = None,
    half: str | None = None,
    say: Callable[[str], None] = lambda _s: None,
) -> dict[str, Any]:
    """Ingest the folder's documents into this data folder's library (skipping those indexed), then search
    every question pooled and scoped. ``route``: routing on or off (default: the setting).
    ``indexed_only``: ingest nothing and ask only the questions whose document is in the library.
    ``half``: only the questions of that half (``tune``/``test``) of the folder's ``split.json``.
    ``collection``: search only that collection's documents (its name), pooled."""
    from localrag.core.ingest.pipeline import index_paths
    from localrag.core.library import Library
    from localrag.core.retrieve import retrieve

    questions = load_questions(folder, half)
    questions = questions[:limit] if limit else questions
    files = document_files(folder)
    missing = sorted(set().union(*(q.documents() for q in questions)) - {p.name for p in files})
    if missing:
        raise FileNotFoundError(f"{', '.join(missing[:5])} not in {folder}")
    library = Library(owner=True)
    library.open()
    report: dict[str, Any] = {
        "dataset": str(folder),
        "half": half,
        "questions": len(questions),
        "k": k,
        "settings": {},
    }
    try:
        if not indexed_only:
            t = time.monotonic()
            summary = index_paths(library, files)
            report["ingest"] = {
                "seconds": round(time.monotonic() - t, 1),
                "indexed": summary.ready,
                "pages": summary.pages,
                "chunks": summary.chunks,
            }
            say(f"library ready ({summary.ready} newly indexed)")
        collection_id = library.collection(collection).id if collection else None
        if collection:
            report["collection"] = collection
        with library.pool.connection() as conn:
            rows = conn.execute("SELECT id, path FROM documents WHERE status = 'ready'").fetchall()
        by_name = {Path(str(p).replace("\\", "/")).name: int(i) for i, p in rows}
        if indexed_only:
            questions = [q for q in questions if q.documents() <= set(by_name)]
            report["questions"] = len(questions)
            report["documents"] = len(by_name)
        for setting in settings_names:
            hits: list[int | None] = []
            spans: list[int | None] = []
            latencies: list[float] = []
            per_question = []
            for q in questions:
                doc_ids = [by_name[q.file]] if setting == "scoped" and q.file in by_name else None
                started = time.perf_counter()
                resp = retrieve(
                    library, q.question, k=k, doc_ids=doc_ids, collection=collection_id, route=route
                )
                latencies.append((time.perf_counter() - started) * 1000.0)
                ranked = [(r.file_name, r.page_number) for r in resp.results]
                hit = first_hit(ranked, q.targets())
                hits.append(hit)
                read = [(*place, r.text) for place, r in zip(ranked, resp.results, strict=True)]
                span = first_span(read, q)
                if q.evidence:
                    spans.append(span)
                per_question.append(
                    {
                        "id": q.label,
                        "file": q.file,
                        "pages": q.pages,
                        "hit": hit,
                        "span": span,
                        "ranked": [f"{name} p{page}" for name, page in ranked],
                        "routing": resp.routing,
                    }
                )
            counted = spans if any(q.evidence for q in questions) else None
            report["settings"][setting] = {**summarize(hits, latencies, counted), "rows": per_question}
            say(f"{setting}: " + json.dumps(summarize(hits, latencies, counted)))
    finally:
        library.close()
    return report
