"""A document's chunks written to the store as they are cut, with their BM25 postings.

Memory does not grow with the document: rows are copied to the store ``FLUSH_CHUNKS`` at a time; what stays
is, per chunk, its heading path and page (to write each chunk's context) and, per page, its first lines.
A chunk's context depends on the document's metadata (found in its first pages) and on its page's head,
from which running headers seen on many pages are removed: rows copied before the end carry the context
known then, and the few whose context changed by the end are rewritten (and indexed again) at the end. A
document read in less than ``FIRST_COMMIT_SECONDS`` (nearly all) is copied once, with its final contexts.

A new document (``searchable``: not the next version of a ready one, which answers until this one is ready)
is searchable by keywords as soon as its first pages are read: the chunks cut after ``FIRST_COMMIT_SECONDS``
of reading, and then every ``COMMIT_SECONDS``, are copied with their postings and committed. A kill or a
pause leaves those committed; the next attempt removes them (postings first) and reads the file again. Any
other document is written in the one transaction that ends its extraction, and indexed when it becomes
ready.

The chunk count is bounded by the ``max_document_chunks`` setting: a document is refused as soon as the
share of its file read so far shows it would pass the limit by a quarter, and in any case when it reaches
it. Nothing of it stays then (what was committed of a searchable document is deleted with its postings).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from localrag.core.errors import BadDocument
from localrag.core.ingest import metadata
from localrag.core.ingest.loaders._common import display_name
from localrag.core.ingest.queue import path_to_db
from localrag.core.ingest.types import Chunk
from localrag.core.retrieve import bm25
from localrag.core.text import identity

FLUSH_CHUNKS = 2_000
FIRST_COMMIT_SECONDS = 0.5  # a searchable document's first chunks are committed after this much reading
COMMIT_SECONDS = 2.0  # and then the chunks read since, this often
ESTIMATE_AFTER_CHUNKS = 500  # chunks cut before the file's size is trusted for an estimate
ESTIMATE_MARGIN = 1.25  # refuse early only when the estimate passes the limit by this much

_COPY = (
    "COPY document_chunks (doc_id, chunk_index, page_number, heading_path, text, token_count, "
    "char_start, char_end, text_hash, context, headings) FROM STDIN"
)


class TooManyChunks(BadDocument):
    """The document would make more chunks than the ``max_document_chunks`` setting allows."""


class ChunkWriter:
    """Collects one document's chunks and copies them to the store in batches (call inside a transaction).

    Args:
        conn: the ingestor's connection, in the extraction's transaction.
        doc_id: the document.
        path: its file.
        edited: metadata a person set by hand.
        limit: the most chunks a document may have.
        searchable: whether the document may be searched while it is read (its chunks and postings are then
            committed every ``COMMIT_SECONDS``).
    """

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        doc_id: int,
        path: Path,
        edited: dict[str, Any],
        limit: int,
        *,
        searchable: bool = False,
    ) -> None:
        self.conn, self.doc_id, self.path, self.edited, self.limit = conn, doc_id, path, edited, limit
        self.searchable = searchable
        self.committed = False  # whether some of its chunks are committed (searchable) already
        self.committed_at = time.monotonic() - COMMIT_SECONDS + FIRST_COMMIT_SECONDS
        self.title = ""
        self.pdf_meta = metadata.pdf_metadata(path)
        self.page_labels = metadata.pdf_page_labels(path)
        self.tops: list[tuple[int, str]] = []  # each page's first lines, for the chunks' context
        self.keys: list[tuple[str, int]] = []  # (heading path, page) of every chunk
        self.written: list[str] = []  # the context each copied chunk was written with
        self.pending: list[Chunk] = []
        self._interned: dict[str, str] = {}

    @property
    def count(self) -> int:
        return len(self.keys)

    def add_page(self, number: int, text: str) -> None:
        """Note a page's start (its first window): its first lines give the chunks' context."""
        first = len(self.tops) < metadata.FIRST_PAGES
        self.tops.append((number, text if first else text[:2000]))

    def add(self, chunk: Chunk, read_share: float | None) -> None:
        """Take one chunk; copies a batch to the store when enough are waiting.

        Raises:
            TooManyChunks: the document has passed the limit, or ``read_share`` (the share of the file read
                so far) shows it would pass it by a quarter.
        """
        heading = self._interned.setdefault(chunk.heading_path, chunk.heading_path)
        self.keys.append((heading, chunk.page_number))
        self.pending.append(chunk)
        if self.count > self.limit:
            raise self._refusal(f"more than {self.limit:,} chunks")
        if read_share and self.count >= ESTIMATE_AFTER_CHUNKS and self.count % 100 == 0:
            estimate = self.count / read_share
            if estimate > self.limit * ESTIMATE_MARGIN:
                raise self._refusal(f"about {estimate:,.0f} chunks")
        if len(self.pending) >= FLUSH_CHUNKS:
            self.flush()
        if self.searchable and time.monotonic() - self.committed_at >= COMMIT_SECONDS:
            self.flush()
            self.conn.commit()
            self.committed, self.committed_at = True, time.monotonic()

    def _refusal(self, what: str) -> TooManyChunks:
        return TooManyChunks(
            f"{display_name(self.path)} is too large to index: it would make {what}, over the limit of "
            f"{self.limit:,} a document (setting max_document_chunks). Split it into smaller files, or raise "
            "the limit.",
            code="too_large",
        )

    def meta(self) -> dict[str, Any]:
        first = [text for _, text in self.tops[: metadata.FIRST_PAGES]]
        meta = metadata.build_meta(
            path_to_db(self.path)[0], self.title, first, self.pdf_meta, self.edited, self.tops
        )
        if self.page_labels:
            meta["page_labels"] = self.page_labels
        return meta

    def _contexts(self, keys: list[tuple[str, int]], meta: dict[str, Any]) -> list[str]:
        contexts = metadata.contexts(self.title, meta, keys, identity.page_heads(self.tops))
        return [self._interned.setdefault(c, c) for c in contexts]

    def flush(self, meta: dict[str, Any] | None = None) -> None:
        """Copy the waiting chunks with the contexts known now."""
        if not self.pending:
            return
        keys = self.keys[len(self.written) : len(self.written) + len(self.pending)]
        contexts = self._contexts(keys, meta if meta is not None else self.meta())
        with self.conn.cursor().copy(_COPY) as copy:
            for chunk, context in zip(self.pending, contexts, strict=True):
                copy.write_row(
                    (
                        self.doc_id,
                        chunk.chunk_index,
                        chunk.page_number,
                        chunk.heading_path,
                        chunk.text,
                        chunk.token_count,
                        chunk.char_start,
                        chunk.char_end,
                        chunk.text_hash,
                        context,
                        Jsonb(chunk.inner_headings) if chunk.inner_headings else None,
                    )
                )
        if self.searchable:
            bm25.index_chunks(self.conn, self.doc_id, [c.chunk_index for c in self.pending], new=True)
        self.written.extend(contexts)
        self.pending = []

    def finish(self, title: str) -> dict[str, Any]:
        """Copy the last chunks and correct the contexts that changed since their rows were copied; returns
        the document's metadata."""
        self.title = title
        meta = self.meta()
        self.flush(meta)
        final = self._contexts(self.keys, meta)
        changed = [(i, c) for i, (c, old) in enumerate(zip(final, self.written, strict=True)) if c != old]
        if changed:
            self.conn.execute(
                "UPDATE document_chunks c SET context = u.context FROM unnest(%s::int[], %s::text[]) "
                "AS u(chunk_index, context) WHERE c.doc_id = %s AND c.chunk_index = u.chunk_index",
                ([i for i, _ in changed], [c for _, c in changed], self.doc_id),
            )
            if self.searchable:  # their postings follow
                bm25.index_chunks(self.conn, self.doc_id, [i for i, _ in changed])
        return meta
