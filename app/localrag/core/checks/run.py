"""Running the test questions: each one searched and answered as a person's question is, with the settings
in force, and its page looked for among the passages found and in what the answer quotes.

For each question, two things are measured, with no language model:

- **rank**: the place of the first passage on one of its pages among the first ``max(k, 10)`` passages that
  retrieval returns (the ``local-rag eval`` page hit, ``questions.first_hit``);
- **quoted from the page**: whether the answer — the sentences quoted from the sources, found as in the chat
  — quotes a sentence of one of its pages.

Blocking, for a worker thread or a command: progress is reported as ``core.progress.Progress`` and the run
stops between two questions when its ``CancelToken`` is set. A finished run is kept with its totals and what
it ran with (``store.record``); a cancelled one is not.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from localrag.core.answer.engine import ChatEngine
from localrag.core.answer.events import Done, EvidenceReady, Failed
from localrag.core.answer.quotes import Evidence
from localrag.core.answer.request import AskRequest
from localrag.core.checks import store
from localrag.core.checks.questions import KS, Question, file_name, first_hit, hits_at
from localrag.core.checks.results import CheckRun, QuestionResult
from localrag.core.errors import KnownError, ModelMissing, describe
from localrag.core.progress import Cancelled, CancelToken, Progress

if TYPE_CHECKING:
    from localrag.core.library import Library

log = logging.getLogger("localrag.checks")

# Retrieval is asked for at least this many passages, so that rank 10 can be seen whatever k is.
RANK_DEPTH = max(KS)
# The settings that change what is found and what is quoted, kept with every run.
RUN_SETTINGS = (
    "k",
    "mode",
    "floor",
    "rrf_k",
    "vector_weight",
    "bm25_weight",
    "retrieval_depth",
    "bm25_k1",
    "bm25_b",
    "ef_search",
    "piece_weight",
    "routing",
    "domain_packs",
    "context_tokens",
    "answer_lead",
    "chunk_tokens",
    "chunk_overlap",
)
QUOTED_CHARS = 300


def settings_in_force(library: Library) -> dict[str, Any]:
    return {name: getattr(library.settings, name) for name in RUN_SETTINGS}


def models_in_use(library: Library) -> tuple[str, str]:
    """The embedding model's name (loading it if needed) and the language model file's name."""
    from localrag.core.llm.llm import gguf_path

    try:
        llm = gguf_path(library.settings).name
    except ModelMissing:
        llm = "none"
    return library.embedder.name, llm


def check_question(engine: ChatEngine, q: Question, cancel: CancelToken | None = None) -> QuestionResult:
    """One question searched and answered with the settings in force. A question that cannot be run (the
    store down, a bug) gets its ``error``; ``Cancelled`` is raised."""
    from localrag.core.retrieve import ERROR, MODEL_MISMATCH, retrieve

    started = time.perf_counter()
    try:
        depth = max(engine.settings.k, RANK_DEPTH)
        resp = retrieve(engine.library, q.question, k=depth, cancel=cancel)
        if resp.reason in (ERROR, MODEL_MISMATCH):
            why = resp.error or "the documents were indexed with another embedding model"
            return QuestionResult(q.id, None, False, error=f"Not searched: {why}")
        ranked = [(r.file_name, r.page_number) for r in resp.results]
        evidence = quoted_evidence(engine, q.question, cancel)
    except Cancelled:
        raise
    except Exception as exc:  # an environment problem as its message; a bug logged with its traceback
        message, _known = describe(exc, "checking a test question", log)
        return QuestionResult(q.id, None, False, error=message, seconds=time.perf_counter() - started)
    spans = evidence.spans if evidence is not None and evidence.answered else []
    on_page = [s for s in spans if file_name(s.path) == q.file and s.page_number in q.pages]
    quoted = ""
    if spans:
        first = (on_page or spans)[0]
        text = first.shown if len(first.shown) <= QUOTED_CHARS else first.shown[: QUOTED_CHARS - 1] + "…"
        quoted = f"{text} — {file_name(first.path)} p. {first.page_number}"
    return QuestionResult(
        q.id,
        first_hit(ranked, q.targets()),
        bool(on_page),
        quoted,
        [f"{name} p. {page}" for name, page in ranked[:RANK_DEPTH]],
        time.perf_counter() - started,
    )


def quoted_evidence(engine: ChatEngine, question: str, cancel: CancelToken | None) -> Evidence | None:
    """What the answer to ``question`` quotes, found as in the chat (nothing is saved, no model runs)."""
    events = engine.ask(AskRequest(question, persist=False, cancel=cancel or CancelToken()))
    try:
        for event in events:
            if isinstance(event, EvidenceReady):
                return event.evidence
            if isinstance(event, Done):
                if event.cancelled:
                    raise Cancelled()
                return event.evidence
            if isinstance(event, Failed):  # already logged by the engine when it is a bug
                raise KnownError(event.message)
    finally:
        close = getattr(events, "close", None)  # a generator: its run ends here, with nothing more asked
        if close is not None:
            close()
    return None


def run_checks(
    library: Library,
    *,
    ids: Sequence[int] | None = None,
    cancel: CancelToken | None = None,
    progress: Callable[[Progress], None] | None = None,
    keep: bool = True,
) -> tuple[CheckRun, list[QuestionResult]]:
    """Run every test question (or those of ``ids``) and keep the run (``keep``) unless it was cancelled.

    Args:
        cancel: stops the run between two questions; the run comes back with ``cancelled`` set.
        progress: called with a copy of the run's ``Progress`` before the first question and after each.
    """
    cancel = cancel or CancelToken()
    report = progress or (lambda _p: None)
    with library.connect() as conn:
        questions = store.questions(conn)
        documents, chunks = store.library_size(conn)
    if ids is not None:
        wanted = set(ids)
        questions = [q for q in questions if q.id in wanted]
    started_at = dt.datetime.now(dt.timezone.utc)
    started = time.monotonic()
    state = Progress("Running the test questions", 0, len(questions), "questions")
    report(dataclasses.replace(state))
    embedding_model, llm_model = models_in_use(library)
    engine = ChatEngine(library, None)
    results: list[QuestionResult] = []
    cancelled = False
    for q in questions:
        if cancel.cancelled:
            cancelled = True
            break
        try:
            results.append(check_question(engine, q, cancel))
        except Cancelled:
            cancelled = True
            break
        state.done += 1
        report(dataclasses.replace(state))
    run = CheckRun(
        started_at=started_at,
        seconds=time.monotonic() - started,
        questions=len(results),
        hits=hits_at([r.rank for r in results]),
        quoted=sum(1 for r in results if r.quoted_on_page),
        settings=settings_in_force(library),
        embedding_model=embedding_model,
        llm_model=llm_model,
        documents=documents,
        chunks=chunks,
        cancelled=cancelled,
    )
    if keep and not cancelled and questions:
        with library.connect() as conn:
            run.id = store.record(conn, run, results)
    return run, results
