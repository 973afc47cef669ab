"""Document metadata in the store: found at ingest, refreshed for libraries indexed before it existed, edited
by a person; and the chunk contexts that follow from it (``identity``).

A change of metadata re-indexes only what it must: the contexts of the document's chunks are written again;
when they changed, the document's BM25 postings are rebuilt (in the same transaction) and its vectors become
stale (their ``context_hash`` no longer matches), so ``reembed`` embeds those chunks again. Until then the old
vectors keep answering.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from localrag.core import hooks
from localrag.core.ingest import status
from localrag.core.pdfium_lock import PDFIUM_LOCK
from localrag.core.retrieve import bm25
from localrag.core.text import identity

log = logging.getLogger("localrag.ingest.metadata")

# Fields a person may set (``None`` or "" clears an edit: the value found at ingest comes back).
EDITABLE = ("title", "organization", "kind", "period", "date", "year", "quarter", "domain")
FIRST_PAGES = 2

# The SQL condition "this vector was embedded with its chunk's current context" (aliases e and c).
CURRENT_VECTOR = "e.context_hash = md5(c.context)"


def pdf_metadata(path: Path) -> dict[str, str]:
    """A PDF's Title, Author and CreationDate (empty when the file cannot be read)."""
    if path.suffix.lower() != ".pdf" or not path.is_file():
        return {}
    try:
        import pypdfium2 as pdfium

        with PDFIUM_LOCK:  # pdfium is not thread-safe: the source viewer may be rendering a page
            pdf = pdfium.PdfDocument(str(path))
            try:
                return {k: pdf.get_metadata_value(k) or "" for k in ("Title", "Author", "CreationDate")}
            finally:
                pdf.close()
    except Exception:  # an unreadable file has no metadata to give
        return {}


def pdf_page_labels(path: Path) -> dict[str, str]:
    """The numbers a PDF's pages print where they differ from their place in the file (its /PageLabels):
    ``{"39": "33"}`` says the 39th page is labelled "33". Empty for a PDF without labels, or another file."""
    if path.suffix.lower() != ".pdf" or not path.is_file():
        return {}
    labels: list[str] = []
    try:
        import pypdfium2 as pdfium

        with PDFIUM_LOCK:
            pdf = pdfium.PdfDocument(str(path))
            try:
                labels = [pdf.get_page_label(i) for i in range(len(pdf))]
            finally:
                pdf.close()
    except Exception:  # pdfium cannot read it: pypdf may
        try:
            from pypdf import PdfReader

            labels = list(PdfReader(str(path)).page_labels)
        except Exception:
            return {}
    return {str(i): label for i, label in enumerate(labels, 1) if label and label != str(i)}


def build_meta(
    path: str,
    title: str,
    first_pages: Sequence[str],
    pdf_meta: dict[str, str],
    edited: dict[str, Any],
    pages: Sequence[tuple[int, str]] = (),
) -> dict[str, Any]:
    """``documents.meta``: the fields found (``identity.extract``), then a person's edits over them.

    The domain pack that acts on the document is the one a person turned on (``edited["domain"]``; "none"
    for no pack), else the one that finds strong evidence of its field in ``pages`` (``(number, text)``;
    the first pages when not given), recorded as ``meta["domain"]`` with the evidence in
    ``meta["sources"]["domain"]``."""
    pages = pages or [(i, text) for i, text in enumerate(first_pages, 1)]
    chosen = str(edited.get("domain") or "")
    claim = None if chosen else hooks.document_domain(path, title, pages, pdf_meta)
    domain = chosen or (claim.domain if claim else "")
    pack = None
    if domain and domain != hooks.NO_DOMAIN:
        found_by_pack = hooks.identity_fields(domain, path, title, first_pages, pdf_meta)
        evidence = claim.evidence if claim else "edited"
        pack = (domain, evidence, found_by_pack.fields, found_by_pack.sources)
    found = identity.extract(path, title, first_pages, pdf_meta, pack=pack)
    meta = found.to_meta()
    if edited:
        meta["edited"] = dict(edited)
        for key, value in edited.items():
            if key != "title":
                meta[key] = value
                meta["sources"][key] = "edited"
    return meta


def shown_title(title: str, meta: dict[str, Any]) -> str:
    edited = meta.get("edited") or {}
    return str(edited.get("title") or title or "")


def contexts(
    title: str, meta: dict[str, Any], chunks: Sequence[tuple[str, int]], heads: dict[int, str]
) -> list[str]:
    """The context of each chunk, from its ``(heading_path, page_number)`` and the page heads."""
    line = identity.document_line(shown_title(title, meta), meta)
    return [identity.chunk_context(line, heading, heads.get(page, "")) for heading, page in chunks]


