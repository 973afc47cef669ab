"""What an answer is made of as it streams: the events ``ChatEngine.ask`` yields, in this order::

    Searching(query)                 grounded questions only: retrieval starts ("Searching your documents…")
    WarmingUp()                      only if the model is still loading: the question waits for it
    Retrieved(query, response, packed, prompt, sources, notice)   grounded questions only
    EvidenceReady(evidence, lead, text)   grounded questions: the sentences quoted from the sources
    Prompt                           when a model runs: its exact prompt (for the developer pane)
    Token(text) …                    the answer, piece by piece, in order
    Checked(sentence, shown)         each generated sentence checked against the sources as it completes
    Done(chat_id, message_id, answer, citations, sources, chunk_ids, timings, notice, cancelled)
or  Failed(message, known)           instead of the tokens and Done: the model is missing (after Retrieved, so
                                     the sources still show: retrieval-only), or a bug (``known`` False)

and the words that go with them: what an answer rests on (``Done.basis``), what leads it, the labels of its
parts. Every front end turns these events into its own form through one adapter (``delivery.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from localrag.core.answer.citations import CitationCheck, Source
from localrag.core.answer.evidence import Evidence
from localrag.core.answer.prompts import Prompt
from localrag.core.answer.support import CheckedSentence

if TYPE_CHECKING:
    from localrag.core.retrieve import PackedContext, RetrievalResponse

# What an answer rests on (``Done.basis``): the documents; nothing, as the documents do not seem to answer
# (the closest passages are its sources); or the model alone (grounding off, asked for, or the store down).
DOCUMENTS, NOT_ANSWERED, MODEL_ALONE = "documents", "not_found", "model"
# Front ends show an answer from the model alone under this heading, from its first word.
MODEL_ALONE_LABEL = "From the model alone, not your documents:"
# What leads an answer (``Settings.answer_lead``): the quoted sources, or the model's checked answer.
SOURCES, MODEL = "sources", "model"
REWORD_LABEL = "In other words:"
FROM_SOURCES_LABEL = "From your documents:"


@dataclass(frozen=True)
class Searching:
    query: str  # what is searched: the question, with the earlier question for a follow-up


@dataclass(frozen=True)
class WarmingUp:
    what: str = "language model"


@dataclass(frozen=True)
class Retrieved:
    """What retrieval found and what goes into the prompt. ``packed.sources[i - 1]`` is source ``[i]``."""

    query: str
    response: RetrievalResponse
    packed: PackedContext | None
    prompt: Prompt | None = None
    sources: list[Source] = field(default_factory=list)
    notice: str = ""


@dataclass(frozen=True)
class EvidenceReady:
    """The answer taken from the sources (grounded questions, right after ``Retrieved``, before any model
    runs). ``lead`` says what leads the answer: ``"sources"`` (the evidence is the answer; a model may add a
    checked rewording) or ``"model"`` (the model's checked answer comes first)."""

    evidence: Evidence
    lead: str = "sources"
    text: str = ""  # the evidence as the answer shows it


@dataclass(frozen=True)
class Token:
    text: str


@dataclass(frozen=True)
class Checked:
    """A generated sentence was checked against the sources (``shown``: whether the answer keeps it)."""

    sentence: CheckedSentence
    shown: bool


@dataclass(frozen=True)
class Done:
    """The answer is complete (or was stopped: ``cancelled``). ``message_id`` is ``None`` when not saved."""

    chat_id: int | None
    message_id: int | None
    answer: str
    citations: CitationCheck
    sources: list[Source]
    chunk_ids: list[int]
    timings: dict[str, Any]
    notice: str = ""
    cancelled: bool = False
    question_id: int | None = None
    evidence: Evidence | None = None
    generated: list[CheckedSentence] = field(default_factory=list)
    lead: str = ""
    basis: str = DOCUMENTS

    @property
    def parts(self) -> dict[str, Any]:
        """What the answer is made of, as stored with it and printed by ``ask --json``."""
        return answer_parts(self.lead, self.evidence, self.generated)

    def to_json(self) -> dict[str, Any]:
        """The answer as ``ask --json`` prints it: ``answer`` (what the person sees), ``basis`` (what it rests
        on: ``documents``, ``not_found`` — the documents do not seem to answer, its sources are the closest
        passages — or ``model``, the model alone) and ``not_found``, ``evidence`` (the quoted
        sentences: text, number, path, page_number, char_start, char_end, score), ``figures`` (the computation
        the question asks for, ``figures.Computation.to_dict``, or None), ``comparison`` (the sides a
        comparison sets side by side, each with its cell: ``compare_table.Comparison.to_dict``, or None),
        ``generated`` (the model's sentences, each with ``supported`` and ``shown``), ``sources``, citations
        and timings."""
        parts = self.parts
        evidence = parts.get("evidence") or {}
        for g, d in zip(self.generated, parts["generated"], strict=True):
            d["shown"] = g.supported or (self.lead == MODEL and g.shown() in self.answer)
        return {
            "answer": self.answer,
            "basis": self.basis,
            "not_found": self.basis == NOT_ANSWERED,
            "lead": self.lead,
            "evidence": [
                {
                    k: s[k]
                    for k in ("text", "number", "path", "page_number", "char_start", "char_end", "score")
                }
                for s in evidence.get("spans", [])
            ],
            "evidence_status": evidence.get("status"),
            "figures": evidence.get("figures"),
            "comparison": evidence.get("comparison"),
            "generated": parts["generated"],
            "parts": parts,
            "sources": [{k: v for k, v in s.to_dict().items() if k != "text"} for s in self.sources],
            "citations": {"cited": self.citations.cited, "invalid": self.citations.invalid},
            "chunk_ids": self.chunk_ids,
            "notice": self.notice,
            "cancelled": self.cancelled,
            "chat_id": self.chat_id,
            "message_id": self.message_id,
            "timings": self.timings,
        }


def answer_parts(
    lead: str, evidence: Evidence | None, generated: Sequence[CheckedSentence]
) -> dict[str, Any]:
    return {
        "lead": lead,
        "evidence": evidence.to_dict() if evidence is not None else None,
        "generated": [g.to_dict() for g in generated],
    }


@dataclass(frozen=True)
class Failed:
    message: str
    known: bool = True


ChatEvent = Searching | WarmingUp | Retrieved | EvidenceReady | Prompt | Token | Checked | Done | Failed


# -- the engine ----------------------------------------------------------------------------------------------
