"""A test question and its JSONL line, and where a ranking first reaches its page (plain data, no database).

One question a line, the format of the ``local-rag eval`` datasets (``datasets/*/questions/*.jsonl``)::

    {"id": "guide-01", "file": "owner-guide.pdf", "page": 27, "question": "…", "answer": "…", "evidence": "…",
     "kind": "setting"}

``file`` is the document's file name (no folder), ``page`` or ``pages`` the 1-based page(s) that answer it,
``answer`` the answer expected, ``evidence`` the sentence(s) of that page that give it, verbatim; a question
over several documents lists them as ``files`` beside its ``pages`` (one page each). Any other field (and
``files``) is kept as it came and written back on export. A line with ``page`` 0 (a question the documents do
not answer) is read, but is not ``answerable`` and cannot be kept as a test question.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The ranks a run counts: the page found first, among the first 5, among the first 10.
KS = (1, 5, 10)
# The fields of a line that a question holds itself; the others go to ``extra``.
_OWN = ("id", "file", "page", "pages", "question", "answer", "evidence", "kind")


@dataclass
class Question:
    """A question kept with the document (``file``, its file name) and ``pages`` that answer it.

    ``id`` is its row in the library (``None`` before it is saved); ``label`` the ``id`` of its JSONL line.
    """

    question: str
    file: str
    pages: list[int]
    answer: str = ""
    evidence: str = ""
    kind: str = ""
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    id: int | None = None

    def __post_init__(self) -> None:
        self.question = self.question.strip()
        self.file = file_name(self.file)
        if not self.question:
            raise ValueError("a test question needs its question")
        if not self.file:
            raise ValueError("a test question needs the document that answers it")
        if any(not isinstance(p, int) or isinstance(p, bool) or p < 1 for p in self.pages):
            raise ValueError(f"pages are numbers from 1, not {self.pages!r}")

    @property
    def answerable(self) -> bool:
        """Whether it names a page that answers it (a dataset's ``none`` questions, ``page`` 0, do not)."""
        return bool(self.pages)

    @property
    def files(self) -> list[str]:
        """A question over several documents: their file names, one for each of ``pages`` (``files`` of its
        line, kept in ``extra``); empty for a question about one document."""
        files = self.extra.get("files")
        return [file_name(str(f)) for f in files] if isinstance(files, list) else []

    def targets(self) -> set[tuple[str, int]]:
        """The pages that answer it, as ``(file name, page)``."""
        files = self.files
        if files and len(files) == len(self.pages):
            return set(zip(files, self.pages, strict=True))
        return {(self.file, p) for p in self.pages}

    def documents(self) -> set[str]:
        """The file names of the documents it is about."""
        return {self.file, *self.files}

    @classmethod
    def from_json(cls, data: Any) -> Question:
        """A question from one JSONL line's object. Raises ``ValueError`` naming what is wrong."""
        if not isinstance(data, dict):
            raise ValueError("a line is a JSON object")
        for name in ("question", "file"):
            if not isinstance(data.get(name), str) or not data[name].strip():
                raise ValueError(f"'{name}' is missing or not a string")
        pages = data.get("pages") or ([data["page"]] if data.get("page") else [])
        if not isinstance(pages, list):
            raise ValueError("'pages' is a list of page numbers")
        text: dict[str, str] = {}
        for name in ("answer", "evidence", "kind"):
            value = data.get(name) or ""
            if not isinstance(value, str):
                raise ValueError(f"'{name}' is not a string")
            text[name] = value
        label = data.get("id")
        return cls(
            question=data["question"],
            file=data["file"],
            pages=list(pages),
            answer=text["answer"],
            evidence=text["evidence"],
            kind=text["kind"],
            label="" if label is None else str(label),
            extra={k: v for k, v in data.items() if k not in _OWN},
        )

    def to_json(self) -> dict[str, Any]:
        """The question as a JSONL line's object (``page`` is the first of ``pages``)."""
        label = self.label or (f"check-{self.id}" if self.id is not None else "")
        out: dict[str, Any] = {"id": label} if label else {}
        out.update(file=self.file, page=self.pages[0] if self.pages else 0)
        if len(self.pages) > 1:
            out["pages"] = list(self.pages)
        out.update(question=self.question, answer=self.answer, evidence=self.evidence)
        if self.kind:
            out["kind"] = self.kind
        out.update(self.extra)
        return out


def file_name(path: str) -> str:
    """A document's file name, from a path written with either slash."""
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].strip()


def read_jsonl(path: Path) -> list[Question]:
    """Every question of a JSONL file. Raises ``ValueError`` naming the first bad line (nothing is read then),
    ``OSError`` when the file cannot be read."""
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(Question.from_json(json.loads(line)))
        except ValueError as exc:  # json.JSONDecodeError is one
            raise ValueError(f"{path.name}, line {n}: {exc}") from exc
    return out


def write_jsonl(questions: Iterable[Question], path: Path) -> int:
    """Write the questions to ``path``, one a line (through a temporary file, so a failed write leaves any
    earlier file whole). Returns how many."""
    lines = [json.dumps(q.to_json(), ensure_ascii=False) for q in questions]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    tmp.replace(path)
    return len(lines)


def first_hit(ranked: Sequence[tuple[str, int]], targets: Collection[tuple[str, int]]) -> int | None:
    """The 1-based rank of the first passage on one of the ``targets`` (``Question.targets``), or None.
    ``ranked`` holds each passage's (file name, page)."""
    for i, place in enumerate(ranked, 1):
        if place in targets:
            return i
    return None


def hits_at(ranks: Sequence[int | None]) -> dict[int, int]:
    """How many of ``ranks`` are within each of ``KS``."""
    return {k: sum(1 for r in ranks if r is not None and r <= k) for k in KS}