def refresh(conn: psycopg.Connection[Any], doc_id: int, *, edits: dict[str, Any] | None = None) -> bool:
    """Find a document's metadata again (from its file name, the PDF's metadata when the file is still there,
    and its first pages as stored), apply ``edits`` on top of earlier ones, and write the chunk contexts that
    follow. A ready document whose contexts changed gets its BM25 postings rebuilt. Call inside a
    transaction. Returns whether any chunk's context changed (its vectors are then stale)."""
    row = conn.execute(
        "SELECT path, path_bytes, title, status, meta FROM documents WHERE id = %s FOR UPDATE", (doc_id,)
    ).fetchone()
    if row is None:
        return False
    from localrag.core.ingest.queue import path_from_db

    path, raw, title, _state, old = row
    edited = dict((old or {}).get("edited") or {})
    for key, value in (edits or {}).items():
        if key not in EDITABLE:
            raise ValueError(f"unknown metadata field {key!r}; use one of {', '.join(EDITABLE)}")
        if value in (None, ""):
            edited.pop(key, None)
        elif key == "domain" and value not in (*hooks.packs(), hooks.NO_DOMAIN):
            names = ", ".join([*hooks.packs(), hooks.NO_DOMAIN])
            raise ValueError(f"unknown domain pack {value!r}; use one of {names}")
        else:
            edited[key] = int(value) if key in ("year", "quarter") else str(value)
    chunks = conn.execute(
        "SELECT id, heading_path, page_number, text, context FROM document_chunks WHERE doc_id = %s "
        "ORDER BY chunk_index",
        (doc_id,),
    ).fetchall()
    pages: dict[int, list[str]] = {}
    for _id, _heading, page, text, _ctx in chunks:
        pages.setdefault(int(page), []).append(text)
    page_texts = [(n, "\n".join(t)) for n, t in sorted(pages.items())]
    first = [t for _, t in page_texts[:FIRST_PAGES]]
    meta = build_meta(path, title, first, pdf_metadata(path_from_db(path, raw)), edited, page_texts)
    if edited and "period" in edited:
        meta["period"] = edited["period"]
    if "extraction" in (old or {}):
        meta["extraction"] = old["extraction"]
    labels = pdf_page_labels(path_from_db(path, raw)) or (old or {}).get("page_labels")
    if labels:
        meta["page_labels"] = labels
    heads = identity.page_heads(page_texts)
    new = contexts(title, meta, [(c[1], int(c[2])) for c in chunks], heads)
    changed = [(c[0], ctx) for c, ctx in zip(chunks, new, strict=True) if c[4] != ctx]
    conn.execute("UPDATE documents SET meta = %s, updated_at = now() WHERE id = %s", (Jsonb(meta), doc_id))
    if changed:
        conn.execute(
            "UPDATE document_chunks c SET context = u.context FROM unnest(%s::bigint[], %s::text[]) "
            "AS u(id, context) WHERE c.id = u.id",
            ([c[0] for c in changed], [c[1] for c in changed]),
        )
        if bm25.is_indexed(conn, doc_id):
            bm25.index_document(conn, doc_id)  # re-indexes: the postings follow the new contexts
    return bool(changed)


def edit(conn: psycopg.Connection[Any], doc_id: int, edits: dict[str, Any]) -> bool:
    """Set metadata fields of a document by hand (see ``refresh``). Returns whether its vectors are now stale
    (run ``reembed`` to embed those chunks again)."""
    with conn.transaction():
        return refresh(conn, doc_id, edits=edits)


def outdated_documents(conn: psycopg.Connection[Any]) -> list[int]:
    """Ready documents whose metadata was found by an older extraction (or never: a library from before)."""
    return [
        int(r[0])
        for r in conn.execute(
            "SELECT id FROM documents WHERE status = %s AND coalesce((meta->>'version')::int, 0) < %s "
            "ORDER BY id",
            (status.READY, identity.VERSION),
        )
    ]


def outdated_extractions(conn: psycopg.Connection[Any]) -> list[int]:
    """Ready documents whose text was extracted by an older loader (``loaders.EXTRACTION_VERSIONS``)."""
    from localrag.core.ingest.loaders import EXTRACTION_VERSIONS

    found: list[int] = []
    for doc_type, version in sorted(EXTRACTION_VERSIONS.items()):
        found += [
            int(r[0])
            for r in conn.execute(
                "SELECT id FROM documents WHERE status = %s AND doc_type = %s "
                "AND coalesce((meta->>'extraction')::int, 1) < %s ORDER BY id",
                (status.READY, doc_type, version),
            )
        ]
    return sorted(found)


def set_extraction(conn: psycopg.Connection[Any], doc_id: int, version: int) -> None:
    """Record that the document's text is what the loader of ``version`` reads (it would read no other)."""
    conn.execute(
        "UPDATE documents SET meta = jsonb_set(coalesce(meta, '{}'::jsonb), '{extraction}', "
        "to_jsonb(%s::int)) WHERE id = %s",
        (int(version), doc_id),
    )
    conn.commit()


def document_meta(conn: psycopg.Connection[Any], doc_id: int) -> dict[str, Any] | None:
    row = conn.execute("SELECT meta FROM documents WHERE id = %s", (doc_id,)).fetchone()
    return dict(row[0]) if row else None
