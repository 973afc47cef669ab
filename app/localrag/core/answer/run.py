"""One question answered, step by step: history, retrieval, the evidence quoted from the sources, the model's
part streamed and checked sentence by sentence, citations, and the exchange saved (``AnswerRun``, driven by
``ChatEngine``). The events it yields are in ``events.py``."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import psycopg

from localrag.core.answer import compare, fallback, figures, prompts
from localrag.core.answer.citations import Source, apply_citations, check_citations, quoted_sections
from localrag.core.answer.echo import EchoFilter
from localrag.core.answer.events import (
    DOCUMENTS,
    FROM_SOURCES_LABEL,
    MODEL,
    MODEL_ALONE,
    NOT_ANSWERED,
    REWORD_LABEL,
    SOURCES,
    ChatEvent,
    Checked,
    Done,
    EvidenceReady,
    Failed,
    Retrieved,
    Searching,
    Token,
    WarmingUp,
    answer_parts,
)
from localrag.core.answer.evidence import PASSAGES, Evidence, find_evidence
from localrag.core.answer.exchange import Exchange, earlier_turns, new_chat, save_exchange
from localrag.core.answer.model_setup import choose_lead, keep_prefix, llm_setup
from localrag.core.answer.notices import (
    NOT_ANSWERED_TEXT,
    NOT_SAVED_NOTICE,
    NOTHING_CHECKED,
    STRICT_STORE_DOWN,
    notice_for,
    unmentioned_notice,
)
from localrag.core.answer.pages import whole_sentences
from localrag.core.answer.prompts import GROUNDED, NOT_FOUND, PLAIN, STRICT, Prompt, Turn
from localrag.core.answer.query import follow_up_query, relevant, search_for
from localrag.core.answer.quotes import NOT_FOUND as NOT_FOUND_STATUS
from localrag.core.answer.request import AskRequest
from localrag.core.answer.support import CheckedSentence, SentenceStream, SupportChecker
from localrag.core.errors import KnownError, ModelMissing, StoreUnavailable
from localrag.core.llm.llm import LocalLLM
from localrag.core.progress import Cancelled
from localrag.core.text.spans import flat

if TYPE_CHECKING:
    from localrag.core.library import Library
    from localrag.core.llm.provider import LLMProvider
    from localrag.core.retrieve import PackedContext, Result, RetrievalResponse

log = logging.getLogger("localrag.chat")

# A question the documents do not answer lists this many of the closest passages found.
CLOSEST_PASSAGES = 3
# When the sources lead, every passage found is a source: no model reads them all.
UNLIMITED_TOKENS = 1_000_000
# A rewording is short (it adds words, not facts) and stops once it strays from the sources.
REWORD_MAX_TOKENS = 80
REWORD_MISSES = 2


def _nothing_packed(resp: RetrievalResponse) -> PackedContext:
    """An empty context that says why each passage found was left out (so no view lists them as sources)."""
    from localrag.core.retrieve import PackedContext

    return PackedContext(budget=0, dropped=[(r, "not relevant enough") for r in resp.results])


class Answerer(Protocol):
    """What a run needs of its ``ChatEngine``."""

    library: Library
    settings: Any
    provider: LLMProvider | None
    llm_error: str
    evidence_keep: int


class AnswerRun:
    """One question being answered (the state ``ChatEngine.ask`` and ``prepare`` thread through its steps)."""

    def __init__(self, engine: Answerer, request: AskRequest, *, max_tokens: int | None = None) -> None:
        self.engine = engine
        self.library = engine.library
        self.settings = engine.settings
        self.chat_id = request.chat_id
        self.question = request.question.strip()
        self.grounded = request.grounded
        self.strict = request.strict and request.grounded
        self.doc_ids, self.doc_types = request.doc_ids, request.doc_types
        self.collection_id = request.collection_id
        self.cancel = request.cancel
        self.max_tokens = max_tokens or request.max_tokens or engine.settings.max_tokens
        self.persist = request.persist
        self.started = time.monotonic()
        self.timings: dict[str, Any] = {}
        self.notices: list[str] = []
        self.answer = ""
        self.prompt: Prompt | None = None
        self.history: list[Turn] = []
        self.given_history = list(request.history) if request.history is not None else None
        self.earlier: list[str] = []
        self.store_ok = True
        self.sources_used: list[Result] = []
        self.evidence_sources: list[Any] = []  # the same passages, their sentences made whole
        self.evidence: Evidence | None = None
        self.generated: list[CheckedSentence] = []
        self.lead = SOURCES
        self._misses = 0
        self.model_error = ""
        self._step = fallback.REWORDING  # the model's step under way, named if it fails
        self.basis = ""  # set where it is not read from the evidence (see ``finish``)

    def events(self) -> Iterator[ChatEvent]:
        if not self.question:
            yield Failed("Type a question first.", known=True)
            return
        self._load_history()
        if not self.grounded:
            yield from self._generate(PLAIN, None)
            return
        yield Searching(follow_up_query(self.question, self.earlier))
        query, resp, results = search_for(self.question, self.earlier, self._retrieve)
        if resp.reason is None:
            self.notices.append(unmentioned_notice(self.library.pool, self.question))
            found = self._overview()
            if found is not None:
                yield from self._overview_answer(query, resp, found)
                return
        mode, notice = self._mode(resp, results)
        if mode is None and not self.strict:  # the documents do not answer: say so, list the closest passages
            yield from self._not_found(query, resp)
            return
        if mode is None:  # strict, and nothing to answer from: say so plainly, without the model
            self.basis = NOT_ANSWERED
            why = resp.error or "the database is not reachable"
            text = STRICT_STORE_DOWN.format(why=why) if resp.reason else NOT_FOUND
            yield Retrieved(query, resp, _nothing_packed(resp), None, [], notice)
            yield from self._fixed_answer(text, notice)
            return
        if notice:
            self.notices.append(notice)
        if (
            mode == PLAIN
        ):  # nothing relevant found, or the store is down: the model alone, and the notice says so
            yield Retrieved(query, resp, _nothing_packed(resp), None, [], self.notice)
            yield from self._generate(PLAIN, resp)
            return
        self.lead = self._lead()
        packed = self._pack(results)
        self._find_evidence(packed.sources, query, results)
        assert self.evidence is not None
        yield Retrieved(query, resp, packed, None, self._sources(), self.notice)
        yield EvidenceReady(self.evidence, self.lead, self.evidence.text())
        if self.lead == SOURCES and not (self.settings.reword and self.evidence.answered):
            self.answer = self.evidence.text()
            yield self.finish(cancelled=False)
            return
        yield from self._generate(mode, resp)

    def _generate(self, mode: str, resp: RetrievalResponse | None) -> Iterator[ChatEvent]:
        """The model's part: a plain answer, the answer itself (``lead`` model) or a rewording of the evidence
        (``lead`` sources), each grounded sentence checked against the sources as it completes."""
        if mode == PLAIN:
            self.basis = MODEL_ALONE
        llm = yield from self._model(resp, self.sources_used)
        if llm is None:
            if self.evidence is not None:  # the sources still answer
                why = (self.model_error or self.engine.llm_error or "No language model is loaded").rstrip(".")
                self.notices.append(f"{why}: the answer is quoted from your documents.")
                self.lead = SOURCES
                self.answer = self.evidence.text()
                yield self.finish(cancelled=False)
            return
        try:
            cancelled = yield from self._stream(llm, mode)
        except Cancelled:
            raise
        except Exception as exc:  # rewording or checking failed: the evidence found still answers
            if self.evidence is None:
                raise
            instead = fallback.QUOTED if self.evidence.answered else fallback.PASSAGES
            self.notices.append(fallback.step_failed(self._step, instead, exc, log))
            self.lead, self.generated = SOURCES, []
            self.answer = self.evidence.text()
            cancelled = self.cancel.cancelled
        yield self.finish(cancelled=cancelled)

    def _stream(self, llm: LocalLLM, mode: str) -> Generator[ChatEvent, None, bool]:
        """The model's answer streamed, each sentence checked as it completes; ``return``s whether it was
        stopped."""
        self._step = fallback.REWORDING
        setup = llm_setup(llm)
        if setup:
            self.timings["llm_setup"] = setup
        self.prompt = self._prompt_for(llm, mode)
        yield self.prompt
        self.cancel.raise_if_cancelled()
        checker = SupportChecker(self.evidence_sources, self._embed) if self.evidence is not None else None
        rewording = checker is not None and self.lead == SOURCES
        before_first = time.monotonic()
        pieces: list[str] = []
        sentences = SentenceStream()
        # Copies of the worked example (grounded prompts only) and repeats of the answer's own lines are
        # dropped.
        echo = EchoFilter(prompts.example_phrases() if self.prompt.sources else ())
        stream = llm.stream(
            self.prompt.tokens,
            max_tokens=min(self.max_tokens, REWORD_MAX_TOKENS) if rewording else self.max_tokens,
            temperature=self.settings.temperature,
            stop=prompts.STOP,
            cancel=self.cancel,
        )
        for piece in stream:
            if "ttft_s" not in self.timings:
                self.timings["ttft_s"] = time.monotonic() - self.started - self.timings.get("wait_s", 0.0)
            shown = echo.feed(piece)
            if shown:
                pieces.append(shown)
                yield Token(shown)
                if checker is not None:
                    yield from self._check(checker, sentences.feed(shown), rewording)
            if echo.looping:  # the model writes the same lines over and over: the answer is what came before
                self.timings["loop_stopped"] = True
                break
            if rewording and self._misses >= REWORD_MISSES:  # it no longer says what the sources say
                self.timings["reword_stopped"] = True
                break
        if tail := echo.flush():
            pieces.append(tail)
            yield Token(tail)
            if checker is not None:
                yield from self._check(checker, sentences.feed(tail), rewording)
        if checker is not None:
            yield from self._check(checker, sentences.flush(), rewording)
        if echo.dropped:
            self.timings["echo_dropped"] = len(echo.dropped)
        stats = llm.last_stats
        self.answer = self._compose("".join(pieces).strip())
        if not self.answer and not (stats.cancelled or self.cancel.cancelled):
            self.answer = prompts.NO_ANSWER_SOURCES if self.sources_used else prompts.NO_ANSWER
            yield Token(self.answer)
        self.timings.update(
            prompt_s=stats.prompt_s if stats.tokens else time.monotonic() - before_first,
            prompt_tokens=stats.prompt_tokens,
            cached_tokens=stats.cached_tokens,
            tokens=stats.tokens,
            tokens_per_s=stats.tokens_per_s,
        )
        return bool(stats.cancelled or self.cancel.cancelled)

    def _check(
        self, checker: SupportChecker, sentences: Iterator[str], rewording: bool
    ) -> Iterator[ChatEvent]:
        for text in sentences:
            self._step = fallback.CHECKING
            checked = checker.check(text)
            self._step = fallback.REWORDING
            if not checked.text:
                continue
            shown = checked.supported or not (rewording or self.strict)
            self._misses = 0 if checked.supported else self._misses + 1
            self.generated.append(checked)
            yield Checked(checked, shown)

    def _compose(self, raw: str) -> str:
        """The answer a person reads, from the evidence and the checked sentences."""
        if self.evidence is None:  # a plain answer: there is nothing to check it against
            return raw
        kept = [g for g in self.generated if g.supported or not (self.lead == SOURCES or self.strict)]
        generated = " ".join(g.shown() for g in kept)
        if self.lead == SOURCES:
            text = self.evidence.text()
            return f"{text}\n\n{REWORD_LABEL} {generated}" if generated else text
        if not generated:
            generated = NOTHING_CHECKED if self.generated else ""
        if self.evidence.answered:
            return f"{generated}\n\n{FROM_SOURCES_LABEL}\n{self.evidence.text()}".strip()
        return generated

    def draft_prompt(self, llm: LocalLLM) -> Prompt | None:
        """The prompt this question would get if it were asked now (``None`` when it would get none: strict
        mode with nothing found, or an answer the sources give without the model); nothing is shown, saved or
        generated."""
        self._load_history()
        mode = PLAIN
        if self.grounded:
            query, resp, results = search_for(self.question, self.earlier, self._retrieve)
            found, _ = self._mode(resp, results)
            if found is None:
                return None
            mode = found
            if mode != PLAIN:
                self.lead = self._lead()
                self._find_evidence(self._pack(results, llm).sources, query, results)
                assert self.evidence is not None
                if self.lead == SOURCES and not (self.settings.reword and self.evidence.answered):
                    return None
        return self._prompt_for(llm, mode)

    # -- evidence --------------------------------------------------------------------------------------------

    def _pack(self, results: list[Result], llm: LocalLLM | None = None) -> PackedContext:
        """The sources, numbered: as many as the model's context budget holds when the model leads; every
        passage found when the sources lead (the model then reads the quoted sentences only, if anything)."""
        from localrag.core.retrieve import pack_context

        if llm is None and self.engine.provider is not None:
            llm = self.engine.provider.llm
        return pack_context(
            results,
            budget_tokens=self.settings.context_tokens if self.lead == MODEL else UNLIMITED_TOKENS,
            count_tokens=llm.count_tokens if llm is not None else None,
        )

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self.library.embed_texts(texts, cancel=self.cancel)

    def _find_evidence(self, sources: list[Result], query: str, results: list[Result]) -> None:
        """The sentences that answer ``query`` (the question, with the one before for a follow-up)."""
        t = time.monotonic()
        self.sources_used = list(sources)
        self.evidence_sources = list(sources)
        try:
            self.evidence = self._pick_evidence(sources, query, results)
            figures.attach(self.evidence, self.question, sources, self.library)  # a computation asked for
            reader = compare.side_reader(self.library, self._embed)  # documents or periods set side by side
            compare.attach(self.evidence, self.question, self.sources_used, self.library, reader)
        except Cancelled:
            raise
        except Exception as exc:  # the passages found are still the answer's sources, listed
            self.notices.append(fallback.step_failed(fallback.EVIDENCE, fallback.PASSAGES, exc, log))
            self.evidence = Evidence(NOT_FOUND_STATUS, closest=list(range(1, min(3, len(sources)) + 1)))
        self.timings["evidence_s"] = time.monotonic() - t
        self.timings["evidence_at_s"] = time.monotonic() - self.started

    def _pick_evidence(self, sources: list[Result], query: str, results: list[Result]) -> Evidence:
        # A source the context budget cut to its leading sentences is read whole for the evidence.
        whole = {tuple(r.chunk_ids): r for r in results}
        full = [whole.get(tuple(s.chunk_ids), s) for s in sources]
        self.evidence_sources, pages, sections = whole_sentences(self.library.pool, full, PASSAGES)
        keep = self.engine.evidence_keep
        try:
            return find_evidence(
                query, self.evidence_sources, self._embed, pages=pages, sections=sections, keep=keep
            )
        except KnownError as exc:  # the embedding worker failed: words alone still pick a sentence
            log.warning("evidence scored without the embedding model: %s", exc.message)
            return find_evidence(
                query, self.evidence_sources, None, pages=pages, sections=sections, keep=keep
            )

    def _lead(self) -> str:
        return choose_lead(self.settings, self.engine.provider, self.cancel)

    def _prompt_for(self, llm: LocalLLM, mode: str) -> Prompt:
        """The prompt: the question alone (plain), with every source (the model leads), or with the evidence
        sentences only (the model rewords them: a short prompt, a short answer)."""
        if mode == PLAIN or self.evidence is None:
            return self._build_prompt(llm, PLAIN if mode == PLAIN else mode, [])
        if self.lead == SOURCES:
            by_number = dict(enumerate(self.sources_used, 1))
            quoted = [
                dataclasses.replace(by_number[s.number], text=flat(s.text))
                for s in self.evidence.spans
                if s.number in by_number
            ]
            return self._build_prompt(llm, mode, quoted)
        return self._build_prompt(llm, mode, self.sources_used)

    # -- whole-document questions ----------------------------------------------------------------------------

    def _overview(self) -> Any:
        """An answer from the documents' structure for "summarize X", "sections of X", "which documents
        mention Z"… (``None``: an ordinary question)."""
        from localrag.core.answer import overview
        from localrag.core.answer.overview_questions import detect

        intent = detect(self.question)
        if intent is None:
            return None
        try:
            ids = list(self.doc_ids or [])
            if not ids and self.collection_id is not None:  # a collection stands for a selection
                ids = self.library.collection_documents(self.collection_id)
                if not ids:
                    return None
            return overview.answer(self.library, self.question, intent, ids or None)
        except (StoreUnavailable, psycopg.OperationalError) as exc:  # the store is down
            log.warning("cannot answer from the documents' structure: %s", exc)
            return None
        except Cancelled:
            raise
        except Exception:  # a bug: logged, and the question is answered as an ordinary one
            log.error("answering from the documents' structure failed (a bug)", exc_info=True)
            return None

    def _overview_answer(self, query: str, resp: RetrievalResponse, found: Any) -> Iterator[ChatEvent]:
        from localrag.core.answer.evidence import ANSWERED
        from localrag.core.retrieve import PackedContext

        self.sources_used = list(found.sources)
        self.evidence = Evidence(ANSWERED, spans=list(found.spans), kind=found.kind)
        self.lead = SOURCES
        self.timings["evidence_at_s"] = time.monotonic() - self.started
        packed = PackedContext(sources=list(found.sources), budget=self.settings.context_tokens)
        yield Retrieved(query, resp, packed, None, self._sources(), self.notice)
        self.answer = found.text
        yield EvidenceReady(self.evidence, SOURCES, found.text)
        yield self.finish(cancelled=False)

    # -- steps ---------------------------------------------------------------------------------------------

    def _mode(self, resp: RetrievalResponse, results: list[Result]) -> tuple[str | None, str]:
        """How to prompt after retrieval, and the notice to show: grounded (or strict) when passages were
        found; ``None`` when nothing relevant was (the answer says so, without the model), or in strict mode;
        plain with a notice when the store could not be searched."""
        if resp.reason is None and results:
            return (STRICT if self.strict else GROUNDED), ""
        notice = notice_for(resp, results, strict=self.strict)
        # Nothing relevant: no answer from the model (the person may ask it alone); the store down: the model
        # alone, and the notice says so (strict mode: no answer).
        return (None if self.strict or resp.reason is None else PLAIN), notice

    def _build_prompt(self, llm: LocalLLM, mode: str, results: list[Result]) -> Prompt:
        return prompts.build_prompt(
            llm,
            self.question,
            mode=mode,
            results=results,
            history=self.history,
            max_tokens=self.max_tokens,
            context_tokens=self.settings.context_tokens,
        )

    def _load_history(self) -> None:
        earlier = earlier_turns(self.library, self.chat_id, self.given_history)
        self.history, self.earlier, self.store_ok = earlier.turns, earlier.questions, earlier.readable

    def _retrieve(self, query: str) -> tuple[RetrievalResponse, list[Result]]:
        from localrag.core.retrieve import retrieve

        t = time.monotonic()
        resp = retrieve(
            self.library,
            query,
            doc_ids=self.doc_ids,
            doc_types=self.doc_types,
            collection=self.collection_id,
            cancel=self.cancel,
        )
        self.timings["retrieval_s"] = time.monotonic() - t
        return resp, relevant(resp.results, self.strict) if resp.reason is None else []

    def _model(
        self, resp: RetrievalResponse | None, results: list[Result]
    ) -> Generator[ChatEvent, None, LocalLLM | None]:
        """The loaded model, waiting for it if needed (``return``s it through ``yield from``); ``None`` after
        yielding ``Failed`` when there is none."""
        provider = self.engine.provider
        t = time.monotonic()
        try:
            if provider is None:
                raise ModelMissing(self.engine.llm_error or "The language model is not loaded.")
            if not provider.ready and not provider.failed:
                yield WarmingUp()
            llm = provider.get(self.cancel)
            keep_prefix(llm)
        except ModelMissing as exc:
            if self.evidence is not None:  # the sources answer without the model
                self.model_error = exc.message
                return None
            if resp is not None:  # retrieval only: the sources still show
                from localrag.core.retrieve import pack_context

                packed = pack_context(results, budget_tokens=self.settings.context_tokens)
                sources = [Source.from_result(i, r) for i, r in enumerate(packed.sources, 1)]
                yield Retrieved(resp.query, resp, packed, None, sources, self.notice)
            yield Failed(
                f"{exc.message.rstrip('.')}. Search still works: the passages found are listed.", known=True
            )
            return None
        finally:
            self.timings["wait_s"] = time.monotonic() - t
        return llm

    def _sources(self) -> list[Source]:
        sources = [Source.from_result(i, r) for i, r in enumerate(self.sources_used, 1)]
        return quoted_sections(sources, self.evidence.spans if self.evidence is not None else [])

    @property
    def notice(self) -> str:
        return " ".join(n for n in self.notices if n)

    def _fixed_answer(self, text: str, notice: str) -> Iterator[ChatEvent]:
        self.notices.append(notice)
        self.answer = text
        yield Token(text)
        yield self.finish(cancelled=False)

    def _not_found(self, query: str, resp: RetrievalResponse) -> Iterator[ChatEvent]:
        """Nothing found is relevant enough: the answer says the documents do not seem to answer and lists the
        closest passages (its sources), without the model; the person may then ask the model alone."""
        from localrag.core.retrieve import PackedContext

        closest = list(resp.results[:CLOSEST_PASSAGES])
        self.sources_used = closest
        self.lead = SOURCES
        self.basis = NOT_ANSWERED
        self.evidence = Evidence(NOT_FOUND_STATUS, closest=list(range(1, len(closest) + 1)))
        self.timings["evidence_at_s"] = time.monotonic() - self.started
        packed = PackedContext(
            sources=closest,
            budget=0,
            dropped=[(r, "not relevant enough") for r in resp.results[len(closest) :]],
        )
        yield Retrieved(query, resp, packed, None, self._sources(), self.notice)
        self.answer = self.evidence.text() if closest else NOT_ANSWERED_TEXT
        yield EvidenceReady(self.evidence, SOURCES, self.answer)
        yield self.finish(cancelled=False)

    def finish(self, *, cancelled: bool) -> Done:
        """Check the citations, save the exchange, and build ``Done``."""
        sources = self._sources()
        check = check_citations(self.answer, len(sources))
        chunk_ids = apply_citations(sources, check, self.answer)  # cited, then quoted without a number
        self.timings["total_s"] = time.monotonic() - self.started
        timings: dict[str, Any] = {
            k: round(v, 4) if isinstance(v, float) else v for k, v in self.timings.items()
        }
        question_id = message_id = None
        if self.persist and self.answer and self.store_ok:
            question_id, message_id = self._save(sources, chunk_ids, timings, cancelled)
        return Done(
            self.chat_id,
            message_id,
            self.answer,
            check,
            sources,
            chunk_ids,
            timings,
            self.notice,
            cancelled,
            question_id,
            self.evidence,
            list(self.generated),
            self.lead if self.evidence is not None else "",
            self._basis(),
        )

    def _basis(self) -> str:
        """What the answer rests on (``Done.basis``)."""
        if self.basis:
            return self.basis
        if self.evidence is not None and not self.evidence.answered and self.lead == SOURCES:
            return NOT_ANSWERED
        return DOCUMENTS if self.grounded else MODEL_ALONE

    def _save(
        self, sources: list[Source], chunk_ids: list[int], timings: dict[str, Any], cancelled: bool
    ) -> tuple[int | None, int | None]:
        stored = dict(timings)
        stored["basis"] = self._basis()
        if self.notice:
            stored["notice"] = self.notice
        if cancelled:
            stored["cancelled"] = True
        parts = answer_parts(self.lead, self.evidence, self.generated) if self.evidence else None
        exchange = Exchange(
            self.question, self.answer, self.grounded, self.strict, chunk_ids, sources, stored, parts
        )
        try:
            if self.chat_id is None:
                self.chat_id = new_chat(self.library, self.question, self.collection_id)
            return save_exchange(self.library, self.chat_id, exchange)
        except (StoreUnavailable, psycopg.OperationalError) as exc:  # the store is down; a bug is raised
            why = exc.message if isinstance(exc, KnownError) else str(exc).strip().splitlines()[0]
            log.warning("cannot save the answer: %s", why)
            self.notices.append(NOT_SAVED_NOTICE.format(why="the database is not reachable"))
            return None, None
