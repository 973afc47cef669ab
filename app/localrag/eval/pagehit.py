"""Page hit@k: does retrieval put a page that holds the answer among its first k passages?

A page-hit dataset is a folder with the documents (``docs/`` or ``pdfs/``) and questions, either one
``questions.jsonl`` or ``questions/*.jsonl``; each question has ``question``, ``file`` (the document's file
name) and ``pages`` (1-based; or one ``page``), the lines of the test questions (``core/checks/questions``).
A question counts at k when one of the first k passages ``retrieve`` returns is on one of its pages of its
file.

Two settings: **pooled** (the whole library, as a person asks) and **scoped** (only the question's document,
as if the person had picked it). The documents are ingested into the library of this data folder first
(those already indexed are skipped), so a second run only searches.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from localrag.core.checks.questions import KS, Question, first_hit, hits_at, read_jsonl
from localrag.eval import metrics

__all__ = ["KS", "first_hit"]

DOC_SUFFIXES = (".pdf", ".md", ".txt", ".html", ".htm", ".docx")


def is_page_dataset(folder: Path) -> bool:
    """Whether ``folder`` holds page-hit questions (rather than a BEIR corpus)."""
    if (folder / "corpus.jsonl").exists():
        return False
    return (folder / "questions.jsonl").exists() or any((folder / "questions").glob("*.jsonl"))


def load_questions(folder: Path) -> list[Question]:
    """Every question of the folder (the lines of the test questions' JSONL); a line without an ``id`` is
    labelled by its file's name and line number."""
    files = [folder / "questions.jsonl"] if (folder / "questions.jsonl").exists() else []
    files += sorted((folder / "questions").glob("*.jsonl"))
    out = []
    for path in files:
        for n, q in enumerate(read_jsonl(path), 1):
            q.label = q.label or f"{path.stem}-{n}"
            out.append(q)
    if not out:
        raise FileNotFoundError(f"no questions in {folder}")
    return out


def document_files(folder: Path) -> list[Path]:
    for name in ("docs", "pdfs"):
        if (folder / name).is_dir():
            return sorted(p for p in (folder / name).rglob("*") if p.suffix.lower() in DOC_SUFFIXES)
    return []


def summarize(hits: list[int | None], latencies: list[float]) -> dict[str, Any]:
    n = max(1, len(hits))
    out: dict[str, Any] = {f"hit@{k}": round(count / n, 4) for k, count in hits_at(hits).items()}
    out["mrr@10"] = round(sum(1.0 / h for h in hits if h and h <= 10) / n, 4)
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
    say: Callable[[str], None] = lambda _s: None,
) -> dict[str, Any]:
    """Ingest the folder's documents into this data folder's library (skipping those indexed), then search
    every question pooled and scoped. ``route``: routing on or off (default: the setting).
    ``indexed_only``: ingest nothing and ask only the questions whose document is in the library.
    ``collection``: search only that collection's documents (its name), pooled."""
    from localrag.core.ingest.pipeline import index_paths
    from localrag.core.library import Library
    from localrag.core.retrieve import retrieve

    questions = load_questions(folder)[:limit] if limit else load_questions(folder)
    files = document_files(folder)
    missing = sorted({q.file for q in questions} - {p.name for p in files})
    if missing:
        raise FileNotFoundError(f"{', '.join(missing[:5])} not in {folder}")
    library = Library(owner=True)
    library.open()
    report: dict[str, Any] = {"dataset": str(folder), "questions": len(questions), "k": k, "settings": {}}
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
            questions = [q for q in questions if q.file in by_name]
            report["questions"] = len(questions)
            report["documents"] = len(by_name)
        for setting in settings_names:
            hits: list[int | None] = []
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
                hit = first_hit(ranked, q.file, q.pages)
                hits.append(hit)
                per_question.append(
                    {
                        "id": q.label,
                        "file": q.file,
                        "pages": q.pages,
                        "hit": hit,
                        "ranked": [f"{name} p{page}" for name, page in ranked],
                        "routing": resp.routing,
                    }
                )
            report["settings"][setting] = {**summarize(hits, latencies), "rows": per_question}
            say(f"{setting}: " + json.dumps(summarize(hits, latencies)))
    finally:
        library.close()
    return report
