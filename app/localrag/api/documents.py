"""``/v1/documents``: add files and folders by path, list the documents with their status and progress, look
one up, remove one."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from localrag.api import folders
from localrag.api.body import ApiError, read_json
from localrag.core.ingest import documents, status
from localrag.core.ingest.documents import DocumentInfo
from localrag.core.ingest.events import IngestEvent


async def add(request: Request) -> JSONResponse:
    """``{"paths": [...]}``: absolute paths of files or folders in the folders the API may read
    (``folders``). 202 with one entry per file (``status`` ``queued``, or ``skipped``/``failed`` with a
    ``message``); indexing goes on in the background. 403 for a path outside those folders, whether it exists
    or not; 404 for a missing one inside them."""
    body = await read_json(request)
    raw = body.get("paths")
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(p, str) and p for p in raw):
        raise ApiError(422, "'paths' is required: a list of absolute paths of files or folders.")
    for i, p in enumerate(raw):
        if not Path(p).is_absolute():
            raise ApiError(422, f"paths[{i}] is not absolute (the server does not know your folder): {p}")
    ctx = request.app.state.ctx

    def queue() -> list[IngestEvent]:
        allowed = folders.allowed_folders(ctx.library, ctx.allowed)
        plan = folders.plan(raw, allowed)
        return ctx.indexing.add(plan.files) + plan.left_out

    events = await run_in_threadpool(queue)
    return JSONResponse({"files": [asdict(e) for e in events]}, status_code=202)


async def listing(request: Request) -> JSONResponse:
    """Every document, newest first, with its status and progress; ``indexing``: whether work is under way."""
    ctx = request.app.state.ctx

    def read() -> list[DocumentInfo]:
        with ctx.library.pool.connection() as conn:
            return documents.list_documents(conn)

    docs = await run_in_threadpool(read)
    return JSONResponse(
        {
            "documents": [_doc_json(d, ctx.indexing.eta_s(d.id)) for d in docs],
            "indexing": ctx.indexing.busy,
            "indexing_error": ctx.indexing.error or None,
        }
    )


async def one(request: Request) -> JSONResponse:
    ctx = request.app.state.ctx
    doc_id = _doc_id(request)

    def read() -> DocumentInfo | None:
        with ctx.library.pool.connection() as conn:
            return documents.get_document(conn, doc_id)

    doc = await run_in_threadpool(read)
    if doc is None:
        raise ApiError(404, f"There is no document {doc_id}.")
    return JSONResponse(_doc_json(doc, ctx.indexing.eta_s(doc.id)))


async def remove(request: Request) -> JSONResponse:
    ctx = request.app.state.ctx
    doc_id = _doc_id(request)

    def delete() -> bool:
        ctx.indexing.ingestor.cancel_document(doc_id)
        with ctx.library.pool.connection() as conn:
            return documents.remove_document(conn, doc_id)

    if not await run_in_threadpool(delete):
        raise ApiError(404, f"There is no document {doc_id}.")
    return JSONResponse({"removed": doc_id})


def _doc_id(request: Request) -> int:
    raw = request.path_params["doc_id"]
    if not raw.isdigit():
        raise ApiError(404, f"There is no document {raw!r}: ids are whole numbers.")
    return int(raw)


def _doc_json(d: DocumentInfo, eta_s: float | None) -> dict[str, Any]:
    out = asdict(d)
    out["created_at"] = d.created_at.isoformat()
    out["indexed_at"] = d.indexed_at.isoformat() if d.indexed_at else None
    total = d.chunks_total
    if d.status == status.READY:
        out["progress"] = 1.0
    elif d.status in status.UNFINISHED:
        out["progress"] = round(d.chunks_embedded / total, 4) if total else 0.0
    else:
        out["progress"] = None
    out["eta_s"] = round(eta_s, 1) if eta_s is not None else None
    return out
