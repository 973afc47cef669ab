"""Where a citation points (``SourceRef``): plain data, no Qt, shared by the transcript and the source
viewer."""

from __future__ import annotations

from dataclasses import dataclass, field

from localrag.core.answer.citations import Source, page_phrase
from localrag.core.retrieve.results import Result


@dataclass
class SourceRef:
    """Where a citation points: enough to find the page and the span again."""

    doc_id: int
    title: str
    path: str
    doc_type: str
    page_number: int
    heading_path: str
    char_start: int
    char_end: int
    text: str = ""
    chunk_ids: list[int] = field(default_factory=list)
    score: float | None = None
    number: int | None = None  # the [n] of the citation, when known
    cited: bool = False  # the answer cites it
    quoted: bool = False  # the answer repeats its words without citing it
    # Offsets in the page text of the cells to outline within the span (a row's asked column: its heading
    # and its value).
    marks: list[tuple[int, int]] = field(default_factory=list)
    page_label: str = ""  # the number printed on the page when it is not ``page_number``

    def page_phrase(self, word: str = "p.") -> str:
        """ "p. 33 (PDF page 39)" or "p. 39" (``citations.page_phrase``)."""
        return page_phrase(self.page_number, self.page_label, word)

    @classmethod
    def from_source(cls, source: Source, number: int | None = None) -> SourceRef:
        """From a numbered source of an answer (a live one, or one restored with its message)."""
        return cls(
            doc_id=source.doc_id,
            title=source.title,
            path=source.path,
            doc_type=source.doc_type,
            page_number=source.page_number or 1,
            heading_path=source.heading_path,
            char_start=source.char_start,
            char_end=source.char_end,
            text=source.text,
            chunk_ids=list(source.chunk_ids),
            score=source.score,
            number=number if number is not None else (source.number or None),
            cited=source.cited,
            quoted=source.quoted,
            page_label=source.page_label,
        )

    @classmethod
    def from_result(cls, result: Result, number: int | None = None) -> SourceRef:
        """From a retrieval ``Result`` (the developer pane's rows)."""
        return cls(
            doc_id=result.doc_id,
            title=result.title,
            path=result.path,
            doc_type=result.doc_type,
            page_number=result.page_number or 1,
            heading_path=result.heading_path,
            char_start=result.char_start,
            char_end=result.char_end,
            text=result.text,
            chunk_ids=list(result.chunk_ids),
            score=result.similarity,
            number=number,
            page_label=result.page_label,
        )
