"""What a run of the test questions found: each question's outcome and the run's totals (plain data)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from localrag.core.checks.questions import KS


@dataclass
class QuestionResult:
    """One question's outcome: ``rank``, the 1-based place of the first passage on its page among those
    retrieval found (``None``: not found); ``quoted_on_page``, whether the answer quotes a sentence of its
    page; ``quoted``, what the answer quotes first and where (``"… — file p. N"``); ``found``, where the
    first passages are (``"file p. N"``); ``error``, why the question could not be run."""

    question_id: int | None
    rank: int | None
    quoted_on_page: bool
    quoted: str = ""
    found: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""

    def hit(self, k: int) -> bool:
        return self.rank is not None and self.rank <= k


@dataclass
class CheckRun:
    """A run's totals and what it ran with: the settings that change what is found, the embedding and
    language models, the library's size. ``cancelled`` runs are not kept."""

    started_at: dt.datetime
    seconds: float
    questions: int
    hits: dict[int, int]
    quoted: int
    settings: dict[str, Any]
    embedding_model: str = ""
    llm_model: str = ""
    documents: int = 0
    chunks: int = 0
    id: int | None = None
    cancelled: bool = False

    def share(self, k: int | None = None) -> float:
        """The share of questions found within ``k`` (``None``: quoted from their page)."""
        if not self.questions:
            return 0.0
        return (self.quoted if k is None else self.hits[k]) / self.questions

    def totals(self) -> str:
        """ "found at 1: 6/8 · 5: 7/8 · 10: 8/8 · quoted from the page: 5/8"."""
        n = self.questions
        ranks = " · ".join(f"{k}: {self.hits[k]}/{n}" for k in KS)
        return f"found at {ranks} · quoted from the page: {self.quoted}/{n}"

    def library(self) -> str:
        """ "1 document, 252 chunks"."""
        docs = "document" if self.documents == 1 else "documents"
        chunks = "chunk" if self.chunks == 1 else "chunks"
        return f"{self.documents} {docs}, {self.chunks} {chunks}"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "started_at": self.started_at.isoformat(timespec="seconds"),
            "seconds": round(self.seconds, 2),
            "questions": self.questions,
            **{f"hit@{k}": self.hits[k] for k in KS},
            "quoted_on_page": self.quoted,
            "settings": self.settings,
            "embedding_model": self.embedding_model,
            "llm_model": self.llm_model,
            "documents": self.documents,
            "chunks": self.chunks,
            "cancelled": self.cancelled,
        }


def what_changed(before: CheckRun | None, after: CheckRun) -> list[str]:
    """What ``after`` ran with that ``before`` did not: each setting that differs (``"k 8 → 5"``), another
    model, a library of another size, another number of questions. Empty for the first run, or when nothing
    differs."""
    if before is None:
        return []
    out = [
        f"{name} {before.settings.get(name, '—')} → {value}"
        for name, value in after.settings.items()
        if before.settings.get(name) != value
    ]
    if before.embedding_model != after.embedding_model:
        out.append(f"embedding model {after.embedding_model}")
    if before.llm_model != after.llm_model:
        out.append(f"language model {after.llm_model}")
    if (before.documents, before.chunks) != (after.documents, after.chunks):
        out.append(f"library {after.library()}")
    if before.questions != after.questions:
        out.append(f"questions {before.questions} → {after.questions}")
    return out
