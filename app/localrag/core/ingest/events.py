"""What ingestion reports: one ``IngestEvent`` per change to a file, an ``IngestSummary`` per run."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class IngestEvent:
    """What happened to one file; the GUI renders these, the CLI prints them."""

    doc_id: int | None
    path: str
    title: str
    doc_type: str
    status: str  # a name from ``status``: queued, extracting, embedding, ready, failed, cancelled, skipped…
    pages_done: int = 0
    pages: int = 0
    chunks_embedded: int = 0
    chunks_total: int = 0
    eta_s: float | None = None
    error_code: str | None = None
    message: str = ""
    searchable: bool = False  # a document still being indexed that searches already find (by keywords first)


@dataclass
class IngestSummary:
    ready: int = 0
    failed: int = 0
    cancelled: int = 0
    skipped: int = 0
    pages: int = 0  # what the documents that became ready hold (a resumed one counts whole)
    chunks: int = 0
    embedded_chunks: int = 0  # chunks that needed the model (others reused a stored vector)
    embedded_tokens: int = 0
    embedded_pieces: int = 0  # windows of a few sentences of the chunks, embedded beside them (pieces.py)
    read_again: int = 0  # re-embedding: documents indexed again because the loader now reads them differently
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(("extract", "chunk", "embed", "write"), 0.0)
    )
    events: list[IngestEvent] = field(default_factory=list)  # the last event of every file
